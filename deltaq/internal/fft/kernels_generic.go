//go:build !amd64 || purego

package fft

// useAVX2 is false where there are no assembly kernels; the stubs below are
// never called.
var useAVX2 = false

func dif4AVX(x *complex128, n, s int, w1, w2, w3 *complex128) { panic("fft: no assembly kernels") }
func dif4zAVX(x *complex128, n int, w1, w2, w3 *complex128)   { panic("fft: no assembly kernels") }
func dit4AVX(x *complex128, n, s int, w1, w2, w3 *complex128) { panic("fft: no assembly kernels") }
func r2AVX(x *complex128, n int)                              { panic("fft: no assembly kernels") }
func dif4uAVX(x *complex128, n int)                           { panic("fft: no assembly kernels") }
func dit4uAVX(x *complex128, n int)                           { panic("fft: no assembly kernels") }
func combineAVX(z, y *complex128, pairs *int32, npairs int, w *complex128, c float64) {
	panic("fft: no assembly kernels")
}
func halfSplitAVX(dst, src, cum *float64, n int) (sum, last float64) {
	panic("fft: no assembly kernels")
}
func packAVX(z *complex128, a, b *float64, n int) { panic("fft: no assembly kernels") }
