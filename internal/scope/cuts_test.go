// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package scope

// The attacks on the scope, scaled down but of the same shape, and the bound
// that now holds against each.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// views ingests every batch into a terminal scope and a browser view of
// limits l, both on the clock *now.
func views(l Limits, now *time.Time) (*scopeState, *scopeWeb) {
	s, w := newScopeState(l), newScopeWeb(l)
	s.now = func() time.Time { return *now }
	w.now = s.now
	return s, w
}

func ingest(s *scopeState, w *scopeWeb, md pmetric.Metrics) {
	s.addMetrics(md)
	w.addMetrics(md)
}

// TestScopeLargeNames is the attack of 200 batches of 40 series names of
// 256 KiB (2.1 GB resident), scaled down: 20 batches of 40 probe names and
// 40 series names of 64 KiB. Every point with a name over --max-name is
// refused and counted; nothing of them is kept (probe "real", of a short
// name, is kept without a curve).
func TestScopeLargeNames(t *testing.T) {
	now := time.Now()
	s, w := views(DefaultLimits(), &now)
	for b := range 20 {
		p := newExporterPayload()
		for i := range 40 {
			p.curve(fmt.Sprintf("%d-%d-", b, i)+strings.Repeat("x", 64<<10), seriesObserved, 0.001, 1, uniformMass(0.001, 1))
			p.curve("real", fmt.Sprintf("%d-%d-", b, i)+strings.Repeat("y", 64<<10), 0.001, 1, uniformMass(0.001, 1))
		}
		ingest(s, w, p.md)
	}
	if len(s.probes) != 1 || len(s.probes["real"].curves) != 0 || s.NamesRefused != 20*80 {
		t.Errorf("terminal: %d probes kept, %d names refused; want real alone, without curves, and %d", len(s.probes), s.NamesRefused, 20*80)
	}
	st := w.snapshotStats()
	if len(w.windows) != 1 || st.NamesRefused != 20*80 || st.StatePoints != 0 {
		t.Errorf("browser: %d probes kept, stats %+v; want real alone, no point, %d names refused", len(w.windows), st, 20*80)
	}
	if frame := renderScope(s, DefaultFrame); !strings.Contains(frame, "bounds cut: 1600 data points with names beyond --max-name") {
		t.Errorf("the terminal does not show the names refused:\n%s", frame)
	}
}

// TestScopeManyProbes is the attack of 1 M distinct probe names on the
// terminal scope (360 MB), scaled down: 5,000 names against --max-probes
// 100. Each view keeps 100; the others are refused and counted.
func TestScopeManyProbes(t *testing.T) {
	now := time.Now()
	s, w := views(DefaultLimits(), &now)
	p := newExporterPayload()
	for i := range 5000 {
		p.gauge(metricFailureRatio, fmt.Sprintf("junk-%d", i), 0)
	}
	ingest(s, w, p.md)
	if len(s.probes) != 100 || s.ProbesRefused != 4900 {
		t.Errorf("terminal: %d probes, %d refused; want 100 and 4900", len(s.probes), s.ProbesRefused)
	}
	if len(w.windows) != 100 || w.snapshotStats().ProbesRefused != 4900 {
		t.Errorf("browser: %d probes, %+v; want 100 and 4900 refused", len(w.windows), w.snapshotStats())
	}
}

