// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package main

// The scope subcommand: a terminal ΔQ oscilloscope. It listens for the OTLP
// metrics and logs the deltaq exporter sends at the end of every window and
// redraws, per probe, the ΔQ plot the thesis's oscilloscope shows (§4.2: the
// observed and calculated CDFs, the mean of recent windows with its confidence
// band, and the QTA), with the quantiles, failure ratio, outcome counts and QTA
// state, followed by the triggers that fired (§3.5). With --http it also
// serves the same view to browsers (scope_http.go), with a history of windows,
// snapshots and design-time controls; both views can run at once.

import (
	"github.com/deltaq-otel/deltaq/internal/outcome"

	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"google.golang.org/grpc"

	"github.com/deltaq-otel/deltaq/internal/otlprecv"
)

func init() {
	register(command{
		name:    "scope",
		usage:   "scope [--listen ADDR] [--http ADDR [--windows K]] [--once] [--timeout D] [--width N] [--height N]",
		summary: "terminal ΔQ oscilloscope: draw the deltaq connector's metrics and triggers live",
		help: `Scope listens for OTLP/gRPC metrics and logs, the output of the deltaq connector
or exporter (an otlp_grpc exporter in the connector's metrics and logs pipelines,
or the exporter's endpoint, pointed at ADDR), and redraws after every window, for
each probe: its ΔQ plot (observed, calculated, the mean with its 95% band, and
the QTA against delay), quantiles, failure ratio, outcome counts and QTA state;
then the latest deltaq.trigger events. The QTA is shown at its own delays when
the connector sends it exactly (deltaq.qta.point, deltaq.qta.max_failure),
else as the sampled curve of deltaq.cdf. --once prints the first frame with
metrics, without screen control codes, and exits. Control characters in the
names and attributes received are shown as Go escapes (\x1b, \u202e).

--http ADDR also serves the oscilloscope to browsers at http://ADDR/: one page,
every asset built in, pushed live with Server-Sent Events after every batch. It
keeps the last K windows of every probe (--windows) for a time slider, lists
the triggers as they fire and opens each one's snapshot, and offers design-time
controls that run in the page: the displayed dMax and bins, a QTA checked
against the curves (pre-filled with the probe's QTA), and an intervention
a·X + b drawn next to the observed ΔQ.
A slow or closed browser never holds up the scope.`,
		run: runScope,
	})
}

// Names of the deltaq output that the scope reads (docs/design.md, "Output"),
// taken from the contract so that the two cannot drift apart.
const (
	metricCDF          = outcome.MetricCDF
	metricQuantile     = outcome.MetricQuantile
	metricOutcomes     = outcome.MetricOutcomes
	metricFailureRatio = outcome.MetricFailureRatio
	metricQTAViolation = outcome.MetricQTAViolation
	metricDivergence   = outcome.MetricDivergence
	// The probe's QTA, exactly: its points and its failure bound.
	metricQTAPoint      = outcome.MetricQTAPoint
	metricQTAMaxFailure = outcome.MetricQTAMaxFailure

	attrProbe    = outcome.AttrProbe
	attrOutcome  = outcome.AttrOutcome
	attrSeries   = outcome.AttrSeries
	attrLE       = outcome.AttrLE
	attrQ        = outcome.AttrQ
	attrTrigger  = outcome.AttrTrigger
	attrScenario = outcome.AttrScenario

	eventTrigger  = outcome.EventTrigger
	eventSnapshot = outcome.EventSnapshot

	seriesObserved   = outcome.SeriesObserved
	seriesCalculated = outcome.SeriesCalculated
	seriesMean       = outcome.SeriesMean
	seriesLower      = outcome.SeriesLower
	seriesUpper      = outcome.SeriesUpper
	seriesQTA        = outcome.SeriesQTA
)

// seriesOrder is the order in which the scope lists the curves.
var seriesOrder = []string{seriesObserved, seriesCalculated, seriesMean, seriesLower, seriesUpper, seriesQTA}

// maxTriggers is how many trigger events the scope keeps and shows.
const maxTriggers = 8

// scopeOptions are the subcommand's flags.
type scopeOptions struct {
	listen  string
	once    bool
	timeout time.Duration
	frame   frameOptions
	// http, when set, is the address of the browser view; windows is how
	// many windows per probe it keeps.
	http    string
	windows int
}

