// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package scope

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/deltaq-otel/deltaq/internal/core/coretest"
	"github.com/deltaq-otel/deltaq/internal/otlprecv"
)

// browserE2EEnv, set to 1, runs the browser view's end-to-end test
// (e2e_test.go) and makes a missing Chromium a failure.
const browserE2EEnv = "DELTAQ_BROWSER_E2E"

// chromiumForTest returns the browser of the browser tests: $CHROMIUM, else
// chromium or google-chrome on PATH. Without one the test is skipped, or
// fails with DELTAQ_BROWSER_E2E=1; -short skips it too.
func chromiumForTest(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: no browser")
	}
	if c := os.Getenv("CHROMIUM"); c != "" {
		return c
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	if os.Getenv(browserE2EEnv) == "1" {
		t.Fatalf("%s=1 but no Chromium: set CHROMIUM", browserE2EEnv)
	}
	t.Skip("no Chromium on PATH: set CHROMIUM to run the browser test")
	return ""
}

// parseShownDuration reads a duration as the page writes it ("4.44 ms",
// "850 µs", "1.2 s", "0") in seconds.
func parseShownDuration(s string) (float64, error) {
	num, unit, _ := strings.Cut(s, " ")
	v, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, err
	}
	switch unit {
	case "µs":
		return v * 1e-6, nil
	case "ms":
		return v * 1e-3, nil
	case "s", "":
		return v, nil
	}
	return 0, fmt.Errorf("unit %q", unit)
}

// browserWidth is the width of the test's browser window, in CSS pixels.
const browserWidth = 1500

// quantileCell is one cell of a probe's quantile table on the page.
type quantileCell struct {
	Probe, Series, Q, Text string
}

const quantileCellsJS = `[...document.querySelectorAll("section.probe")].flatMap((s) =>
	[...s.querySelectorAll("td[data-series]")].map((td) => ({Probe: s.dataset.probe, Series: td.dataset.series, Q: td.dataset.q, Text: td.textContent})))`

// checkQuantileCells compares the page's quantile cells with want (probe →
// series → q → seconds): a cell shows its quantile to three significant
// digits, within half a unit of the third (0.5 %), a predicted cell
// a·Q(q) + b of the observed one, and a quantile want lacks "–". At least
// minCells cells must match.
func checkQuantileCells(t *testing.T, cells []quantileCell, want map[string]map[string]map[float64]float64, a, b float64, minCells int) {
	t.Helper()
	seen := 0
	for _, c := range cells {
		q, err := strconv.ParseFloat(c.Q, 64)
		if err != nil {
			t.Fatalf("cell %+v: %v", c, err)
		}
		series := c.Series
		if series == "predicted" {
			series = seriesObserved
		}
		v, ok := want[c.Probe][series][q]
		if !ok {
			if c.Text != "–" {
				t.Errorf("cell %+v: no such quantile in the OTLP data, want –", c)
			}
			continue
		}
		if c.Series == "predicted" {
			v = a*v + b
		}
		got, err := parseShownDuration(c.Text)
		if err != nil || math.Abs(got-v) > 0.005*v+1e-12 {
			t.Errorf("cell %+v = %g s (%v), want %g s", c, got, err, v)
		}
		seen++
	}
	if seen < minCells {
		t.Errorf("only %d quantile cells matched the OTLP data, want %d: %+v", seen, minCells, cells)
	}
}

// qtaInputsJS reads every probe's QTA box: probe → its text.
const qtaInputsJS = `Object.fromEntries([...document.querySelectorAll("section.probe")].map((s) =>
	[s.dataset.probe, s.querySelector(".qta-input").value]))`

// demoQTAText is the QTA box of each probe of examples/demo/collector.yaml
// (and demoBatches), pre-filled from deltaq.qta.point and
// deltaq.qta.max_failure: the configured delays exactly.
var demoQTAText = map[string]string{
	"job":      "40ms:0.5 100ms:0.9 fail:0.02",
	"worker_1": "20ms:0.5 70ms:0.9 fail:0.01",
	"worker_2": "20ms:0.5 70ms:0.9 fail:0.01",
}

