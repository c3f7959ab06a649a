// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package scope

// What both views show of a window: its own outcome counts beside it, the
// totals labelled as such, what a refused probe counts, a window end and
// triggers that no timestamp from the future can hold, and the date of a
// window or trigger of another day.

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// outcomesSince adds a probe's cumulative outcome counts as the connector
// sends them: a monotonic sum of the stream started at start, at window end
// end.
func (p *exporterPayload) outcomesSince(probe string, start, end time.Time, counts map[string]int64) {
	m := p.sm.Metrics().AppendEmpty()
	m.SetName(metricOutcomes)
	sum := m.SetEmptySum()
	sum.SetIsMonotonic(true)
	sum.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	for _, k := range []string{"success", "timeout", "failure"} {
		if n, ok := counts[k]; ok {
			dp := sum.DataPoints().AppendEmpty()
			dp.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
			dp.SetTimestamp(pcommon.NewTimestampFromTime(end))
			dp.Attributes().PutStr(attrProbe, probe)
			dp.Attributes().PutStr(attrOutcome, k)
			dp.SetIntValue(n)
		}
	}
}

// pageWindow is what the page reads of a window in /api/state.
type pageWindow struct {
	End         int64              `json:"end"`
	Outcomes    map[string]float64 `json:"outcomes"`
	Totals      map[string]float64 `json:"totals"`
	TotalsSince int64              `json:"totals_since"`
}

// pageWindows returns the windows of probe in the view's /api/state.
func pageWindows(t *testing.T, w *scopeWeb, probe string) []pageWindow {
	t.Helper()
	var st struct {
		Windows map[string][]pageWindow `json:"windows"`
	}
	if err := json.Unmarshal(stateJSON(t, w), &st); err != nil {
		t.Fatal(err)
	}
	return st.Windows[probe]
}

// TestScopeOutcomesOfTheWindow: the counts beside "window ending …" are the
// window's own, the rise of the connector's cumulative deltaq.outcomes since
// the window before it, in both views; the cumulative counts are shown too,
// labelled as totals since the stream's start. The first window the scope
// receives has no window before it: its own counts are not known (–), only
// the totals. A stream that starts again after the window before it (the
// connector restarted, or forgot the probe) counts from its start; a kind a
// window did not send has no count in it.
func TestScopeOutcomesOfTheWindow(t *testing.T) {
	start := testWindowEnd.Add(-time.Hour)
	now := testWindowEnd.Add(10 * time.Second)
	s, w := views(DefaultLimits(), &now)
	window := func(i int, start time.Time, counts map[string]int64) {
		p := newExporterPayload()
		p.curve("api", seriesObserved, 0.001, 10, uniformMass(0.01, 0.75))
		p.outcomesSince("api", start, testWindowEnd, counts)
		ingest(s, w, shiftWindow(p.md, time.Duration(i)*time.Second)) // every point's timestamp
	}
	window(0, start, map[string]int64{"success": 900, "timeout": 60, "failure": 40})
	frame := renderScope(s, defaultScopeFrame)
	assertContainsAll(t, "the first window's frame", frame,
		"── api ── window ending 12:00:05.000Z\nQTA - │ in window: – (no window before it to count from)\n"+
			"total since 11:00:05Z: success 900, timeout 60, failure 40\n")

	window(1, start, map[string]int64{"success": 990, "timeout": 65, "failure": 40})
	frame = renderScope(s, defaultScopeFrame)
	assertContainsAll(t, "the second window's frame", frame,
		"── api ── window ending 12:00:06.000Z\nQTA - │ in window: success 90, timeout 5, failure 0\n"+
			"total since 11:00:05Z: success 990, timeout 65, failure 40\n")

	// The connector restarts: its stream starts at the next window's start.
	restart := testWindowEnd.Add(time.Second)
	window(2, restart, map[string]int64{"success": 12, "timeout": 1, "failure": 0})
	frame = renderScope(s, defaultScopeFrame)
	assertContainsAll(t, "the frame after a restart", frame,
		"QTA - │ in window: success 12, timeout 1, failure 0\n"+
			"total since 12:00:06Z: success 12, timeout 1, failure 0\n")

	// A window that sends success alone: no count of the others in it.
	window(3, restart, map[string]int64{"success": 20})
	frame = renderScope(s, defaultScopeFrame)
	assertContainsAll(t, "a window of one kind", frame, "QTA - │ in window: success 8\n")

	wins := pageWindows(t, w, "api")
	if len(wins) != 4 {
		t.Fatalf("the page has %d windows of api, want 4", len(wins))
	}
	want := []struct {
		outcomes, totals map[string]float64
		since            time.Time
	}{
		{map[string]float64{}, map[string]float64{"success": 900, "timeout": 60, "failure": 40}, start},
		{map[string]float64{"success": 90, "timeout": 5, "failure": 0}, map[string]float64{"success": 990, "timeout": 65, "failure": 40}, start},
		{map[string]float64{"success": 12, "timeout": 1, "failure": 0}, map[string]float64{"success": 12, "timeout": 1, "failure": 0}, restart},
		{map[string]float64{"success": 8}, map[string]float64{"success": 20, "timeout": 1, "failure": 0}, restart},
	}
	for i, win := range wins {
		if !maps.Equal(win.Outcomes, want[i].outcomes) || !maps.Equal(win.Totals, want[i].totals) || win.TotalsSince != want[i].since.UnixMilli() {
			t.Errorf("page window %d: outcomes %v, totals %v since %d; want %v, %v since %d",
				i, win.Outcomes, win.Totals, win.TotalsSince, want[i].outcomes, want[i].totals, want[i].since.UnixMilli())
		}
	}
}

