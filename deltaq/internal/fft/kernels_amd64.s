// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

//go:build !purego

#include "textflag.h"

// AVX2/FMA kernels of the transforms in fft.go, on split complex data (real
// parts in one array, imaginary parts in another), four complex values per
// pair of 256-bit registers. Each kernel computes what a loop of the
// pure-Go path computes; see kernels_amd64.go.

// CMULM sets (OR, OI) = (TR, TI)·(WR, WI) for four complex values, the
// twiddles WR, WI in memory: OR = TR·WR − TI·WI, OI = TR·WI + TI·WR.
// OR and OI must differ from TR and TI.
#define CMULM(TR, TI, WR, WI, OR, OI) \
	VMULPD WI, TI, OR \
	VFMSUB231PD WR, TR, OR \
	VMULPD WR, TI, OI \
	VFMADD231PD WI, TR, OI

// TRANSPOSE transposes the 4 × 4 matrix of doubles whose rows are A, B, C,
// D in place; T0 … T3 are scratch.
#define TRANSPOSE(A, B, C, D, T0, T1, T2, T3) \
	VUNPCKLPD B, A, T0 \
	VUNPCKHPD B, A, T1 \
	VUNPCKLPD D, C, T2 \
	VUNPCKHPD D, C, T3 \
	VPERM2F128 $0x20, T2, T0, A \
	VPERM2F128 $0x20, T3, T1, B \
	VPERM2F128 $0x31, T2, T0, C \
	VPERM2F128 $0x31, T3, T1, D

// SUMDIFF sets S = A + B and D = A − B; S must differ from A and B.
#define SUMDIFF(A, B, S, D) \
	VADDPD B, A, S \
	VSUBPD B, A, D

// SUBI sets (OR, OI) = (AR, AI) − i·(BR, BI): OR = AR + BI, OI = AI − BR;
// ADDI sets (OR, OI) = (AR, AI) + i·(BR, BI): OR = AR − BI, OI = AI + BR.
// OR must differ from AI and BR.
#define SUBI(AR, AI, BR, BI, OR, OI) \
	VADDPD BI, AR, OR \
	VSUBPD BR, AI, OI
#define ADDI(AR, AI, BR, BI, OR, OI) \
	VSUBPD BI, AR, OR \
	VADDPD BR, AI, OI

// CMULST stores (TR, TI)·(WR, WI) at DR, DI, computed in OR, OI (CMULM).
#define CMULST(TR, TI, WR, WI, OR, OI, DR, DI) \
	CMULM(TR, TI, WR, WI, OR, OI) \
	VMOVUPD OR, DR \
	VMOVUPD OI, DI

// NEXT4 moves re (R8) and im (R14) on by four values and the twiddles
// (R13) by TWB bytes, and repeats LOOP while R8 is below R15.
#define NEXT4(TWB, LOOP) \
	ADDQ $32, R8 \
	ADDQ $32, R14 \
	ADDQ TWB, R13 \
	CMPQ R8, R15 \
	JB LOOP

// LOAD16 loads the 16 complex values at (R8), (R14) as four rows of four,
// real parts into Y0 … Y3, imaginary parts into Y4 … Y7; STORE16 stores
// them back.
#define LOAD16 \
	VMOVUPD (R8), Y0 \
	VMOVUPD 32(R8), Y1 \
	VMOVUPD 64(R8), Y2 \
	VMOVUPD 96(R8), Y3 \
	VMOVUPD (R14), Y4 \
	VMOVUPD 32(R14), Y5 \
	VMOVUPD 64(R14), Y6 \
	VMOVUPD 96(R14), Y7
#define STORE16 \
	VMOVUPD Y0, (R8) \
	VMOVUPD Y1, 32(R8) \
	VMOVUPD Y2, 64(R8) \
	VMOVUPD Y3, 96(R8) \
	VMOVUPD Y4, (R14) \
	VMOVUPD Y5, 32(R14) \
	VMOVUPD Y6, 64(R14) \
	VMOVUPD Y7, 96(R14)