// TestScopeBrowser runs deltaq scope --http in the test, sends it over
// OTLP/gRPC the metrics and records the real builders make of a
// deterministic demo workload (demoBatches), and drives headless Chromium
// over the DevTools protocol: the probes appear with their QTA boxes
// pre-filled exactly, a trigger appears live after the slow-down, the
// quantile table shows the OTLP quantiles to its 3 significant digits, the
// time slider goes back to the slow window (QTA broken), the Quality of
// Outcome scores follow the slider (withheld in the lull), an intervention's
// predicted quantiles are a·Q(q) + b, a trigger opens its snapshot, and the
// QTA curve of an older connector still pre-fills the box. It needs no
// collector, and every window is known in advance; TestScopeBrowserCollector
// is the same page end to end.
func TestScopeBrowser(t *testing.T) {
	chromium := chromiumForTest(t)
	batches := demoBatches(t)
	otlp, base := startScopeHTTP(t)
	send := func(from, to int) {
		for _, b := range batches[from:to] {
			if b.logs.LogRecordCount() > 0 {
				exportTo(t, otlp, &b.logs, b.metrics)
			} else {
				exportTo(t, otlp, nil, b.metrics)
			}
		}
	}
	send(0, demoSlowFrom)

	page := startChromium(t, chromium, browserWidth, 1000)
	page.call(t, "Page.navigate", map[string]any{"url": base + "/"})
	page.waitTrue(t, "three probes", `document.querySelectorAll("section.probe").length === 3`)
	var names []string
	page.eval(t, `[...document.querySelectorAll("section.probe")].map((s) => s.dataset.probe)`, &names)
	if strings.Join(names, ",") != "job,worker_1,worker_2" {
		t.Errorf("probes on the page %v, want job, worker_1, worker_2", names)
	}
	var n int
	page.eval(t, `document.querySelectorAll("#triggers li").length`, &n)
	if n != 0 {
		t.Errorf("%d triggers before the slow-down", n)
	}
	// Names from the data are shown as the terminal shows them: a
	// right-to-left override, a control character and a zero-width space
	// as escapes, neither reordering the text nor hiding in it.
	var shown string
	page.eval(t, `printable("a\u202eb\u0007c\u200bd é")`, &shown)
	if want := `a\u202eb\x07c\u200bd é`; shown != want {
		t.Errorf("printable on the page: %q, want %q", shown, want)
	}
	// Failure ratios are written as the terminal writes them (percentText):
	// never 0.00 % for a ratio above 0, nor 100.00 % for one below 1.
	for _, v := range percentCases {
		var got string
		page.eval(t, fmt.Sprintf("percentText(%v)", v.ratio), &got)
		if got != v.want {
			t.Errorf("percentText(%v) on the page: %q, want %q", v.ratio, got, v.want)
		}
	}
	var boxes map[string]string
	page.eval(t, qtaInputsJS, &boxes)
	if !maps.Equal(boxes, demoQTAText) {
		t.Errorf("QTA boxes %q, want %q", boxes, demoQTAText)
	}

	// The slow-down: the page, already open, gets the triggers pushed.
	send(demoSlowFrom, len(batches))
	page.waitTrue(t, "a qta trigger of worker_2",
		`document.querySelector('#triggers li[data-probe="worker_2"][data-kind="qta"]') !== null`)
	// The record's attributes are listed as they arrived, as text.
	var attrs string
	page.eval(t, `document.querySelector('#triggers li[data-probe="worker_2"][data-kind="qta"] .t-attrs').textContent`, &attrs)
	if !strings.Contains(attrs, "deltaq.observed=") || !strings.Contains(attrs, "deltaq.snapshot.id=") {
		t.Errorf("the qta trigger's attributes on the page: %q", attrs)
	}
	page.waitTrue(t, "the last window", fmt.Sprintf(`document.getElementById("stats").textContent.includes("%d batches")`, demoWindows))
	// The demo's windows and triggers are of 2023, not of today: their
	// times are written with their date (a window ending at 22:13:30 of
	// another day looked like one of today).
	var ending, fired string
	page.eval(t, `document.querySelector('section.probe[data-probe="job"] .probe-time').textContent`, &ending)
	page.eval(t, `document.querySelector('#triggers li[data-probe="worker_2"][data-kind="qta"] .t-time').textContent`, &fired)
	if want := "window ending " + coretest.At(demoWindows*time.Second).Format("2006-01-02 15:04:05.000Z"); ending != want ||
		!strings.HasPrefix(fired, coretest.T0.Format("2006-01-02 ")) {
		t.Errorf("job's window %q, want %q; worker_2's qta trigger at %q, want its date first", ending, want, fired)
	}

	// The quantile table against the OTLP data of the last window.
	checkQuantiles := func(want map[string]map[string]map[float64]float64, a, b float64) {
		t.Helper()
		var cells []quantileCell
		page.eval(t, quantileCellsJS, &cells)
		checkQuantileCells(t, cells, want, a, b, 10)
	}
	checkQuantiles(otlpQuantiles(batches[len(batches)-1].metrics), 1, 0)
	// Beside the window its own 40 jobs; below, the totals of all 10
	// windows, labelled as such (job timed out 4 in each slow window).
	checkShownOutcomes(t, page, "job", "in window: success 40, timeout 0, failure 0",
		fmt.Sprintf("total since 22:13:19Z: success %d, timeout 8, failure 0", demoAllJobs-8))
	checkQoO := func(at string, want map[string]string) {
		t.Helper()
		for key, text := range want {
			probe, series, _ := strings.Cut(key, " ")
			js := fmt.Sprintf(`document.querySelector('section.probe[data-probe="%s"] [data-qoo="%s"]')?.textContent ?? ""`, probe, series)
			page.waitTrue(t, fmt.Sprintf("%s: %s's %s score", at, probe, series), fmt.Sprintf(`(%s).startsWith(%q)`, js, text))
		}
		var n int
		page.eval(t, `document.querySelectorAll('section.probe[data-probe="worker_1"] [data-qoo]').length`, &n)
		if n != 0 {
			t.Errorf("%s: worker_1 has no requirement, but %d scores on the page", at, n)
		}
	}
	// The Quality of Outcome of the last window (TestScopeDecodesTheObserversQoO
	// has the reasons of these and the next scores).
	checkQoO("the last window", map[string]string{
		"job observed": "QoO observed 100 (latency 100, loss 100)", "job calculated": "QoO calculated 100 (latency 100, loss 100)",
		"worker_2 observed": "QoO observed 100 (latency 100, loss 100, rate 100)",
	})
	slide := func(window int) {
		page.eval(t, fmt.Sprintf(`(() => { const s = document.getElementById("slider");
		s.value = "%d"; s.dispatchEvent(new Event("input")); return s.max; })()`, window), nil)
	}
	// The lull: job's scores withheld, worker_2's 0 from its rate.
	slide(demoLull)
	checkQoO("the lull", map[string]string{
		"job observed": "QoO observed withheld (too few instances)", "job calculated": "QoO calculated withheld (too few instances)",
		"worker_2 observed": "QoO observed 0 set by rate (loss 100, rate 0)",
	})

	// Back to the slow window with the time slider: worker_2 breaks its QTA,
	// and the page's own check of the QTA says so too.
	slide(demoSlowFrom)
	page.waitTrue(t, "worker_2's QTA broken at the slow window",
		`document.querySelector('section.probe[data-probe="worker_2"] .qta-state').textContent === "QTA broken"`)
	var check, hold string
	page.eval(t, `document.querySelector('section.probe[data-probe="worker_2"] [data-check="observed"]').textContent`, &check)
	page.eval(t, `document.getElementById("hold").textContent`, &hold)
	if !strings.HasPrefix(check, "observed: breaks, F(20 ms) = 0.000 < 0.5") || hold != "Resume" {
		t.Errorf("at the slow window: QTA check %q, hold button %q", check, hold)
	}
	checkQuantiles(otlpQuantiles(batches[demoSlowFrom].metrics), 1, 0)
	// job's scores are its loss component, 100 · (1 − 0.08/0.18), shown
	// rounded down; worker_2's is set by its latency.
	checkQoO("the slow window", map[string]string{
		"job observed": "QoO observed 55.5 set by loss (latency ", "job calculated": "QoO calculated 55.5 set by loss (latency ",
		"worker_2 observed": "QoO observed ",
	})
	var w2 string
	page.eval(t, `document.querySelector('section.probe[data-probe="worker_2"] [data-qoo="observed"]').textContent`, &w2)
	if !strings.Contains(w2, " set by latency (latency ") || !strings.Contains(w2, "loss 52.6, rate 100)") {
		t.Errorf("worker_2's score at the slow window: %q, want set by latency, loss 52.6 (100 · (1 − 0.09/0.19)), rate 100", w2)
	}

	// An intervention on worker_1 at that window: the predicted row is
	// a·Q(q) + b of the observed one.
	page.eval(t, `(() => { const c = document.querySelector('section.probe[data-probe="worker_1"]');
		c.querySelector(".iv-a").value = "1.5"; c.querySelector(".iv-b").value = "5ms";
		c.querySelector(".iv-b").dispatchEvent(new Event("input")); return true; })()`, nil)
	page.waitTrue(t, "the predicted row", `document.querySelector('td[data-series="predicted"]') !== null`)
	checkQuantiles(otlpQuantiles(batches[demoSlowFrom].metrics), 1.5, 0.005)
	// worker_2's own counts at the slow window: a tenth of its 40 timed
	// out; the totals, labelled so, are those of the 6 windows so far.
	checkShownOutcomes(t, page, "worker_2", "in window: success 36, timeout 4, failure 0",
		"total since 22:13:19Z: success 236, timeout 4, failure 0")
	checkInputMessages(t, page, func() { checkQuantiles(otlpQuantiles(batches[demoSlowFrom].metrics), 1.5, 0.005) })

	page.screenshot(t, filepath.Join(t.TempDir(), "scope.png"), browserWidth)

	// A trigger opens its snapshot: the ΔQs of the three probes in 5 windows.
	page.eval(t, `document.querySelector('#triggers li[data-probe="worker_2"][data-kind="qta"]').click()`, nil)
	page.waitTrue(t, "the snapshot", `document.getElementById("snapshot").open &&
		document.querySelectorAll("#snapshot-body [data-probe]").length === 3`)
	var rows int
	page.eval(t, `document.querySelectorAll('#snapshot-body [data-probe="worker_2"] tr').length`, &rows)
	if rows != 1+5 {
		t.Errorf("snapshot table of worker_2: %d rows, want a header and 5 windows", rows)
	}
	// Titled by the connector's number of it (its snapshot files carry it).
	var title string
	page.eval(t, `document.getElementById("snapshot-title").textContent`, &title)
	if title != "Snapshot #1" {
		t.Errorf("the snapshot's title %q, want Snapshot #1", title)
	}
	page.screenshot(t, filepath.Join(t.TempDir(), "scope-snapshot.png"), browserWidth)

	// As an older connector, syntheticWindow sends the QTA of search only as
	// the sampled deltaq.cdf curve (1 ms edges, testQTA {2ms: 0.25, 5ms: 0.5,
	// 9ms: 0.85}, flat to dMax, so no failure step): the box is pre-filled
	// from it. checkout's QTA comes exactly, with its failure bound.
	page.eval(t, `(() => { document.getElementById("snapshot").close(); document.getElementById("hold").click(); return true; })()`, nil)
	exportTo(t, otlp, nil, syntheticWindow())
	page.waitTrue(t, "the synthetic window's probes", `document.querySelectorAll("section.probe").length === 5`)
	page.eval(t, qtaInputsJS, &boxes)
	if boxes["search"] != "2ms:0.25 5ms:0.5 9ms:0.85" || boxes["checkout"] != "2ms:0.25 5ms:0.5 9ms:0.85 fail:0.15" ||
		boxes["worker_1"] != demoQTAText["worker_1"] {
		t.Errorf("QTA boxes %q: search from the sampled curve, checkout exact, worker_1 unchanged", boxes)
	}
	// Live (the hold above resumed the slider's window), a window of
	// today: its time of day alone.
	page.eval(t, `(() => { const h = document.getElementById("hold"); if (h.textContent === "Resume") h.click(); return true; })()`, nil)
	today := newExporterPayload()
	today.curve("today", seriesObserved, 0.001, 10, uniformMass(0.008, 0.9))
	end := time.Now().UTC().Truncate(time.Millisecond)
	exportTo(t, otlp, nil, shiftWindow(today.md, end.Sub(testWindowEnd)))
	page.waitTrue(t, "the window of today", `(document.querySelector('section.probe[data-probe="today"] .probe-time')?.textContent ?? "").startsWith("window ending ")`)
	page.eval(t, `document.querySelector('section.probe[data-probe="today"] .probe-time').textContent`, &ending)
	if want := "window ending " + end.Format("15:04:05.000Z"); ending != want && time.Now().UTC().Day() == end.Day() {
		t.Errorf("today's window %q, want %q", ending, want)
	}
	if len(page.errors) > 0 {
		b, _ := json.MarshalIndent(page.errors, "", "  ")
		t.Errorf("the page reported errors:\n%s", b)
	}
}