// TestScopeSeriesAndPoints: one probe sending 40 series of 2,000 points, 40
// outcome kinds and a QTA of 2,000 points keeps 16 series of 1,024 points,
// 16 outcome kinds and 1,024 QTA points; every point left out is counted.
func TestScopeSeriesAndPoints(t *testing.T) {
	now := time.Now()
	s, w := views(DefaultLimits(), &now)
	p := newExporterPayload()
	for i := range 40 {
		p.curve("p", fmt.Sprintf("s%02d", i), 1e-6, 2000, uniformMass(0.002, 1))
		p.quantile("p", fmt.Sprintf("s%02d", i), 0.5, 0.001)
	}
	m := p.sm.Metrics().AppendEmpty()
	m.SetName(metricOutcomes)
	kinds := m.SetEmptyGauge().DataPoints()
	for i := range 40 {
		dp := kinds.AppendEmpty()
		dp.Attributes().PutStr(attrProbe, "p")
		dp.Attributes().PutStr(attrOutcome, fmt.Sprintf("kind-%d", i))
		dp.SetIntValue(1)
	}
	qta := make([]curvePoint, 2000)
	for i := range qta {
		qta[i] = curvePoint{delay: float64(i+1) * 1e-6, p: 0.5}
	}
	p.qta("p", 0.1, qta...)
	ingest(s, w, p.md)
	pv := s.probes["p"]
	if len(pv.curves) != 16 || len(pv.quantiles) != 16 || len(pv.outcomes) != 16 || len(pv.qta.points) != 1024 {
		t.Fatalf("kept %d curves, %d quantile rows, %d outcome kinds, %d QTA points; want 16, 16, 16, 1024",
			len(pv.curves), len(pv.quantiles), len(pv.outcomes), len(pv.qta.points))
	}
	for series, pts := range pv.curves {
		if len(pts) != 1024 {
			t.Errorf("series %s: %d points, want 1024", series, len(pts))
		}
	}
	// Refused: 24 series × (2,000 points + 1 quantile) and 24 outcome kinds;
	// cut: 16 × (2,000 − 1,024) curve points and 2,000 − 1,024 QTA points.
	want := cuts{SeriesRefused: 24*2001 + 24, PointsCut: 16*976 + 976}
	if s.cuts != want {
		t.Errorf("terminal cuts %+v, want %+v", s.cuts, want)
	}
	if got := w.snapshotStats().cuts; got != want {
		t.Errorf("browser cuts %+v, want %+v", got, want)
	}
	if got := w.snapshotStats().StatePoints; got != 16*1024+16+1024 {
		t.Errorf("browser keeps %d points, want %d", got, 16*1024+16+1024)
	}
}

// TestScopeJunkThenRealProbe is the attack in which 100 junk probe names
// took every slot of the browser view for ever: a real probe sent after
// them is refused while they are fresh, and takes the slot of the oldest
// once that one has been silent for --probe-ttl; a browser is then sent the
// state without it.
func TestScopeJunkThenRealProbe(t *testing.T) {
	l := DefaultLimits()
	l.ProbeTTL = time.Minute
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	s, w := views(l, &now)
	for i := range 100 {
		p := newExporterPayload()
		p.gauge(metricFailureRatio, fmt.Sprintf("junk-%03d", i), 0)
		ingest(s, w, p.md)
		now = now.Add(100 * time.Millisecond)
	}
	real := newExporterPayload()
	real.curve("checkout", seriesObserved, 0.001, 10, uniformMass(0.008, 0.9))
	now = now.Add(30 * time.Second)
	ingest(s, w, real.md)
	if s.probes["checkout"] != nil || w.windows["checkout"] != nil || s.ProbesRefused != 10 {
		t.Fatalf("the real probe has a slot while the junk is fresh (%d refused)", s.ProbesRefused)
	}
	srv := httptest.NewServer(w.handler())
	defer srv.Close()
	r, st, done := openEvents(t, srv.URL)
	defer done()
	if len(st.Windows) != 100 || st.Windows["junk-000"] == nil {
		t.Fatalf("the stream's state has %d probes, want the 100 junk ones", len(st.Windows))
	}
	now = now.Add(31 * time.Second) // junk-000 silent for 61 s, junk-001 for 60.9 s
	ingest(s, w, real.md)
	if s.probes["checkout"] == nil || s.probes["junk-000"] != nil || len(s.probes) != 100 || s.ProbesExpired != 1 {
		t.Errorf("terminal: checkout kept %v, junk-000 gone %v, %d probes, %d expired",
			s.probes["checkout"] != nil, s.probes["junk-000"] == nil, len(s.probes), s.ProbesExpired)
	}
	if w.windows["checkout"] == nil || w.windows["junk-000"] != nil || w.snapshotStats().ProbesExpired != 1 {
		t.Errorf("browser: checkout kept %v, junk-000 gone %v, %+v", w.windows["checkout"] != nil, w.windows["junk-000"] == nil, w.snapshotStats())
	}
	// The browser is sent the state again, without junk-000.
	for {
		f := readSSE(t, r)
		if f.event != "state" {
			continue
		}
		var head webState
		if err := json.Unmarshal([]byte(f.data), &head); err != nil || head.Stats.ProbesExpired != 1 || head.Pending != 100 {
			t.Errorf("state after the expiry: %v, %+v", err, head)
		}
		break
	}
}

