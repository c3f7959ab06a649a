// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaq_test

import (
	"fmt"

	"github.com/deltaq-otel/deltaq/deltaq"
)

// Two steps of 1.5 ms each, on 1 ms bins: the composition is centred on
// 3 ms, not shifted into [2, 3) ms.
func ExampleConvolve() {
	step, _ := deltaq.Point(0.0015, 1e-3, 10)
	path, _ := deltaq.Convolve(step, step)
	median, _ := path.Quantile(0.5)
	fmt.Printf("bins %d, median %.4g s\n", path.Bins(), median)
	// Output: bins 20, median 0.003 s
}

// Three branches that each succeed half of the time within the bin: the
// first to finish succeeds with probability 1 − 0.5³.
func ExampleFirstToFinish() {
	b, _ := deltaq.New(1e-3, []float64{0.5})
	d, _ := deltaq.FirstToFinish(b, b, b)
	fmt.Printf("%.3f\n", d.CDF(1e-3))
	// Output: 0.875
}

// Checking an observed ΔQ against the QTA example of the thesis (§2.1.6).
func ExampleQTA_Check() {
	q, _ := deltaq.ThesisQTA(0.015, 0.025, 0.035, 0.05)
	h, _ := deltaq.NewHistogram(1e-3, 50)
	for _, ms := range []float64{5, 12, 18, 22, 24, 31, 33, 40} {
		h.Add(ms / 1000)
	}
	h.AddTimeout()
	obs, _ := h.DeltaQ()
	chk, _ := q.Check(obs)
	for _, p := range chk.Points {
		fmt.Printf("%.0f%% by %.0f ms: observed %.3f ok=%v\n", 100*p.P, 1000*p.Delay, p.Observed, p.OK)
	}
	fmt.Printf("failure %.3f ok=%v\n", chk.Failure, chk.FailureOK)
	// Output:
	// 25% by 15 ms: observed 0.222 ok=false
	// 50% by 25 ms: observed 0.556 ok=true
	// 75% by 35 ms: observed 0.778 ok=true
	// failure 0.111 ok=false
}