// TRANSPOSE16 transposes the real parts Y0 … Y3 and the imaginary parts
// Y4 … Y7 of a LOAD16, with Y8 … Y11 as scratch: rows become columns.
#define TRANSPOSE16 \
	TRANSPOSE(Y0, Y1, Y2, Y3, Y8, Y9, Y10, Y11) \
	TRANSPOSE(Y4, Y5, Y6, Y7, Y8, Y9, Y10, Y11)

// NEXT16 moves re (R8) and im (R14) on by 16 values and repeats LOOP while
// R8 is below R15.
#define NEXT16(LOOP) \
	ADDQ $128, R8 \
	ADDQ $128, R14 \
	CMPQ R8, R15 \
	JB LOOP

// The arguments. vet's asmdecl checks a kernel's own references to its
// arguments, not those of a macro: these serve kernels of one signature
// each, and a wrong offset fails every test of the kernel (fft_test.go
// compares each with the direct transform and the pure-Go path).

// PASSARGS(N) loads the arguments of a pass over one block (re, im
// *float64, n int, tw *float64): re, im in R8, R14, n in N, tw in R13.
#define PASSARGS(N) \
	MOVQ re+0(FP), R8 \
	MOVQ im+8(FP), R14 \
	MOVQ n+16(FP), N \
	MOVQ tw+24(FP), R13

// BLOCKS4ARGS loads the arguments of a radix-2² pass over blocks (re, im
// *float64, n, s int, tw *float64): re, im in SI, DI, n and s in bytes in
// AX, DX, a block's quarter q and 2q, 3q in R9, R10, R11, and the first
// block's offset, 0, in BX.
#define BLOCKS4ARGS \
	MOVQ re+0(FP), SI \
	MOVQ im+8(FP), DI \
	MOVQ n+16(FP), AX \
	MOVQ s+24(FP), DX \
	SHLQ $3, AX \
	SHLQ $3, DX \
	MOVQ DX, R9 \
	SHRQ $2, R9 \
	LEAQ (R9)(R9*1), R10 \
	LEAQ (R10)(R9*1), R11 \
	XORQ BX, BX

// BLOCK4 starts the block at offset BX of a BLOCKS4ARGS pass: the
// twiddles (tw) from their start in R13, the block's parts in R8, R14 and
// the end of its first quarter in R15.
#define BLOCK4 \
	MOVQ tw+32(FP), R13 \
	LEAQ (SI)(BX*1), R8 \
	LEAQ (DI)(BX*1), R14 \
	LEAQ (R8)(R9*1), R15

// DIF4SUMS is the first half of a radix-2² DIF butterfly on x₀ … x₃ in
// (Y0, Y4) … (Y3, Y7): s02, d02 = x₀ ± x₂ in (Y8, Y12), (Y9, Y13) and
// s13, d13 = x₁ ± x₃ in (Y10, Y14), (Y11, Y15).
#define DIF4SUMS \
	SUMDIFF(Y0, Y2, Y8, Y9) \
	SUMDIFF(Y1, Y3, Y10, Y11) \
	SUMDIFF(Y4, Y6, Y12, Y13) \
	SUMDIFF(Y5, Y7, Y14, Y15)

// func dif4AVX(re, im *float64, n, s int, tw *float64)
// One radix-2² DIF pass over the blocks of s ≥ 64 points of re, im [:n]:
// for j < q = s/4, with x₀ … x₃ at j, j+q, j+2q, j+3q of a block,
// s02, d02 = x₀ ± x₂, s13, d13 = x₁ ± x₃ and
// x₀ = s02 + s13, x₁ = (s02 − s13)·w2, x₂ = (d02 − i·d13)·w1,
// x₃ = (d02 + i·d13)·w3.
TEXT ·dif4AVX(SB), NOSPLIT, $0-40
	BLOCKS4ARGS
dif4block:
	BLOCK4
