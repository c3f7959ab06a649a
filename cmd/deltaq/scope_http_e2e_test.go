// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
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
	if os.Getenv(browserE2EEnv) != "1" {
		t.Skipf("set %s=1 and OTELCOL to the built collector to run the browser view end to end", browserE2EEnv)
	}
	chromium := chromiumForTest(t)
	otelcol := os.Getenv("OTELCOL")
	if otelcol == "" || !filepath.IsAbs(otelcol) {
		t.Fatalf("OTELCOL=%q: want the absolute path of the built collector (make build: bin/otelcol-deltaq)", otelcol)
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	workload := buildWorkload(t, root)
	otlp, base := startScopeHTTP(t)
	col := startDemoCollector(t, otelcol, root, otlp)
	page := startChromium(t, chromium, browserWidth, 1000)
	page.call(t, "Page.navigate", map[string]any{"url": base + "/"})
	wl := startWorkload(t, workload, col.grpc)
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
	// that ends after the slow-down began.
	var slowed time.Time
	select {
	case slowed = <-wl.slowed:
	case <-time.After(e2eSlowAfter + 15*time.Second):
		t.Fatalf("the workload did not report the slow-down; its output:\n%s", wl.output())
	}
	page.waitTrue(t, "a qta trigger of worker_2 after the slow-down", fmt.Sprintf(
		`[...document.querySelectorAll('#triggers li[data-probe="worker_2"][data-kind="qta"]')].some((li) => Number(li.dataset.time) > %d)`,
		slowed.UnixMilli()))
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
	// At least worker_1's observed quantiles: in a slow window those of
	// worker_2 and job may all be unreachable.
	checkQuantileCells(t, cells, want, 1, 0, 5)
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
	wl.stop(t)
	col.stop(t)
	t.Logf("done after %v", time.Since(began).Round(time.Millisecond))
}

// checkQuantilesOnCurves checks that every quantile (q, d) of a window lies
// on the curve of its series in that window: the curve's points at or
// before d are at most q, those at or after d at least q (a CDF rises).
// Quantiles of another window would not.
func checkQuantilesOnCurves(t *testing.T, probe string, win *webWindow) {
	t.Helper()
	const tol = 1e-9
	for series, qs := range win.Quantiles {
		curve := win.Curves[series]
		if len(curve) == 0 {
			t.Errorf("%s: %s quantiles without a %s curve", probe, series, series)
			continue
		}
		for _, qd := range qs {
			q, d := qd[0], qd[1]
			for _, pt := range curve {
				if pt[0] <= d && pt[1] > q+tol || pt[0] >= d && pt[1] < q-tol {
					t.Errorf("%s: %s quantile %g at %g s is off its curve: F(%g s) = %g", probe, series, q, d, pt[0], pt[1])
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

// freeLoopbackAddrs returns n loopback addresses whose ports were free a
// moment ago, distinct: each is held open until all are taken.
func freeLoopbackAddrs(t *testing.T, n int) []string {
	t.Helper()
	addrs := make([]string, n)
	for i := range addrs {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("a free loopback port: %v", err)
		}
		defer l.Close()
		addrs[i] = l.Addr().String()
	}
	return addrs
}

// e2eProcess is a program the end-to-end test started: it is killed when the
// test ends, and its output is kept for the failure message.
type e2eProcess struct {
	name   string
	cmd    *exec.Cmd
	exited chan struct{}
	err    error
	mu     sync.Mutex
	out    strings.Builder
}

// startProcess starts cmd, its output read line by line by onLine (may be
// nil) and kept.
func startProcess(t *testing.T, name string, cmd *exec.Cmd, onLine func(string)) *e2eProcess {
	t.Helper()
	p := &e2eProcess{name: name, cmd: cmd, exited: make(chan struct{})}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = w, w
	// The program dies with the test, also when the test binary is killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	w.Close()
	lines := make(chan struct{})
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			p.mu.Lock()
			p.out.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
			if onLine != nil {
				onLine(sc.Text())
			}
		}
	}()
	go func() { p.err = cmd.Wait(); <-lines; r.Close(); close(p.exited) }()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			_ = cmd.Process.Kill()
			<-p.exited
		}
		if t.Failed() {
			t.Logf("%s output:\n%s", name, p.output())
		}
	})
	return p
}

func (p *e2eProcess) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// stop sends SIGTERM and fails the test unless the program exits 0 within
// 10 s.
func (p *e2eProcess) stop(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("SIGTERM to %s: %v", p.name, err)
	}
	select {
	case <-p.exited:
		if p.err != nil {
			t.Errorf("%s: %v", p.name, p.err)
		}
	case <-time.After(10 * time.Second):
		t.Errorf("%s did not exit within 10 s of SIGTERM", p.name)
	}
}

// demoCollector is the built collector running examples/demo/collector.yaml.
type demoCollector struct {
	*e2eProcess
	grpc string // its OTLP/gRPC address
}

// startDemoCollector runs otelcol with examples/demo/collector.yaml from the
// repository root: OTLP in on free loopback ports, the outcome diagram of
// the demo, its own telemetry on a free port, and the connector's output to
// the scope at scope. It returns once the OTLP/gRPC port accepts.
func startDemoCollector(t *testing.T, otelcol, root, scope string) *demoCollector {
	t.Helper()
	addrs := freeLoopbackAddrs(t, 3)
	_, telemetryPort, _ := net.SplitHostPort(addrs[2])
	c := &demoCollector{grpc: addrs[0]}
	cmd := exec.Command(otelcol, "--config="+filepath.Join(root, "examples", "demo", "collector.yaml"))
	cmd.Dir = root
	cmd.Env = append(os.Environ(),
		"DELTAQ_OTLP_GRPC="+c.grpc,
		"DELTAQ_OTLP_HTTP="+addrs[1],
		"DELTAQ_TELEMETRY_PORT="+telemetryPort,
		"DELTAQ_SCOPE="+scope,
		"DELTAQ_DIAGRAM="+filepath.Join(root, "examples", "demo", "mm1k.dq"))
	c.e2eProcess = startProcess(t, "collector", cmd, nil)
	deadline := time.Now().Add(30 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", c.grpc, time.Second)
		if err == nil {
			conn.Close()
			return c
		}
		select {
		case <-c.exited:
			t.Fatalf("the collector exited: %v\n%s", c.err, c.output())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("the collector's OTLP port %s did not open within 30 s:\n%s", c.grpc, c.output())
		}
	}
}

// buildWorkload builds cmd/dqworkload into the test's temporary directory.
func buildWorkload(t *testing.T, root string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "dqworkload")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/dqworkload")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/dqworkload: %v\n%s", err, out)
	}
	return bin
}

// demoWorkload is the workload running; slowed receives the time it
// reports worker_2 slowed.
type demoWorkload struct {
	*e2eProcess
	slowed chan time.Time
}

// startWorkload runs the demo workload against the collector at endpoint,
// with a fixed seed and the slow-down of e2eSlowAfter and e2eSlowFor.
func startWorkload(t *testing.T, bin, endpoint string) *demoWorkload {
	t.Helper()
	w := &demoWorkload{slowed: make(chan time.Time, 1)}
	cmd := exec.Command(bin, "-endpoint", endpoint, "-rate", "100", "-seed", "42",
		"-slow-after", e2eSlowAfter.String(), "-slow-for", e2eSlowFor.String(), "-drain", "1s", "-report", "5s")
	w.e2eProcess = startProcess(t, "workload", cmd, func(line string) {
		if strings.HasSuffix(line, "worker_2 slowed") {
			select {
			case w.slowed <- time.Now():
			default:
			}
		}
	})
	return w
}
