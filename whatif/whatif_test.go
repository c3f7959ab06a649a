// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package whatif

import (
	"math"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in         string
		a, b, fail float64
		dist, rm   bool
	}{
		{in: "svc.op=0.5*X+1ms", a: 0.5, b: 0.001},
		{in: "svc.op = X", a: 1},
		{in: "svc.op=2 * X", a: 2},
		{in: "svc.op=X+3ms + never 5%", a: 1, b: 0.003, fail: 0.05},
		{in: "svc.op=0*X+5ms", a: 0, b: 0.005},
		{in: "svc.op=exp(5ms)", a: 1, dist: true},
		{in: "svc.op=choice(0.9:point(1ms),0.1:never) + never 1%", a: 1, dist: true, fail: 0.01},
		{in: "svc.op=remove", a: 1, rm: true},
		{in: "GET /a.b=X", a: 1}, // the target is everything before the first '='
	} {
		iv, err := Parse(tc.in)
		if err != nil {
			t.Errorf("%s: %v", tc.in, err)
			continue
		}
		if iv.A != tc.a || math.Abs(iv.B-tc.b) > 1e-15 || math.Abs(iv.Fail-tc.fail) > 1e-15 || (iv.Dist != nil) != tc.dist || iv.Remove != tc.rm {
			t.Errorf("%s: %+v", tc.in, iv)
		}
	}
	for _, in := range []string{"svc.op", "=X", "svc.op=", "svc.op=-1*X", "svc.op=X-1ms", "svc.op=X+never 101%", "svc.op=Y", "svc.op=X+1"} {
		if iv, err := Parse(in); err == nil {
			t.Errorf("%s: accepted as %+v", in, iv)
		}
	}
}
