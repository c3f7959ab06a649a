//go:build !purego

#include "textflag.h"

// AVX2/FMA kernels of the transforms in fft.go, on interleaved complex128
// data, two complex values per 256-bit register. Each kernel is the exact
// counterpart of a loop of the pure-Go path; see kernels_amd64.go.

// Sign masks: flip the imaginary parts of both complex lanes, or the
// imaginary part of the high lane only, or the real part of the high lane.
DATA ·signIm<>+0(SB)/8, $0
DATA ·signIm<>+8(SB)/8, $0x8000000000000000
DATA ·signIm<>+16(SB)/8, $0
DATA ·signIm<>+24(SB)/8, $0x8000000000000000
GLOBL ·signIm<>(SB), RODATA|NOPTR, $32

DATA ·signRe<>+0(SB)/8, $0x8000000000000000
DATA ·signRe<>+8(SB)/8, $0
DATA ·signRe<>+16(SB)/8, $0x8000000000000000
DATA ·signRe<>+24(SB)/8, $0
GLOBL ·signRe<>(SB), RODATA|NOPTR, $32

DATA ·signHiIm<>+0(SB)/8, $0
DATA ·signHiIm<>+8(SB)/8, $0
DATA ·signHiIm<>+16(SB)/8, $0
DATA ·signHiIm<>+24(SB)/8, $0x8000000000000000
GLOBL ·signHiIm<>(SB), RODATA|NOPTR, $32

DATA ·signHiRe<>+0(SB)/8, $0
DATA ·signHiRe<>+8(SB)/8, $0
DATA ·signHiRe<>+16(SB)/8, $0x8000000000000000
DATA ·signHiRe<>+24(SB)/8, $0
GLOBL ·signHiRe<>(SB), RODATA|NOPTR, $32

// CMUL sets T = A·W for the two complex twiddles at address W:
// T = A·re(W) ∓ swap(A)·im(W), with even lanes subtracting (real parts)
// and odd lanes adding (imaginary parts). RE and IM are scratch.
#define CMUL(A, W, RE, IM, T) \
	VMOVDDUP W, RE \
	VPERMILPD $15, W, IM \
	VPERMILPD $5, A, T \
	VMULPD IM, T, T \
	VFMADDSUB231PD RE, A, T

// func dif4AVX(x *complex128, n, s int, w1, w2, w3 *complex128)
// One radix-2² decimation-in-frequency pass over blocks of s ≥ 8 points.
TEXT ·dif4AVX(SB), NOSPLIT, $0-48
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), AX
	MOVQ s+16(FP), DX
	MOVQ w1+24(FP), R12
	MOVQ w2+32(FP), R13
	MOVQ w3+40(FP), R14
	SHLQ $4, AX        // n in bytes
	SHLQ $4, DX        // s in bytes
	LEAQ (SI)(AX*1), R15 // end of x
	MOVQ DX, R9
	SHRQ $2, R9        // q in bytes
	LEAQ (R9)(R9*1), R10 // 2q
	LEAQ (R10)(R9*1), R11 // 3q
	VMOVUPD ·signIm<>(SB), Y15

dif4block:
	MOVQ SI, DI
	XORQ CX, CX
dif4loop:
	VMOVUPD (DI), Y0
	VMOVUPD (DI)(R9*1), Y1
	VMOVUPD (DI)(R10*1), Y2
	VMOVUPD (DI)(R11*1), Y3
	VADDPD Y2, Y0, Y4 // s02
	VSUBPD Y2, Y0, Y5 // d02
	VADDPD Y3, Y1, Y6 // s13
	VSUBPD Y3, Y1, Y7 // d13
	VADDPD Y6, Y4, Y0
	VMOVUPD Y0, (DI)
	VSUBPD Y6, Y4, Y1
	CMUL(Y1, (R13)(CX*1), Y8, Y9, Y10)
	VMOVUPD Y10, (DI)(R9*1)
	VPERMILPD $5, Y7, Y7
	VXORPD Y15, Y7, Y7 // −i·d13
	VADDPD Y7, Y5, Y2  // d02 − i·d13
	VSUBPD Y7, Y5, Y3  // d02 + i·d13
	CMUL(Y2, (R12)(CX*1), Y8, Y9, Y10)
	VMOVUPD Y10, (DI)(R10*1)
	CMUL(Y3, (R14)(CX*1), Y11, Y12, Y13)
	VMOVUPD Y13, (DI)(R11*1)
	ADDQ $32, DI
	ADDQ $32, CX
	CMPQ CX, R9
	JB dif4loop
	ADDQ DX, SI
	CMPQ SI, R15
	JB dif4block
	VZEROUPPER
	RET

