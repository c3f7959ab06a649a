// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package scope

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/deltaq-otel/deltaq/internal/otlprecv"
)

// sseFrame is one Server-Sent Event as read off the wire.
type sseFrame struct {
	event, data string
	comment     bool
}

// readSSE reads the next frame: lines up to a blank line. It fails on any
// line that is not a field the scope sends.
func readSSE(t *testing.T, r *bufio.Reader) sseFrame {
	t.Helper()
	var f sseFrame
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("read event stream: %v (frame so far %+v)", err, f)
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "":
			return f
		case strings.HasPrefix(line, ":"):
			f.comment = true
		case strings.HasPrefix(line, "event: "):
			f.event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			if f.data != "" {
				t.Fatalf("two data lines in one frame: %q", line)
			}
			f.data = strings.TrimPrefix(line, "data: ")
		case strings.HasPrefix(line, "retry: "):
			f.event = "retry"
		default:
			t.Fatalf("unexpected line in the event stream: %q", line)
		}
	}
}

// openEvents connects to the view's event stream and returns its reader
// after the retry frame and the first state, decoded: its head, then its
// triggers and its windows (pending of them) in frames within the frame
// size.
func openEvents(t *testing.T, base string) (*bufio.Reader, webState, func()) {
	t.Helper()
	res, err := http.Get(base + "/events")
	if err != nil {
		t.Fatal(err)
	}
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("events Content-Type %q", ct)
	}
	r := bufio.NewReader(res.Body)
	if f := readSSE(t, r); f.event != "retry" {
		t.Fatalf("first frame %+v, want retry", f)
	}
	if f := readSSE(t, r); f.event != "hello" {
		t.Fatalf("second frame %+v, want hello", f)
	}
	f := readSSE(t, r)
	if f.event != "state" {
		t.Fatalf("third frame %+v, want state", f)
	}
	var st webState
	if err := json.Unmarshal([]byte(f.data), &st); err != nil {
		t.Fatalf("state: %v", err)
	}
	for got := 0; got < st.Pending || len(st.Triggers) < st.PendingTriggers; {
		f := readSSE(t, r)
		if len(f.data) > DefaultLimits().FrameBytes {
			t.Errorf("a %s frame of the state holds %d bytes, over the %d of a frame", f.event, len(f.data), DefaultLimits().FrameBytes)
		}
		var m struct {
			Windows  []*webWindow `json:"windows"`
			Triggers []webTrigger `json:"triggers"`
		}
		if err := json.Unmarshal([]byte(f.data), &m); err != nil || f.event != "window" && f.event != "trigger" {
			t.Fatalf("state frame %q: %v", f.event, err)
		}
		st.Triggers = append(st.Triggers, m.Triggers...)
		for _, win := range m.Windows {
			st.Windows[win.Probe] = append(st.Windows[win.Probe], win)
		}
		got += len(m.Windows)
	}
	return r, st, func() { res.Body.Close() }
}

// otlpQuantiles returns the deltaq.quantile points of md: probe → series →
// q → seconds.
func otlpQuantiles(md pmetric.Metrics) map[string]map[string]map[float64]float64 {
	out := map[string]map[string]map[float64]float64{}
	for m := range otlprecv.Metrics(md) {
		if m.Name() != metricQuantile {
			continue
		}
		for _, dp := range m.Gauge().DataPoints().All() {
			probe, series := stringAttr(dp.Attributes(), attrProbe), stringAttr(dp.Attributes(), attrSeries)
			q, _ := floatAttr(dp.Attributes(), attrQ)
			if out[probe] == nil {
				out[probe] = map[string]map[float64]float64{}
			}
			if out[probe][series] == nil {
				out[probe][series] = map[float64]float64{}
			}
			out[probe][series][q] = dp.DoubleValue()
		}
	}
	return out
}

