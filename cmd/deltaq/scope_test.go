// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"

	"github.com/deltaq-otel/deltaq/internal/otlptest"
	"github.com/deltaq-otel/deltaq/internal/scope"
)

// TestScopeFlags: the command's flags reach scope.Options, every bound is
// checked against its range with the flag named, and the help lists them.
func TestScopeFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		err  string
	}{
		{[]string{"--width", "4"}, "deltaq scope: --width 4: want a plot width in [8, 1000] columns"},
		{[]string{"--height", "2"}, "deltaq scope: --height 2: want a plot height in [3, 200] rows"},
		{[]string{"--windows", "5"}, "deltaq scope: --windows bounds the browser view: give --http too"},
		{[]string{"--client-idle", "1m"}, "deltaq scope: --client-idle bounds the browser view: give --http too"},
		{[]string{"--timeout", "-1s"}, "deltaq scope: --timeout -1s is negative"},
		{[]string{"extra"}, `deltaq scope: unexpected argument "extra"`},
		{[]string{"--nope"}, "flag provided but not defined: -nope"},
		{[]string{"--windows", "0"}, "--windows 0 outside [1, 1000]"},
		{[]string{"--windows", "1001"}, "--windows 1001 outside [1, 1000]"},
		{[]string{"--max-probes", "0"}, "--max-probes 0 outside [1, 10000]"},
		{[]string{"--max-name", "8"}, "--max-name 8 outside [16, 65536]"},
		{[]string{"--max-clients", "0"}, "--max-clients 0 outside [1, 1000]"},
		{[]string{"--probe-ttl", "10ms"}, "--probe-ttl 10ms outside [1s, 24h]"},
		{[]string{"--max-ahead", "500ms"}, "--max-ahead 500ms outside [1s, 24h]"},
		{[]string{"--max-ahead", "25h"}, "--max-ahead 25h0m0s outside [1s, 24h]"},
	} {
		var stderr bytes.Buffer
		_, status, ok := parseScopeArgs(c.args, &stderr)
		if ok || status != exitUsage || !strings.Contains(stderr.String(), c.err) {
			t.Errorf("%v: ok %v status %d stderr %q; want usage error %q", c.args, ok, status, stderr.String(), c.err)
		}
	}
	o, _, ok := parseScopeArgs(nil, &bytes.Buffer{})
	if !ok || o.Listen != "127.0.0.1:4327" || o.Once || o.Timeout != 0 || o.Frame != scope.DefaultFrame ||
		o.Limits != scope.DefaultLimits() || o.HTTP != "" {
		t.Errorf("defaults %+v, ok %v", o, ok)
	}
	o, _, ok = parseScopeArgs([]string{"--http", "127.0.0.1:0", "--windows", "5", "--max-probes", "7", "--probe-ttl", "1m", "--max-ahead", "5m"}, &bytes.Buffer{})
	if !ok || o.HTTP != "127.0.0.1:0" || o.Limits.Windows != 5 || o.Limits.Probes != 7 || o.Limits.ProbeTTL != time.Minute ||
		o.Limits.Ahead != 5*time.Minute {
		t.Errorf("--http --windows --max-probes --probe-ttl --max-ahead: %+v, ok %v", o, ok)
	}
	var stdout bytes.Buffer
	if status := run([]string{"help", "scope"}, &stdout, &stdout); status != exitOK {
		t.Errorf("deltaq help scope: status %d", status)
	}
	assertContainsAll(t, "deltaq help scope", stdout.String(), "-listen address", "-max-probes N", "-probe-ttl duration",
		"-max-clients N", "-max-frame bytes", "DNS rebinding", "-max-ahead duration", `"in window"`,
		"probes_refused", "counts the data points of the probes refused", "what is wrong and what is expected")
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader in two goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// TestScopeCommandOnce runs the command itself: with --once it prints the
// frame of the first metrics batch (here an empty one: no probes yet) and
// exits 0.
func TestScopeCommandOnce(t *testing.T) {
	stdout, stderr := &syncBuffer{}, &syncBuffer{}
	status := make(chan int, 1)
	go func() {
		status <- runScope([]string{"--listen", "127.0.0.1:0", "--once", "--timeout", "20s"}, stdout, stderr)
	}()
	listening := regexp.MustCompile(`listening for OTLP/gRPC metrics and logs on (\S+)`)
	deadline := time.Now().Add(10 * time.Second)
	for !listening.MatchString(stderr.String()) {
		if time.Now().After(deadline) {
			t.Fatalf("not listening after 10 s: %q", stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	conn := otlptest.Dial(t, listening.FindStringSubmatch(stderr.String())[1])
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := pmetricotlp.NewExportRequestFromMetrics(pmetric.NewMetrics())
	if _, err := pmetricotlp.NewGRPCClient(conn).Export(ctx, req); err != nil {
		t.Fatal(err)
	}
	select {
	case s := <-status:
		if s != exitOK || !strings.Contains(stdout.String(), "ΔQ scope · 0 probes · 1 metric batches") {
			t.Errorf("status %d, stdout %q", s, stdout.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("deltaq scope --once did not exit after the first batch")
	}
}

// TestScopeAddressErrors: an address the scope cannot listen on is named
// by its flag: "listen tcp: address nonsense" did not say whether --listen
// or --http was wrong.
func TestScopeAddressErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--listen", "nonsense"}, "deltaq scope: --listen nonsense: "},
		{[]string{"--listen", "127.0.0.1:0", "--http", "nonsense"}, "deltaq scope: --http nonsense: "},
	} {
		var stdout, stderr bytes.Buffer
		if status := runScope(append(c.args, "--timeout", "5s"), &stdout, &stderr); status != exitFail || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%v: status %d, stderr %q; want %q", c.args, status, stderr.String(), c.want)
		}
	}
}