// checkShownOutcomes compares the outcome counts a probe's card shows
// beside its window and below it, the totals, with want and wantTotals.
func checkShownOutcomes(t *testing.T, page *cdpPage, probe, want, wantTotals string) {
	t.Helper()
	var got struct{ Window, Totals string }
	page.eval(t, fmt.Sprintf(`(() => { const c = document.querySelector('section.probe[data-probe="%s"]');
		return {Window: c.querySelector(".window-outcomes").textContent, Totals: c.querySelector(".totals").textContent}; })()`, probe), &got)
	if got.Window != want || got.Totals != wantTotals {
		t.Errorf("%s's outcome counts on the page: %q and %q; want %q and %q", probe, got.Window, got.Totals, want, wantTotals)
	}
}

// ivMessagesJS reads worker_1's intervention boxes as a person sees them:
// the message next to them, and which box is marked wrong.
const ivMessagesJS = `(() => { const c = document.querySelector('section.probe[data-probe="worker_1"]');
	const m = c.querySelector(".iv-check");
	return {Text: m.textContent, Shown: m.getClientRects().length > 0 && getComputedStyle(m).visibility !== "hidden",
		A: c.querySelector(".iv-a").classList.contains("invalid"), B: c.querySelector(".iv-b").classList.contains("invalid"),
		Predicted: c.querySelector('td[data-series="predicted"]') !== null}; })()`