// TestScopeWebAssets: the page and its assets are served from the binary
// with their content types and a policy that allows only the page's own.
func TestScopeWebAssets(t *testing.T) {
	srv := httptest.NewServer(newScopeWeb(testLimits(4)).handler())
	defer srv.Close()
	for _, c := range []struct {
		path, ctype, contains string
	}{
		{"/", "text/html; charset=utf-8", `<script src="/static/app.js" defer></script>`},
		{"/static/app.js", "text/javascript; charset=utf-8", `new EventSource("/events")`},
		{"/static/style.css", "text/css; charset=utf-8", "canvas.cdf"},
	} {
		res, err := http.Get(srv.URL + c.path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != c.ctype {
			t.Errorf("%s: status %d, Content-Type %q; want 200, %q", c.path, res.StatusCode, res.Header.Get("Content-Type"), c.ctype)
		}
		if !strings.Contains(string(body), c.contains) {
			t.Errorf("%s lacks %q", c.path, c.contains)
		}
		if csp := res.Header.Get("Content-Security-Policy"); !strings.HasPrefix(csp, "default-src 'self'") {
			t.Errorf("%s: Content-Security-Policy %q", c.path, csp)
		}
		if res.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: no nosniff", c.path)
		}
	}
	for path, want := range map[string]int{
		"/static/missing.js": http.StatusNotFound, "/api/snapshot/1": http.StatusNotFound,
		"/api/snapshot/x": http.StatusBadRequest, "/index.html/../app.js": http.StatusNotFound,
	} {
		res, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != want && !(want == http.StatusNotFound && res.StatusCode == http.StatusMovedPermanently) {
			t.Errorf("%s: status %d, want %d", path, res.StatusCode, want)
		}
	}
}

// TestScopeWebEvents follows one browser's stream through the demo
// workload's windows: a state first, then one "window" event per batch whose
// quantiles are the OTLP data's, "trigger" events when worker_2 slows down
// (window 5), and a "snapshot" event when its snapshot completes (2 windows
// after the trigger's).
func TestScopeWebEvents(t *testing.T) {
	batches := demoBatches(t)
	w := newScopeWeb(testLimits(4))
	srv := httptest.NewServer(w.handler())
	defer srv.Close()
	defer w.close()
	r, st, done := openEvents(t, srv.URL)
	defer done()
	if st.K != 4 || len(st.Windows) != 0 || len(st.Triggers) != 0 {
		t.Fatalf("first state %+v, want K 4 and nothing else", st)
	}
	var triggers []webTrigger
	var snapshots []webSnapshotSummary
	for i, b := range batches {
		w.addLogs(b.logs)
		w.addMetrics(b.metrics)
		for {
			f := readSSE(t, r)
			if f.comment {
				continue
			}
			switch f.event {
			case "trigger":
				var m struct{ Triggers []webTrigger }
				if err := json.Unmarshal([]byte(f.data), &m); err != nil {
					t.Fatal(err)
				}
				triggers = append(triggers, m.Triggers...)
				continue
			case "snapshot":
				var s webSnapshotSummary
				if err := json.Unmarshal([]byte(f.data), &s); err != nil {
					t.Fatal(err)
				}
				snapshots = append(snapshots, s)
				continue
			case "window":
			default:
				t.Fatalf("batch %d: event %+v", i, f)
			}
			var m struct {
				Windows []*webWindow
				Stats   webStats
			}
			if err := json.Unmarshal([]byte(f.data), &m); err != nil {
				t.Fatal(err)
			}
			if len(m.Windows) != 3 || m.Stats.Batches != i+1 {
				t.Fatalf("batch %d: %d windows, stats %+v", i, len(m.Windows), m.Stats)
			}
			want := otlpQuantiles(b.metrics)
			for _, win := range m.Windows {
				for series, qs := range want[win.Probe] {
					got := win.Quantiles[series]
					if len(got) != len(qs) {
						t.Errorf("batch %d %s %s: quantiles %v, want %v", i, win.Probe, series, got, qs)
					}
					for _, qd := range got {
						if qs[qd[0]] != qd[1] {
							t.Errorf("batch %d %s %s q %g = %g, want %g", i, win.Probe, series, qd[0], qd[1], qs[qd[0]])
						}
					}
				}
				if i == demoSlowFrom && win.Probe == "worker_2" {
					// 4 of 40 timed out.
					if win.Failure == nil || math.Abs(*win.Failure-0.1) > 1e-12 || win.Violation == nil || *win.Violation != 1 {
						t.Errorf("slow window of worker_2: failure %v violation %v, want 0.1 and 1", win.Failure, win.Violation)
					}
				}
			}
			break
		}
		if i < demoSlowFrom && len(triggers) > 0 {
			t.Fatalf("triggers before the slow-down: %+v", triggers)
		}
	}
	kinds := map[string]bool{}
	for _, tr := range triggers {
		kinds[tr.Probe+" "+tr.Kind] = true
		if tr.Snapshot != 1 && tr.Probe == "worker_2" {
			t.Errorf("trigger %+v not in snapshot 1", tr)
		}
	}
	for _, k := range []string{"worker_2 qta", "worker_2 failure", "job qta"} {
		if !kinds[k] {
			t.Errorf("no %s trigger among %v", k, kinds)
		}
	}
	// Snapshot 1: 2 windows before the trigger's, it, and 2 after.
	if len(snapshots) == 0 || snapshots[0].ID != 1 || snapshots[0].Windows != 5 ||
		strings.Join(snapshots[0].Probes, ",") != "job,worker_1,worker_2" {
		t.Errorf("snapshot events %+v, want snapshot 1 of 5 windows of job, worker_1, worker_2", snapshots)
	}
}

