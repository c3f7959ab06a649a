// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

// Package demo checks that make demo (scripts/demo.sh) cannot hang: a busy
// port is refused before anything starts, a program of the demo that exits
// stops the rest with its error, and Ctrl-C or SIGTERM stops everything
// within 5 s. It needs Linux and the built collector, takes about half a
// minute, and runs only when DELTAQ_DEMO_E2E is set:
//
//	make build
//	DELTAQ_DEMO_E2E=1 go test -count=1 -v ./examples/demo/
package demo

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/deltaq-otel/deltaq/internal/e2etest"
)

// stopWithin is what the demo promises: everything stopped this soon after
// Ctrl-C or SIGTERM.
const stopWithin = 5 * time.Second

// demo is one run of scripts/demo.sh in a process group of its own, on free
// loopback addresses, with its logs in a temporary directory.
type demo struct {
	*e2etest.Proc
	addrs map[string]string // DELTAQ_* variable → address
	logs  string
}

// bin makes the directory the script takes as BIN: the collector under test
// and the two commands built from this checkout.
func bin(t *testing.T, otelcol string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Symlink(otelcol, filepath.Join(dir, "otelcol-deltaq")); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"./cmd/dqworkload", "./cmd/deltaq"} {
		if err := os.Rename(e2etest.Build(t, cmd), filepath.Join(dir, filepath.Base(cmd))); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// start runs the demo with the addresses addrs (missing ones free) and env.
func start(t *testing.T, binDir string, addrs map[string]string, env ...string) *demo {
	t.Helper()
	free := e2etest.FreeAddrs(t, 5)
	d := &demo{addrs: map[string]string{}, logs: filepath.Join(t.TempDir(), "logs")}
	for i, v := range []string{"DELTAQ_OTLP_GRPC", "DELTAQ_OTLP_HTTP", "DELTAQ_SCOPE", "DELTAQ_SCOPE_HTTP", "DELTAQ_TELEMETRY"} {
		d.addrs[v] = free[i]
		if a, ok := addrs[v]; ok {
			d.addrs[v] = a
		}
	}
	cmd := exec.Command("scripts/demo.sh")
	cmd.Dir = e2etest.Root(t)
	cmd.Env = append(os.Environ(), "BIN="+binDir, "DEMO_LOGS="+d.logs,
		"DELTAQ_TELEMETRY_PORT="+e2etest.Port(d.addrs["DELTAQ_TELEMETRY"]))
	for v, a := range d.addrs {
		if v != "DELTAQ_TELEMETRY" {
			cmd.Env = append(cmd.Env, v+"="+a)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	d.Proc = e2etest.Start(t, "demo", cmd)
	// Whatever happens, nothing of the demo outlives the test.
	t.Cleanup(func() { _ = syscall.Kill(-d.Pid(), syscall.SIGKILL) })
	return d
}

// waitUp waits until the demo's three programs run and the scope has seen
// the probes of the workload.
func (d *demo) waitUp(t *testing.T) {
	t.Helper()
	e2etest.WaitListening(t, d.addrs["DELTAQ_OTLP_GRPC"], 30*time.Second, d.Proc)
	e2etest.Until(t, "the scope showing worker_2", 30*time.Second, func() bool {
		resp, err := http.Get("http://" + d.addrs["DELTAQ_SCOPE_HTTP"] + "/api/state")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return strings.Contains(string(body), "worker_2")
	}, d.Proc)
}

// pid reads the process id the demo wrote for one of its programs.
func (d *demo) pid(t *testing.T, name string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(d.logs, name+".pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("%s.pid: %v", name, err)
	}
	return pid
}

// checkAllStopped fails the test when a process of the demo's group still
// runs, or a program of the demo still accepts at one of its addresses.
//
// The addresses were only found free, not held (e2etest.Ports): once the
// demo has let go of one, another program on the machine — another test
// running at once — may listen there. A listener is the demo's when its
// process carries the demo's DEMO_LOGS in its environment, which every
// program the script starts inherits, in its group or not; one whose
// process cannot be told (no /proc, another user's) counts as the demo's.
func (d *demo) checkAllStopped(t *testing.T) {
	t.Helper()
	if err := syscall.Kill(-d.Pid(), 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("a process of the demo's group is left running (kill -0: %v)", err)
	}
	for v, a := range d.addrs {
		c, err := net.DialTimeout("tcp", a, time.Second)
		if err != nil {
			continue
		}
		c.Close()
		owners, ours := listenersOf(a, "DEMO_LOGS="+d.logs)
		if !ours {
			t.Logf("%s %s: taken since by another program (%s)", v, a, owners)
			continue
		}
		t.Errorf("%s %s still accepts connections (%s)", v, a, owners)
	}
}

// listenersOf describes the processes listening on addr's port (Linux's
// /proc/net/tcp and tcp6, and each process's open files) and says whether
// one of them holds env (NAME=value) in its environment; when it cannot tell
// (no listener found, a process whose files or environment it may not
// read), it says yes.
func listenersOf(addr, env string) (owners string, holds bool) {
	port, err := strconv.Atoi(e2etest.Port(addr))
	if err != nil {
		return "no port", true
	}
	inodes := map[string]bool{}
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(table)
		if err != nil {
			continue
		}
		// sl local_address rem_address st … inode: the local address is
		// HEXIP:HEXPORT, state 0A is LISTEN.
		for _, line := range strings.Split(string(b), "\n")[1:] {
			f := strings.Fields(line)
			if len(f) < 10 || f[3] != "0A" {
				continue
			}
			_, hexPort, _ := strings.Cut(f[1], ":")
			if p, err := strconv.ParseUint(hexPort, 16, 16); err == nil && int(p) == port {
				inodes["socket:["+f[9]+"]"] = true
			}
		}
	}
	if len(inodes) == 0 {
		return "no listener found in /proc", true
	}
	procs, _ := filepath.Glob("/proc/[0-9]*")
	if len(procs) == 0 {
		return "no process found in /proc", true
	}
	var found []string
	for _, proc := range procs {
		fds, err := os.ReadDir(filepath.Join(proc, "fd"))
		if err != nil || len(fds) == 0 {
			continue // gone, not ours to read, or without files
		}
		for _, fd := range fds {
			if link, err := os.Readlink(filepath.Join(proc, "fd", fd.Name())); err != nil || !inodes[link] {
				continue
			}
			cmdline, _ := os.ReadFile(filepath.Join(proc, "cmdline"))
			found = append(found, fmt.Sprintf("pid %s: %s", filepath.Base(proc), strings.ReplaceAll(strings.TrimRight(string(cmdline), "\x00"), "\x00", " ")))
			environ, err := os.ReadFile(filepath.Join(proc, "environ"))
			if err != nil || slices.Contains(strings.Split(string(environ), "\x00"), env) {
				holds = true
			}
			break
		}
	}
	if len(found) == 0 {
		return "the listener's process not found", true
	}
	return strings.Join(found, "; "), holds
}

// exitStatus is the demo's exit status, failing the test if it does not
// exit within timeout.
func (d *demo) exitStatus(t *testing.T, timeout time.Duration) int {
	t.Helper()
	var exit *exec.ExitError
	if err := d.Wait(t, timeout); errors.As(err, &exit) {
		return exit.ExitCode()
	} else if err != nil {
		t.Fatalf("demo: %v", err)
	}
	return 0
}

func TestDemo(t *testing.T) {
	otelcol := e2etest.Gate(t, "DELTAQ_DEMO_E2E", "the demo's start and stop")
	binDir := bin(t, otelcol)
	t.Run("busy port", func(t *testing.T) { testBusyPort(t, binDir) })
	t.Run("Ctrl-C", func(t *testing.T) {
		testStop(t, binDir, func(d *demo) error { return syscall.Kill(-d.Pid(), syscall.SIGINT) })
	})
	t.Run("SIGTERM", func(t *testing.T) {
		testStop(t, binDir, func(d *demo) error { return syscall.Kill(d.Pid(), syscall.SIGTERM) })
	})
	// A second signal while the demo stops (an impatient Ctrl-C, a supervisor's second SIGTERM)
	// must not end the script before it has stopped what it started.
	t.Run("SIGTERM twice", func(t *testing.T) {
		testStop(t, binDir, func(d *demo) error {
			if err := syscall.Kill(d.Pid(), syscall.SIGTERM); err != nil {
				return err
			}
			time.Sleep(200 * time.Millisecond)
			return syscall.Kill(d.Pid(), syscall.SIGTERM)
		})
	})
	t.Run("collector fails to start", func(t *testing.T) { testCollectorFailsToStart(t, binDir) })
	t.Run("collector dies", func(t *testing.T) { testCollectorDies(t, binDir) })
}

// A port another program holds is refused, by name and variable, before
// anything starts: the collector would have died on it and the workload
// sent its spans to the other program.
func testBusyPort(t *testing.T, binDir string) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	d := start(t, binDir, map[string]string{"DELTAQ_OTLP_GRPC": l.Addr().String()})
	if status := d.exitStatus(t, stopWithin); status != 1 {
		t.Errorf("exit status %d, want 1", status)
	}
	want := "demo: " + l.Addr().String() + " (the collector's OTLP/gRPC port) is in use by another program: " +
		"stop it, or set DELTAQ_OTLP_GRPC to a free address"
	if !strings.Contains(d.Log(), want) {
		t.Errorf("the demo did not say %q:\n%s", want, d.Log())
	}
	if _, err := os.Stat(d.logs); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("something started (%s: %v)", d.logs, err)
	}
	l.Close() // the one address that ought to accept
	d.checkAllStopped(t)
}