// TestScopeWindowOutcomesOfTheDemo: in the demo's windows, sent by the real
// builders, every window after the first has its own 40 jobs (5 in the
// lull) beside it, and the totals grow by as many.
func TestScopeWindowOutcomesOfTheDemo(t *testing.T) {
	now := time.Unix(1_700_000_000, 0).Add(time.Hour)
	s, w := views(testLimits(demoWindows), &now)
	for _, b := range demoBatches(t) {
		ingest(s, w, b.metrics)
	}
	for _, probe := range []string{"job", "worker_1", "worker_2"} {
		wins := pageWindows(t, w, probe)
		if len(wins) != demoWindows {
			t.Fatalf("%s: %d windows, want %d", probe, len(wins), demoWindows)
		}
		total := 0.0
		for i, win := range wins {
			n := win.Outcomes["success"] + win.Outcomes["timeout"] + win.Outcomes["failure"]
			want := float64(demoJobs)
			if i == demoLull {
				want = demoLullJobs
			}
			if i == 0 && len(win.Outcomes) != 0 || i > 0 && n != want {
				t.Errorf("%s window %d: outcomes %v, want %v in all (none known in the first)", probe, i, win.Outcomes, want)
			}
			total += want
			if got := win.Totals["success"] + win.Totals["timeout"] + win.Totals["failure"]; got != total {
				t.Errorf("%s window %d: totals %v, want %v in all", probe, i, win.Totals, total)
			}
		}
	}
	// job timed out a tenth of its 40 instances in each of the 2 slow
	// windows.
	frame := renderScope(s, defaultScopeFrame)
	assertContainsAll(t, "the demo's last frame", frame,
		"── job ── window ending 22:13:30.000Z\n",
		// The stream starts with the window before the first, closed unseen.
		fmt.Sprintf("in window: success 40, timeout 0, failure 0\ntotal since 22:13:19Z: success %d, timeout 8, failure 0\n", demoAllJobs-8))
}