// checkWebQoO checks the Quality of Outcome of the windows 6 to 9 of a
// probe of demoBatches as /api/state sends them (TestScopeDecodesTheObserversQoO
// has the reasons): window 6 slow, job's score its loss component, set by
// loss; the lull, window 8, job's scores withheld and worker_2's 0 set by
// rate; window 9 at 100 with nothing setting it; worker_1 has no scores.
func checkWebQoO(t *testing.T, probe string, hist []*webWindow) {
	t.Helper()
	if probe == "worker_1" {
		for _, win := range hist {
			if win.QoO != nil {
				t.Errorf("worker_1 has no requirement, got %v", win.QoO)
			}
		}
		return
	}
	slow, lull, last := hist[0].QoO[seriesObserved], hist[2].QoO[seriesObserved], hist[3].QoO[seriesObserved]
	if slow == nil || lull == nil || last == nil {
		t.Fatalf("%s: observed scores %v, %v, %v", probe, slow, lull, last)
	}
	if last.Score == nil || *last.Score != 100 || last.SetBy != nil || last.Withheld {
		t.Errorf("%s window 9: %+v, want 100", probe, last)
	}
	if probe == "job" {
		if slow.Score == nil || math.Abs(*slow.Score-demoSlowJobLoss) > 1e-6 || !slices.Equal(slow.SetBy, []string{"loss"}) {
			t.Errorf("job window 6: %+v, want %.4g set by loss", slow, demoSlowJobLoss)
		}
		if calc := hist[2].QoO[seriesCalculated]; !lull.Withheld || lull.Score != nil || calc == nil || !calc.Withheld {
			t.Errorf("job window 8: %+v, %+v, want both withheld", lull, calc)
		}
		return
	}
	if lull.Score == nil || *lull.Score != 0 || !slices.Equal(lull.SetBy, []string{"rate"}) || lull.Latency != nil {
		t.Errorf("worker_2 window 8: %+v, want 0 set by rate, no latency", lull)
	}
}

