// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package main

// The scope subcommand: the ΔQ oscilloscope of internal/scope, in the
// terminal and, with --http, in browsers.

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/deltaq-otel/deltaq/internal/scope"
)

// scopeCommand is the scope command's entry of the command table.
func scopeCommand() command {
	return command{
		name:    "scope",
		usage:   "scope [--listen ADDR] [--http ADDR [--windows K]] [--trace-url URL] [--once] [--timeout D] [--width N] [--height N] [--max-… N]",
		summary: "terminal ΔQ oscilloscope: draw the deltaq connector's metrics and triggers live",
		help: `Scope listens for OTLP/gRPC metrics and logs, the output of the deltaq connector
or exporter (an otlp_grpc exporter in the connector's metrics and logs pipelines,
or the exporter's endpoint, pointed at ADDR), and redraws after every window, for
each probe: its ΔQ plot (observed, calculated, the mean with its 95% band, and
the QTA against delay), quantiles, failure ratio and QTA state, the outcome
counts of the window ("in window": the rise of the connector's cumulative
counts since the window before it; "–" in the first window the scope
receives, and in one that follows windows it did not receive) and, labelled "total since", the cumulative counts since the
connector's stream started, and for a probe with a qoo requirement the
Quality of Outcome of its observed and calculated ΔQ (the score, the
components that set it, or "withheld" for a window that brought the ΔQ of a
series scored before without a score: too few instances); then the latest
deltaq.trigger events. When no metrics came for three of the connector's
intervals (at least 5 s), the terminal's header says so, and on the page
the pill that says "live". A window's end and a trigger's time are in UTC,
by the time of day when they are of today, else with their date (the page
reads today from the browser's clock). The QTA is shown at its own delays when
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
a·X + b drawn next to the observed ΔQ. A value typed wrong in one of them is
marked, and a message next to it says what is wrong and what is expected.
A slow or closed browser never holds up the scope. The page answers only
requests addressed to ADDR, localhost or a loopback address (the Host header),
so that no web site can read it through DNS rebinding.

--trace-url URL links every trace a trigger names — its record's own trace
context, the window's worst instance, and deltaq.trace_ids.slowest,
.timeout and .failure — to a tracing UI: URL is the address of one trace
with {trace_id} where the id goes, such as
http://jaeger:16686/trace/{trace_id} (Jaeger), or Grafana Explore's address
of a Tempo or Jaeger query with {trace_id} as the query. The page shows the
ids as links; the terminal prints the addresses under each trigger.

Everything the scope keeps is bounded, and the count of what each bound cut
is shown (the terminal's header, the page's stats): probes (--max-probes; a
probe silent for --probe-ttl gives its slot to a new one; probes_refused
counts the data points of the probes refused, in both views), curves per
probe (--max-series), points per curve (--max-points), name lengths (--max-name),
trigger attributes (--max-attr), windows per probe (--windows) and in all
(--max-state-points), browsers (--max-clients; a stream whose page has not
said it is alive for --client-idle is closed, and one that stops reading
for 10 s), the size of each event sent to a browser (--max-frame) and of
each OTLP message (--max-batch). A data point or trigger record stamped
more than --max-ahead ahead of this machine's clock is counted as malformed
and not shown: a probe's newest timestamp is its window's end, and one from
the future would stand for every window until then; the triggers are kept
newest last, and one from the future would stay listed for ever.`,
		run: runScope,
	}
}

// parseScopeArgs parses the scope's command line. When ok is false the
// command ends with status.
func parseScopeArgs(args []string, stderr io.Writer) (o scope.Options, status int, ok bool) {
	fs := newFlags(scopeCommand(), stderr)
	o.Frame, o.Limits = scope.DefaultFrame, scope.DefaultLimits()
	fs.StringVar(&o.Listen, "listen", "127.0.0.1:4327", "`address` to accept OTLP/gRPC on")
	fs.BoolVar(&o.Once, "once", false, "print one frame after the first metrics batch and exit")
	fs.DurationVar(&o.Timeout, "timeout", 0, "end after this `duration`; with --once, fail if no metrics came (0: no limit)")
	fs.IntVar(&o.Frame.Width, "width", o.Frame.Width, "plot width in `columns` (narrowed to fit the terminal)")
	fs.IntVar(&o.Frame.Height, "height", o.Frame.Height, "plot height in `rows` (17 puts a row on every quarter)")
	fs.StringVar(&o.HTTP, "http", "", "also serve the browser view on this `address` (e.g. 127.0.0.1:8327)")
	fs.StringVar((*string)(&o.TraceURL), "trace-url", "", "link trace ids to this tracing UI `address`, {trace_id} where the id goes (e.g. http://jaeger:16686/trace/{trace_id})")
	o.Limits.RegisterFlags(fs.FlagSet)
	rest, status, ok := parseArgs(fs, args)
	if !ok {
		return o, status, false
	}
	err := o.Validate()
	if err == nil && o.HTTP == "" {
		// The browser view's bounds mean nothing without it: said, not
		// ignored.
		for _, name := range scope.BrowserFlags() {
			if fs.given(name) {
				err = fmt.Errorf("--%s bounds the browser view: give --http too", name)
				break
			}
		}
	}
	if len(rest) > 0 {
		err = fmt.Errorf("unexpected argument %q", rest[0])
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
	if f, ok := stdout.(*os.File); ok {
		o.Screen = func() (int, int) { return terminalSize(f) }
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := scope.Serve(ctx, o, stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "deltaq scope: %v\n", err)
		return exitFail
	}
	return exitOK
}