// TestScopeProbesRefusedCountsPoints: probes_refused counts the data points
// of probes that found no slot, in the terminal and on the page alike (the
// page counted a refused probe once a batch, the terminal each of its
// points), and both say so.
func TestScopeProbesRefusedCountsPoints(t *testing.T) {
	l := DefaultLimits()
	l.Probes = 1
	now := testWindowEnd.Add(time.Second)
	s, w := views(l, &now)
	first := newExporterPayload()
	first.curve("api", seriesObserved, 0.001, 10, uniformMass(0.01, 1))
	ingest(s, w, first.md)
	// Two batches of probe "late": 10 CDF points, a quantile and a failure
	// ratio each, all refused.
	for range 2 {
		p := newExporterPayload()
		p.curve("late", seriesObserved, 0.001, 10, uniformMass(0.01, 1))
		p.quantile("late", seriesObserved, 0.5, 0.005)
		p.gauge(metricFailureRatio, "late", 0)
		ingest(s, w, p.md)
	}
	if s.ProbesRefused != 24 {
		t.Errorf("terminal: probes_refused %d, want the 24 data points of late", s.ProbesRefused)
	}
	if got := w.snapshotStats().ProbesRefused; got != 24 {
		t.Errorf("page: probes_refused %d, want the 24 data points of late, as the terminal", got)
	}
	assertContainsAll(t, "frame", renderScope(s, defaultScopeFrame),
		"bounds cut: 24 data points of probes without a slot (--max-probes)")
	js, err := webAssets.ReadFile("web/app.js")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(js), `["probes_refused", "data points of probes without a slot"]`) {
		t.Error("the page does not label probes_refused as data points of probes without a slot")
	}
}

// TestScopeRefusesPointsFromTheFuture: a data point stamped far ahead of the
// scope's clock would have held "window ending <then>" for every later
// window of its probe (the newest timestamp is the window's end), and merged
// every later window of the page into it. It is refused as malformed; the
// windows before and after it are shown as they come. A point a little
// ahead (clocks differ) is taken.
func TestScopeRefusesPointsFromTheFuture(t *testing.T) {
	now := testWindowEnd.Add(time.Second)
	s, w := views(DefaultLimits(), &now)
	window := func(i int) pmetric.Metrics {
		p := newExporterPayload()
		p.curve("api", seriesObserved, 0.001, 10, uniformMass(0.01, 0.75))
		p.gauge(metricFailureRatio, "api", 0.25)
		return shiftWindow(p.md, time.Duration(i)*time.Second)
	}
	ingest(s, w, window(0))
	future := newExporterPayload()
	future.gauge(metricFailureRatio, "api", 0.5)
	future.gauge(metricFailureRatio, "ghost", 0.5)
	ingest(s, w, shiftWindow(future.md, 100*365*24*time.Hour))
	now = now.Add(time.Second)
	ingest(s, w, window(1))
	frame := renderScope(s, defaultScopeFrame)
	assertContainsAll(t, "frame", frame, "── api ── window ending 12:00:06.000Z\nQTA - │ failure 25.00%",
		"ignored 2 malformed data points")
	if s.probes["ghost"] != nil || s.malformed != 2 {
		t.Errorf("terminal: probe ghost kept %v, %d malformed; want none kept, 2 malformed", s.probes["ghost"] != nil, s.malformed)
	}
	wins := pageWindows(t, w, "api")
	if len(wins) != 2 || wins[0].End != testWindowEnd.UnixMilli() || wins[1].End != testWindowEnd.Add(time.Second).UnixMilli() {
		t.Errorf("page: windows %+v, want the two ending at %v and a second later", wins, testWindowEnd)
	}
	if st := w.snapshotStats(); st.Malformed != 2 || len(pageWindows(t, w, "ghost")) != 0 {
		t.Errorf("page: %d malformed, ghost kept %v; want 2 and none", st.Malformed, len(pageWindows(t, w, "ghost")) != 0)
	}

	// 30 s ahead of the clock: taken.
	ingest(s, w, window(32))
	if got := s.probes["api"].updated; !got.Equal(testWindowEnd.Add(32 * time.Second)) {
		t.Errorf("a window 30 s ahead of the clock: the terminal's window ends %v, want it taken", got)
	}
	if wins := pageWindows(t, w, "api"); len(wins) != 3 {
		t.Errorf("a window 30 s ahead of the clock: the page has %d windows, want 3", len(wins))
	}
}

