// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package workload

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"
)

// Counts is what the sender did with the items handed to it. Sent counts the
// items the collector acknowledged; Failed those an export error or a partial
// success rejected; Dropped those that never left, because the send queue was
// full or because Close's time ran out before their turn. Every item handed
// over lands in exactly one of the three.
type Counts struct {
	SentSpans, FailedSpans, DroppedSpans    int64
	SentStarts, FailedStarts, DroppedStarts int64
	LastError                               string
}

// Sender exports batches over OTLP/gRPC from its own goroutine, so that a slow
// collector delays the export, never the simulation. Within a batch the start
// events go first, so that no start event trails the span it announces.
type Sender struct {
	traces  ptraceotlp.GRPCClient
	logs    plogotlp.GRPCClient
	timeout time.Duration
	queue   chan Batch
	done    sync.WaitGroup
	// ctx is every export's parent; Close cancels it when its time is up, so
	// that an export waiting for a collector that never answers ends at once.
	ctx    context.Context
	cancel context.CancelFunc

	sentSpans, failedSpans, droppedSpans    atomic.Int64
	sentStarts, failedStarts, droppedStarts atomic.Int64
	mu                                      sync.Mutex
	lastErr                                 string
}

// NewSender returns a sender over conn holding up to queueLen batches, each
// export bounded by timeout. It starts its goroutine; Close stops it.
func NewSender(conn *grpc.ClientConn, timeout time.Duration, queueLen int) *Sender {
	ctx, cancel := context.WithCancel(context.Background())
	s := &Sender{
		traces:  ptraceotlp.NewGRPCClient(conn),
		logs:    plogotlp.NewGRPCClient(conn),
		timeout: timeout,
		queue:   make(chan Batch, queueLen),
		ctx:     ctx,
		cancel:  cancel,
	}
	s.done.Add(1)
	go s.run()
	return s
}

// Enqueue hands b over without blocking; when the queue is full b is dropped
// and counted.
func (s *Sender) Enqueue(b Batch) {
	if b.Spans == 0 && b.Starts == 0 {
		return
	}
	select {
	case s.queue <- b:
	default:
		s.droppedSpans.Add(int64(b.Spans))
		s.droppedStarts.Add(int64(b.Starts))
	}
}

// Close sends what is queued and returns when done, or after within at the
// latest: then the export in flight is cancelled (and counted as failed) and
// the batches still queued are counted as dropped. It reports whether
// everything queued had its turn. Every export waits for the connection to
// be ready (up to its own timeout), so without the bound a collector that
// is gone would hold the close for the timeout of every queued batch.
func (s *Sender) Close(within time.Duration) bool {
	close(s.queue)
	finished := make(chan struct{})
	go func() {
		s.done.Wait()
		close(finished)
	}()
	t := time.NewTimer(within)
	defer t.Stop()
	select {
	case <-finished:
		s.cancel()
		return true
	case <-t.C:
		s.cancel()
		<-finished
		return false
	}
}

// Counts returns the counts so far.
func (s *Sender) Counts() Counts {
	s.mu.Lock()
	last := s.lastErr
	s.mu.Unlock()
	return Counts{
		SentSpans: s.sentSpans.Load(), FailedSpans: s.failedSpans.Load(), DroppedSpans: s.droppedSpans.Load(),
		SentStarts: s.sentStarts.Load(), FailedStarts: s.failedStarts.Load(), DroppedStarts: s.droppedStarts.Load(),
		LastError: last,
	}
}

func (s *Sender) run() {
	defer s.done.Done()
	for b := range s.queue {
		if s.ctx.Err() != nil {
			// Close's time is up: what is left never leaves.
			s.droppedSpans.Add(int64(b.Spans))
			s.droppedStarts.Add(int64(b.Starts))
			continue
		}
		if b.Starts > 0 {
			s.exportLogs(b)
		}
		if b.Spans > 0 {
			s.exportTraces(b)
		}
	}
}

func (s *Sender) fail(err error) {
	s.mu.Lock()
	s.lastErr = err.Error()
	s.mu.Unlock()
}

func (s *Sender) exportLogs(b Batch) {
	ctx, cancel := context.WithTimeout(s.ctx, s.timeout)
	defer cancel()
	resp, err := s.logs.Export(ctx, plogotlp.NewExportRequestFromLogs(b.Logs), grpc.WaitForReady(true))
	s.settle(b.Starts, err, func() (int64, string) {
		rejected := resp.PartialSuccess().RejectedLogRecords()
		if rejected > 0 {
			// The instances of the records refused (all of a batch record's).
			records := int64(max(b.StartRecords, 1))
			rejected = min(rejected, records) * int64(b.Starts) / records
		}
		return rejected, resp.PartialSuccess().ErrorMessage()
	}, &s.sentStarts, &s.failedStarts)
}

func (s *Sender) exportTraces(b Batch) {
	ctx, cancel := context.WithTimeout(s.ctx, s.timeout)
	defer cancel()
	resp, err := s.traces.Export(ctx, ptraceotlp.NewExportRequestFromTraces(b.Traces), grpc.WaitForReady(true))
	s.settle(b.Spans, err, func() (int64, string) {
		return resp.PartialSuccess().RejectedSpans(), resp.PartialSuccess().ErrorMessage()
	}, &s.sentSpans, &s.failedSpans)
}

// settle counts the n items of one export request: all failed when the
// request failed with err, else those its partial success rejected (what
// rejected reads, the count and the message) failed and the rest sent.
func (s *Sender) settle(n int, err error, rejected func() (int64, string), sent, failed *atomic.Int64) {
	if err != nil {
		failed.Add(int64(n))
		s.fail(err)
		return
	}
	r, msg := rejected()
	if r > 0 {
		s.fail(errPartial(msg))
	}
	failed.Add(r)
	sent.Add(int64(n) - r)
}

// errPartial is a partial-success message from the collector.
type errPartial string

func (e errPartial) Error() string { return "partial success: " + string(e) }