// TestScopeWebStatePoints: windows of 2 probes of 6 × 100 points, against
// --max-state-points 3,000: the oldest windows go first (counted), the
// points kept stay within the bound, and each probe keeps its latest
// window.
func TestScopeWebStatePoints(t *testing.T) {
	l := DefaultLimits()
	l.StatePoints = 3000
	w := newScopeWeb(l)
	t0 := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	for i := range 20 {
		p := newExporterPayload()
		for _, probe := range []string{"a", "b"} {
			for _, series := range seriesOrder {
				p.curve(probe, series, 0.001, 100, uniformMass(0.1, 1))
			}
		}
		w.addMetrics(shiftWindow(p.md, t0.Add(time.Duration(i)*time.Second).Sub(testWindowEnd)))
		if st := w.snapshotStats(); st.StatePoints > l.StatePoints {
			t.Fatalf("window %d: %d points kept, over %d", i, st.StatePoints, l.StatePoints)
		}
	}
	st := w.snapshotStats()
	// 600 points a window: 5 windows fit, 2 × 20 − 5 were evicted.
	if st.StatePoints != 3000 || st.WindowsEvicted != 35 || len(w.windows["a"])+len(w.windows["b"]) != 5 {
		t.Errorf("%d points, %d evicted, windows %d + %d; want 3000, 35, 5 in all",
			st.StatePoints, st.WindowsEvicted, len(w.windows["a"]), len(w.windows["b"]))
	}
	last := t0.Add(19 * time.Second).UnixMilli()
	for _, probe := range []string{"a", "b"} {
		if h := w.windows[probe]; len(h) == 0 || h[len(h)-1].End != last {
			t.Errorf("%s lost its latest window", probe)
		}
	}
}

// TestScopeWebClientsAndFrames is the attack of 4 browsers on a 500 MB
// state (4.5 GB resident, 524 MB sent to each), scaled down: a state of 20
// probes × 10 windows of 6 curves of 1,000 points (about 25 MB of JSON),
// --max-clients 3 and --max-frame 256 KiB. A fourth stream and a fourth
// /api/state at once are refused (counted); every frame a browser is sent
// holds at most 256 KiB.
func TestScopeWebClientsAndFrames(t *testing.T) {
	l := DefaultLimits()
	l.Clients, l.FrameBytes, l.Windows, l.StatePoints = 3, 256<<10, 10, 2<<20
	// No stream is closed as idle however long the test takes: under -race
	// on a loaded machine it took over the default 2 minutes, and the
	// first browser's stream was closed before the fourth came.
	l.ClientIdle = time.Hour
	w := newScopeWeb(l)
	t0 := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	for i := range 10 {
		p := newExporterPayload()
		for j := range 20 {
			for _, series := range seriesOrder {
				p.curve(fmt.Sprintf("p%02d", j), series, 0.0001, 1000, uniformMass(0.1, 0.9))
			}
		}
		w.addMetrics(shiftWindow(p.md, t0.Add(time.Duration(i)*time.Second).Sub(testWindowEnd)))
	}
	srv := httptest.NewServer(w.handler())
	defer srv.Close()
	for range 3 {
		_, st, done := openEvents(t, srv.URL) // checks each frame against the default 512 KiB
		defer done()
		if n := len(st.Windows) * len(st.Windows["p00"]); n != 200 {
			t.Errorf("a stream's state holds %d windows, want 200", n)
		}
	}
	res, err := http.Get(srv.URL + "/events")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusServiceUnavailable || w.snapshotStats().ClientsRefused != 1 {
		t.Errorf("a fourth browser: %s, %+v", res.Status, w.snapshotStats())
	}

	// The frames of a batch while 3 browsers listen: 20 windows of about
	// 230 kB, one frame each.
	var biggest int
	for i := range 3 {
		w.mu.Lock()
		for c := range w.clients {
			for len(c.events) > 0 {
				biggest = max(biggest, len(<-c.events))
			}
		}
		w.mu.Unlock()
		p := newExporterPayload()
		for j := range 20 {
			for _, series := range seriesOrder {
				p.curve(fmt.Sprintf("p%02d", j), series, 0.0001, 1000, uniformMass(0.1, 0.9))
			}
		}
		w.addMetrics(shiftWindow(p.md, t0.Add(time.Duration(10+i)*time.Second).Sub(testWindowEnd)))
	}
	w.mu.Lock()
	for c := range w.clients {
		for len(c.events) > 0 {
			biggest = max(biggest, len(<-c.events))
		}
	}
	w.mu.Unlock()
	if biggest == 0 || biggest > l.FrameBytes {
		t.Errorf("the largest event queued holds %d bytes; want some, at most %d", biggest, l.FrameBytes)
	}
}

