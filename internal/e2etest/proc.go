// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package e2etest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

const (
	// stopTimeout is how long Stop and Kill wait for a program to exit.
	stopTimeout = 10 * time.Second
	// waitDelay bounds how long a program's exit waits for its output to
	// close: a child it left behind may hold it open (exec.Cmd.WaitDelay).
	waitDelay = 5 * time.Second
	// failureTail is how many of its last lines a program shows when the
	// test failed.
	failureTail = 100
	// maxErrorLines is how many error lines a Proc keeps for ExpectNoErrors;
	// it counts them all.
	maxErrorLines = 20
)

// maxKept bounds the output a Proc keeps, in bytes; the lines past it are
// counted, and still checked for errors. A variable for the tests.
var maxKept = 64 << 20

// errorLevels mark the lines of a collector's log (zap's console encoding:
// time, tab, level, tab) at level error or above.
var errorLevels = []string{"\terror\t", "\tdpanic\t", "\tpanic\t", "\tfatal\t"}

// Line is one line of a program's output (standard output and error
// together) and the time the test read it.
type Line struct {
	At   time.Time
	Text string
}

// Proc is a program the test started. Its output is kept in memory, line
// by line, and its last lines are shown when the test fails. It is killed
// when the test ends should it still run, and by the kernel (Linux) should
// the test binary die first.
type Proc struct {
	// Name names the program in messages ("collector", "prometheus").
	Name string
	Cmd  *exec.Cmd
	// StopTimeout is how long Stop waits after SIGTERM before it kills the
	// program, and Kill and Wait for the exit: 10 s unless changed.
	StopTimeout time.Duration

	out    output
	exited chan struct{}
	err    error // Wait's result, once exited is closed
}

// Start starts cmd, keeping its output (Start sets Stdout and Stderr,
// which must be unset), and registers its end for the end of the test.
func Start(t testing.TB, name string, cmd *exec.Cmd) *Proc {
	t.Helper()
	if cmd.Stdout != nil || cmd.Stderr != nil {
		t.Fatalf("starting %s: Start keeps the output itself: leave Stdout and Stderr unset", name)
	}
	p := &Proc{Name: name, Cmd: cmd, StopTimeout: stopTimeout, out: output{limit: maxKept}, exited: make(chan struct{})}
	// The same writer for both: exec then calls it from one goroutine at
	// a time.
	cmd.Stdout, cmd.Stderr = &p.out, &p.out
	if cmd.WaitDelay == 0 {
		cmd.WaitDelay = waitDelay
	}
	dieWithTest(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s (%s): %v", name, cmd.Path, err)
	}
	go func() {
		p.err = cmd.Wait()
		p.out.flush()
		close(p.exited)
	}()
	t.Cleanup(func() {
		if p.Running() {
			// An error here only says that it has exited meanwhile.
			_ = cmd.Process.Kill()
			<-p.exited
		}
		if t.Failed() {
			t.Logf("----- %s (pid %d, %v), its last lines:\n%s", name, p.Pid(), p.err, p.Tail(failureTail))
		}
	})
	return p
}

// CollectorCmd is the command that runs the collector otelcol with the
// configuration files configs (later ones over earlier ones, relative to the
// command's directory, the test's unless the caller sets Dir) and env
// ("KEY=value") added to the test's environment.
func CollectorCmd(otelcol string, configs []string, env ...string) *exec.Cmd {
	args := make([]string, len(configs))
	for i, c := range configs {
		args[i] = "--config=" + c
	}
	cmd := exec.Command(otelcol, args...)
	cmd.Env = append(os.Environ(), env...)
	return cmd
}

// Collector is a built collector the test started, with the address of
// its OTLP/gRPC receiver.
type Collector struct {
	*Proc
	Addr string
}

// StartCollector starts CollectorCmd as name, its OTLP/gRPC receiver on a
// free loopback port (DELTAQ_OTLP_GRPC, as the repository's configurations
// take it); WaitReady waits for the port.
func StartCollector(t testing.TB, name, otelcol string, configs []string, env ...string) *Collector {
	t.Helper()
	c := &Collector{Addr: FreeAddr(t)}
	c.Proc = Start(t, name, CollectorCmd(otelcol, configs, append([]string{"DELTAQ_OTLP_GRPC=" + c.Addr}, env...)...))
	return c
}

// WaitReady waits until the collector accepts connections on its OTLP/gRPC
// port, failing the test after 30 s or when it exits.
func (c *Collector) WaitReady(t testing.TB) {
	t.Helper()
	WaitListening(t, c.Addr, 30*time.Second, c.Proc)
}

// Pid is the program's process id.
func (p *Proc) Pid() int { return p.Cmd.Process.Pid }

// Running reports whether the program has not exited.
func (p *Proc) Running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// Done is closed once the program has exited.
func (p *Proc) Done() <-chan struct{} { return p.exited }

// Err is how the program exited (exec.Cmd.Wait's error, nil for status 0),
// or nil while it runs.
func (p *Proc) Err() error {
	if p.Running() {
		return nil
	}
	return p.err
}

func (p *Proc) exitText() string {
	return fmt.Sprintf("%s (pid %d) exited: %v", p.Name, p.Pid(), p.Err())
}