// TestScopeWebState checks the JSON of /api/state and /api/snapshot/ID after
// the demo workload: K windows per probe, the newest; the triggers; and the
// snapshot's windows, counts and CDFs as the snapshot records hold them.
func TestScopeWebState(t *testing.T) {
	batches := demoBatches(t)
	w := newScopeWeb(testLimits(4))
	for _, b := range batches {
		w.addLogs(b.logs)
		w.addMetrics(b.metrics)
	}
	srv := httptest.NewServer(w.handler())
	defer srv.Close()
	get := func(path string, v any) {
		t.Helper()
		res, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("%s: status %d, %q", path, res.StatusCode, res.Header.Get("Content-Type"))
		}
		if err := json.NewDecoder(res.Body).Decode(v); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	}
	var st webState
	get("/api/state", &st)
	if st.K != 4 || len(st.Windows) != 3 {
		t.Fatalf("state: K %d, probes %d; want 4 and 3", st.K, len(st.Windows))
	}
	// Window w ends at T0 + (w+1) s: the 4 kept are windows 6 to 9.
	for probe, hist := range st.Windows {
		if len(hist) != 4 {
			t.Fatalf("%s: %d windows, want 4", probe, len(hist))
		}
		for i, win := range hist {
			want := time.Unix(1_700_000_000, 0).Add(time.Duration(demoWindows-4+i+1) * time.Second).UnixMilli()
			if win.End != want {
				t.Errorf("%s window %d ends %d, want %d", probe, i, win.End, want)
			}
		}
		// The totals are cumulative: 40 jobs a window, 5 in the lull; the
		// last window has its own 40.
		last := hist[3]
		if n := last.Totals["success"] + last.Totals["timeout"] + last.Totals["failure"]; n != demoAllJobs {
			t.Errorf("%s: totals %v, want %d in all", probe, last.Totals, demoAllJobs)
		}
		if n := last.Outcomes["success"] + last.Outcomes["timeout"] + last.Outcomes["failure"]; n != demoJobs {
			t.Errorf("%s: outcomes %v, want %d in all", probe, last.Outcomes, demoJobs)
		}
		checkWebQoO(t, probe, hist)
		if len(last.Curves[seriesObserved]) == 0 || len(last.Curves[seriesQTA]) == 0 {
			t.Errorf("%s: curves %v", probe, last.Curves)
		}
		// The QTAs of demoBatches, exactly.
		wantQTA, wantFail := [][2]float64{{0.02, 0.5}, {0.07, 0.9}}, 0.01
		if probe == "job" {
			wantQTA, wantFail = [][2]float64{{0.04, 0.5}, {0.1, 0.9}}, 0.02
		}
		if q := last.QTA; q == nil || !slices.Equal(q.Points, wantQTA) || q.MaxFailure == nil || *q.MaxFailure != wantFail {
			t.Errorf("%s: QTA %+v, want %v with max failure %v", probe, q, wantQTA, wantFail)
		}
	}
	if len(st.Triggers) == 0 || len(st.Snapshots) != 1 || st.Stats.Batches != demoWindows || st.Stats.Malformed != 0 {
		t.Fatalf("state: %d triggers, snapshots %+v, stats %+v", len(st.Triggers), st.Snapshots, st.Stats)
	}
	var snap webSnapshot
	get("/api/snapshot/1", &snap)
	if len(snap.Windows) != 5 {
		t.Fatalf("snapshot 1: %d windows, want 5", len(snap.Windows))
	}
	trig := snap.Windows[2] // the trigger's window, window 5
	if want := time.Unix(1_700_000_000+demoSlowFrom+1, 0).UTC().Format(time.RFC3339Nano); trig.End != want {
		t.Errorf("trigger window ends %s, want %s", trig.End, want)
	}
	for _, p := range trig.Probes {
		switch p.Probe {
		case "worker_2", "job":
			if p.Success != 36 || p.Timeout != 4 || p.Failure != 0 {
				t.Errorf("%s in the trigger window: %+v, want 36 successes, 4 timeouts", p.Probe, p)
			}
		case "worker_1":
			if p.Success != 40 {
				t.Errorf("worker_1 in the trigger window: %+v", p)
			}
		}
		// 100 bins of 1 ms (2 ms for job); the CDF stops at the tangible mass.
		if p.Observed == nil || len(p.Observed.CDF) != 100 {
			t.Fatalf("%s: observed %+v", p.Probe, p.Observed)
		}
		if want := float64(p.Success) / 40; math.Abs(p.Observed.CDF[99]-want) > 1e-12 {
			t.Errorf("%s: F(dMax) = %g, want %g", p.Probe, p.Observed.CDF[99], want)
		}
		if p.Probe == "job" && p.Calculated == nil {
			t.Errorf("job has no calculated ΔQ in the snapshot")
		}
	}
}

