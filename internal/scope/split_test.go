// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package scope

import (
	"encoding/json"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/pmetric"
)

// splitAt cuts md into two requests at its n-th data point, as the
// connector cuts a window's output larger than max_request_bytes
// (connector/deltaqconnector/README.md; internal/core/split.go: a metric
// whose points do not fit is continued in the next request under a copy
// of its name, resource and scope).
func splitAt(md pmetric.Metrics, n int) (first, second pmetric.Metrics) {
	keep := func(before bool) pmetric.Metrics {
		out := pmetric.NewMetrics()
		md.CopyTo(out)
		i := 0
		out.ResourceMetrics().RemoveIf(func(rm pmetric.ResourceMetrics) bool {
			rm.ScopeMetrics().RemoveIf(func(sm pmetric.ScopeMetrics) bool {
				sm.Metrics().RemoveIf(func(m pmetric.Metric) bool {
					numberPoints(m).RemoveIf(func(pmetric.NumberDataPoint) bool {
						i++
						return (i-1 < n) != before
					})
					return numberPoints(m).Len() == 0
				})
				return sm.Metrics().Len() == 0
			})
			return rm.ScopeMetrics().Len() == 0
		})
		return out
	}
	return keep(true), keep(false)
}

// TestScopeWindowInSeveralRequests: a window larger than the connector's
// max_request_bytes comes in several requests, cut between any two data
// points, also within a curve. Each request replaced the probe's curves,
// quantiles and QTA with its own part of them: the terminal drew half a
// curve (or only the series of the last request), a QTA without its points,
// and the page likewise. Both views now show the window as if it had come
// in one request, wherever it was cut.
func TestScopeWindowInSeveralRequests(t *testing.T) {
	batches := demoBatches(t)
	last := demoSlowFrom // a slow window: triggers, broken QTAs
	whole := batches[last].metrics
	total := whole.DataPointCount()
	// Frames without their header line: it counts the batches.
	frame := func(s *scopeState) string {
		_, rest, _ := strings.Cut(renderScope(s, DefaultFrame), "\n")
		return rest
	}
	windows := func(w *scopeWeb) string {
		b, err := json.Marshal(w.windows)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	feed := func(split int) (*scopeState, *scopeWeb) {
		s, w := testScope(), newScopeWeb(DefaultLimits())
		w.now = s.now
		for _, b := range batches[:last] {
			s.addMetrics(b.metrics)
			w.addMetrics(b.metrics)
		}
		parts := []pmetric.Metrics{whole}
		if split > 0 {
			a, b := splitAt(whole, split)
			parts = []pmetric.Metrics{a, b}
		}
		for _, md := range parts {
			s.addMetrics(md)
			w.addMetrics(md)
		}
		return s, w
	}
	s, w := feed(0)
	wantFrame, wantWindows := frame(s), windows(w)
	for i := 1; i < 16; i++ {
		split := total * i / 16
		s, w := feed(split)
		if got := frame(s); got != wantFrame {
			t.Errorf("the window cut at data point %d of %d: the terminal shows\n%s\nwant\n%s", split, total, got, wantFrame)
		}
		if got := windows(w); got != wantWindows {
			t.Errorf("the window cut at data point %d of %d: the page's windows differ from the whole window's", split, total)
		}
	}
}
