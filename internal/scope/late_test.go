// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package scope

import (
	"math"
	"reflect"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/deltaq-otel/deltaq/internal/core/coretest"
)

// joined is one request holding the windows of batches, in that order, as
// a batch processor between the connector and the scope sends them.
func joined(batches ...demoBatch) pmetric.Metrics {
	md := pmetric.NewMetrics()
	for _, b := range batches {
		for _, rm := range b.metrics.ResourceMetrics().All() {
			rm.CopyTo(md.ResourceMetrics().AppendEmpty())
		}
	}
	return md
}

// TestScopeOlderWindowKeepsLatest sends the demo's windows 4 and 5 (in 5
// worker_2 is slow: QTA broken, a tenth timed out), then window 3 late, as a
// retry or an exporter's queue may; and, to other views, windows 5 and 4
// in one request, as a batch processor joins them. Both views must show
// window 5 as they do when it comes after 4 alone: the late or joined
// older window's curves, quantiles and verdict were taken for window 5's,
// its QTA shown met and its failure ratio 0.
func TestScopeOlderWindowKeepsLatest(t *testing.T) {
	batches := demoBatches(t)
	now := coretest.T0.Add(time.Hour)
	wantS, wantW := views(DefaultLimits(), &now)
	for _, i := range []int{4, 5} {
		ingest(wantS, wantW, batches[i].metrics)
	}
	if f := wantS.probes["worker_2"].failure; !f.ok || f.v < 0.05 {
		t.Fatalf("window 5's failure ratio of worker_2 is %+v, want 0.1 (demoBatches)", f)
	}
	lateS, lateW := views(DefaultLimits(), &now)
	for _, i := range []int{4, 5, 3} {
		ingest(lateS, lateW, batches[i].metrics)
	}
	joinedS, joinedW := views(DefaultLimits(), &now)
	ingest(joinedS, joinedW, joined(batches[5], batches[4]))

	for _, c := range []struct {
		name string
		s    *scopeState
		w    *scopeWeb
	}{{"late window 3", lateS, lateW}, {"windows 5 and 4 in one request", joinedS, joinedW}} {
		for name, want := range wantS.probes {
			got := c.s.probes[name]
			if !got.updated.Equal(want.updated) || !reflect.DeepEqual(got.curves, want.curves) ||
				!reflect.DeepEqual(got.quantiles, want.quantiles) || !reflect.DeepEqual(got.qta, want.qta) ||
				got.failure != want.failure || got.violation != want.violation || got.divergence != want.divergence ||
				!reflect.DeepEqual(got.qoo, want.qoo) {
				t.Errorf("%s: terminal's %s is not window 5's: failure %+v, QTA verdict %+v, quantiles %v; want %+v, %+v, %v",
					c.name, name, got.failure, got.violation, got.quantiles, want.failure, want.violation, want.quantiles)
			}
		}
		for name, wantHist := range wantW.windows {
			hist := c.w.windows[name]
			want, got := wantHist[len(wantHist)-1], hist[len(hist)-1]
			if got.End != want.End || !reflect.DeepEqual(got.Curves, want.Curves) || !reflect.DeepEqual(got.Quantiles, want.Quantiles) ||
				!reflect.DeepEqual(got.Failure, want.Failure) || !reflect.DeepEqual(got.Violation, want.Violation) ||
				!reflect.DeepEqual(got.Divergence, want.Divergence) || !reflect.DeepEqual(got.QTA, want.QTA) || !reflect.DeepEqual(got.QoO, want.QoO) {
				t.Errorf("%s: page's latest window of %s is not window 5's: end %d failure %v verdict %v; want end %d failure %v verdict %v",
					c.name, name, got.End, deref(got.Failure), deref(got.Violation), want.End, deref(want.Failure), deref(want.Violation))
			}
		}
	}
	if n := len(lateW.windows["worker_2"]); n != 2 {
		t.Errorf("page keeps %d windows of worker_2 after windows 4, 5 and 3 late, want 2 (4 and 5)", n)
	}
}

// TestScopeLostWindowNotCounted sends the demo's windows 3, 4, 6 and 7,
// window 5 lost (the collector could not send it), each window of 40 jobs
// (demoBatches). The rise of the cumulative counts from window 4 to 6 is of
// two windows: shown as window 6's own, it said 80 jobs a window where 40
// ran. Window 6's own counts are not known; window 7's are 40.
func TestScopeLostWindowNotCounted(t *testing.T) {
	batches := demoBatches(t)
	now := coretest.T0.Add(time.Hour)
	s, w := views(DefaultLimits(), &now)
	for _, i := range []int{3, 4, 6} {
		ingest(s, w, batches[i].metrics)
	}
	p := s.probes["worker_1"]
	if got := outcomesAt(p.outcomes, p.updated).window; len(got) != 0 {
		t.Errorf("terminal: window 6's own counts %v after window 5 was lost, want none known", got)
	}
	if hist := w.windows["worker_1"]; len(hist[len(hist)-1].Outcomes) != 0 {
		t.Errorf("page: window 6's own counts %v after window 5 was lost, want none known", hist[len(hist)-1].Outcomes)
	}
	ingest(s, w, batches[7].metrics)
	want := map[string]float64{"success": demoJobs, "timeout": 0, "failure": 0}
	p = s.probes["worker_1"]
	if got := outcomesAt(p.outcomes, p.updated).window; !reflect.DeepEqual(got, want) {
		t.Errorf("terminal: window 7's own counts %v, want %v", got, want)
	}
	if hist := w.windows["worker_1"]; !reflect.DeepEqual(hist[len(hist)-1].Outcomes, want) {
		t.Errorf("page: window 7's own counts %v, want %v", hist[len(hist)-1].Outcomes, want)
	}
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

// TestScopeMalformedPointHidesNoWindow: a malformed point (a NaN) stamped
// after a window's end, in the window's request, is ignored and counted; it
// does not make the window's own points count as those of an older window.
func TestScopeMalformedPointHidesNoWindow(t *testing.T) {
	batches := demoBatches(t)
	now := coretest.T0.Add(time.Hour)
	s, w := views(DefaultLimits(), &now)
	md := joined(batches[5])
	m := md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().AppendEmpty()
	m.SetName(metricFailureRatio)
	dp := m.SetEmptyGauge().DataPoints().AppendEmpty()
	dp.Attributes().PutStr(attrProbe, "worker_2")
	dp.SetTimestamp(pcommon.NewTimestampFromTime(coretest.At(6500 * time.Millisecond)))
	dp.SetDoubleValue(math.NaN())
	ingest(s, w, md)
	if f := s.probes["worker_2"].failure; !f.ok || f.v < 0.05 || s.malformed != 1 {
		t.Errorf("terminal: worker_2's failure ratio %+v, %d malformed; want window 5's 0.1 and 1", f, s.malformed)
	}
	if hist := w.windows["worker_2"]; len(hist) != 1 || hist[0].Failure == nil || *hist[0].Failure < 0.05 {
		t.Errorf("page: worker_2's windows %d, failure %v; want one of failure 0.1", len(hist), deref(hist[len(hist)-1].Failure))
	}
}