dif4loop:
	VMOVUPD (R8), Y0
	VMOVUPD (R8)(R10*1), Y2
	SUMDIFF(Y0, Y2, Y4, Y5) // s02r, d02r
	VMOVUPD (R8)(R9*1), Y1
	VMOVUPD (R8)(R11*1), Y3
	SUMDIFF(Y1, Y3, Y6, Y7) // s13r, d13r
	VMOVUPD (R14), Y0
	VMOVUPD (R14)(R10*1), Y2
	SUMDIFF(Y0, Y2, Y8, Y9) // s02i, d02i
	VMOVUPD (R14)(R9*1), Y1
	VMOVUPD (R14)(R11*1), Y3
	SUMDIFF(Y1, Y3, Y10, Y11) // s13i, d13i
	VADDPD Y6, Y4, Y0
	VMOVUPD Y0, (R8)
	VADDPD Y10, Y8, Y1
	VMOVUPD Y1, (R14)
	VSUBPD Y6, Y4, Y4   // s02 − s13
	VSUBPD Y10, Y8, Y8
	CMULST(Y4, Y8, 64(R13), 96(R13), Y0, Y1, (R8)(R9*1), (R14)(R9*1))
	SUBI(Y5, Y9, Y7, Y11, Y2, Y3) // d02 − i·d13
	ADDI(Y5, Y9, Y7, Y11, Y5, Y9) // d02 + i·d13
	CMULST(Y2, Y3, 0(R13), 32(R13), Y0, Y1, (R8)(R10*1), (R14)(R10*1))
	CMULST(Y5, Y9, 128(R13), 160(R13), Y0, Y1, (R8)(R11*1), (R14)(R11*1))
	NEXT4($192, dif4loop)
	ADDQ DX, BX
	CMPQ BX, AX
	JB dif4block
	VZEROUPPER
	RET

// func dif4zAVX(re, im *float64, n int, tw *float64)
// The first radix-2² DIF pass (one block of n ≥ 64 points) when the upper
// half is zero (x₂ = x₃ = 0); it does not read that half.
TEXT ·dif4zAVX(SB), NOSPLIT, $0-32
	PASSARGS(R9)
	SHLQ $1, R9          // q = n/4 in bytes
	LEAQ (R9)(R9*1), R10
	LEAQ (R10)(R9*1), R11
	LEAQ (R8)(R9*1), R15
dif4zloop:
	VMOVUPD (R8), Y0   // x0r
	VMOVUPD (R8)(R9*1), Y1 // x1r
	VMOVUPD (R14), Y2  // x0i
	VMOVUPD (R14)(R9*1), Y3 // x1i
	VADDPD Y1, Y0, Y4
	VMOVUPD Y4, (R8)
	VADDPD Y3, Y2, Y5
	VMOVUPD Y5, (R14)
	VSUBPD Y1, Y0, Y4
	VSUBPD Y3, Y2, Y5
	CMULST(Y4, Y5, 64(R13), 96(R13), Y6, Y7, (R8)(R9*1), (R14)(R9*1))
	SUBI(Y0, Y2, Y1, Y3, Y4, Y5) // x0 − i·x1
	ADDI(Y0, Y2, Y1, Y3, Y8, Y9) // x0 + i·x1
	CMULST(Y4, Y5, 0(R13), 32(R13), Y6, Y7, (R8)(R10*1), (R14)(R10*1))
	CMULST(Y8, Y9, 128(R13), 160(R13), Y6, Y7, (R8)(R11*1), (R14)(R11*1))
	NEXT4($192, dif4zloop)
	VZEROUPPER
	RET

// func dif2AVX(re, im *float64, n int, tw *float64)
// A radix-2 DIF pass over one block of n ≥ 32 points: for j < n/2,
// x_j, x_{j+n/2} ← x_j + x_{j+n/2}, (x_j − x_{j+n/2})·w_j.
TEXT ·dif2AVX(SB), NOSPLIT, $0-32
	PASSARGS(R9)
	SHLQ $2, R9 // n/2 in bytes
	LEAQ (R8)(R9*1), R15
