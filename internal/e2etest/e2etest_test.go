// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package e2etest

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// recorder is a testing.TB that records failures and skips instead of
// reporting them, so that the tests can check what the harness reports.
// Fatal and Skip end the goroutine, as they do a test's: run f with run.
type recorder struct {
	testing.TB
	mu      sync.Mutex
	errs    []string
	logs    []string
	fatal   string
	skipped string
}

func (r *recorder) Logf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.logs = append(r.logs, fmt.Sprintf(format, args...))
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.mu.Lock()
	r.fatal = fmt.Sprintf(format, args...)
	r.mu.Unlock()
	runtime.Goexit()
}

func (r *recorder) Fatal(args ...any) { r.Fatalf("%s", fmt.Sprint(args...)) }

func (r *recorder) Skipf(format string, args ...any) {
	r.mu.Lock()
	r.skipped = fmt.Sprintf(format, args...)
	r.mu.Unlock()
	runtime.Goexit()
}

func (r *recorder) Failed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.errs) > 0 || r.fatal != ""
}

// run runs f with a recorder in a goroutine of its own, as a test runs,
// and returns the recorder once f has returned or failed.
func run(t *testing.T, f func(r *recorder)) *recorder {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
	return r
}

// shell starts sh -c script as name.
func shell(t testing.TB, name, script string) *Proc {
	t.Helper()
	return Start(t, name, exec.Command("sh", "-c", script))
}

// waitReady waits for the line "ready", which the scripts print once their
// signal traps are set.
func waitReady(t testing.TB, p *Proc) {
	t.Helper()
	Until(t, p.Name+" ready", 10*time.Second, func() bool { return strings.Contains(p.Log(), "ready\n") }, p)
}

func TestStopReturnsTheExitStatus(t *testing.T) {
	// sh runs the trap once the sleep in the foreground ends.
	p := shell(t, "trapper", `trap "exit 3" TERM; echo ready; while :; do sleep 0.05; done`)
	waitReady(t, p)
	err := p.Stop(t)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 3 {
		t.Fatalf("Stop: %v, want exit status 3", err)
	}
	if p.Running() || p.Err() != err {
		t.Errorf("after Stop: running %v, Err %v; want exited, %v", p.Running(), p.Err(), err)
	}
	if err2 := p.Stop(t); err2 != err {
		t.Errorf("Stop again: %v, want %v", err2, err)
	}

	// A program that SIGTERM ends (sleep's default action) exits by signal.
	s := Start(t, "sleep", exec.Command("sleep", "30"))
	began := time.Now()
	if err := s.Stop(t); err == nil || !strings.Contains(err.Error(), "terminated") {
		t.Errorf("Stop of sleep: %v, want signal: terminated", err)
	}
	if d := time.Since(began); d > 5*time.Second {
		t.Errorf("Stop of sleep took %v: SIGTERM should end it at once", d)
	}
}

func TestStopKillsAProgramThatIgnoresSIGTERM(t *testing.T) {
	var p *Proc
	var err error
	r := run(t, func(r *recorder) {
		// exec keeps SIGTERM ignored in sleep, and no child holds the
		// output.
		p = shell(r, "stubborn", `trap "" TERM; echo ready; exec sleep 30`)
		p.StopTimeout = 300 * time.Millisecond
		waitReady(r, p)
		err = p.Stop(r)
	})
	if r.fatal != "" {
		t.Fatal(r.fatal)
	}
	want := "stubborn (pid " + fmt.Sprint(p.Pid()) + ") did not exit within 300ms of SIGTERM: killing it"
	if len(r.errs) != 1 || r.errs[0] != want {
		t.Errorf("reported %q, want [%q]", r.errs, want)
	}
	if err == nil || !strings.Contains(err.Error(), "killed") || p.Running() {
		t.Errorf("Stop: %v, running %v; want signal: killed, exited", err, p.Running())
	}
}

func TestKill(t *testing.T) {
	p := Start(t, "sleep", exec.Command("sleep", "30"))
	p.Kill(t)
	if p.Running() || p.Err() == nil || !strings.Contains(p.Err().Error(), "killed") {
		t.Errorf("after Kill: running %v, Err %v; want exited, signal: killed", p.Running(), p.Err())
	}
	p.Kill(t) // exited already: nothing to do
}

func TestWaitReturnsTheExitStatus(t *testing.T) {
	p := shell(t, "three", "exit 3")
	err := p.Wait(t, 10*time.Second)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 3 {
		t.Errorf("Wait: %v, want exit status 3", err)
	}
	r := run(t, func(r *recorder) { Start(r, "sleep", exec.Command("sleep", "30")).Wait(r, 100*time.Millisecond) })
	if !strings.Contains(r.fatal, "did not exit within 100ms") {
		t.Errorf("Wait on sleep 30: %q, want a failure after 100ms", r.fatal)
	}
}

