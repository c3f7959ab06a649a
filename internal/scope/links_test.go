// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package scope

import (
	"encoding/json"
	"maps"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/deltaq-otel/deltaq/internal/contract"
)

const jaeger = TraceURL("http://jaeger:16686/trace/{trace_id}")

// Trace ids of the test trigger: its own trace context is the timeout's.
const (
	slowID    = "0af7651916cd43dd8448eb211c80319c"
	timeoutID = "4bf92f3577b34da6a3ce929d0e0e4736"
)

// linkedTrigger is a qta trigger record as the connector writes it: its own
// trace context is its worst instance (the timeout), and its attributes
// name the slowest successes and the timeouts, with an id that is no trace
// id and an all-zero one among them.
func linkedTrigger() plog.Logs {
	ld := plog.NewLogs()
	lr := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
	lr.SetEventName(eventTrigger)
	lr.SetTimestamp(pcommon.NewTimestampFromTime(testWindowEnd))
	lr.SetSeverityText("WARN")
	var tid pcommon.TraceID
	copy(tid[:], mustHex(timeoutID))
	lr.SetTraceID(tid)
	lr.SetSpanID(pcommon.SpanID{7: 1})
	a := lr.Attributes()
	a.PutStr(contract.AttrProbe, "worker_2")
	a.PutStr(contract.AttrTrigger, "qta")
	slow := a.PutEmptySlice(contract.AttrSlowestTraceIDs)
	for _, id := range []string{slowID, "<script>", strings.Repeat("0", 32)} {
		slow.AppendEmpty().SetStr(id)
	}
	a.PutEmptySlice(contract.AttrTimeoutTraceIDs).AppendEmpty().SetStr(timeoutID)
	return ld
}

func mustHex(s string) []byte {
	b := make([]byte, len(s)/2)
	for i := range b {
		hi, lo := strings.IndexByte("0123456789abcdef", s[2*i]), strings.IndexByte("0123456789abcdef", s[2*i+1])
		b[i] = byte(hi<<4 | lo)
	}
	return b
}

func TestTraceURLValidate(t *testing.T) {
	for _, ok := range []TraceURL{"", jaeger, "https://grafana.example/explore?left=%7B%22queries%22:[%7B%22query%22:%22{trace_id}%22%7D]%7D"} {
		if err := ok.Validate(); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for bad, want := range map[TraceURL]string{
		"http://jaeger:16686/trace/":             "no {trace_id} in it",
		"javascript:alert('{trace_id}')":         "want an http:// or https:// address",
		"ftp://traces.example/{trace_id}":        "want an http:// or https:// address",
		"http:///trace/{trace_id}":               "want an http:// or https:// address",
		"jaeger:16686/trace/{trace_id}":          "want an http:// or https:// address",
		"http://jaeger:16686/trace/{trace_id}%%": "want an http:// or https:// address",
	} {
		if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "--trace-url") {
			t.Errorf("%q: err %v, want --trace-url … %q", bad, err, want)
		}
	}
	if err := (Options{Limits: DefaultLimits(), Frame: DefaultFrame, TraceURL: "ftp://x/{trace_id}"}).Validate(); err == nil {
		t.Error("Options.Validate passed a bad --trace-url")
	}
}

// The links of a trigger: its own trace context and every well-formed id
// of deltaq.trace_ids.*, none without a template.
func TestTraceLinks(t *testing.T) {
	lr := linkedTrigger().ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(0)
	want := map[string]string{
		slowID:    "http://jaeger:16686/trace/" + slowID,
		timeoutID: "http://jaeger:16686/trace/" + timeoutID,
	}
	if got := jaeger.traceLinks(lr); !maps.Equal(got, want) {
		t.Errorf("links %v, want %v", got, want)
	}
	if got := TraceURL("").traceLinks(lr); got != nil {
		t.Errorf("links without a template: %v", got)
	}
	// Bounded: a record naming 100 traces links maxTraceLinks of them.
	many := lr.Attributes().PutEmptySlice(contract.AttrFailureTraceIDs)
	for i := range 100 {
		many.AppendEmpty().SetStr(strings.Repeat("0", 30) + string("0123456789abcdef"[i/16]) + string("0123456789abcdef"[i%16]))
	}
	if got := jaeger.traceLinks(lr); len(got) != maxTraceLinks {
		t.Errorf("%d links, want at most %d", len(got), maxTraceLinks)
	}
}