dif2loop:
	VMOVUPD (R8), Y0
	VMOVUPD (R8)(R9*1), Y1
	VMOVUPD (R14), Y2
	VMOVUPD (R14)(R9*1), Y3
	VADDPD Y1, Y0, Y4
	VMOVUPD Y4, (R8)
	VADDPD Y3, Y2, Y5
	VMOVUPD Y5, (R14)
	VSUBPD Y1, Y0, Y4
	VSUBPD Y3, Y2, Y5
	CMULST(Y4, Y5, 0(R13), 32(R13), Y6, Y7, (R8)(R9*1), (R14)(R9*1))
	NEXT4($64, dif2loop)
	VZEROUPPER
	RET

// func dif2zAVX(re, im *float64, n int, tw *float64)
// dif2AVX when the upper half is zero: x_{j+n/2} ← x_j·w_j, x_j unchanged.
TEXT ·dif2zAVX(SB), NOSPLIT, $0-32
	PASSARGS(R9)
	SHLQ $2, R9
	LEAQ (R8)(R9*1), R15
dif2zloop:
	VMOVUPD (R8), Y0
	VMOVUPD (R14), Y2
	CMULST(Y0, Y2, 0(R13), 32(R13), Y6, Y7, (R8)(R9*1), (R14)(R9*1))
	NEXT4($64, dif2zloop)
	VZEROUPPER
	RET

// func dit2AVX(re, im *float64, n int, tw *float64)
// A radix-2 DIT pass over one block of n ≥ 32 points: for j < n/2, with
// p = x_{j+n/2}·w_j, x_j, x_{j+n/2} ← x_j + p, x_j − p.
TEXT ·dit2AVX(SB), NOSPLIT, $0-32
	PASSARGS(R9)
	SHLQ $2, R9
	LEAQ (R8)(R9*1), R15
dit2loop:
	VMOVUPD (R8)(R9*1), Y0
	VMOVUPD (R14)(R9*1), Y1
	CMULM(Y0, Y1, 0(R13), 32(R13), Y6, Y7)
	VMOVUPD (R8), Y2
	VMOVUPD (R14), Y3
	VADDPD Y6, Y2, Y4
	VMOVUPD Y4, (R8)
	VADDPD Y7, Y3, Y5
	VMOVUPD Y5, (R14)
	VSUBPD Y6, Y2, Y4
	VMOVUPD Y4, (R8)(R9*1)
	VSUBPD Y7, Y3, Y5
	VMOVUPD Y5, (R14)(R9*1)
	NEXT4($64, dit2loop)
	VZEROUPPER
	RET

// func dit4AVX(re, im *float64, n, s int, tw *float64)
// One radix-2² DIT pass over the blocks of s ≥ 64 points of re, im [:n]:
// with p₀ = x₀, p₁ = x₁·w2, p₂ = x₂·w1, p₃ = x₃·w3, t0, t1 = p₀ ± p₁,
// t2, t3 = p₂ ± p₃: x₀ = t0 + t2, x₂ = t0 − t2, x₁ = t1 + i·t3,
// x₃ = t1 − i·t3.
TEXT ·dit4AVX(SB), NOSPLIT, $0-40
	BLOCKS4ARGS
dit4block:
	BLOCK4
