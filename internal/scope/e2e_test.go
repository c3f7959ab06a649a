// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package scope

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/deltaq-otel/deltaq/internal/e2etest"
)

// The demo workload of the end-to-end browser test: λ = 100 jobs/s, and
// worker_2 slowed four times from 8 s on for 20 s (μ₂ = 50/s < λ: its
// buffer fills), which breaks the QTAs of worker_2 and job
// (examples/demo/collector.yaml).
const (
	e2eSlowAfter = 8 * time.Second
	e2eSlowFor   = 20 * time.Second
)

// TestScopeBrowserCollector is the browser view end to end, with real parts
// only: the collector built by the builder ($OTELCOL) runs
// examples/demo/collector.yaml on free loopback ports and sends its
// connector's output to deltaq scope --http (in the test); the synthetic
// workload (cmd/dqworkload, built by the test) sends it spans; headless
// Chromium loads the page. It checks what a person would see:
//   - the three probes of the demo, each QTA box pre-filled with the QTA
//     configured, exactly (deltaq.qta.point, deltaq.qta.max_failure);
//   - after the workload reports worker_2 slowed, a qta trigger of worker_2
//     of a window after the slow-down, and worker_2's QTA broken;
//   - held on a window, the quantile table shows, to its three significant
//     digits, the quantiles the scope holds for that window (/api/state,
//     read while the page is held: both from the same OTLP batches);
//   - no script error; the collector exits cleanly on SIGTERM.
//
// With DELTAQ_SCREENSHOT=1 it writes docs/img/scope.png. It runs with
// DELTAQ_BROWSER_E2E=1 and OTELCOL set (make e2e).
func TestScopeBrowserCollector(t *testing.T) {
	otelcol := e2etest.Gate(t, browserE2EEnv, "the browser view end to end")
	chromium := chromiumForTest(t)
	root := e2etest.Root(t)
	began := time.Now()
	workload := e2etest.Build(t, "./cmd/dqworkload")
	otlp, base := startScopeHTTP(t)
	col := startDemoCollector(t, otelcol, root, otlp)
	page := startChromium(t, chromium, browserWidth, 1000)
	page.call(t, "Page.navigate", map[string]any{"url": base + "/"})
	// The workload's clock starts after this: its slow-down begins, in
	// the spans' time, at the earliest e2eSlowAfter later.
	wlStarted := time.Now()
	wl := startWorkload(t, workload, col.Addr)
	t.Logf("collector, scope, browser and workload up after %v", time.Since(began).Round(time.Millisecond))

	page.waitTrue(t, "three probes with their QTAs", `document.querySelectorAll("section.probe").length === 3 &&
		[...document.querySelectorAll(".qta-input")].every((i) => i.value !== "")`)
	var names []string
	page.eval(t, `[...document.querySelectorAll("section.probe")].map((s) => s.dataset.probe)`, &names)
	if strings.Join(names, ",") != "job,worker_1,worker_2" {
		t.Errorf("probes on the page %v, want job, worker_1, worker_2", names)
	}
	var boxes map[string]string
	page.eval(t, qtaInputsJS, &boxes)
	if !maps.Equal(boxes, demoQTAText) {
		t.Errorf("QTA boxes %q, want the configured QTAs %q", boxes, demoQTAText)
	}

	// The slow-down, as the workload reports it, then its trigger: a window
	// that ends after the slow-down began. The report is read when the
	// workload gets to print it and the test to read it, which on a busy
	// machine was after the end of the window that broke the QTA (its
	// only qta trigger until worker_2 recovers): the slow-down's start is
	// bounded from below by the workload's start instead.
	var slowed time.Time
	e2etest.Until(t, "the workload's report of the slow-down", e2eSlowAfter+15*time.Second, func() bool {
		for _, l := range wl.Lines() {
			if strings.HasSuffix(l.Text, "worker_2 slowed") {
				slowed = l.At
				return true
			}
		}
		return false
	}, wl)
	page.waitTrue(t, "a qta trigger of worker_2 after the slow-down", fmt.Sprintf(
		`[...document.querySelectorAll('#triggers li[data-probe="worker_2"][data-kind="qta"]')].some((li) => Number(li.dataset.time) > %d)`,
		wlStarted.Add(e2eSlowAfter).UnixMilli()))
	page.waitTrue(t, "worker_2's QTA broken", `document.querySelector('section.probe[data-probe="worker_2"] .qta-state').textContent === "QTA broken"`)
	t.Logf("trigger on the page %v after the slow-down", time.Since(slowed).Round(time.Millisecond))

	// Hold the page on the newest window, then compare its quantile tables
	// with the windows of the same ends that the scope holds.
	page.eval(t, `document.getElementById("hold").click()`, nil)
	var ends map[string]string
	page.eval(t, `Object.fromEntries([...document.querySelectorAll("section.probe")].map((s) => [s.dataset.probe, s.dataset.end]))`, &ends)
	var cells []quantileCell
	page.eval(t, quantileCellsJS, &cells)
	st := fetchState(t, base)
	want := map[string]map[string]map[float64]float64{}
	for probe, end := range ends {
		win := stateWindow(st, probe, end)
		if win == nil {
			t.Fatalf("%s: the page shows the window ending %s, which the scope does not hold", probe, end)
		}
		checkQuantilesOnCurves(t, probe, win)
		want[probe] = map[string]map[float64]float64{}
		for series, qs := range win.Quantiles {
			want[probe][series] = map[float64]float64{}
			for _, q := range qs {
				want[probe][series][q[0]] = q[1]
			}
		}
	}
	// Every quantile the scope holds for the windows shown is on the
	// page. How many depends on the window: in a slow one those of
	// worker_2 and job may all be unreachable, and worker_1's 0.99 too
	// (more than 1 % of its instances in that window timed out or
	// failed): five of worker_1's were asked for, and the test failed
	// when the window held had four. worker_1, never slowed, has some.
	n := 0
	for _, bySeries := range want {
		for _, qs := range bySeries {
			n += len(qs)
		}
	}
	if len(want["worker_1"][seriesObserved]) == 0 {
		t.Errorf("the scope holds no observed quantile of worker_1 for its window ending %s: %+v", ends["worker_1"], want)
	}
	checkQuantileCells(t, cells, want, 1, 0, n)
	t.Logf("quantile table: %d cells against the windows ending %v", len(cells), ends)

	if os.Getenv("DELTAQ_SCREENSHOT") == "1" {
		path := filepath.Join(root, "docs", "img", "scope.png")
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		page.screenshot(t, path, browserWidth)
		t.Logf("wrote %s", path)
	} else {
		page.screenshot(t, filepath.Join(t.TempDir(), "scope.png"), browserWidth)
	}
	if len(page.errors) > 0 {
		b, _ := json.MarshalIndent(page.errors, "", "  ")
		t.Errorf("the page reported errors:\n%s", b)
	}
	for _, p := range []*e2etest.Proc{wl, col.Proc} {
		if err := p.Stop(t); err != nil {
			t.Errorf("%s: %v", p.Name, err)
		}
	}
	t.Logf("done after %v", time.Since(began).Round(time.Millisecond))
}