// The terminal prints a trigger's trace addresses under it; the browser
// view sends them with the trigger.
func TestTraceLinksInBothViews(t *testing.T) {
	s := newScopeState(DefaultLimits())
	s.traceURL = jaeger
	s.addMetrics(syntheticWindow())
	s.addLogs(linkedTrigger())
	frame := renderScope(s, defaultScopeFrame)
	want := "    traces: http://jaeger:16686/trace/" + slowID + " http://jaeger:16686/trace/" + timeoutID + "\n"
	if !strings.Contains(frame, want) {
		t.Errorf("the terminal frame lacks %q:\n%s", want, frame)
	}

	w := newScopeWeb(DefaultLimits())
	w.traceURL = jaeger
	w.addLogs(linkedTrigger())
	var st webState
	if err := json.Unmarshal(stateJSON(t, w), &st); err != nil {
		t.Fatal(err)
	}
	if len(st.Triggers) != 1 || st.Triggers[0].TraceLinks[timeoutID] != "http://jaeger:16686/trace/"+timeoutID ||
		len(st.Triggers[0].TraceLinks) != 2 {
		t.Errorf("the browser view's triggers %+v: want the two links", st.Triggers)
	}
}

// snapshotRecords is one deltaq.snapshot record per probe and window of a
// snapshot, as the connector sends them.
func snapshotRecords(id int64, probes []string, windows int) plog.Logs {
	return snapshotRecordsFrom("", 0, id, probes, windows)
}

// snapshotRecordsFrom is snapshotRecords from a collector whose resource
// has the service.instance.id source (none for "") and whose analysis
// began at start (deltaq.agent.start, none for 0).
func snapshotRecordsFrom(source string, start, id int64, probes []string, windows int) plog.Logs {
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	if source != "" {
		rl.Resource().Attributes().PutStr("service.instance.id", source)
	}
	lrs := rl.ScopeLogs().AppendEmpty().LogRecords()
	for w := range windows {
		end := testWindowEnd.Add(time.Duration(w) * time.Second)
		for _, p := range probes {
			lr := lrs.AppendEmpty()
			lr.SetEventName(eventSnapshot)
			lr.SetTimestamp(pcommon.NewTimestampFromTime(end))
			a := lr.Attributes()
			a.PutStr(contract.AttrProbe, p)
			a.PutInt(contract.AttrSnapshotID, id)
			if start != 0 {
				a.PutInt(contract.AttrAgentStart, start)
			}
			a.PutStr(contract.AttrWindowStart, end.Add(-time.Second).Format(time.RFC3339Nano))
			a.PutStr(contract.AttrWindowEnd, end.Format(time.RFC3339Nano))
		}
	}
	return ld
}

// The terminal counted snapshot records: the demo's one snapshot of three
// probes over eleven windows showed as 33 in its header while the page
// showed 1. Both views now count snapshots by id, and agree.
func TestSnapshotCountsAgree(t *testing.T) {
	probes := []string{"job", "worker_1", "worker_2"}
	s := newScopeState(DefaultLimits())
	w := newScopeWeb(DefaultLimits())
	for _, ld := range []plog.Logs{snapshotRecords(1, probes, 11), snapshotRecords(2, probes[:1], 3), snapshotRecords(1, probes, 1)} {
		s.addLogs(ld)
		w.addLogs(ld)
	}
	if !strings.Contains(renderScope(s, defaultScopeFrame), " · 2 snapshots\n") {
		t.Errorf("the terminal's header: %q, want 2 snapshots", strings.SplitN(renderScope(s, defaultScopeFrame), "\n", 2)[0])
	}
	if got := w.snapshotStats().SnapshotsSeen; got != s.snapshots {
		t.Errorf("the page counts %d snapshots, the terminal %d", got, s.snapshots)
	}
	// Beyond the snapshots both keep, each new id still counts once.
	for id := int64(3); id <= 40; id++ {
		s.addLogs(snapshotRecords(id, probes[:1], 2))
		w.addLogs(snapshotRecords(id, probes[:1], 2))
	}
	if s.snapshots != 40 || w.snapshotStats().SnapshotsSeen != 40 || len(w.snapOrder) != maxWebSnapshots {
		t.Errorf("after 40 snapshots: terminal %d, page %d (keeping %d); want 40 and 40, keeping %d",
			s.snapshots, w.snapshotStats().SnapshotsSeen, len(w.snapOrder), maxWebSnapshots)
	}
	// A record without a snapshot id counts as malformed, not as a snapshot.
	bad := snapshotRecords(0, probes[:1], 1)
	bad.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(0).Attributes().Remove(contract.AttrSnapshotID)
	s.addLogs(bad)
	if s.snapshots != 40 || s.malformed != 1 {
		t.Errorf("a record without an id: %d snapshots, %d malformed; want 40 and 1", s.snapshots, s.malformed)
	}
}