dit4loop:
	VMOVUPD (R8)(R9*1), Y8
	VMOVUPD (R14)(R9*1), Y9
	CMULM(Y8, Y9, 64(R13), 96(R13), Y0, Y1) // p1
	VMOVUPD (R8)(R10*1), Y8
	VMOVUPD (R14)(R10*1), Y9
	CMULM(Y8, Y9, 0(R13), 32(R13), Y2, Y3) // p2
	VMOVUPD (R8)(R11*1), Y8
	VMOVUPD (R14)(R11*1), Y9
	CMULM(Y8, Y9, 128(R13), 160(R13), Y4, Y5) // p3
	VMOVUPD (R8), Y6  // p0
	VMOVUPD (R14), Y7
	SUMDIFF(Y6, Y0, Y8, Y9)   // t0r, t1r
	SUMDIFF(Y7, Y1, Y10, Y11) // t0i, t1i
	SUMDIFF(Y2, Y4, Y12, Y13) // t2r, t3r
	SUMDIFF(Y3, Y5, Y14, Y15) // t2i, t3i
	VADDPD Y12, Y8, Y0
	VMOVUPD Y0, (R8)
	VADDPD Y14, Y10, Y1
	VMOVUPD Y1, (R14)
	VSUBPD Y12, Y8, Y0
	VMOVUPD Y0, (R8)(R10*1)
	VSUBPD Y14, Y10, Y1
	VMOVUPD Y1, (R14)(R10*1)
	VSUBPD Y15, Y9, Y0  // t1 + i·t3
	VMOVUPD Y0, (R8)(R9*1)
	VADDPD Y13, Y11, Y1
	VMOVUPD Y1, (R14)(R9*1)
	VADDPD Y15, Y9, Y0  // t1 − i·t3
	VMOVUPD Y0, (R8)(R11*1)
	VSUBPD Y13, Y11, Y1
	VMOVUPD Y1, (R14)(R11*1)
	NEXT4($192, dit4loop)
	ADDQ DX, BX
	CMPQ BX, AX
	JB dit4block
	VZEROUPPER
	RET

// func dif16AVX(re, im *float64, n int, tw *float64)
// The last two radix-2² DIF passes, over blocks of 16 (twiddles tw) and
// of 4 (unit twiddles), fused: each block of 16 is loaded as four rows of
// four, gets the first pass row-wise, is transposed so that each register
// holds one element of the four sub-blocks, gets the second pass
// lane-wise, and is transposed back.
TEXT ·dif16AVX(SB), NOSPLIT, $0-32
	PASSARGS(AX)
	SHLQ $3, AX
	LEAQ (R8)(AX*1), R15
dif16loop:
	LOAD16
	DIF4SUMS
	VADDPD Y10, Y8, Y0
	VADDPD Y14, Y12, Y4
	VSUBPD Y10, Y8, Y8
	VSUBPD Y14, Y12, Y12
	CMULM(Y8, Y12, 64(R13), 96(R13), Y1, Y5)
	SUBI(Y9, Y13, Y11, Y15, Y8, Y12) // d02 − i·d13
	ADDI(Y9, Y13, Y11, Y15, Y9, Y13) // d02 + i·d13
	CMULM(Y8, Y12, 0(R13), 32(R13), Y2, Y6)
	CMULM(Y9, Y13, 128(R13), 160(R13), Y3, Y7)
	TRANSPOSE16
	DIF4SUMS
	SUMDIFF(Y8, Y10, Y0, Y1)
	SUMDIFF(Y12, Y14, Y4, Y5)
	SUBI(Y9, Y13, Y11, Y15, Y2, Y6) // d02 − i·d13
	ADDI(Y9, Y13, Y11, Y15, Y3, Y7) // d02 + i·d13
	TRANSPOSE16
	STORE16
	NEXT16(dif16loop)
	VZEROUPPER
	RET

// func dit16AVX(re, im *float64, n int, tw *float64)
// The first two radix-2² DIT passes, over blocks of 4 (unit twiddles) and
// of 16 (twiddles tw), fused as in dif16AVX, in the opposite order.
TEXT ·dit16AVX(SB), NOSPLIT, $0-32
	PASSARGS(AX)
	SHLQ $3, AX
	LEAQ (R8)(AX*1), R15
