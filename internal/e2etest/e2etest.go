// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

// Package e2etest is the process harness of the end-to-end tests: the gate
// that runs them only when asked to and finds the built collector, free
// loopback addresses, programs started with their output kept (Proc) and
// stopped with SIGTERM, then SIGKILL, when the test is done with them, and
// waits that fail when a program the test depends on exits. Every program
// started dies with the test: it is killed when the test ends, and by the
// kernel (Linux) should the test binary die first.
//
// The tests that use it talk OTLP to the collector through
// internal/otlptest; this package knows nothing of OTLP.
package e2etest

import (
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// pollEvery is how often Until checks its condition.
const pollEvery = 100 * time.Millisecond

// Gate skips the test unless the environment variable env is set (the
// end-to-end tests are slow and need programs built or installed first),
// and returns the collector to run: $OTELCOL, which must be an absolute
// path (the test runs in its package's directory, not where go test was
// typed), or bin/otelcol-deltaq of the repository. A missing collector
// fails the test: it was asked to run. what names the test in the skip
// message, with what else it needs.
func Gate(t testing.TB, env, what string) (otelcol string) {
	t.Helper()
	if os.Getenv(env) == "" {
		t.Skipf("set %s=1 to run %s (make build first; OTELCOL names another collector by its absolute path)", env, what)
	}
	otelcol = os.Getenv("OTELCOL")
	switch {
	case otelcol == "":
		otelcol = filepath.Join(Root(t), "bin", "otelcol-deltaq")
	case !filepath.IsAbs(otelcol):
		t.Fatalf("OTELCOL=%q: want the built collector's absolute path", otelcol)
	}
	if _, err := os.Stat(otelcol); err != nil {
		t.Fatalf("the collector: %v (run make build, or set OTELCOL)", err)
	}
	return otelcol
}

// Root returns the repository's root: the nearest directory at or above
// the test's working directory (its package's) that holds a go.mod.
func Root(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatalf("no go.mod at or above the test's directory")
		}
		dir = parent
	}
}

// Build builds the command pkg, a package path relative to the
// repository's root ("./cmd/dqworkload"), into the test's temporary
// directory and returns the program's path.
func Build(t testing.TB, pkg string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), filepath.Base(pkg))
	cmd := exec.Command("go", "build", "-o", bin, pkg)
	cmd.Dir = Root(t)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, out)
	}
	return bin
}

// FreeAddr returns a loopback address (127.0.0.1:port) whose port nobody
// listened on a moment ago (Ports); closed at once, it also serves as an
// endpoint nobody answers.
func FreeAddr(t testing.TB) string {
	t.Helper()
	return FreeAddrs(t, 1)[0]
}

// FreeAddrs returns n such addresses, distinct. A test that starts several
// programs one after another takes their addresses from one Ports instead,
// so that none is handed out twice.
func FreeAddrs(t testing.TB, n int) []string {
	t.Helper()
	return NewPorts(t).Addrs(n)
}

// Ports hands out loopback addresses whose ports nobody listens on, each
// once, from ports the kernel never picks by itself: those above its
// ephemeral range (/proc/sys/net/ipv4/ip_local_port_range), where neither a
// listener on port 0 nor an outgoing connection lands between the moment a
// port is found free and the moment the program given it binds it. (The
// scripts take theirs below that range.) It starts at a random port of the
// range and goes up from there, so that tests running at once seldom try
// the same ports; the ports are only checked free, not held.
type Ports struct {
	t        testing.TB
	lo, hi   int // the range, inclusive
	next     int // the next port to try
	tried    int // ports tried so far: after hi−lo+1, every port was
	fromZero bool
}

// NewPorts returns the addresses of one test.
func NewPorts(t testing.TB) *Ports {
	lo, hi := 0, 0
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if high, err := strconv.Atoi(f[1]); err == nil && high < 65535-1000 {
				lo, hi = high+1, 65535
			}
		}
	}
	if lo == 0 { // no room above the range: listeners on port 0, as the kernel picks
		return &Ports{t: t, fromZero: true}
	}
	return &Ports{t: t, lo: lo, hi: hi, next: lo + rand.IntN(hi-lo+1)}
}

// Addr returns the next address.
func (p *Ports) Addr() string {
	p.t.Helper()
	return p.Addrs(1)[0]
}

// Addrs returns the next n addresses.
func (p *Ports) Addrs(n int) []string {
	p.t.Helper()
	addrs := make([]string, 0, n)
	if p.fromZero {
		for range n { // each port held until all are taken
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				p.t.Fatalf("a free loopback port: %v", err)
			}
			defer l.Close()
			addrs = append(addrs, l.Addr().String())
		}
		return addrs
	}
	for len(addrs) < n {
		if p.tried++; p.tried > p.hi-p.lo+1 {
			p.t.Fatalf("no free loopback port left in %d–%d", p.lo, p.hi)
		}
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(p.next))
		if p.next++; p.next > p.hi {
			p.next = p.lo
		}
		l, err := net.Listen("tcp", addr)
		if err != nil {
			continue // taken
		}
		l.Close()
		addrs = append(addrs, addr)
	}
	return addrs
}

// Port returns the port of a host:port address, as the collector's
// configurations take it (DELTAQ_TELEMETRY_PORT), or "" for no such
// address.
func Port(addr string) string {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return ""
	}
	return port
}

// Until checks cond every 100 ms until it holds. It fails the test when one
// of procs (the programs cond depends on) has exited, or after timeout; the
// timeout only turns a hang into a failure: nothing here measures speed.
func Until(t testing.TB, what string, timeout time.Duration, cond func() bool, procs ...*Proc) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if p := firstExited(procs); p != nil {
			t.Fatalf("waiting for %s: %s", what, p.exitText())
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(pollEvery)
	}
}

// WaitListening waits until something accepts TCP connections at addr,
// failing the test after timeout or when one of procs exits.
func WaitListening(t testing.TB, addr string, timeout time.Duration, procs ...*Proc) {
	t.Helper()
	what := "a listener on " + addr
	if len(procs) == 1 {
		what = procs[0].Name + "'s port " + addr
	}
	Until(t, what, timeout, func() bool {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
		}
		return err == nil
	}, procs...)
}

// CheckRunning fails the test, naming the first of procs that has exited
// and how.
func CheckRunning(t testing.TB, procs ...*Proc) {
	t.Helper()
	if p := firstExited(procs); p != nil {
		t.Fatal(p.exitText())
	}
}

func firstExited(procs []*Proc) *Proc {
	for _, p := range procs {
		if !p.Running() {
			return p
		}
	}
	return nil
}

// LastLines returns the last n lines of s, without its final newline.
func LastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