// ivMessages is what ivMessagesJS reads.
type ivMessages struct {
	Text        string
	Shown, A, B bool
	Predicted   bool
}

// checkInputMessages types wrong values into worker_1's intervention boxes
// (a = 1.5, b = 5 ms before) and into the display's dMax and bins, as a
// person would: next to the boxes a message says what is wrong and what is
// expected, the box is marked, and no prediction is drawn; once the value is
// right again the message goes and the prediction is back (checkPredicted).
// parseIntervention, the page's check, is also run on a table of values.
func checkInputMessages(t *testing.T, page *cdpPage, checkPredicted func()) {
	t.Helper()
	const a, b = `section.probe[data-probe="worker_1"] .iv-a`, `section.probe[data-probe="worker_1"] .iv-b`
	const wantA = "want a factor above 0, such as 0.5 or 1.5 (1: no change)"
	const wantB = "want a delay of 0 or more, such as 5ms or 0.2s (ns, us, ms or s; a bare number is ms)"
	expect := func(what string, want ivMessages) {
		t.Helper()
		var got ivMessages
		deadline := time.Now().Add(10 * time.Second)
		for {
			page.eval(t, ivMessagesJS, &got)
			if got == want || time.Now().After(deadline) {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if got != want {
			t.Errorf("%s: the intervention shows %+v, want %+v", what, got, want)
		}
	}
	page.typeInto(t, b, "5 sec")
	expect(`b "5 sec"`, ivMessages{Text: `b "5 sec" is not a delay: ` + wantB, Shown: true, B: true})
	page.screenshot(t, filepath.Join(t.TempDir(), "scope-intervention-error.png"), browserWidth)
	page.typeInto(t, b, "-5ms")
	expect(`b "-5ms"`, ivMessages{Text: `b "-5ms" is negative: ` + wantB, Shown: true, B: true})
	page.typeInto(t, b, "")
	expect("b empty", ivMessages{Text: "b is empty: " + wantB, Shown: true, B: true})
	page.typeInto(t, a, "0")
	expect("a 0 and b empty", ivMessages{Text: "a 0 is not above 0: " + wantA + "; b is empty: " + wantB, Shown: true, A: true, B: true})
	page.typeInto(t, b, "5ms")
	expect("a 0", ivMessages{Text: "a 0 is not above 0: " + wantA, Shown: true, A: true})
	page.typeInto(t, a, "1e")
	expect(`a "1e"`, ivMessages{Text: "a is not a number: " + wantA, Shown: true, A: true})
	page.typeInto(t, a, "1.5")
	expect("a 1.5, b 5ms", ivMessages{Predicted: true})
	checkPredicted()

	// The display's boxes say so too, in the header.
	display := func(what, want string) {
		t.Helper()
		page.waitTrue(t, what, fmt.Sprintf(`(() => { const m = document.getElementById("display-check");
			return m.textContent === %q && (m.textContent === "") === (m.getClientRects().length === 0); })()`, want))
	}
	page.typeInto(t, "#dmax", "soon")
	display(`dMax "soon"`, `dMax "soon" is not a delay: want a delay above 0, such as 5ms or 0.2s (ns, us, ms or s; a bare number is ms), or empty for each probe's own`)
	page.typeInto(t, "#bins", "1")
	display("bins 1", `dMax "soon" is not a delay: want a delay above 0, such as 5ms or 0.2s (ns, us, ms or s; a bare number is ms), or empty for each probe's own; bins 1: want a whole number from 2 to 1000`)
	page.typeInto(t, "#dmax", "")
	page.typeInto(t, "#bins", "50")
	display("the display's boxes right again", "")

	// The check itself, value by value.
	var cases []struct {
		A, B, Err string
		Bad       bool
	}
	page.eval(t, `[["1", "0", false], ["0.5", "0ms", false], ["2", "250us", false], ["1", "1.5", false],
		["", "0", false], ["-1", "0", false], ["1e999", "0", false], ["1", "2 s", false], ["1", "1e999s", false],
		["1", "5min", false], ["", "", true]].map(([a, b, bad]) => {
		const r = parseIntervention(a, b, bad);
		return {A: a, B: b, Bad: bad, Err: [r.errors.a, r.errors.b].filter(Boolean).join("; ")}; })`, &cases)
	want := []string{"", "", "", "", "a is empty: " + wantA, "a -1 is not above 0: " + wantA, `a "1e999" is too large: ` + wantA,
		"", `b "1e999s" is too large: ` + wantB, `b "5min" is not a delay: ` + wantB, "a is not a number: " + wantA + "; b is empty: " + wantB}
	for i, c := range cases {
		if i < len(want) && c.Err != want[i] {
			t.Errorf("parseIntervention(%q, %q, %v): %q, want %q", c.A, c.B, c.Bad, c.Err, want[i])
		}
	}
}

// TestScopeBrowserSilentSource: the page's pill said "live" for as long as
// the stream was open, also when the collector had stopped sending; once
// no window came for three of their intervals (at least 5 s) it says so,
// also on a page loaded then, and the next window makes it live again.
func TestScopeBrowserSilentSource(t *testing.T) {
	chromium := chromiumForTest(t)
	batches := demoBatches(t)
	otlp, base := startScopeHTTP(t)
	// The windows go out once the page's stream is open: sent before
	// Chromium starts, they may be older than the 5 s of silence by the time
	// the page loads on a busy machine, and the page rightly says silent at
	// once.
	page := startChromium(t, chromium, browserWidth, 800)
	page.call(t, "Page.navigate", map[string]any{"url": base + "/"})
	page.waitTrue(t, "the stream open", `document.getElementById("conn")?.dataset.state === "open"`)
	for _, b := range batches[:2] {
		exportTo(t, otlp, nil, b.metrics)
	}
	page.waitTrue(t, "live with the windows", `document.getElementById("waiting")?.hidden && `+
		`document.getElementById("conn")?.textContent === "live"`)
	silent := `/^no metrics for \d+ s$/.test(document.getElementById("conn")?.textContent)`
	page.waitTrue(t, "said silent", silent)
	// A page loaded while the source is silent says so at once, never
	// live first: every text the pill takes from the page's load on is
	// recorded (it said live for 5 s after its load, and then, until the
	// state's windows had come). A bound on the time it took was missed
	// on a busy machine, where the page itself loads slowly.
	page.call(t, "Page.addScriptToEvaluateOnNewDocument", map[string]any{"source": `window.pillTexts = [];
		document.addEventListener("DOMContentLoaded", () => {
			const c = document.getElementById("conn");
			window.pillTexts.push(c.textContent);
			new MutationObserver(() => window.pillTexts.push(c.textContent)).observe(c, {childList: true, characterData: true, subtree: true});
		});`})
	var marked bool
	page.eval(t, `window.beforeReload = true`, &marked)
	page.call(t, "Page.reload", map[string]any{})
	page.waitTrue(t, "said silent after a reload", `!window.beforeReload && `+silent)
	var texts []string
	page.eval(t, `window.pillTexts`, &texts)
	if slices.Contains(texts, "live") {
		t.Errorf("a page loaded while the source was silent said live before it said so: %q", texts)
	}
	exportTo(t, otlp, nil, batches[2].metrics)
	page.waitTrue(t, "live again", `document.getElementById("conn")?.textContent === "live"`)
}

// TestScopeBrowserSilentSourceLongerInterval: a collector restarted with a
// longer interval (1 s, then 10 s) was said silent on the page 5 s after
// each of its windows while the page kept a window of the shorter steps
// (up to --windows of them): the interval was the shortest step of every
// window kept. It is the last step. The time since the last window is set
// in the page rather than waited for.
func TestScopeBrowserSilentSourceLongerInterval(t *testing.T) {
	chromium := chromiumForTest(t)
	otlp, base := startScopeHTTP(t)
	send := func(d time.Duration) {
		p := newExporterPayload()
		p.curve("api", seriesObserved, 0.001, 10, uniformMass(0.008, 0.9))
		exportTo(t, otlp, nil, shiftWindow(p.md, d))
	}
	for i := 1; i <= 3; i++ {
		send(time.Duration(i) * time.Second)
	}
	for i := 1; i <= 3; i++ {
		send(time.Duration(3+10*i) * time.Second)
	}
	page := startChromium(t, chromium, browserWidth, 800)
	page.call(t, "Page.navigate", map[string]any{"url": base + "/"})
	page.waitTrue(t, "the six windows", `(document.getElementById("stats")?.textContent ?? "").includes("6 batches") &&
		store.windows.get("api")?.length === 6 && document.getElementById("conn").textContent === "live"`)
	pill := func(since time.Duration) string {
		var text string
		page.eval(t, fmt.Sprintf(`(() => { lastWindow = Date.now() - %d; connPill(); return document.getElementById("conn").textContent; })()`,
			since.Milliseconds()), &text)
		return text
	}
	if got := pill(9 * time.Second); got != "live" {
		t.Errorf("9 s after a window of a source of a window every 10 s, the page says %q, want live", got)
	}
	if got := pill(31 * time.Second); got != "no metrics for 31 s" {
		t.Errorf("31 s after the last window, the page says %q, want no metrics for 31 s", got)
	}
}

// TestScopeBrowserLongName: a probe name without a place to break (up to
// --max-name bytes) wraps in its card and in the trigger list: it widened
// every card of the page to its length, past a phone's screen.
func TestScopeBrowserLongName(t *testing.T) {
	chromium := chromiumForTest(t)
	otlp, base := startScopeHTTP(t)
	p := newExporterPayload()
	long := strings.Repeat("é", 120)
	p.curve(long, seriesObserved, 0.001, 10, uniformMass(0.008, 0.9))
	p.curve("api", seriesObserved, 0.001, 10, uniformMass(0.008, 0.9))
	ld := syntheticTriggers()
	ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(0).Attributes().PutStr("deltaq.probe", long)
	exportTo(t, otlp, &ld, p.md)
	page := startChromium(t, chromium, 390, 800)
	page.call(t, "Page.navigate", map[string]any{"url": base + "/"})
	page.waitTrue(t, "two probes", `document.querySelectorAll("section.probe").length === 2`)
	var widths []int
	page.eval(t, `[document.documentElement.scrollWidth, innerWidth, ...[...document.querySelectorAll("section.probe")].map((s) => Math.round(s.getBoundingClientRect().right))]`, &widths)
	for _, w := range widths[2:] {
		if w > widths[1] || widths[0] > widths[1] {
			t.Errorf("a long name on a page %d pixels wide: page %d wide, cards end at %v", widths[1], widths[0], widths[2:])
			break
		}
	}
	page.waitTrue(t, "the trigger", `document.querySelector("#triggers li") !== null`)
	var list []int
	page.eval(t, `[document.getElementById("triggers").scrollWidth, document.getElementById("triggers").clientWidth]`, &list)
	if list[0] > list[1] {
		t.Errorf("a trigger of a long name: the list %d pixels wide in %d", list[0], list[1])
	}
}

// TestScopeBrowserDropsGoneProbes: a probe the scope no longer has — it
// gave its slot to a new one (--probe-ttl), or the scope restarted under
// the open page — leaves the page with it: its card stayed, its last
// window shown as if current, beside the probes of the state.
func TestScopeBrowserDropsGoneProbes(t *testing.T) {
	chromium := chromiumForTest(t)
	otlp, base := startScopeHTTP(t, func(o *Options) { o.Limits.Probes, o.Limits.ProbeTTL = 1, time.Second })
	curve := func(probe string, d time.Duration) pmetric.Metrics {
		p := newExporterPayload()
		p.curve(probe, seriesObserved, 0.001, 10, uniformMass(0.008, 0.9))
		return shiftWindow(p.md, d)
	}
	exportTo(t, otlp, nil, curve("old", 0))
	page := startChromium(t, chromium, browserWidth, 800)
	page.call(t, "Page.navigate", map[string]any{"url": base + "/"})
	page.waitTrue(t, "probe old", `document.querySelector('section.probe[data-probe="old"]') !== null`)
	time.Sleep(1100 * time.Millisecond)
	exportTo(t, otlp, nil, curve("new", time.Second))
	page.waitTrue(t, "probe new", `document.querySelector('section.probe[data-probe="new"]') !== null`)
	page.waitTrue(t, "1 probe in the stats", `document.getElementById("stats").textContent.startsWith("1 probes")`)
	var names []string
	page.eval(t, `[...document.querySelectorAll("section.probe")].map((s) => s.dataset.probe)`, &names)
	if strings.Join(names, ",") != "new" {
		t.Errorf("cards %v after old gave its slot to new, want only new", names)
	}
}

// TestScopeBrowserPhone: on a phone's screen a short probe name stays
// whole beside its QTA state and window time (job was broken into "jo" and
// "b"), and a snapshot's windows fit its dialog (the failure column was
// cut off).
func TestScopeBrowserPhone(t *testing.T) {
	chromium := chromiumForTest(t)
	otlp, base := startScopeHTTP(t)
	for _, b := range demoBatches(t) {
		if b.logs.LogRecordCount() > 0 {
			exportTo(t, otlp, &b.logs, b.metrics)
		} else {
			exportTo(t, otlp, nil, b.metrics)
		}
	}
	page := startChromium(t, chromium, 390, 800)
	page.call(t, "Page.navigate", map[string]any{"url": base + "/"})
	page.waitTrue(t, "a trigger", `document.querySelector("#triggers li") !== null`)
	var broken []string
	page.eval(t, `[...document.querySelectorAll(".probe-name")].filter((h) => h.getBoundingClientRect().height > 1.6 * parseFloat(getComputedStyle(h).fontSize)).map((h) => h.textContent)`, &broken)
	if len(broken) > 0 {
		t.Errorf("probe names on more than one line at 390 pixels: %q", broken)
	}
	var ok bool
	page.eval(t, `document.querySelector("#triggers li").click(); true`, &ok)
	page.waitTrue(t, "the snapshot", `document.getElementById("snapshot").open && document.querySelector("#snapshot-body table") !== null`)
	var over []int
	page.eval(t, `(() => { const d = document.getElementById("snapshot"), right = d.getBoundingClientRect().left + d.clientWidth;
		return [...document.querySelectorAll("#snapshot-body table")].map((e) => Math.round(e.getBoundingClientRect().right - right)).filter((x) => x > 0) })()`, &over)
	if len(over) > 0 {
		t.Errorf("snapshot tables past the dialog's edge by %v pixels at 390 pixels", over)
	}
}

// TestScopeBrowserNoQuantiles: a window that reached no quantile (its
// instances mostly failed) shows no quantile table, as the terminal shows
// none: a table of its "quantile" heading alone stood under the plot.
func TestScopeBrowserNoQuantiles(t *testing.T) {
	chromium := chromiumForTest(t)
	otlp, base := startScopeHTTP(t)
	exportTo(t, otlp, nil, syntheticWindow())
	exportTo(t, otlp, nil, unreachableQuantilesWindow())
	page := startChromium(t, chromium, browserWidth, 800)
	page.call(t, "Page.navigate", map[string]any{"url": base + "/"})
	page.waitTrue(t, "probe search", `document.querySelector('section.probe[data-probe="search"] canvas') !== null`)
	var shown []bool
	page.eval(t, `["checkout", "search"].map((p) => document.querySelector('section.probe[data-probe="' + p + '"] table.quantiles').getClientRects().length > 0)`, &shown)
	if len(shown) != 2 || !shown[0] || shown[1] {
		t.Errorf("quantile tables shown (checkout, search): %v, want checkout's alone", shown)
	}
}

// TestScopeBrowserKeyboard: every control of the page works from the
// keyboard. A trigger opened its snapshot on a click only: Tab did not
// reach it, and Enter did nothing; a trigger or snapshot arriving while
// one had the focus redrew the list and dropped the focus to the page's
// start. Now Tab reaches the triggers after the probes' boxes, Enter or
// Space opens the snapshot, Escape closes it and gives the focus back,
// and the focused trigger keeps the focus when another comes; Hold and the
// time slider work from the keyboard as before.
func TestScopeBrowserKeyboard(t *testing.T) {
	chromium := chromiumForTest(t)
	otlp, base := startScopeHTTP(t)
	for _, b := range demoBatches(t) {
		if b.logs.LogRecordCount() > 0 {
			exportTo(t, otlp, &b.logs, b.metrics)
		} else {
			exportTo(t, otlp, nil, b.metrics)
		}
	}
	page := startChromium(t, chromium, browserWidth, 1000)
	page.call(t, "Page.navigate", map[string]any{"url": base + "/"})
	page.waitTrue(t, "the triggers and the last window", fmt.Sprintf(`document.querySelector("#triggers li") !== null &&
		document.getElementById("stats").textContent.includes("%d batches")`, demoWindows))
	// A trigger is named by its time, probe and kind.
	name := func(li string) string {
		return fmt.Sprintf(`((li) => li ? [li.dataset.time, li.dataset.probe, li.dataset.kind].join(" ") : "")(%s)`, li)
	}
	var newest string
	page.eval(t, name(`document.querySelector("#triggers li")`), &newest)
	focused := name(`document.activeElement?.closest("#triggers li")`)

	// From the last box of the last probe, Tab goes to the newest trigger.
	page.eval(t, `(() => { const b = [...document.querySelectorAll(".iv-b")].pop(); b.focus(); return true; })()`, nil)
	page.press(t, "Tab")
	var got string
	page.eval(t, focused, &got)
	if got != newest {
		t.Fatalf("Tab from the last probe's box: the focus on trigger %q, want the newest trigger %q", got, newest)
	}
	var probe, kind string
	page.eval(t, `document.activeElement.dataset.probe`, &probe)
	page.eval(t, `document.activeElement.dataset.kind`, &kind)
	for _, key := range []string{"Enter", " "} {
		page.press(t, key)
		page.waitTrue(t, fmt.Sprintf("the snapshot opened by %q", key), fmt.Sprintf(`document.getElementById("snapshot").open &&
			document.getElementById("snapshot-note").textContent.startsWith(%q)`, kind+" trigger on "+probe+" at "))
		page.press(t, "Escape")
		page.waitTrue(t, "the snapshot closed, the trigger focused again", fmt.Sprintf(`!document.getElementById("snapshot").open && %s === %q`, focused, newest))
	}

	// Another trigger comes while the newest one has the focus: the list
	// is drawn again, and the same trigger keeps it.
	ld := linkedTrigger()
	exportTo(t, otlp, &ld, pmetric.NewMetrics())
	page.waitTrue(t, "the trigger that came", fmt.Sprintf(`document.querySelector('#triggers li[data-time="%d"]') !== null`, testWindowEnd.UnixMilli()))
	page.eval(t, focused, &got)
	if got != newest {
		t.Errorf("after another trigger came, the focus on trigger %q, want it kept on %q", got, newest)
	}

	// Hold and Resume with the keyboard, then the slider's arrows.
	page.eval(t, `document.getElementById("hold").focus()`, nil)
	page.press(t, "Enter")
	page.waitTrue(t, "held by Enter", `document.getElementById("hold").textContent === "Resume" && document.getElementById("conn").textContent === "held"`)
	page.press(t, " ")
	page.waitTrue(t, "resumed by Space", `document.getElementById("hold").textContent === "Hold" && document.getElementById("slider-label").textContent === "live"`)
	page.eval(t, `document.getElementById("slider").focus()`, nil)
	page.press(t, "ArrowLeft")
	page.waitTrue(t, "a window back by the arrow key", `document.getElementById("slider-label").textContent.endsWith("(−1)")`)
	if len(page.errors) > 0 {
		b, _ := json.MarshalIndent(page.errors, "", "  ")
		t.Errorf("the page reported errors:\n%s", b)
	}
}

// TestScopeBrowserHeldWindowCompleted: a page held on a window that came
// in several requests (larger than the connector's max_request_bytes)
// showed the part that had come when it was held: the rest, arriving
// after, drew nothing until Resume. Held, it shows the whole window.
func TestScopeBrowserHeldWindowCompleted(t *testing.T) {
	chromium := chromiumForTest(t)
	batches := demoBatches(t)
	otlp, base := startScopeHTTP(t)
	for _, b := range batches[:demoSlowFrom] {
		exportTo(t, otlp, nil, b.metrics)
	}
	whole := batches[demoSlowFrom].metrics
	// Cut before the last quantile, so that the second request has it.
	cut, i := 0, 0
	for m := range otlprecv.Metrics(whole) {
		for range numberPoints(m).All() {
			if m.Name() == metricQuantile {
				cut = i
			}
			i++
		}
	}
	first, second := splitAt(whole, cut)
	exportTo(t, otlp, nil, first)
	page := startChromium(t, chromium, browserWidth, 1000)
	page.call(t, "Page.navigate", map[string]any{"url": base + "/"})
	page.waitTrue(t, "the first part of the window", fmt.Sprintf(`(document.getElementById("stats")?.textContent ?? "").includes("%d batches")`, demoSlowFrom+1))
	page.eval(t, `document.getElementById("hold").click()`, nil)
	page.waitTrue(t, "held", `document.getElementById("hold").textContent === "Resume"`)
	exportTo(t, otlp, nil, second)
	page.waitTrue(t, "the second part of the window", fmt.Sprintf(`document.getElementById("stats").textContent.includes("%d batches")`, demoSlowFrom+2))
	want := otlpQuantiles(whole)
	n := 0
	for _, bySeries := range want {
		for _, qs := range bySeries {
			n += len(qs)
		}
	}
	var cells []quantileCell
	page.eval(t, quantileCellsJS, &cells)
	checkQuantileCells(t, cells, want, 1, 0, n)
	var conn string
	page.eval(t, `document.getElementById("conn").textContent`, &conn)
	if conn != "held" {
		t.Errorf("the page says %q, want still held", conn)
	}
}