// In a browser, with --trace-url, the trigger's trace ids are links to the
// tracing UI, each to its own trace, and the other text stays text; the
// page makes no link of an id the scope did not link.
func TestScopeBrowserTraceLinks(t *testing.T) {
	chromium := chromiumForTest(t)
	otlp, base := startScopeHTTP(t, func(o *Options) { o.TraceURL = jaeger })
	ld := linkedTrigger()
	exportTo(t, otlp, &ld, syntheticWindow())

	page := startChromium(t, chromium, browserWidth, 1000)
	page.call(t, "Page.navigate", map[string]any{"url": base + "/"})
	page.waitTrue(t, "the trigger", `document.querySelector('#triggers li[data-probe="worker_2"]') !== null`)
	var links [][2]string
	page.eval(t, `[...document.querySelectorAll('#triggers li[data-probe="worker_2"] a.t-trace')].map((a) => [a.textContent, a.href])`, &links)
	want := [][2]string{{slowID, "http://jaeger:16686/trace/" + slowID}, {timeoutID, "http://jaeger:16686/trace/" + timeoutID}}
	if len(links) != 2 || links[0] != want[0] || links[1] != want[1] {
		t.Errorf("links on the page %q, want %q", links, want)
	}
	var text string
	page.eval(t, `document.querySelector('#triggers li[data-probe="worker_2"] .t-attrs').textContent`, &text)
	if !strings.Contains(text, "<script>") || !strings.Contains(text, strings.Repeat("0", 32)) {
		t.Errorf("the attributes' other values are not shown as text: %q", text)
	}
}

