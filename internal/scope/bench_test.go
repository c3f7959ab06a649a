// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package scope

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pmetric"
)

// benchState is a browser view and a terminal scope holding 50 probes × 20
// windows of 6 curves of 100 points (600,000 points), the state the hot
// path runs against.
func benchState(b *testing.B) (*scopeState, *scopeWeb) {
	b.Helper()
	l := DefaultLimits()
	l.Windows = 20
	s, w := newScopeState(l), newScopeWeb(l)
	t0 := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	for i := range 20 {
		p := newExporterPayload()
		for j := range 50 {
			for _, series := range seriesOrder {
				p.curve(fmt.Sprintf("p%02d", j), series, 0.001, 100, uniformMass(0.1, 0.9))
			}
		}
		md := shiftWindow(p.md, t0.Add(time.Duration(i)*time.Second).Sub(testWindowEnd))
		s.addMetrics(md)
		w.addMetrics(md)
	}
	return s, w
}

func onePoint() pmetric.Metrics {
	p := newExporterPayload()
	p.gauge(metricFailureRatio, "p07", 0.25)
	return p.md
}

// BenchmarkScopeIngestOnePoint is the hot path of a batch of one point:
// decoded once for each view and recorded, against a state of 600,000
// points.
func BenchmarkScopeIngestOnePoint(b *testing.B) {
	s, w := benchState(b)
	md := onePoint()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		s.addMetrics(md)
		w.addMetrics(md)
	}
}

// BenchmarkScopeIngestOnePointWhileRead is the same while two readers
// fetch /api/state (about 17 MB each) without pause: ingest does not wait
// for their encoding. It reports the states read during the run.
func BenchmarkScopeIngestOnePointWhileRead(b *testing.B) {
	s, w := benchState(b)
	md := onePoint()
	h := w.handler()
	var stop atomic.Bool
	var reads atomic.Int64
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				h.ServeHTTP(discardWriter{http.Header{}}, httptest.NewRequest(http.MethodGet, "http://127.0.0.1/api/state", nil))
				reads.Add(1)
			}
		}()
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		s.addMetrics(md)
		w.addMetrics(md)
	}
	b.StopTimer()
	stop.Store(true)
	wg.Wait()
	b.ReportMetric(float64(reads.Load()), "states-read")
}

// BenchmarkScopeIngestWindow is one window of the demo (3 probes, the
// connector's real output) into both views.
func BenchmarkScopeIngestWindow(b *testing.B) {
	batches := demoBatches(b)
	s, w := newScopeState(DefaultLimits()), newScopeWeb(DefaultLimits())
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		md := batches[i%len(batches)].metrics
		s.addMetrics(md)
		w.addMetrics(md)
	}
}

// discardWriter is a ResponseWriter that keeps nothing.
type discardWriter struct{ h http.Header }

func (d discardWriter) Header() http.Header         { return d.h }
func (d discardWriter) Write(p []byte) (int, error) { return io.Discard.Write(p) }
func (d discardWriter) WriteHeader(int)             {}