// TestScopeWebQTA: a window holds the QTA sent exactly; a later window
// whose batch has none keeps it, like the other readings; a probe whose
// connector sends only the sampled curve has none (the page reads the
// curve).
func TestScopeWebQTA(t *testing.T) {
	w := newScopeWeb(testLimits(4))
	w.addMetrics(exactQTAWindow(true))
	w.addMetrics(shiftWindow(exactQTAWindow(false), time.Second))
	w.addMetrics(syntheticWindow())
	var st webState
	if err := json.Unmarshal(stateJSON(t, w), &st); err != nil {
		t.Fatal(err)
	}
	api := st.Windows["api"]
	if len(api) != 2 {
		t.Fatalf("api: %d windows, want 2", len(api))
	}
	want := [][2]float64{{0.02, 0.5}, {0.07, 0.9}}
	for i, win := range api {
		if q := win.QTA; q == nil || !slices.Equal(q.Points, want) || q.MaxFailure == nil || *q.MaxFailure != 0.01 {
			t.Errorf("api window %d: QTA %+v, want %v with max failure 0.01", i, q, want)
		}
	}
	if q := st.Windows["search"][0].QTA; q != nil {
		t.Errorf("search: QTA %+v, want none (only the sampled curve was sent)", q)
	}
}

// TestScopeWebReadingsAreTheWindows: a window without instances has no
// failure ratio, QTA verdict or divergence, not those of the window before
// it, which keeps its own.
func TestScopeWebReadingsAreTheWindows(t *testing.T) {
	w := newScopeWeb(testLimits(4))
	broken, idle := brokenThenIdle()
	w.addMetrics(broken)
	w.addMetrics(idle)
	var st webState
	if err := json.Unmarshal(stateJSON(t, w), &st); err != nil {
		t.Fatal(err)
	}
	api := st.Windows["api"]
	if len(api) != 2 {
		t.Fatalf("api: %d windows, want 2", len(api))
	}
	if b := api[0]; b.Violation == nil || *b.Violation != 1 || b.Failure == nil || *b.Failure != 0.25 || b.Divergence == nil {
		t.Errorf("the broken window: violation %v, failure %v, divergence %v", orNone(b.Violation), orNone(b.Failure), orNone(b.Divergence))
	}
	if i := api[1]; i.Violation != nil || i.Failure != nil || i.Divergence != nil {
		t.Errorf("the window without instances: violation %v, failure %v, divergence %v; want none", orNone(i.Violation), orNone(i.Failure), orNone(i.Divergence))
	}
	if api[1].Totals["timeout"] != 10 || api[1].Outcomes["timeout"] != 0 {
		t.Errorf("the window without instances: totals %v, outcomes %v; want 10 timeouts in all, none in it", api[1].Totals, api[1].Outcomes)
	}
}

// orNone is *v, or "none" for nil.
func orNone(v *float64) any {
	if v == nil {
		return "none"
	}
	return *v
}

// TestScopeWebUnreachableQuantiles: a window whose quantiles are all
// unreachable has none, not the previous window's; the previous window
// keeps its own.
func TestScopeWebUnreachableQuantiles(t *testing.T) {
	w := newScopeWeb(testLimits(4))
	w.addMetrics(syntheticWindow())
	w.addMetrics(unreachableQuantilesWindow())
	var st webState
	if err := json.Unmarshal(stateJSON(t, w), &st); err != nil {
		t.Fatal(err)
	}
	search := st.Windows["search"]
	if len(search) != 2 {
		t.Fatalf("search: %d windows, want 2", len(search))
	}
	if q := search[0].Quantiles[seriesObserved]; len(q) != 1 || q[0] != [2]float64{0.5, 0.0067} {
		t.Errorf("search's first window: quantiles %v, want the median 6.7 ms", q)
	}
	if q := search[1].Quantiles; len(q) != 0 {
		t.Errorf("search's second window: quantiles %v, want none", q)
	}
}

// bigWindow is a batch of one probe whose six curves have 1000 points each:
// an event of about 200 kB.
func bigWindow(end time.Time) pmetric.Metrics {
	p := newExporterPayload()
	for _, s := range seriesOrder {
		p.curve("big", s, 0.0001, 1000, uniformMass(0.1, 0.9))
	}
	for i := range p.cdf.Len() {
		p.cdf.At(i).SetTimestamp(pcommon.NewTimestampFromTime(end))
	}
	return p.md
}