// func dif4zAVX(x *complex128, n int, w1, w2, w3 *complex128)
// The first radix-2² pass (one block of n points) when the upper half of x
// is zero: it reads only the lower half.
TEXT ·dif4zAVX(SB), NOSPLIT, $0-40
	MOVQ x+0(FP), DI
	MOVQ n+8(FP), R9
	MOVQ w1+16(FP), R12
	MOVQ w2+24(FP), R13
	MOVQ w3+32(FP), R14
	SHLQ $2, R9        // q = n/4 in bytes
	LEAQ (R9)(R9*1), R10
	LEAQ (R10)(R9*1), R11
	VMOVUPD ·signIm<>(SB), Y15
	XORQ CX, CX
dif4zloop:
	VMOVUPD (DI), Y0         // a0 = s02 = d02
	VMOVUPD (DI)(R9*1), Y1   // a1 = s13 = d13
	VADDPD Y1, Y0, Y4
	VMOVUPD Y4, (DI)
	VSUBPD Y1, Y0, Y5
	CMUL(Y5, (R13)(CX*1), Y8, Y9, Y10)
	VMOVUPD Y10, (DI)(R9*1)
	VPERMILPD $5, Y1, Y7
	VXORPD Y15, Y7, Y7 // −i·a1
	VADDPD Y7, Y0, Y2
	VSUBPD Y7, Y0, Y3
	CMUL(Y2, (R12)(CX*1), Y8, Y9, Y10)
	VMOVUPD Y10, (DI)(R10*1)
	CMUL(Y3, (R14)(CX*1), Y11, Y12, Y13)
	VMOVUPD Y13, (DI)(R11*1)
	ADDQ $32, DI
	ADDQ $32, CX
	CMPQ CX, R9
	JB dif4zloop
	VZEROUPPER
	RET

// func dit4AVX(x *complex128, n, s int, w1, w2, w3 *complex128)
// One radix-2² decimation-in-time pass over blocks of s ≥ 8 points.
TEXT ·dit4AVX(SB), NOSPLIT, $0-48
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), AX
	MOVQ s+16(FP), DX
	MOVQ w1+24(FP), R12
	MOVQ w2+32(FP), R13
	MOVQ w3+40(FP), R14
	SHLQ $4, AX
	SHLQ $4, DX
	LEAQ (SI)(AX*1), R15
	MOVQ DX, R9
	SHRQ $2, R9
	LEAQ (R9)(R9*1), R10
	LEAQ (R10)(R9*1), R11
	VMOVUPD ·signRe<>(SB), Y15

dit4block:
	MOVQ SI, DI
	XORQ CX, CX