dit16loop:
	LOAD16
	TRANSPOSE16
	SUMDIFF(Y0, Y1, Y8, Y9)   // t0r, t1r
	SUMDIFF(Y2, Y3, Y10, Y11) // t2r, t3r
	SUMDIFF(Y4, Y5, Y12, Y13) // t0i, t1i
	SUMDIFF(Y6, Y7, Y14, Y15) // t2i, t3i
	SUMDIFF(Y8, Y10, Y0, Y2)
	SUMDIFF(Y12, Y14, Y4, Y6)
	ADDI(Y9, Y13, Y11, Y15, Y1, Y5) // t1 + i·t3
	SUBI(Y9, Y13, Y11, Y15, Y3, Y7) // t1 − i·t3
	TRANSPOSE16
	CMULM(Y1, Y5, 64(R13), 96(R13), Y8, Y9)    // p1
	CMULM(Y2, Y6, 0(R13), 32(R13), Y10, Y11)   // p2
	CMULM(Y3, Y7, 128(R13), 160(R13), Y12, Y13) // p3
	SUMDIFF(Y0, Y8, Y1, Y2)    // t0r, t1r
	SUMDIFF(Y4, Y9, Y3, Y5)    // t0i, t1i
	SUMDIFF(Y10, Y12, Y6, Y7)  // t2r, t3r
	SUMDIFF(Y11, Y13, Y14, Y15) // t2i, t3i
	VADDPD Y6, Y1, Y0
	VMOVUPD Y0, (R8)
	VADDPD Y14, Y3, Y4
	VMOVUPD Y4, (R14)
	VSUBPD Y6, Y1, Y0
	VMOVUPD Y0, 64(R8)
	VSUBPD Y14, Y3, Y4
	VMOVUPD Y4, 64(R14)
	VSUBPD Y15, Y2, Y0  // t1 + i·t3
	VMOVUPD Y0, 32(R8)
	VADDPD Y7, Y5, Y4
	VMOVUPD Y4, 32(R14)
	VADDPD Y15, Y2, Y0  // t1 − i·t3
	VMOVUPD Y0, 96(R8)
	VSUBPD Y7, Y5, Y4
	VMOVUPD Y4, 96(R14)
	NEXT16(dit16loop)
	VZEROUPPER
	RET

// func combineAVX(re, im, yre, yim *float64, m int, tw *float64, c float64)
// The octaves r ∈ [lo, 2·lo), lo = 8, 16, … < m, of (*plan).combineLow,
// four pairs (r, r' = 3·lo − 1 − r) at a time: Z_k and Z_{m+k} are
// unpacked from positions 2r … 2r+7 (lanes in the order 0 2 1 3 of the
// four pairs), Z_{m−k} and Z_{n−k} from 2r'−6 … 2r'+1 (then reversed into
// the same order). With P_k = −i·(Z_k − conj Z_{n−k})·(Z_k + conj Z_{n−k}),
// P_{m−k} alike, S = P_k + conj P_{m−k}, D = P_k − conj P_{m−k} and the
// twiddles W = c·w_r, N = −c·w_{r'} of tw:
// y_r = c·S + i·D·W, and y_{r'} = c·conj S + i·(−conj D)·(−N), that is
// re y_{r'} = c·re S − (re D·im N − im D·re N),
// im y_{r'} = (re D·re N + im D·im N) − c·im S.
TEXT ·combineAVX(SB), NOSPLIT, $0-56
	MOVQ re+0(FP), SI
	MOVQ im+8(FP), DI
	MOVQ yre+16(FP), DX
	MOVQ yim+24(FP), BX
	MOVQ m+32(FP), R13
	MOVQ tw+40(FP), R12
	VBROADCASTSD c+48(FP), Y15
	MOVQ $8, AX // lo
combOctave:
	CMPQ AX, R13
	JAE combdone
	MOVQ AX, R8
	SHLQ $4, R8          // 16·lo: position 2·lo in bytes
	LEAQ -4(AX)(AX*1), R9 // 2·lo − 4: the lowest r' of the first group
	MOVQ R9, R11
	SHLQ $3, R11         // y offset of r'
	SHLQ $4, R9          // position 2r' in bytes
	MOVQ AX, R10
	SHLQ $3, R10         // y offset of r
	MOVQ AX, CX
	SHRQ $3, CX          // groups in this octave: lo/8