// TestOutcomeCountNext: the window's own count of one outcome kind is the
// rise of its cumulative total since the window before it, of the same
// stream; a repeated or split window keeps its base, a late point of an
// older window changes nothing, and a stream started again counts from zero
// only when it started after the window the scope saw last.
func TestOutcomeCountNext(t *testing.T) {
	t0 := testWindowEnd
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	type step struct {
		v         float64
		start, at time.Time
		n         float64 // the window's own count, when ok
		ok        bool
	}
	for _, c := range []struct {
		name  string
		steps []step
	}{
		{"the first window is not known", []step{{v: 100, start: at(-60), at: at(0)}}},
		{"a rise within one stream", []step{{v: 100, start: at(-60), at: at(0)}, {v: 130, start: at(-60), at: at(1), n: 30, ok: true}}},
		{"a window again keeps its base", []step{
			{v: 100, start: at(-60), at: at(0)}, {v: 130, start: at(-60), at: at(1), n: 30, ok: true},
			{v: 131, start: at(-60), at: at(1), n: 31, ok: true}}},
		{"a late point of an older window", []step{
			{v: 100, start: at(-60), at: at(0)}, {v: 130, start: at(-60), at: at(1), n: 30, ok: true},
			{v: 90, start: at(-60), at: at(-1), n: 30, ok: true}}},
		{"a stream started after the last window", []step{
			{v: 100, start: at(-60), at: at(0)}, {v: 7, start: at(0), at: at(1), n: 7, ok: true}}},
		{"a stream started before the last window ended", []step{
			{v: 100, start: at(-60), at: at(0)}, {v: 7, start: at(-1), at: at(1)}}},
		{"windows lost between", []step{
			{v: 100, start: at(-60), at: at(0)}, {v: 130, start: at(-60), at: at(1), n: 30, ok: true},
			{v: 190, start: at(-60), at: at(3)}, {v: 200, start: at(-60), at: at(4), n: 10, ok: true}}},
		{"a total that fell, without a start", []step{
			{v: 100, at: at(0)}, {v: 120, at: at(1), n: 20, ok: true}, {v: 7, at: at(2)}, {v: 9, at: at(3), n: 2, ok: true}}},
	} {
		var oc outcomeCount
		for i, s := range c.steps {
			oc = oc.next(s.v, s.start, s.at)
			n, ok := oc.inWindow(oc.at)
			if n != s.n || ok != s.ok {
				t.Errorf("%s, step %d: %v (%v), want %v (%v)", c.name, i, n, ok, s.n, s.ok)
			}
		}
	}
	// Counts of an earlier window than the one shown are not its own.
	oc := outcomeCount{}.next(100, at(-60), at(0)).next(130, at(-60), at(1))
	if _, ok := oc.inWindow(at(2)); ok {
		t.Error("the counts of the window ending at 1 s are shown as those of the window ending at 2 s")
	}
}

// triggerLogs holds one deltaq.trigger record of probe "api" at each of
// times, in that order.
func triggerLogs(times ...time.Time) plog.Logs {
	ld := plog.NewLogs()
	lrs := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords()
	for _, at := range times {
		tr := lrs.AppendEmpty()
		tr.SetEventName(eventTrigger)
		tr.SetTimestamp(pcommon.NewTimestampFromTime(at))
		tr.SetSeverityText("WARN")
		tr.Attributes().PutStr(attrProbe, "api")
		tr.Attributes().PutStr(attrTrigger, "failure")
	}
	return ld
}