dit4loop:
	VMOVUPD (DI), Y0 // p0
	VMOVUPD (DI)(R9*1), Y1
	CMUL(Y1, (R13)(CX*1), Y8, Y9, Y4) // p1 = x1·w2
	VMOVUPD (DI)(R10*1), Y2
	CMUL(Y2, (R12)(CX*1), Y8, Y9, Y5) // p2 = x2·w1
	VMOVUPD (DI)(R11*1), Y3
	CMUL(Y3, (R14)(CX*1), Y10, Y11, Y6) // p3 = x3·w3
	VADDPD Y4, Y0, Y1 // t0
	VSUBPD Y4, Y0, Y2 // t1
	VADDPD Y6, Y5, Y3 // t2
	VSUBPD Y6, Y5, Y7 // t3
	VADDPD Y3, Y1, Y0
	VMOVUPD Y0, (DI)
	VSUBPD Y3, Y1, Y0
	VMOVUPD Y0, (DI)(R10*1)
	VPERMILPD $5, Y7, Y7
	VXORPD Y15, Y7, Y7 // i·t3
	VADDPD Y7, Y2, Y0
	VMOVUPD Y0, (DI)(R9*1)
	VSUBPD Y7, Y2, Y0
	VMOVUPD Y0, (DI)(R11*1)
	ADDQ $32, DI
	ADDQ $32, CX
	CMPQ CX, R9
	JB dit4loop
	ADDQ DX, SI
	CMPQ SI, R15
	JB dit4block
	VZEROUPPER
	RET

// func r2AVX(x *complex128, n int)
// A radix-2 pass over blocks of two: (x₀, x₁) ← (x₀ + x₁, x₀ − x₁); the
// last DIF pass and the first DIT pass alike. n is a multiple of 4.
TEXT ·r2AVX(SB), NOSPLIT, $0-16
	MOVQ x+0(FP), DI
	MOVQ n+8(FP), AX
	SHLQ $4, AX
	LEAQ (DI)(AX*1), R15
r2loop:
	VMOVUPD (DI), Y0   // x0 x1
	VMOVUPD 32(DI), Y1 // x2 x3
	VPERM2F128 $0x20, Y1, Y0, Y2 // x0 x2
	VPERM2F128 $0x31, Y1, Y0, Y3 // x1 x3
	VADDPD Y3, Y2, Y4
	VSUBPD Y3, Y2, Y5
	VPERM2F128 $0x20, Y5, Y4, Y0
	VPERM2F128 $0x31, Y5, Y4, Y1
	VMOVUPD Y0, (DI)
	VMOVUPD Y1, 32(DI)
	ADDQ $64, DI
	CMPQ DI, R15
	JB r2loop
	VZEROUPPER
	RET

// func dif4uAVX(x *complex128, n int)
// The last radix-2² DIF pass, blocks of four with unit twiddles.
TEXT ·dif4uAVX(SB), NOSPLIT, $0-16
	MOVQ x+0(FP), DI
	MOVQ n+8(FP), AX
	SHLQ $4, AX
	LEAQ (DI)(AX*1), R15
	VMOVUPD ·signHiIm<>(SB), Y15
dif4uloop:
	VMOVUPD (DI), Y0   // a0 a1
	VMOVUPD 32(DI), Y1 // a2 a3
	VADDPD Y1, Y0, Y2  // s02 s13
	VSUBPD Y1, Y0, Y3  // d02 d13
	VPERMILPD $6, Y3, Y3
	VXORPD Y15, Y3, Y3 // d02, −i·d13
	VPERM2F128 $0x20, Y3, Y2, Y4 // s02 d02
	VPERM2F128 $0x31, Y3, Y2, Y5 // s13 −i·d13
	VADDPD Y5, Y4, Y6
	VSUBPD Y5, Y4, Y7
	VPERM2F128 $0x20, Y7, Y6, Y0
	VPERM2F128 $0x31, Y7, Y6, Y1
	VMOVUPD Y0, (DI)
	VMOVUPD Y1, 32(DI)
	ADDQ $64, DI
	CMPQ DI, R15
	JB dif4uloop
	VZEROUPPER
	RET

// func dit4uAVX(x *complex128, n int)
// The first radix-2² DIT pass, blocks of four with unit twiddles.
TEXT ·dit4uAVX(SB), NOSPLIT, $0-16
	MOVQ x+0(FP), DI
	MOVQ n+8(FP), AX
	SHLQ $4, AX
	LEAQ (DI)(AX*1), R15
	VMOVUPD ·signHiRe<>(SB), Y15