func TestOutputLines(t *testing.T) {
	began := time.Now()
	// Standard output and error in the order written; the last line has no
	// newline.
	p := shell(t, "writer", `echo one; echo two >&2; printf three`)
	if err := p.Wait(t, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	var texts []string
	for i, l := range p.Lines() {
		texts = append(texts, l.Text)
		if l.At.Before(began) || l.At.After(time.Now()) || i > 0 && l.At.Before(p.Lines()[i-1].At) {
			t.Errorf("line %q read at %v: not between the start and now, in order", l.Text, l.At)
		}
	}
	if want := []string{"one", "two", "three"}; !slices.Equal(texts, want) {
		t.Errorf("Lines %q, want %q", texts, want)
	}
	if got := p.Log(); got != "one\ntwo\nthree\n" {
		t.Errorf("Log %q", got)
	}
	if got := p.Tail(2); got != "two\nthree\n" {
		t.Errorf("Tail(2) %q", got)
	}
	if got := p.Tail(10); got != p.Log() {
		t.Errorf("Tail(10) %q, want all of %q", got, p.Log())
	}
}

func TestOutputIsBounded(t *testing.T) {
	defer func(n int) { maxKept = n }(maxKept)
	maxKept = 15
	// Three lines of 4 bytes and their newlines fill the bound; the error
	// line past it is not kept but found.
	p := shell(t, "chatty", `printf 'aaaa\nbbbb\ncccc\ndddd\n2025-01-01T00:00:00Z\terror\tlate\n'`)
	if err := p.Wait(t, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if got, want := p.Log(), "aaaa\nbbbb\ncccc\n(2 more lines not kept: over 15 bytes)\n"; got != want {
		t.Errorf("Log %q, want %q", got, want)
	}
	r := run(t, func(r *recorder) { p.ExpectNoErrors(r) })
	if len(r.errs) != 1 || !strings.HasSuffix(r.errs[0], "\terror\tlate") {
		t.Errorf("ExpectNoErrors reported %q, want the error line past the bound", r.errs)
	}
}

func TestExpectNoErrors(t *testing.T) {
	// Lines of zap's console encoding: time, level, message, fields.
	const info = `2025-01-01T00:00:00.000Z\tinfo\tservice@v0.1.0/service.go:1\tEverything is ready.\n`
	const errLine = `2025-01-01T00:00:01.000Z\terror\texporter/exporter.go:2\tExporting failed.\t{"error": "x"}\n`
	const fatal = `2025-01-01T00:00:02.000Z\tfatal\tmain.go:3\tgave up\n`
	clean := shell(t, "clean", `printf '`+info+`an error of a test program, not of a log level\n'`)
	dirty := shell(t, "dirty", `printf '`+info+errLine+fatal+`'`)
	many := shell(t, "many", `i=0; while [ $i -lt 25 ]; do printf '`+errLine+`'; i=$((i+1)); done`)
	for _, p := range []*Proc{clean, dirty, many} {
		if err := p.Wait(t, 10*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	if r := run(t, func(r *recorder) { clean.ExpectNoErrors(r) }); len(r.errs) != 0 {
		t.Errorf("clean: reported %q, want nothing", r.errs)
	}
	r := run(t, func(r *recorder) { dirty.ExpectNoErrors(r) })
	if len(r.errs) != 2 || !strings.HasPrefix(r.errs[0], "dirty logged an error: 2025-01-01T00:00:01.000Z\terror\t") ||
		!strings.Contains(r.errs[1], "\tfatal\tmain.go:3\tgave up") {
		t.Errorf("dirty: reported %q, want its error and fatal lines", r.errs)
	}
	r = run(t, func(r *recorder) { many.ExpectNoErrors(r) })
	if len(r.errs) != maxErrorLines+1 || r.errs[maxErrorLines] != "many logged 5 more errors" {
		t.Errorf("many: reported %d failures, the last %q; want %d lines and 5 more", len(r.errs),
			r.errs[len(r.errs)-1], maxErrorLines)
	}
}

func TestStopCleanly(t *testing.T) {
	r := run(t, func(r *recorder) {
		p := shell(r, "collector", `trap "exit 0" TERM; printf 'x\terror\ty\nready\n'; while :; do sleep 0.05; done`)
		waitReady(r, p)
		p.StopCleanly(r)
	})
	if len(r.errs) != 1 || r.errs[0] != "collector logged an error: x\terror\ty" {
		t.Errorf("reported %q, want the error line alone (status 0)", r.errs)
	}
	r = run(t, func(r *recorder) {
		p := shell(r, "collector", `trap "exit 2" TERM; echo ready; while :; do sleep 0.05; done`)
		waitReady(r, p)
		p.StopCleanly(r)
	})
	if len(r.errs) != 1 || r.errs[0] != "collector exited with exit status 2, want status 0" {
		t.Errorf("reported %q, want the exit status", r.errs)
	}
}

func TestCleanupKillsAndSetsTheParentDeathSignal(t *testing.T) {
	var p *Proc
	t.Run("start", func(t *testing.T) {
		p = Start(t, "sleep", exec.Command("sleep", "30"))
		if a := p.Cmd.SysProcAttr; a == nil || a.Pdeathsig != syscall.SIGKILL {
			t.Errorf("SysProcAttr %+v, want Pdeathsig SIGKILL", a)
		}
	})
	if p.Running() {
		t.Fatalf("sleep (pid %d) still runs after its test ended", p.Pid())
	}
	if err := syscall.Kill(p.Pid(), 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("kill -0 %d: %v, want no such process", p.Pid(), err)
	}
}

func TestAFailedTestShowsTheLastLines(t *testing.T) {
	r := &recorder{}
	var p *Proc
	t.Run("failing", func(t *testing.T) {
		r.TB = t
		p = shell(r, "talker", `i=1; while [ $i -le 150 ]; do echo line $i; i=$((i+1)); done`)
		if err := p.Wait(r, 10*time.Second); err != nil {
			t.Fatal(err)
		}
		r.Errorf("the test failed") // recorded: the subtest itself passes
	})
	var want strings.Builder
	fmt.Fprintf(&want, "----- talker (pid %d, <nil>), its last lines:\n", p.Pid())
	for i := 151 - failureTail; i <= 150; i++ {
		fmt.Fprintf(&want, "line %d\n", i)
	}
	if len(r.logs) != 1 || r.logs[0] != want.String() {
		t.Errorf("logged %q, want the last %d lines:\n%s", r.logs, failureTail, want.String())
	}
}

func TestUntil(t *testing.T) {
	n := 0
	Until(t, "three checks", 10*time.Second, func() bool { n++; return n == 3 })
	if n != 3 {
		t.Errorf("cond ran %d times, want 3", n)
	}
	r := run(t, func(r *recorder) { Until(r, "never", 300*time.Millisecond, func() bool { return false }) })
	if r.fatal != "timed out after 300ms waiting for never" {
		t.Errorf("reported %q", r.fatal)
	}
	// A program that exits ends the wait long before its timeout.
	began := time.Now()
	r = run(t, func(r *recorder) {
		p := shell(r, "quitter", "exit 1")
		Until(r, "never", time.Minute, func() bool { return false }, p)
	})
	if !strings.HasPrefix(r.fatal, "waiting for never: quitter (pid ") || !strings.HasSuffix(r.fatal, ") exited: exit status 1") {
		t.Errorf("reported %q, want quitter's exit", r.fatal)
	}
	if d := time.Since(began); d > 10*time.Second {
		t.Errorf("the wait took %v after the program exited", d)
	}
	sleeper, quitter := Start(t, "sleep", exec.Command("sleep", "30")), shell(t, "quitter", "exit 0")
	if err := quitter.Wait(t, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if r := run(t, func(r *recorder) { CheckRunning(r, sleeper) }); r.fatal != "" {
		t.Errorf("CheckRunning of a running program reported %q", r.fatal)
	}
	r = run(t, func(r *recorder) { CheckRunning(r, sleeper, quitter) })
	if want := fmt.Sprintf("quitter (pid %d) exited: <nil>", quitter.Pid()); r.fatal != want {
		t.Errorf("CheckRunning reported %q, want %q", r.fatal, want)
	}
}

func TestWaitListening(t *testing.T) {
	addr := FreeAddr(t)
	go func() {
		time.Sleep(300 * time.Millisecond)
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Error(err)
			return
		}
		t.Cleanup(func() { l.Close() })
	}()
	WaitListening(t, addr, 10*time.Second)
	if c, err := net.Dial("tcp", addr); err != nil {
		t.Errorf("after WaitListening: %v", err)
	} else {
		c.Close()
	}
	// Nobody will listen on the other: the program it waits for exits.
	r := run(t, func(r *recorder) {
		WaitListening(r, FreeAddr(r), time.Minute, shell(r, "server", "exit 4"))
	})
	if !strings.HasPrefix(r.fatal, "waiting for server's port 127.0.0.1:") || !strings.HasSuffix(r.fatal, "exit status 4") {
		t.Errorf("reported %q, want the server's exit", r.fatal)
	}
}

func TestFreeAddrs(t *testing.T) {
	addrs := FreeAddrs(t, 3)
	seen := map[string]bool{}
	for _, a := range addrs {
		host, port, err := net.SplitHostPort(a)
		if err != nil || host != "127.0.0.1" || port == "0" || Port(a) != port || seen[a] {
			t.Errorf("address %q of %q: want distinct loopback ports", a, addrs)
		}
		seen[a] = true
		l, err := net.Listen("tcp", a)
		if err != nil {
			t.Errorf("%s is not free: %v", a, err)
			continue
		}
		l.Close()
	}
	if Port("nonsense") != "" {
		t.Errorf("Port of no address: %q", Port("nonsense"))
	}
}

func TestGate(t *testing.T) {
	const env = "E2ETEST_GATE_TEST"
	t.Setenv(env, "")
	r := run(t, func(r *recorder) { Gate(r, env, "the gate's test") })
	if !strings.HasPrefix(r.skipped, "set E2ETEST_GATE_TEST=1 to run the gate's test") {
		t.Errorf("without %s: skipped %q, fatal %q", env, r.skipped, r.fatal)
	}
	t.Setenv(env, "1")
	t.Setenv("OTELCOL", "bin/otelcol-deltaq")
	r = run(t, func(r *recorder) { Gate(r, env, "the gate's test") })
	if !strings.Contains(r.fatal, "want the built collector's absolute path") {
		t.Errorf("relative OTELCOL: fatal %q", r.fatal)
	}
	missing := filepath.Join(t.TempDir(), "otelcol")
	t.Setenv("OTELCOL", missing)
	r = run(t, func(r *recorder) { Gate(r, env, "the gate's test") })
	if !strings.HasPrefix(r.fatal, "the collector: ") {
		t.Errorf("missing OTELCOL: fatal %q", r.fatal)
	}
	if err := os.WriteFile(missing, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	if got := Gate(t, env, "the gate's test"); got != missing {
		t.Errorf("Gate: %q, want $OTELCOL %q", got, missing)
	}
}

func TestRoot(t *testing.T) {
	root := Root(t)
	if _, err := os.Stat(filepath.Join(root, "internal", "e2etest", "e2etest.go")); err != nil {
		t.Errorf("Root %s is not the repository's: %v", root, err)
	}
}

func TestCollectorCmd(t *testing.T) {
	cmd := CollectorCmd("/opt/otelcol", []string{"a.yaml", "b.yaml"}, "DELTAQ_SINK=127.0.0.1:1")
	if want := []string{"/opt/otelcol", "--config=a.yaml", "--config=b.yaml"}; !slices.Equal(cmd.Args, want) {
		t.Errorf("args %q, want %q", cmd.Args, want)
	}
	if n := len(cmd.Env); n != len(os.Environ())+1 || cmd.Env[n-1] != "DELTAQ_SINK=127.0.0.1:1" {
		t.Errorf("environment %q: want the test's and DELTAQ_SINK", cmd.Env[len(os.Environ()):])
	}
}

func TestLastLines(t *testing.T) {
	for _, c := range []struct {
		s    string
		n    int
		want string
	}{
		{"a\nb\nc\n", 2, "b\nc"},
		{"a\nb\nc", 2, "b\nc"},
		{"a\nb\n", 5, "a\nb"},
		{"", 3, ""},
	} {
		if got := LastLines(c.s, c.n); got != c.want {
			t.Errorf("LastLines(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
	}
}

// TestPortsAreDistinctFreeAndNotEphemeral takes more addresses from one
// Ports than a test uses, each a port nobody listens on, none twice, none
// in the kernel's ephemeral range (where a listener on port 0 or an
// outgoing connection could take it before the program it is for binds).
func TestPortsAreDistinctFreeAndNotEphemeral(t *testing.T) {
	low, high := 32768, 60999
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if _, err := fmt.Sscan(string(b), &low, &high); err != nil {
			t.Fatalf("ip_local_port_range %q: %v", b, err)
		}
	}
	ports := NewPorts(t)
	seen := map[string]bool{}
	for range 10 {
		for _, addr := range append(ports.Addrs(3), ports.Addr()) {
			if seen[addr] {
				t.Fatalf("%s handed out twice", addr)
			}
			seen[addr] = true
			p, err := strconv.Atoi(Port(addr))
			if err != nil {
				t.Fatalf("%s: %v", addr, err)
			}
			if high < 65535-1000 && p >= low && p <= high {
				t.Errorf("%s is in the ephemeral range %d–%d", addr, low, high)
			}
			l, err := net.Listen("tcp", addr)
			if err != nil {
				t.Fatalf("%s is not free: %v", addr, err)
			}
			l.Close()
		}
	}
}