// Ctrl-C (SIGINT to the terminal's process group) or SIGTERM to the script
// stops the scope, the collector and the workload within 5 s.
func testStop(t *testing.T, binDir string, signal func(*demo) error) {
	d := start(t, binDir, nil)
	d.waitUp(t)
	sent := time.Now()
	if err := signal(d); err != nil {
		t.Fatal(err)
	}
	status := d.exitStatus(t, 2*stopWithin)
	took := time.Since(sent)
	t.Logf("stopped in %v", took.Round(time.Millisecond))
	if took > stopWithin {
		t.Errorf("the demo took %v to stop, want at most %v", took, stopWithin)
	}
	if status != 130 && status != 143 {
		t.Errorf("exit status %d, want 130 (SIGINT) or 143 (SIGTERM)", status)
	}
	d.checkAllStopped(t)
}

// A collector that cannot start stops the demo with its own error.
func testCollectorFailsToStart(t *testing.T, binDir string) {
	d := start(t, binDir, nil, "DELTAQ_DIAGRAM=no-such-diagram.dq")
	if status := d.exitStatus(t, 30*time.Second); status != 1 {
		t.Errorf("exit status %d, want 1", status)
	}
	if log := d.Log(); !strings.Contains(log, "demo: the collector exited") || !strings.Contains(log, "no-such-diagram.dq") {
		t.Errorf("the demo did not say that the collector exited, with its error:\n%s", log)
	}
	d.checkAllStopped(t)
}

