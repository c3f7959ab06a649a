// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// checkoutFile is the shop of the README's model section, as an exporter or
// a trace backend writes it: one ExportTraceServiceRequest (one JSON
// document) holding every trace, its spans grouped by service. Made by
// writeCheckout.
const checkoutFile = "testdata/model/checkout.json"

// checkoutServices are the services of the checkout, in the order the
// document lists them.
var checkoutServices = []string{"frontend", "cart", "stock", "price", "pay", "bank"}

// checkoutTrace returns the spans of one checkout, times in ms from its
// start: frontend checkout calls cart get, then stock check and price
// quote in parallel, then pay charge, which calls bank debit; 2 % of the
// charges fail, and the checkout with them. Each part takes 0.05 ms plus
// an exponential time of the mean written below.
func checkoutTrace(rng *rand.Rand) []shopSpan {
	e := func(mean float64) float64 { return 0.05 + rng.ExpFloat64()*mean }
	cart0 := 0.1
	cart1 := cart0 + e(0.5)
	stock1, price1 := cart1+e(0.8), cart1+e(0.4)
	par := max(stock1, price1)
	bank0 := par + e(0.2)
	bank1 := bank0 + e(1)
	pay1 := bank1 + e(0.3)
	failed := rng.Float64() < 0.02
	return []shopSpan{
		{"frontend", "checkout", 1, 0, 0, pay1 + e(0.1), failed},
		{"cart", "get", 2, 1, cart0, cart1, false},
		{"stock", "check", 3, 1, cart1, stock1, false},
		{"price", "quote", 4, 1, cart1, price1, false},
		{"pay", "charge", 5, 1, par, pay1, failed},
		{"bank", "debit", 6, 5, bank0, bank1, false},
	}
}

// checkoutTraces returns n checkouts, 20 ms apart from a fixed epoch (n/50
// s of trace time: more than the default grace of 5 s for n > 250).
func checkoutTraces(n int, seed uint64) (ids []pcommon.TraceID, starts []time.Time, traces [][]shopSpan) {
	rng := rand.New(rand.NewPCG(seed, seed+2))
	epoch := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	for k := range n {
		var tid pcommon.TraceID
		tid[0] = 0xc0
		binary.BigEndian.PutUint64(tid[8:], uint64(k+1))
		ids = append(ids, tid)
		starts = append(starts, epoch.Add(time.Duration(k)*20*time.Millisecond))
		traces = append(traces, checkoutTrace(rng))
	}
	return ids, starts, traces
}

// appendSpan appends span s of trace k (id tid, started at t0) to ss.
func appendSpan(ss ptrace.SpanSlice, k int, tid pcommon.TraceID, t0 time.Time, s shopSpan) {
	sp := ss.AppendEmpty()
	sp.SetTraceID(tid)
	sp.SetSpanID(pcommon.SpanID{0xc0, byte(k >> 16), byte(k >> 8), byte(k), 0, 0, 0, s.id})
	if s.parent != 0 {
		sp.SetParentSpanID(pcommon.SpanID{0xc0, byte(k >> 16), byte(k >> 8), byte(k), 0, 0, 0, s.parent})
	}
	sp.SetName(s.name)
	at := func(ms float64) pcommon.Timestamp {
		return pcommon.NewTimestampFromTime(t0.Add(time.Duration(ms * 1e6)))
	}
	sp.SetStartTimestamp(at(s.start))
	sp.SetEndTimestamp(at(s.end))
	if s.failed {
		sp.Status().SetCode(ptrace.StatusCodeError)
	}
}

// writeCheckout writes n checkouts as one ExportTraceServiceRequest, a
// resource per service in checkoutServices order, each holding that
// service's spans in trace order.
func writeCheckout(t *testing.T, path string, n int, seed uint64) {
	t.Helper()
	ids, starts, traces := checkoutTraces(n, seed)
	td := ptrace.NewTraces()
	for _, svc := range checkoutServices {
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr("service.name", svc)
		ss := rs.ScopeSpans().AppendEmpty().Spans()
		for k, tr := range traces {
			for _, s := range tr {
				if s.service == svc {
					appendSpan(ss, k, ids[k], starts[k], s)
				}
			}
		}
	}
	writeRequests(t, path, []ptrace.Traces{td})
}

