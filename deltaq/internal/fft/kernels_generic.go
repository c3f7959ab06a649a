// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

//go:build !amd64 || purego

package fft

// useAVX2 is false where there are no assembly kernels; the stubs below are
// never called.
var useAVX2 = false

func dif4AVX(re, im *float64, n, s int, tw *float64) { panic("fft: no assembly kernels") }
func dif4zAVX(re, im *float64, n int, tw *float64)   { panic("fft: no assembly kernels") }
func dif2AVX(re, im *float64, n int, tw *float64)    { panic("fft: no assembly kernels") }
func dif2zAVX(re, im *float64, n int, tw *float64)   { panic("fft: no assembly kernels") }
func dif16AVX(re, im *float64, n int, tw *float64)   { panic("fft: no assembly kernels") }
func dit16AVX(re, im *float64, n int, tw *float64)   { panic("fft: no assembly kernels") }
func dit4AVX(re, im *float64, n, s int, tw *float64) { panic("fft: no assembly kernels") }
func dit2AVX(re, im *float64, n int, tw *float64)    { panic("fft: no assembly kernels") }
func combineAVX(re, im, yre, yim *float64, m int, tw *float64, c float64) {
	panic("fft: no assembly kernels")
}
func halfSplitAVX(dst, src, cum *float64, n int) (sum, last float64) {
	panic("fft: no assembly kernels")
}
func packAVX(z *complex128, a, b *float64, n int) { panic("fft: no assembly kernels") }