combloop:
	VMOVUPD (SI)(R8*1), Y0
	VMOVUPD 32(SI)(R8*1), Y1
	VUNPCKLPD Y1, Y0, Y2 // Z_k re
	VUNPCKHPD Y1, Y0, Y3 // Z_{m+k} re
	VMOVUPD (DI)(R8*1), Y0
	VMOVUPD 32(DI)(R8*1), Y1
	VUNPCKLPD Y1, Y0, Y4 // Z_k im
	VUNPCKHPD Y1, Y0, Y5 // Z_{m+k} im
	VMOVUPD (SI)(R9*1), Y0
	VMOVUPD 32(SI)(R9*1), Y1
	VUNPCKLPD Y1, Y0, Y6
	VPERMPD $0x1B, Y6, Y6 // Z_{m−k} re
	VUNPCKHPD Y1, Y0, Y7
	VPERMPD $0x1B, Y7, Y7 // Z_{n−k} re
	VMOVUPD (DI)(R9*1), Y0
	VMOVUPD 32(DI)(R9*1), Y1
	VUNPCKLPD Y1, Y0, Y8
	VPERMPD $0x1B, Y8, Y8 // Z_{m−k} im
	VUNPCKHPD Y1, Y0, Y9
	VPERMPD $0x1B, Y9, Y9 // Z_{n−k} im
	// P_k from Z_k (Y2, Y4) and Z_{n−k} (Y7, Y9).
	VSUBPD Y7, Y2, Y0   // ure
	VADDPD Y7, Y2, Y1   // vre
	VADDPD Y9, Y4, Y10  // uim
	VSUBPD Y9, Y4, Y11  // vim
	VMULPD Y1, Y10, Y2
	VFMADD231PD Y11, Y0, Y2 // re P_k = ure·vim + uim·vre
	VMULPD Y1, Y0, Y4
	VFMSUB231PD Y11, Y10, Y4 // im P_k = uim·vim − ure·vre
	// P_{m−k} from Z_{m−k} (Y6, Y8) and Z_{m+k} (Y3, Y5).
	VSUBPD Y3, Y6, Y0
	VADDPD Y3, Y6, Y1
	VADDPD Y5, Y8, Y10
	VSUBPD Y5, Y8, Y11
	VMULPD Y1, Y10, Y6
	VFMADD231PD Y11, Y0, Y6 // re P_{m−k}
	VMULPD Y1, Y0, Y8
	VFMSUB231PD Y11, Y10, Y8 // im P_{m−k}
	VADDPD Y6, Y2, Y0 // Sre
	VSUBPD Y8, Y4, Y1 // Sim
	VSUBPD Y6, Y2, Y3 // Dre
	VADDPD Y8, Y4, Y5 // Dim
	VMULPD Y15, Y0, Y0 // c·Sre
	VMULPD Y15, Y1, Y1 // c·Sim
	CMULM(Y3, Y5, 0(R12), 32(R12), Y6, Y7) // D·W
	VSUBPD Y7, Y0, Y8
	VADDPD Y6, Y1, Y9
	VPERMPD $0xD8, Y8, Y8
	VPERMPD $0xD8, Y9, Y9
	VMOVUPD Y8, (DX)(R10*1)
	VMOVUPD Y9, (BX)(R10*1)
	VMULPD 96(R12), Y5, Y6
	VFMADD231PD 64(R12), Y3, Y6 // Dre·Nre + Dim·Nim
	VMULPD 64(R12), Y5, Y7
	VFMSUB231PD 96(R12), Y3, Y7 // Dre·Nim − Dim·Nre
	VSUBPD Y7, Y0, Y8
	VSUBPD Y1, Y6, Y9
	VPERMPD $0x27, Y8, Y8
	VPERMPD $0x27, Y9, Y9
	VMOVUPD Y8, (DX)(R11*1)
	VMOVUPD Y9, (BX)(R11*1)
	ADDQ $64, R8
	SUBQ $64, R9
	ADDQ $32, R10
	SUBQ $32, R11
	ADDQ $128, R12
	DECQ CX
	JNE combloop
	SHLQ $1, AX
	JMP combOctave