// TestScopeWebStalledClient connects one browser that never reads and
// several that do, then pushes events of about 200 kB each until the
// stalled browser's queue has dropped some, and 10 more. The scope never
// waits: the stalled browser's queue drops its oldest events (counted), its
// connection is closed once a write stalls past the write timeout
// (counted), and every reading browser ends up with the newest window, from
// its events or from the state it is sent after it lost some. (Pushing until
// a drop, not a fixed number, keeps it true on a busy machine.)
func TestScopeWebStalledClient(t *testing.T) {
	if testing.Short() {
		t.Skip("pushes 30 MB through loopback")
	}
	if raceDetector {
		// The test needs the 150 events pushed well within the write
		// timeout, so that the stalled browser's queue overflows before its
		// connection is closed; under the race detector encoding them takes
		// several times longer. make test runs it without -race too.
		t.Skip("timing depends on the speed of encoding 30 MB; run without -race")
	}
	w := newScopeWeb(testLimits(8))
	// Long enough for its queue to overflow while a write is stalled.
	w.writeTimeout = 15 * time.Second
	// A reader waiting for an event after the last one wakes up to see
	// that it was the last.
	w.heartbeat = 100 * time.Millisecond
	srv := httptest.NewServer(w.handler())
	defer srv.Close()
	defer w.close()

	// The stalled browser: a tiny receive buffer, and no reads.
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.(*net.TCPConn).SetReadBuffer(4096)
	fmt.Fprintf(conn, "GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")

	const readers, events = 3, 150
	t0 := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	var lastEnd atomic.Int64
	lastEnd.Store(t0.Add(events * time.Second).UnixMilli())
	var wg sync.WaitGroup
	newest := make([]int64, readers)
	for i := range readers {
		r, _, done := openEvents(t, srv.URL)
		defer done()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for newest[i] < lastEnd.Load() {
				f := readSSE(t, r)
				var m struct {
					Windows any
				}
				_ = json.Unmarshal([]byte(f.data), &m)
				switch ws := m.Windows.(type) {
				case []any: // a window event
					for _, win := range ws {
						newest[i] = max(newest[i], int64(win.(map[string]any)["end"].(float64)))
					}
				case map[string]any: // a state
					for _, hist := range ws {
						h := hist.([]any)
						newest[i] = max(newest[i], int64(h[len(h)-1].(map[string]any)["end"].(float64)))
					}
				}
			}
		}()
	}
	waitFor(t, "4 browsers connected", func() bool { return w.snapshotStats().Clients == readers+1 })

	start := time.Now()
	pushed, after := 0, 10
	for pushed < events && after > 0 {
		pushed++
		end := t0.Add(time.Duration(pushed) * time.Second)
		if pushed == events || w.snapshotStats().EventsDropped > 0 {
			after--
			if after == 0 || pushed == events {
				lastEnd.Store(end.UnixMilli())
			}
		}
		w.addMetrics(bigWindow(end))
	}
	t.Logf("%d events of about 200 kB pushed in %v", pushed, time.Since(start))
	waitFor(t, "the stalled browser disconnected", func() bool {
		st := w.snapshotStats()
		return st.ClientsDropped >= 1 && st.Clients == readers
	})
	wg.Wait()
	st := w.snapshotStats()
	if st.EventsDropped == 0 {
		t.Errorf("no event dropped for the stalled browser: %+v", st)
	}
	for i, n := range newest {
		if n != lastEnd.Load() {
			t.Errorf("reader %d ended at window %d, want %d", i, n, lastEnd.Load())
		}
	}
}

func (w *scopeWeb) snapshotStats() webStats {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stats
}

// waitFor polls cond for up to 20 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestScopeHTTP serves with Options.HTTP and checks that the page
// and the OTLP input work together: a window sent over OTLP/gRPC reaches
// /api/state.
func TestScopeHTTP(t *testing.T) {
	addr, web := startScopeHTTP(t, func(o *Options) { o.Limits.Windows = 5 })
	exportTo(t, addr, nil, syntheticWindow())
	var st webState
	waitFor(t, "the window in /api/state", func() bool {
		res, err := http.Get(web + "/api/state")
		if err != nil {
			return false
		}
		defer res.Body.Close()
		return json.NewDecoder(res.Body).Decode(&st) == nil && len(st.Windows) == 2
	})
	if st.K != 5 {
		t.Errorf("K = %d, want Limits.Windows 5", st.K)
	}
	q := st.Windows["checkout"][0].Quantiles[seriesObserved]
	// Quantiles of U[0, 8ms]·0.9: q/0.9 · 8ms (syntheticWindow).
	if len(q) != 4 || q[1][0] != 0.5 || math.Abs(q[1][1]-0.5/0.9*0.008) > 1e-15 {
		t.Errorf("checkout observed quantiles %v", q)
	}
}

