// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

// Package otlptest is a loopback OTLP/gRPC receiver for tests: it keeps a
// copy of every request it accepts (or, for load tests, only counts them),
// lets the test choose each answer (success, partial success, error), and
// waits until enough items have arrived. The serving itself is
// internal/otlprecv, the receiver `deltaq scope` runs.
package otlptest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/deltaq-otel/deltaq/internal/otlprecv"
)

// Reply is the answer to one export request (see otlprecv.Reply).
type Reply = otlprecv.Reply

// Options configure a Receiver; the zero value accepts and keeps everything.
type Options struct {
	// ServerOptions are passed to the gRPC server, e.g. grpc.MaxRecvMsgSize.
	ServerOptions []grpc.ServerOption
	// CountOnly keeps the counts and drops the data: for load tests.
	CountOnly bool
	// Traces, Metrics and Logs, when set, see every request of their
	// signal before it is kept and choose its answer. They are called one
	// at a time, under the receiver's lock (so they must not call its
	// methods). A request they fail (Reply.Err) is neither kept nor
	// counted; one they partly reject is kept and counted whole.
	Traces  func(ptrace.Traces) Reply
	Metrics func(pmetric.Metrics) Reply
	Logs    func(plog.Logs) Reply
}

// Counts are the requests and items a Receiver accepted.
type Counts struct {
	Requests   int
	Spans      int
	DataPoints int
	LogRecords int
}

// covers reports whether every count of c is at least that of want.
func (c Counts) covers(want Counts) bool {
	return c.Requests >= want.Requests && c.Spans >= want.Spans &&
		c.DataPoints >= want.DataPoints && c.LogRecords >= want.LogRecords
}

// Receiver is an OTLP/gRPC endpoint on loopback serving traces, metrics and
// logs.
type Receiver struct {
	srv  *otlprecv.Server
	opts Options

	mu      sync.Mutex
	changed chan struct{} // closed (and replaced) when a request is accepted
	counts  Counts
	traces  []ptrace.Traces
	metrics []pmetric.Metrics
	logs    []plog.Logs
}

// Start starts a Receiver on a free loopback port; it stops when the test
// ends.
func Start(t testing.TB, o Options) *Receiver {
	t.Helper()
	r := &Receiver{opts: o, changed: make(chan struct{})}
	srv, err := otlprecv.Listen("127.0.0.1:0", otlprecv.Handlers{
		Traces:  r.onTraces,
		Metrics: r.onMetrics,
		Logs:    r.onLogs,
	}, o.ServerOptions...)
	if err != nil {
		t.Fatalf("otlptest: %v", err)
	}
	r.srv = srv
	t.Cleanup(func() { srv.Stop(0) })
	return r
}

// Addr is the receiver's host:port.
func (r *Receiver) Addr() string { return r.srv.Addr() }

// accept answers one request with hook (nil: success) and, unless that
// fails it, counts it with count and keeps it with keep.
func accept[T any](r *Receiver, data T, hook func(T) Reply, count func(*Counts), keep func()) Reply {
	r.mu.Lock()
	defer r.mu.Unlock()
	var reply Reply
	if hook != nil {
		reply = hook(data)
	}
	if reply.Err != nil {
		return reply
	}
	r.counts.Requests++
	count(&r.counts)
	if !r.opts.CountOnly {
		keep()
	}
	close(r.changed)
	r.changed = make(chan struct{})
	return reply
}

func (r *Receiver) onTraces(td ptrace.Traces) Reply {
	return accept(r, td, r.opts.Traces, func(c *Counts) { c.Spans += td.SpanCount() }, func() {
		cp := ptrace.NewTraces()
		td.CopyTo(cp)
		r.traces = append(r.traces, cp)
	})
}

func (r *Receiver) onMetrics(md pmetric.Metrics) Reply {
	return accept(r, md, r.opts.Metrics, func(c *Counts) { c.DataPoints += md.DataPointCount() }, func() {
		cp := pmetric.NewMetrics()
		md.CopyTo(cp)
		r.metrics = append(r.metrics, cp)
	})
}

func (r *Receiver) onLogs(ld plog.Logs) Reply {
	return accept(r, ld, r.opts.Logs, func(c *Counts) { c.LogRecords += ld.LogRecordCount() }, func() {
		cp := plog.NewLogs()
		ld.CopyTo(cp)
		r.logs = append(r.logs, cp)
	})
}

// Counts returns what the receiver accepted so far.
func (r *Receiver) Counts() Counts {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.counts
}

// Traces returns the trace requests kept so far, oldest first. They are the
// receiver's copies: read them, do not change them.
func (r *Receiver) Traces() []ptrace.Traces {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]ptrace.Traces(nil), r.traces...)
}

// Metrics returns the metric requests kept so far, oldest first (see Traces).
func (r *Receiver) Metrics() []pmetric.Metrics {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]pmetric.Metrics(nil), r.metrics...)
}

// Logs returns the log requests kept so far, oldest first (see Traces).
func (r *Receiver) Logs() []plog.Logs {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]plog.Logs(nil), r.logs...)
}

// WaitFor waits until every count reaches that of want (leave the others 0)
// and returns the counts; it fails the test after timeout. The timeout only
// turns a hang into a failure: nothing here measures speed.
func (r *Receiver) WaitFor(t testing.TB, want Counts, timeout time.Duration) Counts {
	t.Helper()
	var got Counts
	r.Until(t, fmt.Sprintf("at least %+v", want), timeout, func() bool {
		got = r.Counts()
		return got.covers(want)
	})
	return got
}

// Until waits until cond holds, checking it at once and again after every
// request the receiver accepts, for what the counts cannot say (say, which
// metric names arrived); it fails the test after timeout, saying what was
// awaited. cond runs without the receiver's lock: it may call the
// receiver's methods.
func (r *Receiver) Until(t testing.TB, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		// Take the channel before cond: a request accepted while cond runs
		// closes it, and the wait below returns at once.
		r.mu.Lock()
		changed := r.changed
		r.mu.Unlock()
		if cond() {
			return
		}
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("otlptest: after %v received %+v, want %s", timeout, r.Counts(), what)
		}
	}
}

// Dial returns a plaintext gRPC client connection to addr (a Receiver's, or
// any endpoint under test), closed when the test ends.
func Dial(t testing.TB, addr string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("otlptest: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}