// TestScopeWebReadersDoNotHoldIngest is the attack in which a one-point
// batch waited 1.95 s behind readers of a large state: a reader of
// /api/state and a new stream are both held in the middle of encoding the
// state, and a one-point batch is still taken at once, because nothing is
// encoded for a reader under the lock.
func TestScopeWebReadersDoNotHoldIngest(t *testing.T) {
	w := newScopeWeb(DefaultLimits())
	for _, b := range demoBatches(t) {
		w.addMetrics(b.metrics)
	}
	held, release := make(chan struct{}, 8), make(chan struct{})
	var once sync.Once
	w.encoding = func() {
		held <- struct{}{}
		<-release
	}
	defer once.Do(func() { close(release) })
	srv := httptest.NewServer(w.handler())
	defer srv.Close()
	go func() {
		if res, err := http.Get(srv.URL + "/api/state"); err == nil {
			res.Body.Close()
		}
	}()
	go func() {
		// The stream's first event (hello) reaches the client before its
		// state is encoded: hold the stream open until the encoding is
		// released, or the server may see it gone and encode nothing.
		if res, err := http.Get(srv.URL + "/events"); err == nil {
			<-release
			res.Body.Close()
		}
	}()
	<-held
	<-held
	done := make(chan struct{})
	go func() {
		p := newExporterPayload()
		p.gauge(metricFailureRatio, "job", 0.5)
		w.addMetrics(p.md)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("a one-point batch waits for the readers of the state")
	}
	once.Do(func() { close(release) })
}

// TestScopeWebHost is DNS rebinding: a page of another site whose name now
// resolves to the scope's address sends its own name as Host. Such requests
// are refused (counted); localhost, a loopback address and the listen
// address's host are served, and any address when listening on all.
func TestScopeWebHost(t *testing.T) {
	w := newScopeWeb(DefaultLimits())
	w.listenHost = "scope.internal"
	h := w.handler()
	for _, c := range []struct {
		host string
		ok   bool
	}{
		{"127.0.0.1:8327", true}, {"localhost:8327", true}, {"LOCALHOST", true}, {"[::1]:8327", true},
		{"127.0.0.2", true}, {"scope.internal:8327", true},
		{"evil.example:8327", false}, {"evil.example", false}, {"localhost.evil.example", false},
		{"10.1.2.3:8327", false}, {"", false},
	} {
		for _, path := range []string{"/", "/api/state", "/events", "/api/snapshot/1"} {
			req := httptest.NewRequest(http.MethodGet, path, nil)
			req.Host = c.host
			rec := httptest.NewRecorder()
			if path == "/events" && c.ok {
				continue // a stream stays open: its Host is checked like the others
			}
			h.ServeHTTP(rec, req)
			if refused := rec.Code == http.StatusMisdirectedRequest; refused == c.ok {
				t.Errorf("Host %q %s: %d", c.host, path, rec.Code)
			}
		}
	}
	if got := w.snapshotStats().HostsRefused; got != 5*4 {
		t.Errorf("%d requests refused, want 20", got)
	}
	for _, listen := range []string{"0.0.0.0", "::", ""} {
		w.listenHost = listen
		for host, ok := range map[string]bool{"10.1.2.3:8327": true, "evil.example": false} {
			req := httptest.NewRequest(http.MethodGet, "/api/state", nil)
			req.Host = host
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if (rec.Code == http.StatusOK) != ok {
				t.Errorf("listening on %q, Host %q: %d", listen, host, rec.Code)
			}
		}
	}
}