// TestScopeRefusesTriggersFromTheFuture: the triggers are kept in time
// order and the oldest dropped, so a record stamped far ahead of the
// scope's clock stayed listed as the newest for ever, and took one of the
// places (8 in the terminal, 200 on the page) from every real trigger
// after it. It is refused as malformed in both views, counted neither
// among the triggers seen nor kept; a record a little ahead (clocks differ)
// is taken, and one stamped only by its observed time is judged by that.
func TestScopeRefusesTriggersFromTheFuture(t *testing.T) {
	now := testWindowEnd
	s, w := views(DefaultLimits(), &now)
	logs := func(ld plog.Logs) {
		s.addLogs(ld)
		w.addLogs(ld)
	}
	future := triggerLogs(testWindowEnd.Add(100*365*24*time.Hour), testWindowEnd.Add(2*time.Minute))
	// Observed far ahead, without a timestamp of its own.
	observed := future.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().AppendEmpty()
	triggerLogs(time.Time{}).ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(0).CopyTo(observed)
	observed.SetTimestamp(0)
	observed.SetObservedTimestamp(pcommon.NewTimestampFromTime(testWindowEnd.Add(time.Hour)))
	logs(future)
	// maxWebTriggers real triggers, one a second, the clock following
	// them; the last 30 s ahead of it.
	var real []time.Time
	for i := range maxWebTriggers {
		real = append(real, testWindowEnd.Add(time.Duration(i+1)*time.Second))
	}
	now = real[len(real)-1].Add(-30 * time.Second)
	logs(triggerLogs(real...))

	if s.malformed != 3 || s.triggersSeen != maxWebTriggers || len(s.triggers) != maxTriggers {
		t.Errorf("terminal: %d malformed, %d triggers seen, %d kept; want 3, %d, %d", s.malformed, s.triggersSeen, len(s.triggers), maxWebTriggers, maxTriggers)
	}
	for i, ev := range s.triggers {
		if want := real[len(real)-maxTriggers+i]; !ev.at.Equal(want) {
			t.Errorf("terminal: trigger %d at %v, want %v (the newest real ones)", i, ev.at, want)
		}
	}
	frame := renderScope(s, defaultScopeFrame)
	assertContainsAll(t, "frame", frame, "ignored 3 malformed", "trigger records (stamped more than --max-ahead ahead",
		"triggers (latest 8, newest last):\n  12:03:18.000Z WARN  api failure\n")
	if strings.Contains(frame, "2126-") {
		t.Errorf("the frame lists the trigger from the future:\n%s", frame)
	}
	st := w.snapshotStats()
	w.mu.Lock()
	kept := slices.Clone(w.triggers)
	w.mu.Unlock()
	if st.Malformed != 3 || st.TriggersSeen != maxWebTriggers || len(kept) != maxWebTriggers {
		t.Errorf("page: %d malformed, %d triggers seen, %d kept; want 3, %d, %d", st.Malformed, st.TriggersSeen, len(kept), maxWebTriggers, maxWebTriggers)
	}
	for i, tr := range kept {
		if tr.Time != real[i].UnixMilli() {
			t.Errorf("page: trigger %d at %d, want %d (every real one)", i, tr.Time, real[i].UnixMilli())
			break
		}
	}
}

// TestScopeShowsTheDateOfAnotherDay: "window ending" and the triggers'
// times are written by their time of day when they are of the scope's
// today (UTC), and with their date when not: a window of another day
// looked like one of today.
func TestScopeShowsTheDateOfAnotherDay(t *testing.T) {
	s := newScopeState(DefaultLimits())
	s.addMetrics(syntheticWindow())
	s.addLogs(syntheticTriggers())
	for _, c := range []struct {
		name   string
		now    time.Time
		window string
		first  string
	}{
		{"later the same day", time.Date(2026, 11, 21, 23, 59, 59, 0, time.UTC), "12:00:05.000Z", "12:00:04.000Z"},
		{"the next day", time.Date(2026, 11, 22, 0, 0, 1, 0, time.UTC), "2026-11-21 12:00:05.000Z", "2026-11-21 12:00:04.000Z"},
		{"a day before", testWindowEnd.Add(-24 * time.Hour), "2026-11-21 12:00:05.000Z", "2026-11-21 12:00:04.000Z"},
	} {
		s.now = func() time.Time { return c.now }
		frame := renderScope(s, defaultScopeFrame)
		assertContainsAll(t, c.name, frame, "── checkout ── window ending "+c.window+"\n", "── search ── window ending "+c.window+"\n",
			"\n  "+c.first+" WARN  search qta ")
	}
}
