// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

//go:build !purego

package fft

import "golang.org/x/sys/cpu"

// useAVX2 selects the assembly kernels of kernels_amd64.s, which need AVX2
// and FMA (x86-64-v3). Tests switch it off to cross-check the pure-Go
// passes, which remain the reference and the fallback.
var useAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// The transform kernels work on split complex arrays re, im and take the
// twiddles of their stage in the grouped layout of stage.tw.

// dif4AVX is one radix-2² DIF pass over the blocks of s ≥ 64 points of
// re, im [:n] (see (*plan).forwardGo).
//
//go:noescape
func dif4AVX(re, im *float64, n, s int, tw *float64)

// dif4zAVX is the first radix-2² DIF pass (one block of n ≥ 64 points)
// when the upper half of re, im [:n] is zero; it does not read that half.
//
//go:noescape
func dif4zAVX(re, im *float64, n int, tw *float64)

// dif2AVX is the radix-2 DIF pass over one block of n ≥ 32 points.
//
//go:noescape
func dif2AVX(re, im *float64, n int, tw *float64)

// dif2zAVX is dif2AVX when the upper half is zero; it does not read it.
//
//go:noescape
func dif2zAVX(re, im *float64, n int, tw *float64)

// dif16AVX is the last two radix-2² DIF passes, over blocks of 16 points
// (twiddles tw) and of 4 (unit twiddles), fused; n is a multiple of 16.
//
//go:noescape
func dif16AVX(re, im *float64, n int, tw *float64)

// dit16AVX is the first two radix-2² DIT passes, over blocks of 4 (unit
// twiddles) and of 16 points (twiddles tw), fused; n is a multiple of 16.
//
//go:noescape
func dit16AVX(re, im *float64, n int, tw *float64)

// dit4AVX is one radix-2² DIT pass over the blocks of s ≥ 64 points.
//
//go:noescape
func dit4AVX(re, im *float64, n, s int, tw *float64)

// dit2AVX is the radix-2 DIT pass over one block of n ≥ 32 points.
//
//go:noescape
func dit2AVX(re, im *float64, n int, tw *float64)

// combineAVX is (*plan).combineLow for the octaves from 8 on, m ≥ 16,
// with tw the plan's comb table and c = 1/(8m).
//
//go:noescape
func combineAVX(re, im, yre, yim *float64, m int, tw *float64, c float64)

// halfSplitAVX is the four-bin loop of splitInto over src[:n], dst[:n] and
// cum[:n], n > 0 a multiple of 4, starting from a zero sum; it returns the
// sum and the last clamped input.
//
//go:noescape
func halfSplitAVX(dst, src, cum *float64, n int) (sum, last float64)

// packAVX sets z[j] = complex(a[j], b[j]) for j < n, n > 0 a multiple of 4.
//
//go:noescape
func packAVX(z *complex128, a, b *float64, n int)