// Wait waits for the program to exit by itself and returns how it exited;
// it fails the test after timeout.
func (p *Proc) Wait(t testing.TB, timeout time.Duration) error {
	t.Helper()
	select {
	case <-p.exited:
		return p.err
	case <-time.After(timeout):
		t.Fatalf("%s (pid %d) did not exit within %v", p.Name, p.Pid(), timeout)
		return nil
	}
}

// Signal sends sig to the program, failing the test if it cannot.
func (p *Proc) Signal(t testing.TB, sig os.Signal) {
	t.Helper()
	if err := p.Cmd.Process.Signal(sig); err != nil {
		t.Fatalf("%v to %s (pid %d): %v", sig, p.Name, p.Pid(), err)
	}
}

// Stop asks the program to stop with SIGTERM, if it still runs, and
// returns how it exited. A program still running StopTimeout later fails
// the test and is killed.
func (p *Proc) Stop(t testing.TB) error {
	t.Helper()
	if !p.Running() {
		return p.err
	}
	// An error here only says that it has exited meanwhile.
	_ = p.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(p.StopTimeout):
		t.Errorf("%s (pid %d) did not exit within %v of SIGTERM: killing it", p.Name, p.Pid(), p.StopTimeout)
		_ = p.Cmd.Process.Kill()
		<-p.exited
	}
	return p.err
}

// StopCleanly stops the program (Stop) and checks that it exited 0 having
// logged no error (ExpectNoErrors): how a collector must end.
func (p *Proc) StopCleanly(t testing.TB) {
	t.Helper()
	if err := p.Stop(t); err != nil {
		t.Errorf("%s exited with %v, want status 0", p.Name, err)
	}
	p.ExpectNoErrors(t)
}

// Kill kills the program with SIGKILL, as a crash would (nothing is
// flushed), and waits for it to exit.
func (p *Proc) Kill(t testing.TB) {
	t.Helper()
	if !p.Running() {
		return
	}
	if err := p.Cmd.Process.Kill(); err != nil && p.Running() {
		t.Fatalf("SIGKILL to %s (pid %d): %v", p.Name, p.Pid(), err)
	}
	p.Wait(t, p.StopTimeout)
}

// ExpectNoErrors fails the test for every line of the program's output so
// far at level error or above (of a collector's log).
func (p *Proc) ExpectNoErrors(t testing.TB) {
	t.Helper()
	lines, n := p.out.errors()
	for _, l := range lines {
		t.Errorf("%s logged an error: %s", p.Name, strings.TrimSpace(l))
	}
	if n > len(lines) {
		t.Errorf("%s logged %d more errors", p.Name, n-len(lines))
	}
}

// Lines returns the program's output lines so far.
func (p *Proc) Lines() []Line {
	p.out.mu.Lock()
	defer p.out.mu.Unlock()
	return append([]Line(nil), p.out.lines...)
}

// Log returns the program's output so far.
func (p *Proc) Log() string {
	return p.text(p.Lines())
}

// Tail returns the last n lines of the program's output so far.
func (p *Proc) Tail(n int) string {
	lines := p.Lines()
	return p.text(lines[max(0, len(lines)-n):])
}

// text joins lines, noting the lines past the bound.
func (p *Proc) text(lines []Line) string {
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(l.Text)
		b.WriteByte('\n')
	}
	p.out.mu.Lock()
	dropped := p.out.dropped
	p.out.mu.Unlock()
	if dropped > 0 {
		fmt.Fprintf(&b, "(%d more lines not kept: over %d bytes)\n", dropped, p.out.limit)
	}
	return b.String()
}

// output splits a program's output into lines, stamped with the time they
// were read; it keeps them up to limit bytes, and the first error lines.
type output struct {
	limit      int
	mu         sync.Mutex
	partial    []byte
	lines      []Line
	kept       int
	dropped    int
	errLines   []string
	errorCount int
}

func (o *output) Write(b []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	now := time.Now()
	o.partial = append(o.partial, b...)
	for {
		i := bytes.IndexByte(o.partial, '\n')
		if i < 0 {
			break
		}
		o.add(now, string(o.partial[:i]))
		o.partial = o.partial[i+1:]
	}
	// A line without end that grows past the bound is cut.
	if len(o.partial) > o.limit {
		o.add(now, string(o.partial))
		o.partial = nil
	}
	return len(b), nil
}

// flush adds the last line should it lack its newline.
func (o *output) flush() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.partial) > 0 {
		o.add(time.Now(), string(o.partial))
		o.partial = nil
	}
}

func (o *output) add(at time.Time, text string) {
	for _, lvl := range errorLevels {
		if strings.Contains(text, lvl) {
			o.errorCount++
			if len(o.errLines) < maxErrorLines {
				o.errLines = append(o.errLines, text)
			}
			break
		}
	}
	if o.kept+len(text)+1 > o.limit {
		o.dropped++
		return
	}
	o.kept += len(text) + 1
	o.lines = append(o.lines, Line{At: at, Text: text})
}

func (o *output) errors() ([]string, int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.errLines...), o.errorCount
}
