// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

// Command dqload measures how many spans per second an OpenTelemetry
// Collector accepts over OTLP/gRPC.
//
// It opens -conns connections and keeps -inflight export requests of -batch
// minimal spans outstanding on each, as fast as the collector answers (or at
// -rate spans per second). Requests are built once and restamped in place
// before each send (fresh trace and span ids, timestamps ending now), so the
// generator spends its CPU on the wire, not on building spans. It counts a
// span as accepted only when the collector's answer acknowledges it: an
// export error or a partial-success rejection counts the spans as failed.
// Nothing is dropped silently, so the figure it prints is the collector's
// throughput, not the generator's.
//
// With -start-events each traces request is preceded, on the same
// connection, by a logs request of its spans' start events (the span's ids
// and start, deltaq.probe = its name), for a collector that counts
// real-time timeouts: in the batch form (-start-events, or
// -start-events=batch), one record per span name with an entry per span
// (deltaq.span.starts), as an SDK that drains its starts every few
// milliseconds sends them; in the single form (-start-events=single), one
// record per span (deltaq.span.start). They are built once and restamped in
// place too, and a start event the collector refuses is a failure as a span
// is (a refused batch record counts its spans). With -start-drain D only
// the spans still running at the first drain after they start are
// announced, as by an SDK that drains its starts every D and leaves out
// the start of a span that ends before then (sdk/deltaqstart, 10 ms by
// default): about 43 % of spans of the default mean elapsed time, 5 ms,
// at D = 10 ms; the collector remembers the others as ended with no
// instance.
//
// With -collector-pid it also samples the collector's resident memory and CPU
// time from /proc, to show whether memory stays flat under a long run.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/mem"

	"github.com/deltaq-otel/deltaq/internal/gencmd"
)

func main() { gencmd.Main("dqload", run) }

type options struct {
	gencmd.Client
	conns        int
	inflight     int
	tmpl         templateConfig
	startEvents  startsFlag
	startDrain   time.Duration
	duration     time.Duration
	warmup       time.Duration
	rate         float64
	report       time.Duration
	collectorPID int
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := gencmd.NewFlagSet("dqload", stderr, &o.Client, 10*time.Second)
	fs.IntVar(&o.conns, "conns", 4, "connections")
	fs.IntVar(&o.inflight, "inflight", 2, "outstanding requests per connection")
	fs.IntVar(&o.tmpl.Spans, "batch", 1000, "spans per request")
	names := fs.String("names", "worker_1,worker_2,job", "span names, comma-separated, used in turn")
	fs.DurationVar(&o.tmpl.MeanElapsed, "elapsed", 5*time.Millisecond, "mean span duration (exponential)")
	fs.Float64Var(&o.tmpl.FailureRatio, "failure-ratio", 0, "share of spans with status ERROR")
	fs.BoolVar(&o.tmpl.ProbeAttribute, "probe-attribute", false, "also set deltaq.probe = span name on every span")
	fs.Var(&o.startEvents, "start-events", "before each traces request, send its spans' start events in a logs request: batch (the flag alone: deltaq.span.starts, one record per span name) or single (deltaq.span.start, one record per span)")
	fs.DurationVar(&o.startDrain, "start-drain", 0, "with -start-events, announce only the spans still running at the first drain after they start, an SDK's drains this far apart (sdk/deltaqstart: 10ms; 0: every span)")
	fs.DurationVar(&o.duration, "duration", 30*time.Second, "measured time, after the warm-up")
	fs.DurationVar(&o.warmup, "warmup", 5*time.Second, "load sent before the measurement starts")
	fs.Float64Var(&o.rate, "rate", 0, "cap in spans per second (0: as fast as the collector answers)")
	fs.DurationVar(&o.report, "report", time.Second, "print the rate this often (0: only at the end)")
	fs.IntVar(&o.collectorPID, "collector-pid", 0, "sample this process's memory and CPU from /proc")
	if err := gencmd.Parse(fs, args); err != nil {
		return o, err
	}
	for n := range strings.SplitSeq(*names, ",") {
		if n = strings.TrimSpace(n); n != "" {
			o.tmpl.Names = append(o.tmpl.Names, n)
		}
	}
	switch {
	case o.conns < 1 || o.inflight < 1 || o.conns*o.inflight > 1<<16-1:
		return o, errors.New("-conns and -inflight must be at least 1, their product below 65536")
	case o.tmpl.Spans < 1 || o.tmpl.Spans > maxSpans:
		return o, fmt.Errorf("-batch must be in [1, %d]", maxSpans)
	case len(o.tmpl.Names) == 0:
		return o, errors.New("-names must name at least one span")
	case o.duration <= 0 || o.warmup < 0 || o.report < 0 || o.Timeout <= 0:
		return o, errors.New("-duration and -timeout must be positive, -warmup and -report not negative")
	case o.startDrain < 0:
		return o, fmt.Errorf("-start-drain must not be negative, not %v", o.startDrain)
	case o.startDrain > 0 && o.startEvents == "":
		return o, errors.New("-start-drain needs -start-events")
	case !(o.rate >= 0) || !(o.tmpl.FailureRatio >= 0 && o.tmpl.FailureRatio <= 1):
		return o, errors.New("-rate must be ≥ 0 and -failure-ratio in [0, 1]")
	}
	return o, nil
}