dit4uloop:
	VMOVUPD (DI), Y0   // p0 p1
	VMOVUPD 32(DI), Y1 // p2 p3
	VPERM2F128 $0x20, Y1, Y0, Y2 // p0 p2
	VPERM2F128 $0x31, Y1, Y0, Y3 // p1 p3
	VADDPD Y3, Y2, Y4 // t0 t2
	VSUBPD Y3, Y2, Y5 // t1 t3
	VPERMILPD $6, Y5, Y5
	VXORPD Y15, Y5, Y5 // t1, i·t3
	VPERM2F128 $0x20, Y5, Y4, Y6 // t0 t1
	VPERM2F128 $0x31, Y5, Y4, Y7 // t2 i·t3
	VADDPD Y7, Y6, Y0
	VSUBPD Y7, Y6, Y1
	VMOVUPD Y0, (DI)
	VMOVUPD Y1, 32(DI)
	ADDQ $64, DI
	CMPQ DI, R15
	JB dit4uloop
	VZEROUPPER
	RET

// func combineAVX(z, y *complex128, pairs *int32, npairs int, w *complex128, c float64)
// The pair loop of (*plan).combine, one pair of mirrored frequencies per
// iteration, both in one register: with X = (Z_k, Z_{m−k}) and
// Y = (Z_{n−k}, Z_{m+k}), P = −i·(X − conj Y)·(X + conj Y) = (P_k, P_{m−k});
// then, with Q = conj(P_{m−k}, P_k) and W = (w_r, w_{r'}) from w,
// (y[r], y[r']) = c·((P + Q) + i·(P − Q)·W).
TEXT ·combineAVX(SB), NOSPLIT, $0-48
	MOVQ z+0(FP), SI
	MOVQ y+8(FP), DI
	MOVQ pairs+16(FP), BX
	MOVQ npairs+24(FP), CX
	MOVQ w+32(FP), DX
	VBROADCASTSD c+40(FP), Y14
	VMOVUPD ·signIm<>(SB), Y15
	VMOVUPD ·signRe<>(SB), Y13
	TESTQ CX, CX
	JE combdone
combloop:
	MOVLQSX (BX), R8  // r
	MOVLQSX 4(BX), R9 // r'
	SHLQ $5, R8       // byte offset of z[2r]
	SHLQ $5, R9
	VMOVUPD (SI)(R8*1), Y0 // Z_k, Z_{m+k}
	VMOVUPD (SI)(R9*1), Y1 // Z_{m−k}, Z_{n−k}
	VPERM2F128 $0x20, Y1, Y0, Y2 // X = Z_k, Z_{m−k}
	VPERM2F128 $0x31, Y0, Y1, Y3 // Y = Z_{n−k}, Z_{m+k}
	VXORPD Y15, Y3, Y3           // conj Y
	VSUBPD Y3, Y2, Y4            // A = X − conj Y
	VADDPD Y3, Y2, Y5            // B = X + conj Y
	CMUL(Y4, Y5, Y6, Y7, Y8)     // A·B
	VPERMILPD $5, Y8, Y8
	VXORPD Y15, Y8, Y8           // P = −i·A·B
	VPERM2F128 $0x01, Y8, Y8, Y9
	VXORPD Y15, Y9, Y9           // Q
	VADDPD Y9, Y8, Y10           // S = P + Q
	VSUBPD Y9, Y8, Y11           // D = P − Q
	CMUL(Y11, (DX), Y6, Y7, Y12) // D·W
	VPERMILPD $5, Y12, Y12
	VXORPD Y13, Y12, Y12         // i·D·W
	VADDPD Y12, Y10, Y10
	VMULPD Y14, Y10, Y10
	SHRQ $1, R8                  // byte offset of y[r]
	SHRQ $1, R9
	VMOVUPD X10, (DI)(R8*1)
	VEXTRACTF128 $1, Y10, (DI)(R9*1)
	ADDQ $8, BX
	ADDQ $32, DX
	DECQ CX
	JNE combloop
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