combdone:
	VZEROUPPER
	RET

DATA ·half<>+0(SB)/8, $0.5
GLOBL ·half<>(SB), RODATA|NOPTR, $8

// func halfSplitAVX(dst, src, cum *float64, n int) (sum, last float64)
// The four-bin loop of HalfSplit (splitInto), four bins per iteration with the same
// sums: c = max(v, 0) (NaN → 0), h = ½(c + [c₋₁ c₀ c₁ c₂]), the in-block
// prefix P = [h₀, h₀₁, h₂ + h₀₁, (h₂ + h₃) + h₀₁] with h₀₁ = h₀ + h₁, then
// cum = s + P and s += P₃.
TEXT ·halfSplitAVX(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DX
	MOVQ src+8(FP), SI
	MOVQ cum+16(FP), DI
	MOVQ n+24(FP), CX
	VXORPD Y15, Y15, Y15 // 0
	VBROADCASTSD ·half<>(SB), Y14
	VXORPD Y13, Y13, Y13 // previous c
	VXORPD Y12, Y12, Y12 // s in every lane
hsloop:
	VMOVUPD (SI), Y0
	VMAXPD Y15, Y0, Y0              // c = max(x, 0), 0 for NaN
	VPERM2F128 $0x21, Y0, Y13, Y1   // c₋₂ c₋₁ c₀ c₁
	VSHUFPD $5, Y0, Y1, Y2          // c₋₁ c₀ c₁ c₂
	VMOVAPD Y0, Y13
	VADDPD Y2, Y0, Y3
	VMULPD Y14, Y3, Y3              // h
	VMOVUPD Y3, (DX)
	VPERMILPD $0, Y3, Y4            // h₀ h₀ h₂ h₂
	VBLENDPD $5, Y15, Y4, Y4        // 0 h₀ 0 h₂
	VADDPD Y4, Y3, Y4               // h₀ h₀₁ h₂ h₂₃
	VPERMPD $0x55, Y4, Y5           // h₀₁ in every lane
	VBLENDPD $3, Y15, Y5, Y5        // 0 0 h₀₁ h₀₁
	VADDPD Y5, Y4, Y4               // P
	VADDPD Y4, Y12, Y6
	VMOVUPD Y6, (DI)                // cum = s + P
	VPERMPD $0xFF, Y4, Y7
	VADDPD Y7, Y12, Y12             // s += P₃
	ADDQ $32, DX
	ADDQ $32, SI
	ADDQ $32, DI
	SUBQ $4, CX
	JNE hsloop
	VMOVSD X12, sum+32(FP)
	VPERMPD $0xFF, Y13, Y13
	VMOVSD X13, last+40(FP)
	VZEROUPPER
	RET

// func packAVX(z *complex128, a, b *float64, n int)
// z[j] = complex(a[j], b[j]) for j < n, n > 0 a multiple of 4.
TEXT ·packAVX(SB), NOSPLIT, $0-32
	MOVQ z+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DX
	MOVQ n+24(FP), CX
packloop:
	VMOVUPD (SI), Y0 // a₀ a₁ a₂ a₃
	VMOVUPD (DX), Y1 // b₀ b₁ b₂ b₃
	VUNPCKLPD Y1, Y0, Y2 // a₀ b₀ a₂ b₂
	VUNPCKHPD Y1, Y0, Y3 // a₁ b₁ a₃ b₃
	VPERM2F128 $0x20, Y3, Y2, Y4
	VPERM2F128 $0x31, Y3, Y2, Y5
	VMOVUPD Y4, (DI)
	VMOVUPD Y5, 32(DI)
	ADDQ $32, SI
	ADDQ $32, DX
	ADDQ $64, DI
	SUBQ $4, CX
	JNE packloop
	VZEROUPPER
	RET