var browserViewRe = regexp.MustCompile(`browser view on http://(\S+)/`)

// startScopeHTTP runs Serve with the browser view on a free port and returns
// its OTLP address and the page's base URL.
func startScopeHTTP(t *testing.T, with ...func(*Options)) (otlp, base string) {
	t.Helper()
	o := Options{Listen: "127.0.0.1:0", HTTP: "127.0.0.1:0", Frame: DefaultFrame, Limits: DefaultLimits()}
	for _, set := range with {
		set(&o)
	}
	stderr := &lockedBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- Serve(ctx, o, io.Discard, stderr) }()
	t.Cleanup(func() {
		cancel()
		if err := <-errc; err != nil {
			t.Errorf("scope: %v", err)
		}
	})
	waitFor(t, "the scope listening", func() bool {
		return listeningRe.MatchString(stderr.String()) && browserViewRe.MatchString(stderr.String())
	})
	return listeningRe.FindStringSubmatch(stderr.String())[1], "http://" + browserViewRe.FindStringSubmatch(stderr.String())[1]
}

// stateJSON is the view's /api/state.
func stateJSON(t *testing.T, w *scopeWeb) []byte {
	t.Helper()
	rec := httptest.NewRecorder()
	w.handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://127.0.0.1/api/state", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("/api/state: %d %s", rec.Code, rec.Body)
	}
	return rec.Body.Bytes()
}

// testLimits are the default limits with k windows per probe.
func testLimits(k int) Limits {
	l := DefaultLimits()
	l.Windows = k
	return l
}

// TestScopeWebSnapshotWhileRecordsArrive reads /api/snapshot/1 while the
// demo's records, the snapshot's among them, are still arriving: each
// answer is a whole snapshot as it stood (its windows in order, never fewer
// than the answer before), and, under the race detector, no race is found.
// (The demo's windows have three probes, whose lists grow into new arrays
// as they are filed: TestScopeWebSnapshotClone checks the copy a reader
// encodes where records would change it in place.)
func TestScopeWebSnapshotWhileRecordsArrive(t *testing.T) {
	batches := demoBatches(t)
	w := newScopeWeb(testLimits(4))
	srv := httptest.NewServer(w.handler())
	defer srv.Close()
	// Each record is filed as a read begins, so that the reads overlap the
	// filing of the snapshot's records.
	reading, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for _, b := range batches {
			// One record at a time, newest first: records of one
			// snapshot that come apart and out of order.
			for _, ld := range slices.Backward(oneRecordEach(b.logs)) {
				<-reading
				w.addLogs(ld)
			}
			w.addMetrics(b.metrics)
		}
	}()
	seen, reads := 0, 0
	for finished := false; !finished; reads++ {
		select {
		case <-done:
			finished = true
		case reading <- struct{}{}:
		}
		res, err := http.Get(srv.URL + "/api/snapshot/1")
		if err != nil {
			t.Fatal(err)
		}
		var snap webSnapshot
		err = json.NewDecoder(res.Body).Decode(&snap)
		res.Body.Close()
		if res.StatusCode == http.StatusNotFound {
			continue // not recorded yet
		}
		if res.StatusCode != http.StatusOK || err != nil {
			t.Fatalf("read %d: status %d, %v", reads, res.StatusCode, err)
		}
		if len(snap.Windows) < seen || !slices.IsSortedFunc(snap.Windows, func(a, b webSnapshotWindow) int { return strings.Compare(a.End, b.End) }) {
			t.Fatalf("read %d: %d windows (had %d), in order %v", reads, len(snap.Windows), seen, snap.Windows)
		}
		seen = len(snap.Windows)
	}
	if seen != 5 {
		t.Errorf("the last read found %d windows of snapshot 1, want 5", seen)
	}
}