// startsFlag is -start-events: "" (none), startsSingle or startsBatch; the
// flag alone is startsBatch.
type startsFlag string

func (f *startsFlag) String() string { return string(*f) }

// IsBoolFlag lets -start-events stand alone (flag.boolFlag).
func (f *startsFlag) IsBoolFlag() bool { return true }

func (f *startsFlag) Set(v string) error {
	switch v {
	case "true", startsBatch:
		*f = startsBatch
	case startsSingle:
		*f = startsSingle
	case "false", "none":
		*f = ""
	default:
		return fmt.Errorf("must be %s, %s or none, not %q", startsBatch, startsSingle, v)
	}
	return nil
}

// rawCodec passes pre-marshalled protobuf through gRPC unchanged. It is named
// "proto", so the server decodes with its usual codec.
type rawCodec struct{}

// raw is a message already in wire format.
type raw struct{ data []byte }

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	return mem.BufferSlice{mem.SliceBuffer(v.(*raw).data)}, nil
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	v.(*raw).data = data.Materialize()
	return nil
}

func (rawCodec) Name() string { return "proto" }

// The OTLP/gRPC export methods dqload calls.
const (
	exportTraces = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
	exportLogs   = "/opentelemetry.proto.collector.logs.v1.LogsService/Export"
)

// counters are shared by all streams.
type counters struct {
	acked, failed, requests atomic.Int64
	// startsAcked and startsFailed count the start events (-start-events).
	startsAcked, startsFailed atomic.Int64
	latencyNs                 atomic.Int64
	mu                        sync.Mutex
	lastErr                   string
}

func (c *counters) fail(err string) {
	c.mu.Lock()
	c.lastErr = err
	c.mu.Unlock()
}

// pacer spaces requests to a rate; nil means unpaced.
type pacer struct {
	mu    sync.Mutex
	next  time.Time
	every time.Duration
}

func (p *pacer) wait(ctx context.Context) {
	if p == nil {
		return
	}
	p.mu.Lock()
	now := time.Now()
	if p.next.Before(now) {
		p.next = now
	}
	at := p.next
	p.next = p.next.Add(p.every)
	p.mu.Unlock()
	select {
	case <-time.After(time.Until(at)):
	case <-ctx.Done():
	}
}

// request is one kind of export request a stream sends, in its own buffer
// (a copy of its template, restamped before each send).
type request struct {
	method    string
	template  []byte
	req, resp raw
	// rejected reads the items a non-empty answer rejected, and its message.
	rejected func(resp []byte) (int64, string, error)
}

func newRequest(method string, template []byte, rejected func([]byte) (int64, string, error)) *request {
	return &request{method: method, template: template, req: raw{data: append([]byte(nil), template...)}, rejected: rejected}
}

// send exports the request of n items and returns how many failed: all of
// them when the export fails or its answer does not decode, those a
// partial success rejects otherwise; and the error, "" if none.
func (r *request) send(ctx context.Context, conn *grpc.ClientConn, timeout time.Duration, n int64) (failed int64, msg string) {
	rctx, cancel := context.WithTimeout(ctx, timeout)
	err := conn.Invoke(rctx, r.method, &r.req, &r.resp, grpc.ForceCodecV2(rawCodec{}), grpc.WaitForReady(true))
	cancel()
	if err != nil {
		// The transport may still hold the failed request's buffer.
		r.req.data = append([]byte(nil), r.template...)
		return n, err.Error()
	}
	if len(r.resp.data) == 0 {
		return 0, "" // a full success has no field: nothing to decode
	}
	rejected, m, err := r.rejected(r.resp.data)
	switch {
	case err != nil:
		return n, "undecodable response: " + err.Error()
	case rejected > 0:
		return rejected, "partial success: " + m
	}
	return 0, ""
}