// A connector numbers its snapshots from 1, so the number alone made the
// snapshots of two collectors feeding one scope one snapshot (their records
// filed together), and a restarted collector's new snapshots older than
// those it had sent before: refused once 16 were kept. The scope now keys
// a snapshot by the collector (service.instance.id), when its analysis
// began (deltaq.agent.start) and its number, and numbers the keys itself in
// the order it sees them; a trigger links to its snapshot by that number.
func TestSnapshotsOfSeveralCollectors(t *testing.T) {
	s := newScopeState(DefaultLimits())
	w := newScopeWeb(DefaultLimits())
	add := func(ld plog.Logs) {
		s.addLogs(ld)
		w.addLogs(ld)
	}
	// A trigger of collector b names its snapshot 1 before the records come.
	trig := plog.NewLogs()
	rl := trig.ResourceLogs().AppendEmpty()
	rl.Resource().Attributes().PutStr("service.instance.id", "b")
	lr := rl.ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
	lr.SetEventName(eventTrigger)
	lr.SetTimestamp(pcommon.NewTimestampFromTime(time.Now()))
	lr.Attributes().PutStr(attrProbe, "job")
	lr.Attributes().PutStr(attrTrigger, "qta")
	lr.Attributes().PutInt(contract.AttrSnapshotID, 1)
	lr.Attributes().PutInt(contract.AttrAgentStart, 7)
	add(trig)
	add(snapshotRecordsFrom("a", 5, 1, []string{"job", "worker_1"}, 3))
	add(snapshotRecordsFrom("b", 7, 1, []string{"job"}, 2))
	if s.snapshots != 2 || w.snapshotStats().SnapshotsSeen != 2 || len(w.snapOrder) != 2 {
		t.Fatalf("two collectors' snapshot 1: terminal %d, page %d (keeping %d); want 2",
			s.snapshots, w.snapshotStats().SnapshotsSeen, len(w.snapOrder))
	}
	if len(w.triggers) != 1 {
		t.Fatalf("%d triggers kept, want 1", len(w.triggers))
	}
	tr := w.triggers[0]
	b := w.snapshots[tr.Snapshot]
	if b == nil || b.Source != "b" || b.Number != 1 || tr.SnapshotNumber != 1 || len(b.Windows) != 2 || len(b.Windows[0].Probes) != 1 {
		t.Fatalf("the trigger of b links %d (number %d) to %+v; want b's snapshot 1 of 2 windows of one probe", tr.Snapshot, tr.SnapshotNumber, b)
	}
	for _, id := range w.snapOrder {
		if sn := w.snapshots[id]; sn.Source == "a" && (sn.Number != 1 || len(sn.Windows) != 3 || len(sn.Windows[0].Probes) != 2) {
			t.Errorf("a's snapshot 1: %+v; want 3 windows of two probes", sn)
		}
	}

	// Collector a fills the 16 places, then restarts (a later start) and
	// numbers from 1 again: its new snapshots are new, kept apart from the
	// old ones of the same numbers, and the oldest go.
	for id := int64(2); id <= maxWebSnapshots+2; id++ {
		add(snapshotRecordsFrom("a", 5, id, []string{"job"}, 1))
	}
	add(snapshotRecordsFrom("a", 9, 1, []string{"worker_2"}, 4))
	newest := w.snapshots[w.snapOrder[len(w.snapOrder)-1]]
	if newest == nil || newest.Source != "a" || newest.Number != 1 || len(newest.Windows) != 4 || newest.Windows[0].Probes[0].Probe != "worker_2" {
		t.Fatalf("the restarted collector's snapshot 1: %+v; want it kept, newest, apart from the old 1", newest)
	}
	want := 2 + maxWebSnapshots + 1 + 1
	if s.snapshots != want || w.snapshotStats().SnapshotsSeen != want || len(w.snapOrder) != maxWebSnapshots {
		t.Errorf("after the restart: terminal %d, page %d (keeping %d); want %d, keeping %d",
			s.snapshots, w.snapshotStats().SnapshotsSeen, len(w.snapOrder), want, maxWebSnapshots)
	}
	// A record of an evicted snapshot is neither kept nor counted again.
	add(snapshotRecordsFrom("a", 5, 2, []string{"job"}, 1))
	if s.snapshots != want || w.snapshotStats().SnapshotsSeen != want {
		t.Errorf("a record of an evicted snapshot: terminal %d, page %d; want %d", s.snapshots, w.snapshotStats().SnapshotsSeen, want)
	}
}

// snapKeys numbers keys in the order they come, gives a key seen again its
// number, and forgets the oldest beyond its bound, saying which.
func TestSnapKeys(t *testing.T) {
	k := newSnapKeys(2)
	a, b, c := snapKey{"x", 1, 1}, snapKey{"x", 2, 1}, snapKey{"y", 1, 1}
	if n, f := k.number(a); n != 1 || f != 0 {
		t.Fatalf("a: %d, forgot %d; want 1, none", n, f)
	}
	if n, f := k.number(b); n != 2 || f != 0 {
		t.Fatalf("b: %d, forgot %d; want 2, none", n, f)
	}
	if n, f := k.number(a); n != 1 || f != 0 {
		t.Fatalf("a again: %d, forgot %d; want 1, none", n, f)
	}
	if n, f := k.number(c); n != 3 || f != 1 {
		t.Fatalf("c: %d, forgot %d; want 3, forgetting a's 1", n, f)
	}
	if n, f := k.number(a); n != 4 || f != 2 {
		t.Fatalf("a after it was forgotten: %d, forgot %d; want 4, forgetting b's 2", n, f)
	}
	if len(k.byKey) != 2 || len(k.order) != 2 {
		t.Errorf("%d keys, %d in order; want 2", len(k.byKey), len(k.order))
	}
}
