// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

// Package scope is the ΔQ oscilloscope of the deltaq command (deltaq scope).
// It listens for the OTLP metrics and logs the deltaq connector and exporter
// send at the end of every window and redraws, per probe, the ΔQ plot the
// thesis's oscilloscope shows (§4.2: the observed and calculated CDFs, the
// mean of recent windows with its confidence band, and the QTA), with the
// quantiles, failure ratio, the window's own outcome counts beside the
// totals since the stream's start (outcomes.go) and QTA state, the Quality of
// Outcome scores (qoo.go), followed by the triggers that fired (§3.5). With Options.HTTP it also serves the same view
// to browsers (web.go), with a history of windows, snapshots and design-time
// controls; both views can run at once.
//
// Everything it keeps is bounded (Limits), and each bound counts what it
// cut: the terminal shows the counts in its header, the page in its stats.
package scope

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"google.golang.org/grpc"

	"github.com/deltaq-otel/deltaq/internal/contract"
	"github.com/deltaq-otel/deltaq/internal/otlprecv"
)

// Names of the deltaq output that the scope reads (docs/design.md, "Output"),
// taken from the contract so that the two cannot drift apart.
const (
	metricCDF          = contract.MetricCDF
	metricQuantile     = contract.MetricQuantile
	metricOutcomes     = contract.MetricOutcomes
	metricFailureRatio = contract.MetricFailureRatio
	metricQTAViolation = contract.MetricQTAViolation
	metricDivergence   = contract.MetricDivergence
	// The probe's QTA, exactly: its points and its failure bound.
	metricQTAPoint      = contract.MetricQTAPoint
	metricQTAMaxFailure = contract.MetricQTAMaxFailure
	// The Quality of Outcome score and its components, per series.
	metricQoOScore   = contract.MetricQoOScore
	metricQoOLatency = contract.MetricQoOLatency
	metricQoOLoss    = contract.MetricQoOLoss
	metricQoORate    = contract.MetricQoORate

	attrProbe    = contract.AttrProbe
	attrOutcome  = contract.AttrOutcome
	attrSeries   = contract.AttrSeries
	attrLE       = contract.AttrLE
	attrQ        = contract.AttrQ
	attrTrigger  = contract.AttrTrigger
	attrScenario = contract.AttrScenario

	eventTrigger  = contract.EventTrigger
	eventSnapshot = contract.EventSnapshot

	seriesObserved   = contract.SeriesObserved
	seriesCalculated = contract.SeriesCalculated
	seriesMean       = contract.SeriesMean
	seriesLower      = contract.SeriesLower
	seriesUpper      = contract.SeriesUpper
	seriesQTA        = contract.SeriesQTA
)

// seriesOrder is the order in which the scope lists the curves.
var seriesOrder = []string{seriesObserved, seriesCalculated, seriesMean, seriesLower, seriesUpper, seriesQTA}

// maxTriggers is how many trigger events the scope keeps and shows.
const maxTriggers = 8

// Options configure Serve.
type Options struct {
	// Listen is the address to accept OTLP/gRPC on.
	Listen string
	// Once prints one frame after the first metrics batch, without screen
	// control codes, and returns.
	Once bool
	// Timeout ends Serve after this long (0: no limit); with Once, Serve
	// fails if no metrics came by then.
	Timeout time.Duration
	// Frame is the size of the terminal scope's plots.
	Frame Frame
	// HTTP, when set, is the address of the browser view.
	HTTP string
	// Limits bound the state of both views.
	Limits Limits
	// TraceURL, when set, links the trace ids of the triggers to a
	// tracing UI in both views (--trace-url).
	TraceURL TraceURL
	// Screen, when set, gives the rows and columns of the terminal the
	// frames are drawn on, read before each frame: a frame is cut to it
	// (fitScreen). Zeros, or nil, draw the whole frame.
	Screen func() (rows, cols int)
}

// Validate reports the first option outside its range.
func (o Options) Validate() error {
	if o.Timeout < 0 {
		return fmt.Errorf("--timeout %v is negative", o.Timeout)
	}
	if err := o.Limits.Validate(); err != nil {
		return err
	}
	if err := o.TraceURL.Validate(); err != nil {
		return err
	}
	return o.Frame.Validate()
}

// Serve accepts OTLP/gRPC on o.Listen and draws frames to stdout until ctx
// ends, o.Timeout passes, or with o.Once the first frame is printed; with
// o.HTTP it also serves the browser view. It reports where it listens on
// stderr.
func Serve(ctx context.Context, o Options, stdout, stderr io.Writer) error {
	if o.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.Timeout)
		defer cancel()
	}
	sc := newLiveScope(o.Limits)
	sc.state.traceURL = o.TraceURL
	var web *scopeWeb
	if o.HTTP != "" {
		var err error
		if web, err = startScopeWeb(o.HTTP, o.Limits); err != nil {
			return fmt.Errorf("--http %s: %w", o.HTTP, err)
		}
		// Before any batch arrives: set once, read under its lock.
		web.traceURL = o.TraceURL
		// After srv.Stop (deferred below): no batch arrives once the
		// browsers are told to go.
		defer web.close()
		fmt.Fprintf(stderr, "deltaq scope: browser view on http://%s/\n", web.addr())
	}
	srv, err := otlprecv.Listen(o.Listen, otlprecv.Handlers{
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
	}, grpc.MaxRecvMsgSize(o.Limits.BatchBytes))
	if err != nil {
		return fmt.Errorf("--listen %s: %w", o.Listen, err)
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

func newLiveScope(l Limits) *liveScope {
	return &liveScope{state: newScopeState(l), updated: make(chan struct{}, 1)}
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

// loop draws a frame at once and redraws on updates, at most every
// redrawInterval, and every second when the frame changed without one (the
// terminal resized, the source silent: silentLine), until ctx ends; with
// --once it prints the first frame that has metrics and returns.
func (sc *liveScope) loop(ctx context.Context, o Options, stdout io.Writer, serveErr <-chan error) error {
	const redrawInterval = 200 * time.Millisecond
	var last time.Time
	var pending <-chan time.Time
	var shown string // the frame on the screen
	frame := func() string {
		rows, cols, size := 0, 0, o.Frame
		if o.Screen != nil {
			rows, cols = o.Screen()
			size = size.fitWidth(cols)
		}
		sc.mu.Lock()
		f := renderScope(sc.state, size)
		sc.mu.Unlock()
		return fitScreen(f, rows, cols)
	}
	draw := func(f string) error {
		last, shown = time.Now(), f
		// Home the cursor and clear the screen, then draw the frame.
		_, err := io.WriteString(stdout, "\x1b[H\x1b[2J"+f)
		return err
	}
	var check <-chan time.Time
	if !o.Once {
		// Before the first batch: what it waits for, not a blank screen.
		if err := draw(frame()); err != nil {
			return err
		}
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		check = tick.C
	}
	for {
		select {
		case <-check:
			if f := frame(); f != shown {
				if err := draw(f); err != nil {
					return err
				}
			}
		case <-ctx.Done():
			if o.Once && errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("no metrics within --timeout %v", o.Timeout)
			}
			return nil
		case err := <-serveErr:
			return fmt.Errorf("serve: %w", err)
		case <-sc.updated:
			if o.Once {
				sc.mu.Lock()
				ready := sc.state.metricBatches > 0
				frame := renderScope(sc.state, o.Frame)
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
			if err := draw(frame()); err != nil {
				return err
			}
		case <-pending:
			pending = nil
			if err := draw(frame()); err != nil {
				return err
			}
		}
	}
}