func rejectedSpans(b []byte) (int64, string, error) {
	r := ptraceotlp.NewExportResponse()
	err := r.UnmarshalProto(b)
	return r.PartialSuccess().RejectedSpans(), r.PartialSuccess().ErrorMessage(), err
}

func rejectedStarts(b []byte) (int64, string, error) {
	r := plogotlp.NewExportResponse()
	err := r.UnmarshalProto(b)
	return r.PartialSuccess().RejectedLogRecords(), r.PartialSuccess().ErrorMessage(), err
}

// stream sends requests on conn until ctx ends, each traces request after
// the logs request of its start events when st is not nil. A request's
// latency is that of both.
func stream(ctx context.Context, conn *grpc.ClientConn, t *spanTemplate, st *startTemplate, id uint32, timeout time.Duration, p *pacer, c *counters) {
	spans := newRequest(exportTraces, t.Data, rejectedSpans)
	var starts *request
	if st != nil {
		starts = newRequest(exportLogs, st.Data, rejectedStarts)
	}
	n := int64(t.Spans)
	for seq := uint64(1); ctx.Err() == nil; seq++ {
		p.wait(ctx)
		t.restamp(spans.req.data, id, seq, time.Now())
		began := time.Now()
		if starts != nil {
			st.restamp(starts.req.data, spans.req.data)
			failed, msg := starts.send(ctx, conn, timeout, int64(st.Records))
			if ctx.Err() != nil {
				return // the run ended during this request: it is not counted
			}
			announced := int64(len(st.span))
			failed = min(failed, int64(st.Records)) * announced / int64(st.Records) // the spans of the records refused
			if msg != "" {
				c.fail("start events: " + msg)
			}
			c.startsFailed.Add(failed)
			c.startsAcked.Add(announced - failed)
		}
		failed, msg := spans.send(ctx, conn, timeout, n)
		if ctx.Err() != nil {
			return
		}
		c.requests.Add(1)
		c.latencyNs.Add(int64(time.Since(began)))
		if msg != "" {
			c.fail(msg)
		}
		c.failed.Add(failed)
		c.acked.Add(n - failed)
	}
}

// run sends load as the command line says, prints the acknowledged rate
// every -report and at the end, and fails if any span failed or none was
// acknowledged.
func run(args []string, out io.Writer) error {
	o, err := parseFlags(args, os.Stderr)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	l := &load{o: o, proc: newProcSampler(o.collectorPID)}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	started := l.take()
	closeConns, err := l.start(runCtx)
	defer closeConns()
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "dqload: %d connections × %d in flight × %d spans per request → %s; warm-up %v, measuring %v\n",
		o.conns, o.inflight, o.tmpl.Spans, o.Endpoint, o.warmup, o.duration)

	select {
	case <-time.After(o.warmup):
	case <-ctx.Done():
	}
	first := l.take()
	if o.warmup == 0 {
		// No warm-up: the measurement starts with the first request, not
		// when this goroutine next runs (requests may complete before).
		first = started
	}
	l.proc.sample()
	l.measure(ctx, out, first)
	// Stop the streams before the last snapshot, so that every request the
	// collector acknowledged is counted; only requests cut short by the
	// cancellation (at most one per stream) go uncounted.
	cancel()
	l.wg.Wait()
	l.proc.sample()
	return l.summary(out, first, l.take())
}

// load is one run: the streams' counters and the collector's process.
type load struct {
	o    options
	c    counters
	wg   sync.WaitGroup
	proc *procSampler
}

// snap is the counters at one instant.
type snap struct {
	at                        time.Time
	acked, failed, requests   int64
	startsAcked, startsFailed int64
	latency                   int64
	cpu                       time.Duration
}

func (l *load) take() snap {
	c := &l.c
	return snap{at: time.Now(), acked: c.acked.Load(), failed: c.failed.Load(), requests: c.requests.Load(),
		startsAcked: c.startsAcked.Load(), startsFailed: c.startsFailed.Load(), latency: c.latencyNs.Load(), cpu: l.proc.cpu()}
}