// A collector that dies mid-run stops the demo: the workload is not left
// sending to nobody.
func testCollectorDies(t *testing.T, binDir string) {
	d := start(t, binDir, nil)
	d.waitUp(t)
	if err := syscall.Kill(d.pid(t, "collector"), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if status := d.exitStatus(t, 2*stopWithin); status != 1 {
		t.Errorf("exit status %d, want 1", status)
	}
	if !strings.Contains(d.Log(), "demo: the collector exited") {
		t.Errorf("the demo did not say that the collector exited:\n%s", d.Tail(20))
	}
	d.checkAllStopped(t)
}

// TestListenersOf: a listener of this test's process is found, with its
// pid, and told the demo's or not by this process's environment as it
// started (/proc/PID/environ).
func TestListenersOf(t *testing.T) {
	environ, err := os.ReadFile("/proc/self/environ")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	mine, _, _ := strings.Cut(string(environ), "\x00")
	owners, holds := listenersOf(l.Addr().String(), mine)
	if want := fmt.Sprintf("pid %d: ", os.Getpid()); !strings.Contains(owners, want) || !holds {
		t.Errorf("listenersOf(%s, %q) = %q, %v; want %q… and true", l.Addr(), mine, owners, holds, want)
	}
	if owners, holds := listenersOf(l.Addr().String(), "DEMO_LOGS="+t.TempDir()); holds {
		t.Errorf("listenersOf(%s, another demo's DEMO_LOGS) = %q, true; want false", l.Addr(), owners)
	}
}
