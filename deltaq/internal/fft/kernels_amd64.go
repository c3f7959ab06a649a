//go:build !purego

package fft

import "golang.org/x/sys/cpu"

// useAVX2 selects the assembly kernels of kernels_amd64.s, which need AVX2
// and FMA (x86-64-v3). Tests switch it off to cross-check the pure-Go
// passes, which remain the reference and the fallback.
var useAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// dif4AVX is one radix-2² DIF pass over the blocks of s ≥ 8 points of
// x[:n] with the stage twiddles w1, w2, w3 (see (*plan).forwardGo).
//
//go:noescape
func dif4AVX(x *complex128, n, s int, w1, w2, w3 *complex128)

// dif4zAVX is the first DIF pass (one block of n points) when the upper
// half of x[:n] is zero; it does not read that half.
//
//go:noescape
func dif4zAVX(x *complex128, n int, w1, w2, w3 *complex128)

// dit4AVX is one radix-2² DIT pass over the blocks of s ≥ 8 points of x[:n].
//
//go:noescape
func dit4AVX(x *complex128, n, s int, w1, w2, w3 *complex128)

// r2AVX is a radix-2 pass with unit twiddles over pairs of x[:n],
// n a multiple of 4: (x₀, x₁) ← (x₀ + x₁, x₀ − x₁).
//
//go:noescape
func r2AVX(x *complex128, n int)

// dif4uAVX is the last radix-2² DIF pass, on blocks of four with unit
// twiddles; n is a multiple of 4.
//
//go:noescape
func dif4uAVX(x *complex128, n int)

// dit4uAVX is the first radix-2² DIT pass, on blocks of four with unit
// twiddles; n is a multiple of 4.
//
//go:noescape
func dit4uAVX(x *complex128, n int)

// combineAVX is the pair loop of (*plan).combine over the npairs pairs of
// positions at pairs, with w the twiddles (post[r], post[r']) of each pair
// and c the constant factor.
//
//go:noescape
func combineAVX(z, y *complex128, pairs *int32, npairs int, w *complex128, c float64)

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