// start opens the connections and starts -inflight streams on each; the
// returned function closes the connections opened, also after an error.
func (l *load) start(ctx context.Context) (closeConns func(), err error) {
	o := l.o
	var p *pacer
	if o.rate > 0 {
		p = &pacer{every: time.Duration(float64(o.tmpl.Spans) / o.rate * float64(time.Second))}
	}
	var conns []*grpc.ClientConn
	closeConns = func() {
		for _, c := range conns {
			c.Close()
		}
	}
	for i := range o.conns {
		conn, err := o.Dial()
		if err != nil {
			return closeConns, err
		}
		conns = append(conns, conn)
		for j := range o.inflight {
			id := uint32(i*o.inflight + j + 1)
			rng := rand.New(rand.NewPCG(uint64(id), uint64(time.Now().UnixNano())))
			t, err := newTemplate(o.tmpl, rng)
			if err != nil {
				return closeConns, err
			}
			var st *startTemplate
			if o.startEvents != "" {
				if st, err = newStartTemplate(t, string(o.startEvents), o.startDrain, rng); err != nil {
					return closeConns, err
				}
			}
			l.wg.Go(func() { stream(ctx, conn, t, st, id, o.Timeout, p, &l.c) })
		}
	}
	return closeConns, nil
}

// measure prints the rate every -report until -duration has passed since
// first or ctx ends.
func (l *load) measure(ctx context.Context, out io.Writer, first snap) {
	tick, stopTick := gencmd.Ticker(l.o.report)
	defer stopTick()
	end := time.After(l.o.duration)
	prev := first
	for {
		select {
		case <-tick:
			l.proc.sample()
			cur := l.take()
			fmt.Fprintf(out, "%7.1fs %s\n", cur.at.Sub(first.at).Seconds(), l.line(prev, cur))
			prev = cur
		case <-end:
			return
		case <-ctx.Done():
			return
		}
	}
}

// line describes the interval from a to b.
func (l *load) line(a, b snap) string {
	dt := b.at.Sub(a.at).Seconds()
	s := fmt.Sprintf("%9.0f spans/s acked  failed %d", float64(b.acked-a.acked)/dt, b.failed-a.failed)
	if l.o.startEvents != "" {
		s += fmt.Sprintf("  start events failed %d", b.startsFailed-a.startsFailed)
	}
	if n := b.requests - a.requests; n > 0 {
		s += fmt.Sprintf("  mean request %.2f ms", float64(b.latency-a.latency)/float64(n)/1e6)
	}
	if l.proc.ok() {
		s += fmt.Sprintf("  collector rss %d MiB cpu %.2f cores", l.proc.last>>20, (b.cpu-a.cpu).Seconds()/dt)
	}
	return s
}

// summary prints the totals of the measurement from first to last and
// fails if a span or a start event failed or no span was acknowledged.
func (l *load) summary(out io.Writer, first, last snap) error {
	fmt.Fprintf(out, "total: %d spans acked, %d failed in %.1fs: %s\n",
		last.acked-first.acked, last.failed-first.failed, last.at.Sub(first.at).Seconds(), l.line(first, last))
	if l.o.startEvents != "" {
		fmt.Fprintf(out, "start events: %d acked, %d failed\n", last.startsAcked-first.startsAcked, last.startsFailed-first.startsFailed)
	}
	if l.proc.ok() {
		fmt.Fprintf(out, "collector rss: first %d MiB, last %d MiB, max %d MiB\n", l.proc.first>>20, l.proc.last>>20, l.proc.max>>20)
	}
	var failures []string
	if f := l.c.failed.Load(); f > 0 {
		failures = append(failures, fmt.Sprintf("%d spans failed", f))
	}
	if f := l.c.startsFailed.Load(); f > 0 {
		failures = append(failures, fmt.Sprintf("%d start events failed", f))
	}
	if len(failures) > 0 {
		l.c.mu.Lock()
		defer l.c.mu.Unlock()
		return fmt.Errorf("%s (last error: %s)", strings.Join(failures, ", "), l.c.lastErr)
	}
	if last.acked == first.acked {
		return errors.New("no span was acknowledged during the measurement")
	}
	return nil
}