// oneRecordEach splits ld into logs of one record each, with its resource
// and scope.
func oneRecordEach(ld plog.Logs) []plog.Logs {
	var out []plog.Logs
	for _, rl := range ld.ResourceLogs().All() {
		for _, sl := range rl.ScopeLogs().All() {
			for _, lr := range sl.LogRecords().All() {
				one := plog.NewLogs()
				orl := one.ResourceLogs().AppendEmpty()
				rl.Resource().CopyTo(orl.Resource())
				osl := orl.ScopeLogs().AppendEmpty()
				sl.Scope().CopyTo(osl.Scope())
				lr.CopyTo(osl.LogRecords().AppendEmpty())
				out = append(out, one)
			}
		}
	}
	return out
}

// TestScopeWebSnapshotClone: the copy of a snapshot that /api/snapshot/ID
// encodes after releasing the lock keeps its windows and their probes, in
// order, while later records insert a window before them and add and sort
// probes in place.
func TestScopeWebSnapshotClone(t *testing.T) {
	probes := make([]webSnapshotProbe, 2, 8) // room to grow in place
	probes[0], probes[1] = webSnapshotProbe{Probe: "b", Success: 1}, webSnapshotProbe{Probe: "c", Success: 2}
	windows := make([]webSnapshotWindow, 1, 4)
	windows[0] = webSnapshotWindow{End: "2", Probes: probes}
	s := &webSnapshot{ID: 1, Windows: windows}
	c := s.clone()
	s.Windows[0].Probes = append(s.Windows[0].Probes, webSnapshotProbe{Probe: "a"})
	slices.SortFunc(s.Windows[0].Probes, func(x, y webSnapshotProbe) int { return strings.Compare(x.Probe, y.Probe) })
	s.Windows = slices.Insert(s.Windows, 0, webSnapshotWindow{End: "1"})
	if len(c.Windows) != 1 || c.Windows[0].End != "2" || len(c.Windows[0].Probes) != 2 ||
		c.Windows[0].Probes[0].Probe != "b" || c.Windows[0].Probes[1].Probe != "c" {
		t.Fatalf("the copy changed with the snapshot: %+v", c.Windows)
	}
	if (*webSnapshot)(nil).clone() != nil {
		t.Error("the copy of no snapshot is a snapshot")
	}
}

// heldWriter is an event stream's response whose first write waits for
// release: what arrives meanwhile arrives while the stream opens.
type heldWriter struct {
	header  http.Header
	out     *io.PipeWriter
	writing chan struct{} // closed at the first write
	release chan struct{}
	once    sync.Once
}

func (h *heldWriter) Header() http.Header { return h.header }
func (h *heldWriter) WriteHeader(int)     {}
func (h *heldWriter) Write(b []byte) (int, error) {
	h.once.Do(func() { close(h.writing); <-h.release })
	return h.out.Write(b)
}
func (h *heldWriter) FlushError() error                { return nil }
func (h *heldWriter) SetWriteDeadline(time.Time) error { return nil }

// TestScopeWebTriggerWhileStreamOpens: a trigger that arrived while a
// browser's stream was opening, after the stream was listed for events
// and before the state it starts with was taken, was sent in both, and
// the page listed it twice. Each trigger comes once: in the state or after it.
func TestScopeWebTriggerWhileStreamOpens(t *testing.T) {
	w := newScopeWeb(DefaultLimits())
	defer w.close()
	w.addMetrics(syntheticWindow())
	pr, pw := io.Pipe()
	rw := &heldWriter{header: http.Header{}, out: pw, writing: make(chan struct{}), release: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.serveEvents(rw, httptest.NewRequest(http.MethodGet, "http://127.0.0.1/events", nil).WithContext(ctx))
	}()
	<-rw.writing
	w.addLogs(syntheticTriggers())
	close(rw.release)

	r := bufio.NewReader(pr)
	var triggers []webTrigger
	for f := readSSE(t, r); ; f = readSSE(t, r) {
		if f.event == "trigger" {
			var m struct{ Triggers []webTrigger }
			if err := json.Unmarshal([]byte(f.data), &m); err != nil {
				t.Fatal(err)
			}
			triggers = append(triggers, m.Triggers...)
		}
		// A snapshot event is broadcast after the trigger it began.
		if f.event == "snapshot" {
			break
		}
	}
	cancel()
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	<-done
	if len(triggers) != 1 {
		t.Errorf("the stream sent %d triggers, want the one that came: %+v", len(triggers), triggers)
	}
}