// TestScopeTriggerAttributes: a trigger record with 100 attributes of 10 KiB
// and a message of 1 MiB keeps 16 attributes and a message of 1 KiB, cut at
// a character boundary, in both views; each cut is counted.
func TestScopeTriggerAttributes(t *testing.T) {
	now := time.Now()
	s, w := views(DefaultLimits(), &now)
	ld := plog.NewLogs()
	lr := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
	lr.SetEventName(eventTrigger)
	lr.SetTimestamp(pcommon.NewTimestampFromTime(testWindowEnd))
	lr.Body().SetStr(strings.Repeat("é", 512<<10)) // 1 MiB of two-byte characters
	lr.Attributes().PutStr(attrProbe, "checkout")
	lr.Attributes().PutStr(attrTrigger, "qta")
	for i := range 100 {
		lr.Attributes().PutStr(fmt.Sprintf("k%03d", i), strings.Repeat("v", 10<<10))
	}
	s.addLogs(ld)
	w.addLogs(ld)
	if d := s.triggers[0].details; len(d) != maxTriggerAttrs || len(d[0]) != len("k000=")+1024 || s.AttrsCut != 16+84 {
		t.Errorf("terminal: %d details of %d bytes, %d cut", len(d), len(d[0]), s.AttrsCut)
	}
	tr := w.triggers[0]
	if len(tr.Attributes) != maxTriggerAttrs || len(tr.Message) != 1024 || !strings.HasSuffix(tr.Message, "é") {
		t.Errorf("browser: %d attributes, a message of %d bytes", len(tr.Attributes), len(tr.Message))
	}
	for k, v := range tr.Attributes {
		if len(v) != 1024 {
			t.Errorf("attribute %s: %d bytes", k, len(v))
		}
	}
	if got := w.snapshotStats().AttrsCut; got != 1+16+84 {
		t.Errorf("browser: %d cuts, want 101", got)
	}
}

// TestScopeWebStreamReadsAfterBounds: a browser reading the stream after
// junk and bounds gets well-formed events only (each a JSON document).
func TestScopeWebStreamReadsAfterBounds(t *testing.T) {
	w := newScopeWeb(DefaultLimits())
	srv := httptest.NewServer(w.handler())
	defer srv.Close()
	r, _, done := openEvents(t, srv.URL)
	defer done()
	p := newExporterPayload()
	p.curve(strings.Repeat("n", 300), seriesObserved, 0.001, 10, uniformMass(0.008, 0.9))
	p.curve("ok", seriesObserved, 0.001, 10, uniformMass(0.008, 0.9))
	w.addMetrics(p.md)
	f := readSSE(t, bufio.NewReader(r))
	var m struct {
		Windows []*webWindow `json:"windows"`
		Stats   webStats     `json:"stats"`
	}
	if err := json.Unmarshal([]byte(f.data), &m); err != nil || f.event != "window" || len(m.Windows) != 1 ||
		m.Windows[0].Probe != "ok" || m.Stats.NamesRefused != 10 {
		t.Errorf("event %q: %v, %+v", f.event, err, m)
	}
}

// TestCutString: a value is cut at a character boundary, never inside a
// UTF-8 sequence; a byte of invalid UTF-8 counts as a character.
func TestCutString(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		want string
		cut  bool
	}{
		{"abc", 3, "abc", false},
		{"abcd", 3, "abc", true},
		{"aéé", 3, "aé", true}, // é is 2 bytes: "aé" is 3
		{"aéé", 4, "aé", true}, // byte 4 is inside the second é
		{"日本", 5, "日", true},   // 3-byte characters
		{"a\xff\xffb", 3, "a\xff\xff", true},
		{"\xc3", 0, "", true},
	} {
		got, cut := cutString(c.in, c.n)
		if got != c.want || cut != c.cut {
			t.Errorf("cutString(%q, %d) = %q, %v; want %q, %v", c.in, c.n, got, cut, c.want, c.cut)
		}
	}
	if err := DefaultLimits().Validate(); err != nil {
		t.Errorf("the default limits: %v", err)
	}
}

// TestScopeWebStreamState: the state a new browser is sent in frames holds
// what /api/state holds: every trigger and every window.
func TestScopeWebStreamState(t *testing.T) {
	w := newScopeWeb(testLimits(4))
	for _, b := range demoBatches(t) {
		w.addLogs(b.logs)
		w.addMetrics(b.metrics)
	}
	srv := httptest.NewServer(w.handler())
	defer srv.Close()
	_, streamed, done := openEvents(t, srv.URL)
	defer done()
	var api webState
	if err := json.Unmarshal(stateJSON(t, w), &api); err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal([]any{api.Triggers, api.Windows})
	b, _ := json.Marshal([]any{streamed.Triggers, streamed.Windows})
	if len(api.Triggers) == 0 || len(api.Windows) != 3 || string(a) != string(b) {
		t.Errorf("streamed state differs from /api/state (%d triggers, %d probes there)", len(api.Triggers), len(api.Windows))
	}
}