// writeRequests writes each request as a JSON line.
func writeRequests(t *testing.T, path string, tds []ptrace.Traces) {
	t.Helper()
	var buf bytes.Buffer
	for _, td := range tds {
		b, err := (&ptrace.JSONMarshaler{}).MarshalTraces(td)
		if err != nil {
			t.Fatal(err)
		}
		buf.Write(append(b, '\n'))
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestCheckoutTestdata keeps testdata/model/checkout.json what
// writeCheckout makes (-update-model rewrites it).
func TestCheckoutTestdata(t *testing.T) {
	path := filepath.Join(t.TempDir(), "checkout.json")
	writeCheckout(t, path, 300, 1)
	want, _ := os.ReadFile(path)
	if *updateModel {
		if err := os.WriteFile(checkoutFile, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(checkoutFile)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("%s is not what writeCheckout makes (err %v); run go test -run TestCheckoutTestdata -update-model", checkoutFile, err)
	}
}

// TestModelOneDocument: a document of 300 checkouts (6 s of trace time,
// more than the grace), spans grouped by service, is learned whole: every
// trace coherent, the diagram the checkout's structure, no doubt.
func TestModelOneDocument(t *testing.T) {
	dir := t.TempDir()
	status, out, stderr := runCmd("model", "--strict", checkoutFile, "-o", dir)
	if status != exitOK {
		t.Fatalf("status %d\n%s%s", status, out, stderr)
	}
	assertContainsAll(t, "deltaq model", out,
		"learned 300 of 300 traces (1800 spans): 6 nodes",
		"incoherent: 0 spans without their parent, 0 outside their parent, 0 traces without a root")
	if strings.Contains(out, "UNSURE") {
		t.Errorf("a coherent corpus is reported unsure:\n%s", out)
	}
	src, _ := os.ReadFile(filepath.Join(dir, "model.dq"))
	assertContainsAll(t, "model.dq", string(src),
		"frontend_checkout = frontend_checkout_self -> cart_get -> a:frontend_checkout_par(\n    price_quote,\n    stock_check\n) -> s:pay_charge;",
		"pay_charge = pay_charge_self -> bank_debit;")
}

// TestModelUnsure: checkouts written one per line, each root span 5 lines
// late (an export delayed behind others), learned with a grace of 1 ms:
// the roots arrive after their traces were closed. The model says first,
// in words, that it is unsure and why (grace too short), report.json lists
// the doubt, and --strict exits 1; with the default grace the same file is
// learned whole.
func TestModelUnsure(t *testing.T) {
	const n, late = 100, 5
	ids, starts, traces := checkoutTraces(n, 3)
	tds := make([]ptrace.Traces, n+late)
	for i := range tds {
		tds[i] = ptrace.NewTraces()
	}
	for k, tr := range traces {
		for _, s := range tr {
			line := k
			if s.parent == 0 {
				line = k + late
			}
			rs := tds[line].ResourceSpans().AppendEmpty()
			rs.Resource().Attributes().PutStr("service.name", s.service)
			appendSpan(rs.ScopeSpans().AppendEmpty().Spans(), k, ids[k], starts[k], s)
		}
	}
	path := filepath.Join(t.TempDir(), "late.json")
	writeRequests(t, path, tds)
	dir := t.TempDir()
	status, out, stderr := runCmd("model", "--strict", "--grace", "1ms", path, "-o", dir)
	if status != exitFail || !strings.HasPrefix(out, "THIS MODEL IS UNSURE:\n  - ") || !strings.Contains(stderr, "--strict: the model is unsure") {
		t.Fatalf("status %d, want %d; stdout\n%s\nstderr %s", status, exitFail, out, stderr)
	}
	assertContainsAll(t, "deltaq model", out, "of the traces", "are incoherent", "likely cause: grace too short:", "raise --grace")
	var rep modelReport
	rj, _ := os.ReadFile(filepath.Join(dir, "report.json"))
	if err := json.Unmarshal(rj, &rep); err != nil || len(rep.Doubts) == 0 || rep.Stats.Reopened == 0 {
		t.Errorf("report.json: %v, doubts %+v, reopened %d", err, rep.Doubts, rep.Stats.Reopened)
	}
	status, out, stderr = runCmd("model", "--strict", path, "-o", t.TempDir())
	if status != exitOK || strings.Contains(out, "UNSURE") || !strings.Contains(out, "learned 100 of 100 traces") {
		t.Errorf("default grace: status %d\n%s%s", status, out, stderr)
	}
}

// TestModelDeepTrace reproduces a hostile trace file: one trace of 9,999
// spans, each the parent of the next (2.2 MB), made deltaq model take 25 s
// and 1.46 GB (now 0.16 s and 36 MB). It is left out beyond --max-depth
// (64), with a warning naming the trace, and the rest is learned.
func TestModelDeepTrace(t *testing.T) {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "deep")
	ss := rs.ScopeSpans().AppendEmpty().Spans()
	for i := 1; i <= 9999; i++ {
		sp := ss.AppendEmpty()
		sp.SetTraceID(pcommon.TraceID{0xdd, 15: 1})
		var id, parent pcommon.SpanID
		binary.BigEndian.PutUint64(id[:], uint64(i))
		binary.BigEndian.PutUint64(parent[:], uint64(i-1))
		sp.SetSpanID(id)
		sp.SetParentSpanID(parent)
		sp.SetName("op" + strings.Repeat("x", i%7))
		sp.SetStartTimestamp(pcommon.Timestamp(1e9 + i))
		sp.SetEndTimestamp(pcommon.Timestamp(2e9 - i))
	}
	path := filepath.Join(t.TempDir(), "deep.json")
	writeRequests(t, path, []ptrace.Traces{td})
	status, out, stderr := runCmd("model", path, checkoutFile, "-o", t.TempDir())
	if status != exitOK {
		t.Fatalf("status %d\n%s%s", status, out, stderr)
	}
	assertContainsAll(t, "stderr", stderr, "warning: 1 traces deeper than --max-depth 64 left out; the first: trace dd000000000000000000000000000001, 9998 calls deep")
	assertContainsAll(t, "stdout", out, "learned 300 of 301 traces", ": 6 nodes", "1 deeper than --max-depth")
	status, _, stderr = runCmd("model", "--max-record", "1", path, "-o", t.TempDir())
	if status != exitFail || !strings.Contains(stderr, "deep.json:1: line longer than 1 MiB") {
		t.Errorf("--max-record 1 on a 2 MB line: status %d, %s", status, stderr)
	}
	status, _, stderr = runCmd("model", "--max-record", "1025", path, "-o", t.TempDir())
	if status != exitUsage || !strings.Contains(stderr, "--max-record 1025: want MiB in [1, 1024]") {
		t.Errorf("--max-record 1025: status %d, %s", status, stderr)
	}
	status, _, stderr = runCmd("model", "--max-depth", "1001", path, "-o", t.TempDir())
	if status != exitUsage || !strings.Contains(stderr, "--max-depth 1001: want a number in [1, 1000]") {
		t.Errorf("--max-depth 1001: status %d, %s", status, stderr)
	}
}

// TestWhatifResilience runs the README's resilience what-ifs on the
// checkout: the rows shown there, and the loads in the JSON output.
func TestWhatifResilience(t *testing.T) {
	dir := t.TempDir()
	if status, out, stderr := runCmd("model", checkoutFile, "-o", dir); status != exitOK {
		t.Fatalf("status %d\n%s%s", status, out, stderr)
	}
	status, out, stderr := runCmd("whatif", dir, "--set", "pay.charge=timeout(4ms)", "--set", "stock.check=hedge(1ms)")
	if status != exitOK {
		t.Fatalf("status %d\n%s%s", status, out, stderr)
	}
	assertContainsAll(t, "timeout and hedge", out,
		"  0.5             3.201ms      3.117ms\n",
		"  failure            0.01      0.05538\n",
		"  load of stock.check=hedge(1ms) on stock_check: 0.3067 extra attempts per call, 0.3067 per request\n")
	status, out, stderr = runCmd("whatif", dir, "--set", "pay.charge=retry(2, 2.5ms)")
	if status != exitOK {
		t.Fatalf("status %d\n%s%s", status, out, stderr)
	}
	assertContainsAll(t, "retry", out,
		"  0.99            19.05ms      9.455ms\n",
		"  failure            0.01     0.006153\n",
		"  load of pay.charge=retry(2, 2.5ms) on pay_charge: 0.2168 extra attempts per call, 0.2168 per request\n")
	status, out, stderr = runCmd("whatif", dir, "--json", "--set", "pay.charge=hedge(3ms)")
	var js struct {
		Roots map[string]whatifRoot `json:"roots"`
	}
	if err := json.Unmarshal([]byte(out), &js); status != exitOK || err != nil {
		t.Fatalf("--json: status %d, %v\n%s", status, err, stderr)
	}
	r := js.Roots["frontend_checkout"]
	if len(r.Loads) != 1 || r.Loads[0].Probe != "pay_charge" || !(r.Loads[0].PerCall > 0 && r.Loads[0].PerCall < 0.5) {
		t.Errorf("hedge loads %+v", r.Loads)
	}
	// A pattern beyond the model's bins names the intervention once.
	for _, set := range []string{"pay.charge=hedge(3600s)", "pay.charge=retry(2, 3600s)"} {
		status, _, stderr := runCmd("whatif", dir, "--set", set)
		if status != exitFail || strings.Count(stderr, set[len("pay.charge="):len("pay.charge=")+5]) != 1 || !strings.HasPrefix(stderr, "deltaq whatif: "+set+": ") {
			t.Errorf("--set %s: status %d, %s; want an error naming it once", set, status, stderr)
		}
	}
	for _, bad := range []string{"pay.charge=retry(0, 1ms)", "pay.charge=retry(11, 1ms)", "pay.charge=hedge(0ms)", "pay.charge=timeout(1ms, 2ms)", "frontend.checkout=timeout(1ms)"} {
		if status, _, stderr := runCmd("whatif", dir, "--set", bad); status == exitOK {
			t.Errorf("--set %s accepted: %s", bad, stderr)
		}
	}
}