// checkQuantilesOnCurves checks that every quantile (q, d) of a window lies
// on the curve of its series in that window, within the analysis
// resolution: the curve's points a bucket before d are at most q, those a
// bucket after d at least q (a CDF rises). Quantiles of another window
// would not.
func checkQuantilesOnCurves(t *testing.T, probe string, win *webWindow) {
	t.Helper()
	const tol = 1e-9
	// A quantile is read from the counts at the analysis resolution: it
	// lies in the bucket of the sample quantile (docs/design.md, "The
	// analysis resolution"), whose width is at most 1/64 of its lower edge,
	// while the curve is read at the display's bin edges. So the curve is
	// held to it only at delays a bucket away: a quantile at 11.993 ms
	// whose sample quantile is at 12.02 ms, past the 12 ms edge, is right
	// where F(12 ms) is still below q.
	const bucket, first = 1.0 / 64, 1.024e-6 // relative width; the first bucket, [0, 1.024 µs)
	for series, qs := range win.Quantiles {
		curve := win.Curves[series]
		if len(curve) == 0 {
			t.Errorf("%s: %s quantiles without a %s curve", probe, series, series)
			continue
		}
		for _, qd := range qs {
			q, d := qd[0], qd[1]
			lo, hi := d*(1-bucket)-first, d*(1+bucket)+first
			for _, pt := range curve {
				if pt[0] < lo && pt[1] > q+tol || pt[0] >= hi && pt[1] < q-tol {
					t.Errorf("%s: %s quantile %g at %g s is off its curve: F(%g s) = %g; the window: end %d, outcomes %v, quantiles %v, curve %v",
						probe, series, q, d, pt[0], pt[1], win.End, win.Outcomes, win.Quantiles, curve)
					break
				}
			}
		}
	}
}

// fetchState reads the scope's /api/state.
func fetchState(t *testing.T, base string) webState {
	t.Helper()
	res, err := http.Get(base + "/api/state")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var st webState
	if err := json.NewDecoder(res.Body).Decode(&st); err != nil {
		t.Fatalf("/api/state: %v", err)
	}
	return st
}

// stateWindow is probe's window of end (Unix milliseconds, as text) in st.
func stateWindow(st webState, probe, end string) *webWindow {
	ms, err := strconv.ParseInt(end, 10, 64)
	if err != nil {
		return nil
	}
	for _, w := range st.Windows[probe] {
		if w.End == ms {
			return w
		}
	}
	return nil
}

// startDemoCollector runs otelcol with examples/demo/collector.yaml from the
// repository root: OTLP in on free loopback ports, the outcome diagram of
// the demo, its own telemetry on a free port, and the connector's output to
// the scope at scope. It returns once the OTLP/gRPC port accepts.
func startDemoCollector(t *testing.T, otelcol, root, scope string) *e2etest.Collector {
	t.Helper()
	addrs := e2etest.FreeAddrs(t, 3)
	c := &e2etest.Collector{Addr: addrs[0]}
	cmd := e2etest.CollectorCmd(otelcol, []string{filepath.Join(root, "examples", "demo", "collector.yaml")},
		"DELTAQ_OTLP_GRPC="+c.Addr,
		"DELTAQ_OTLP_HTTP="+addrs[1],
		"DELTAQ_TELEMETRY_PORT="+e2etest.Port(addrs[2]),
		"DELTAQ_SCOPE="+scope,
		"DELTAQ_DIAGRAM="+filepath.Join(root, "examples", "demo", "mm1k.dq"))
	cmd.Dir = root
	c.Proc = e2etest.Start(t, "collector", cmd)
	c.WaitReady(t)
	return c
}

// startWorkload runs the demo workload against the collector at endpoint,
// with a fixed seed and the slow-down of e2eSlowAfter and e2eSlowFor.
func startWorkload(t *testing.T, bin, endpoint string) *e2etest.Proc {
	t.Helper()
	return e2etest.Start(t, "workload", exec.Command(bin, "-endpoint", endpoint, "-rate", "100", "-seed", "42",
		"-slow-after", e2eSlowAfter.String(), "-slow-for", e2eSlowFor.String(), "-drain", "1s", "-report", "5s"))
}