// parseScopeArgs parses the scope's command line. When ok is false the
// command ends with status.
func parseScopeArgs(args []string, stderr io.Writer) (o scopeOptions, status int, ok bool) {
	c := commands["scope"]
	fs := newFlags(&c, stderr)
	fs.StringVar(&o.listen, "listen", "127.0.0.1:4327", "`address` to accept OTLP/gRPC on")
	fs.BoolVar(&o.once, "once", false, "print one frame after the first metrics batch and exit")
	fs.DurationVar(&o.timeout, "timeout", 0, "end after this `duration`; with --once, fail if no metrics came (0: no limit)")
	fs.IntVar(&o.frame.width, "width", 64, "plot width in `columns`")
	fs.IntVar(&o.frame.height, "height", 17, "plot height in `rows` (17 puts a row on every quarter)")
	fs.StringVar(&o.http, "http", "", "also serve the browser view on this `address` (e.g. 127.0.0.1:8327)")
	fs.IntVar(&o.windows, "windows", defaultWebWindows, "windows per probe the browser view keeps for its time slider (`K`)")
	rest, status, ok := parseArgs(fs, args)
	if !ok {
		return o, status, false
	}
	var err error
	switch {
	case len(rest) > 0:
		err = fmt.Errorf("unexpected argument %q", rest[0])
	case o.timeout < 0:
		err = fmt.Errorf("--timeout %v is negative", o.timeout)
	case o.windows < 1 || o.windows > maxWebWindows:
		err = fmt.Errorf("--windows %d outside [1, %d]", o.windows, maxWebWindows)
	default:
		err = o.frame.validate()
	}
	if err != nil {
		fmt.Fprintf(stderr, "deltaq scope: %v\n", err)
		return o, exitUsage, false
	}
	return o, exitOK, true
}

// runScope is the scope command: it serves until interrupted (or --timeout, or
// with --once the first frame).
func runScope(args []string, stdout, stderr io.Writer) int {
	o, status, ok := parseScopeArgs(args, stderr)
	if !ok {
		return status
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := serveScope(ctx, o, stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "deltaq scope: %v\n", err)
		return exitFail
	}
	return exitOK
}

// serveScope accepts OTLP/gRPC on o.listen and draws frames to stdout until ctx
// ends, o.timeout passes, or with o.once the first frame is printed.
func serveScope(ctx context.Context, o scopeOptions, stdout, stderr io.Writer) error {
	if o.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.timeout)
		defer cancel()
	}
	sc := newLiveScope()
	var web *scopeWeb
	if o.http != "" {
		var err error
		if web, err = startScopeWeb(o.http, o.windows); err != nil {
			return err
		}
		// After srv.Stop (deferred below): no batch arrives once the
		// browsers are told to go.
		defer web.close()
		fmt.Fprintf(stderr, "deltaq scope: browser view on http://%s/\n", web.addr())
	}
	srv, err := otlprecv.Listen(o.listen, otlprecv.Handlers{
		Metrics: func(md pmetric.Metrics) otlprecv.Reply {
			sc.update(func(s *scopeState) { s.addMetrics(md) })
			if web != nil {
				web.addMetrics(md)
			}
			return otlprecv.Reply{}
		},
		Logs: func(ld plog.Logs) otlprecv.Reply {
			sc.update(func(s *scopeState) { s.addLogs(ld) })
			if web != nil {
				web.addLogs(ld)
			}
			return otlprecv.Reply{}
		},
	}, grpc.MaxRecvMsgSize(64<<20))
	if err != nil {
		return err
	}
	// Let the requests in flight answer (the exporter that sent the batch
	// --once printed gets its response), for at most 2 s.
	defer srv.Stop(2 * time.Second)
	fmt.Fprintf(stderr, "deltaq scope: listening for OTLP/gRPC metrics and logs on %s\n", srv.Addr())
	return sc.loop(ctx, o, stdout, srv.Done())
}

// liveScope couples the collected state with the notifications that redraw it.
type liveScope struct {
	mu      sync.Mutex
	state   *scopeState
	updated chan struct{} // receives a value (coalesced) after every ingested batch
}

func newLiveScope() *liveScope {
	return &liveScope{state: newScopeState(), updated: make(chan struct{}, 1)}
}

// update applies add to the state and wakes the loop.
func (sc *liveScope) update(add func(*scopeState)) {
	sc.mu.Lock()
	add(sc.state)
	sc.mu.Unlock()
	select {
	case sc.updated <- struct{}{}:
	default:
	}
}

// loop redraws on updates, at most every redrawInterval, until ctx ends; with
// --once it prints the first frame that has metrics and returns.
func (sc *liveScope) loop(ctx context.Context, o scopeOptions, stdout io.Writer, serveErr <-chan error) error {
	const redrawInterval = 200 * time.Millisecond
	var last time.Time
	var pending <-chan time.Time
	draw := func() error {
		sc.mu.Lock()
		frame := renderScope(sc.state, o.frame)
		sc.mu.Unlock()
		last = time.Now()
		// Home the cursor and clear the screen, then draw the frame.
		_, err := io.WriteString(stdout, "\x1b[H\x1b[2J"+frame)
		return err
	}
	for {
		select {
		case <-ctx.Done():
			if o.once && errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("no metrics within --timeout %v", o.timeout)
			}
			return nil
		case err := <-serveErr:
			return fmt.Errorf("serve: %w", err)
		case <-sc.updated:
			if o.once {
				sc.mu.Lock()
				ready := sc.state.metricBatches > 0
				frame := renderScope(sc.state, o.frame)
				sc.mu.Unlock()
				if ready {
					_, err := io.WriteString(stdout, frame)
					return err
				}
				continue
			}
			if wait := redrawInterval - time.Since(last); wait > 0 {
				if pending == nil {
					pending = time.After(wait)
				}
				continue
			}
			if err := draw(); err != nil {
				return err
			}
		case <-pending:
			pending = nil
			if err := draw(); err != nil {
				return err
			}
		}
	}
}
