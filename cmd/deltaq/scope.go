package main

// The scope subcommand: a terminal ΔQ oscilloscope. It listens for the OTLP
// metrics and logs the deltaq exporter sends at the end of every window and
// redraws, per probe, the ΔQ plot the thesis's oscilloscope shows (§4.2: the
// observed and calculated CDFs, the mean of recent windows with its confidence
// band, and the QTA), with the quantiles, failure ratio, outcome counts and QTA
// state, followed by the triggers that fired (§3.5).

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"os/signal"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"google.golang.org/grpc"
	_ "google.golang.org/grpc/encoding/gzip" // the collector's OTLP exporters compress with gzip by default

	"github.com/deltaq-otel/deltaq/exporter/deltaqexporter"
	"github.com/deltaq-otel/deltaq/internal/outcome"
)

func init() {
	register(command{
		name:    "scope",
		usage:   "scope [--listen ADDR] [--once] [--timeout D] [--width N] [--height N]",
		summary: "terminal ΔQ oscilloscope: draw the deltaq exporter's metrics and triggers live",
		help: `Scope listens for OTLP/gRPC metrics and logs, the output of the deltaq exporter
(point the exporter's endpoint at ADDR), and redraws after every window, for
each probe: its ΔQ plot (observed, calculated, the mean with its 95% band, and
the QTA against delay), quantiles, failure ratio, outcome counts and QTA state;
then the latest deltaq.trigger events. --once prints the first frame with
metrics, without screen control codes, and exits. Control characters in the
names and attributes received are shown as Go escapes (\x1b, \u202e).`,
		run: runScope,
	})
}

// Names of the deltaq exporter's output that the scope reads (DESIGN, "Exporter
// output"), taken from the exporter so that the two cannot drift apart.
const (
	metricCDF          = deltaqexporter.MetricCDF
	metricQuantile     = deltaqexporter.MetricQuantile
	metricOutcomes     = deltaqexporter.MetricOutcomes
	metricFailureRatio = deltaqexporter.MetricFailureRatio
	metricQTAViolation = deltaqexporter.MetricQTAViolation
	metricDivergence   = deltaqexporter.MetricDivergence

	attrProbe   = deltaqexporter.AttrProbe
	attrOutcome = deltaqexporter.AttrOutcome
	attrSeries  = deltaqexporter.AttrSeries
	attrLE      = deltaqexporter.AttrLE
	attrQ       = deltaqexporter.AttrQ
	attrTrigger = deltaqexporter.AttrTrigger

	eventTrigger  = deltaqexporter.EventTrigger
	eventSnapshot = deltaqexporter.EventSnapshot

	seriesObserved   = deltaqexporter.SeriesObserved
	seriesCalculated = deltaqexporter.SeriesCalculated
	seriesMean       = deltaqexporter.SeriesMean
	seriesLower      = deltaqexporter.SeriesLower
	seriesUpper      = deltaqexporter.SeriesUpper
	seriesQTA        = deltaqexporter.SeriesQTA
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
	lis, err := net.Listen("tcp", o.listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	sc := newLiveScope()
	srv := grpc.NewServer(grpc.MaxRecvMsgSize(64 << 20))
	pmetricotlp.RegisterGRPCServer(srv, &scopeMetricsServer{scope: sc})
	plogotlp.RegisterGRPCServer(srv, &scopeLogsServer{scope: sc})
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(lis) }()
	defer stopGracefully(srv, 2*time.Second)
	fmt.Fprintf(stderr, "deltaq scope: listening for OTLP/gRPC metrics and logs on %s\n", lis.Addr())
	return sc.loop(ctx, o, stdout, serveErr)
}

// stopGracefully lets the RPCs in flight answer (the exporter that sent the
// batch --once printed gets its response), and cuts them off after grace.
func stopGracefully(srv *grpc.Server, grace time.Duration) {
	stopped := make(chan struct{})
	go func() {
		srv.GracefulStop()
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-time.After(grace):
		srv.Stop()
	}
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

func (sc *liveScope) notify() {
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

type scopeMetricsServer struct {
	pmetricotlp.UnimplementedGRPCServer
	scope *liveScope
}

// Export ingests one batch of metrics.
func (s *scopeMetricsServer) Export(_ context.Context, req pmetricotlp.ExportRequest) (pmetricotlp.ExportResponse, error) {
	s.scope.mu.Lock()
	s.scope.state.addMetrics(req.Metrics())
	s.scope.mu.Unlock()
	s.scope.notify()
	return pmetricotlp.NewExportResponse(), nil
}

type scopeLogsServer struct {
	plogotlp.UnimplementedGRPCServer
	scope *liveScope
}

// Export ingests one batch of log records.
func (s *scopeLogsServer) Export(_ context.Context, req plogotlp.ExportRequest) (plogotlp.ExportResponse, error) {
	s.scope.mu.Lock()
	s.scope.state.addLogs(req.Logs())
	s.scope.mu.Unlock()
	s.scope.notify()
	return plogotlp.NewExportResponse(), nil
}

// scopeState is what the scope has collected: the latest view of every probe and
// the most recent trigger events. addMetrics and addLogs fill it; renderScope
// reads it.
type scopeState struct {
	probes        map[string]*probeView
	triggers      []triggerEvent // oldest first, at most maxTriggers
	triggersSeen  int
	snapshots     int
	metricBatches int
	// malformed counts data points and records that were ignored: without a
	// probe, with an unparsable deltaq.le or deltaq.q, or with a non-finite value.
	malformed int
}

func newScopeState() *scopeState {
	return &scopeState{probes: map[string]*probeView{}}
}

// probeView is the latest window of one probe.
type probeView struct {
	updated    time.Time                      // newest data point timestamp
	curves     map[string][]curvePoint        // deltaq.series → CDF points, by delay
	quantiles  map[string]map[float64]float64 // deltaq.series → q → delay in seconds
	outcomes   map[string]float64             // deltaq.outcome → instances so far
	failure    scopeReading
	violation  scopeReading
	divergence scopeReading
}

// curvePoint is one point (delay in seconds, cumulative probability) of a CDF.
type curvePoint struct{ delay, p float64 }

type scopeReading struct {
	v  float64
	ok bool
}

// triggerEvent is one deltaq.trigger log record.
type triggerEvent struct {
	at       time.Time
	severity string
	probe    string
	kind     string
	details  []string // the record's other attributes as key=value, sorted
}

func (s *scopeState) probe(name string) *probeView {
	p := s.probes[name]
	if p == nil {
		p = &probeView{outcomes: map[string]float64{}}
		s.probes[name] = p
	}
	return p
}

// pointValue returns a number data point's value as a float64.
func pointValue(dp pmetric.NumberDataPoint) (float64, bool) {
	var v float64
	switch dp.ValueType() {
	case pmetric.NumberDataPointValueTypeDouble:
		v = dp.DoubleValue()
	case pmetric.NumberDataPointValueTypeInt:
		v = float64(dp.IntValue())
	default:
		return 0, false
	}
	return v, !math.IsNaN(v) && !math.IsInf(v, 0)
}

func stringAttr(attrs pcommon.Map, key string) string {
	if v, ok := attrs.Get(key); ok {
		return v.AsString()
	}
	return ""
}

// floatAttr parses a numeric attribute sent as a string (deltaq.le, deltaq.q) or
// as a number.
func floatAttr(attrs pcommon.Map, key string) (float64, bool) {
	v, ok := attrs.Get(key)
	if !ok {
		return 0, false
	}
	var f float64
	switch v.Type() {
	case pcommon.ValueTypeDouble:
		f = v.Double()
	case pcommon.ValueTypeInt:
		f = float64(v.Int())
	case pcommon.ValueTypeStr:
		var err error
		if f, err = strconv.ParseFloat(v.Str(), 64); err != nil {
			return 0, false
		}
	default:
		return 0, false
	}
	return f, !math.IsNaN(f) && !math.IsInf(f, 0)
}

// numberPoints returns the data points of a gauge or sum, or an empty slice.
func numberPoints(m pmetric.Metric) pmetric.NumberDataPointSlice {
	switch m.Type() {
	case pmetric.MetricTypeGauge:
		return m.Gauge().DataPoints()
	case pmetric.MetricTypeSum:
		return m.Sum().DataPoints()
	}
	return pmetric.NewNumberDataPointSlice()
}

// addMetrics ingests one batch. A probe's curves and quantiles are replaced by
// those of the batch when it has any (each window sends them whole); the scalar
// metrics and outcome counts are updated point by point.
func (s *scopeState) addMetrics(md pmetric.Metrics) {
	s.metricBatches++
	curves := map[string]map[string][]curvePoint{}
	quantiles := map[string]map[string]map[float64]float64{}
	rms := md.ResourceMetrics()
	for i := 0; i < rms.Len(); i++ {
		sms := rms.At(i).ScopeMetrics()
		for j := 0; j < sms.Len(); j++ {
			ms := sms.At(j).Metrics()
			for k := 0; k < ms.Len(); k++ {
				m := ms.At(k)
				switch m.Name() {
				case metricCDF, metricQuantile, metricOutcomes, metricFailureRatio, metricQTAViolation, metricDivergence:
				default:
					continue
				}
				dps := numberPoints(m)
				for l := 0; l < dps.Len(); l++ {
					dp := dps.At(l)
					attrs := dp.Attributes()
					name := stringAttr(attrs, attrProbe)
					v, ok := pointValue(dp)
					if name == "" || !ok {
						s.malformed++
						continue
					}
					p := s.probe(name)
					if t := dp.Timestamp().AsTime(); t.After(p.updated) {
						p.updated = t
					}
					switch m.Name() {
					case metricCDF:
						le, ok := floatAttr(attrs, attrLE)
						series := stringAttr(attrs, attrSeries)
						if !ok || series == "" {
							s.malformed++
							continue
						}
						if curves[name] == nil {
							curves[name] = map[string][]curvePoint{}
						}
						curves[name][series] = append(curves[name][series], curvePoint{delay: le, p: v})
					case metricQuantile:
						q, ok := floatAttr(attrs, attrQ)
						series := stringAttr(attrs, attrSeries)
						if !ok || series == "" {
							s.malformed++
							continue
						}
						if quantiles[name] == nil {
							quantiles[name] = map[string]map[float64]float64{}
						}
						if quantiles[name][series] == nil {
							quantiles[name][series] = map[float64]float64{}
						}
						quantiles[name][series][q] = v
					case metricOutcomes:
						p.outcomes[stringAttr(attrs, attrOutcome)] = v
					case metricFailureRatio:
						p.failure = scopeReading{v, true}
					case metricQTAViolation:
						p.violation = scopeReading{v, true}
					case metricDivergence:
						p.divergence = scopeReading{v, true}
					}
				}
			}
		}
	}
	for name, c := range curves {
		for _, pts := range c {
			sort.Slice(pts, func(a, b int) bool { return pts[a].delay < pts[b].delay })
		}
		s.probes[name].curves = c
	}
	for name, q := range quantiles {
		s.probes[name].quantiles = q
	}
}

// addLogs ingests deltaq.trigger records (kept, newest last) and counts
// deltaq.snapshot records; other records are ignored.
func (s *scopeState) addLogs(ld plog.Logs) {
	rls := ld.ResourceLogs()
	for i := 0; i < rls.Len(); i++ {
		sls := rls.At(i).ScopeLogs()
		for j := 0; j < sls.Len(); j++ {
			lrs := sls.At(j).LogRecords()
			for k := 0; k < lrs.Len(); k++ {
				lr := lrs.At(k)
				switch lr.EventName() {
				case eventSnapshot:
					s.snapshots++
				case eventTrigger:
					s.addTrigger(lr)
				}
			}
		}
	}
}

func (s *scopeState) addTrigger(lr plog.LogRecord) {
	ev := triggerEvent{
		at:       lr.Timestamp().AsTime(),
		severity: lr.SeverityText(),
		probe:    stringAttr(lr.Attributes(), attrProbe),
		kind:     stringAttr(lr.Attributes(), attrTrigger),
	}
	if lr.Timestamp() == 0 {
		ev.at = lr.ObservedTimestamp().AsTime()
	}
	if ev.severity == "" {
		ev.severity = lr.SeverityNumber().String()
	}
	for k, v := range lr.Attributes().All() {
		if k != attrProbe && k != attrTrigger {
			ev.details = append(ev.details, k+"="+v.AsString())
		}
	}
	sort.Strings(ev.details)
	s.triggersSeen++
	// Keep them in time order; records of one batch may come in any order.
	i := sort.Search(len(s.triggers), func(i int) bool { return s.triggers[i].at.After(ev.at) })
	s.triggers = slices.Insert(s.triggers, i, ev)
	if len(s.triggers) > maxTriggers {
		s.triggers = s.triggers[len(s.triggers)-maxTriggers:]
	}
}

// frameOptions sets the size of each probe's plot.
type frameOptions struct {
	width, height int
}

func (o frameOptions) validate() error {
	if o.width < 8 || o.width > 1000 {
		return fmt.Errorf("plot width %d outside [8, 1000]", o.width)
	}
	if o.height < 3 || o.height > 200 {
		return fmt.Errorf("plot height %d outside [3, 200]", o.height)
	}
	return nil
}

// Marks of the plot, drawn in this order so that later ones cover earlier ones:
// the band between the lower and upper bounds, the mean, the QTA, the calculated
// ΔQ and on top the observed ΔQ.
const (
	markBand       = '.'
	markMean       = '+'
	markQTA        = '='
	markCalculated = '*'
	markObserved   = '#'
)

// renderScope returns one frame of the scope: a header, then for every probe (by
// name) its state line, its ΔQ plot and quantile table, then the latest
// triggers. It reads s and nothing else, so a frame depends only on the data
// received. Every string that came from the network (probe names, outcome and
// series values, trigger attributes) is shown through printable, so that no
// sender can move the cursor, clear the screen or retitle the terminal.
func renderScope(s *scopeState, o frameOptions) string {
	var b strings.Builder
	fmt.Fprintf(&b, "ΔQ scope · %d probes · %d metric batches · %d triggers · %d snapshots\n",
		len(s.probes), s.metricBatches, s.triggersSeen, s.snapshots)
	if s.malformed > 0 {
		fmt.Fprintf(&b, "ignored %d malformed data points (no deltaq.probe, bad deltaq.le/deltaq.q, or non-finite value)\n", s.malformed)
	}
	if len(s.probes) == 0 {
		b.WriteString("\nwaiting for deltaq metrics…\n")
	}
	names := make([]string, 0, len(s.probes))
	for name := range s.probes {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		b.WriteByte('\n')
		renderProbe(&b, name, s.probes[name], o)
	}
	b.WriteString("\ntriggers")
	if len(s.triggers) == 0 {
		b.WriteString(": none\n")
		return b.String()
	}
	fmt.Fprintf(&b, " (latest %d, newest last):\n", len(s.triggers))
	for _, t := range s.triggers {
		fmt.Fprintf(&b, "  %s %-5s %s %s", t.at.UTC().Format("15:04:05.000Z"), printable(t.severity), printable(t.probe), printable(t.kind))
		for _, d := range t.details {
			b.WriteString(" " + printable(d))
		}
		b.WriteByte('\n')
	}
	return b.String()
}

func renderProbe(b *strings.Builder, name string, p *probeView, o frameOptions) {
	fmt.Fprintf(b, "── %s ── window ending %s\n", printable(name), p.updated.UTC().Format("15:04:05.000Z"))

	var state []string
	switch {
	case !p.violation.ok:
		state = append(state, "QTA -")
	case p.violation.v > 0:
		state = append(state, "QTA BROKEN")
	default:
		state = append(state, "QTA met")
	}
	if p.failure.ok {
		state = append(state, fmt.Sprintf("failure %.2f%%", 100*p.failure.v))
	}
	if p.divergence.ok {
		state = append(state, fmt.Sprintf("divergence %.3f", p.divergence.v))
	}
	if len(p.outcomes) > 0 {
		kinds := make([]string, 0, len(p.outcomes))
		for k := range p.outcomes {
			kinds = append(kinds, k)
		}
		rank := map[string]int{outcome.Success: 0, outcome.Timeout: 1, outcome.Failure: 2}
		sort.Slice(kinds, func(i, j int) bool {
			ri, iok := rank[kinds[i]]
			rj, jok := rank[kinds[j]]
			if iok != jok {
				return iok
			}
			if ri != rj {
				return ri < rj
			}
			return kinds[i] < kinds[j]
		})
		var parts []string
		for _, k := range kinds {
			parts = append(parts, fmt.Sprintf("%s %s", printable(k), strconv.FormatFloat(p.outcomes[k], 'f', -1, 64)))
		}
		state = append(state, "outcomes: "+strings.Join(parts, ", "))
	}
	b.WriteString(strings.Join(state, " │ ") + "\n")

	renderPlot(b, p.curves, o)
	renderQuantiles(b, p.quantiles)
}

// renderPlot draws the CDF curves against delay. Column c stands for the delay
// x_c = xmax·(c+1)/width, so the last column is the largest delay received (dMax);
// row r for probability 1 − r/(height−1). ΔQ curves are linear between their
// points (mass is uniform within a bin) and start at F(0) = 0; the QTA is a step
// function and holds its value until its next point.
func renderPlot(b *strings.Builder, curves map[string][]curvePoint, o frameOptions) {
	xmax := 0.0
	for _, pts := range curves {
		for _, pt := range pts {
			xmax = math.Max(xmax, pt.delay)
		}
	}
	if xmax <= 0 {
		b.WriteString("  (no CDF points in this window)\n")
		return
	}
	w, h := o.width, o.height
	grid := make([][]rune, h)
	for r := range grid {
		grid[r] = []rune(strings.Repeat(" ", w))
	}
	row := func(p float64) int {
		if !(p >= 0) { // also NaN, from hostile deltaq.le values
			p = 0
		}
		p = math.Min(1, p)
		return int(math.Round((1 - p) * float64(h-1)))
	}
	x := func(c int) float64 { return xmax * float64(c+1) / float64(w) }

	if lo, up := curves[seriesLower], curves[seriesUpper]; len(lo) > 0 && len(up) > 0 {
		for c := 0; c < w; c++ {
			top, bottom := row(linearCDF(up, x(c))), row(linearCDF(lo, x(c)))
			for r := min(top, bottom); r <= max(top, bottom); r++ {
				grid[r][c] = markBand
			}
		}
	}
	trace := func(pts []curvePoint, at func([]curvePoint, float64) float64, mark rune) {
		if len(pts) == 0 {
			return
		}
		prev := row(0)
		for c := 0; c < w; c++ {
			r := row(at(pts, x(c)))
			// Join to the previous column's row (exclusive) so that steep
			// rises stay visible.
			for rr := min(prev, r); rr <= max(prev, r); rr++ {
				if rr != prev || rr == r {
					grid[rr][c] = mark
				}
			}
			prev = r
		}
	}
	trace(curves[seriesMean], linearCDF, markMean)
	trace(curves[seriesQTA], stepCDF, markQTA)
	trace(curves[seriesCalculated], linearCDF, markCalculated)
	trace(curves[seriesObserved], linearCDF, markObserved)

	for r := 0; r < h; r++ {
		label := ""
		if p := 1 - float64(r)/float64(h-1); r == 0 || r == h-1 || isQuarter(p) {
			label = strconv.FormatFloat(p, 'f', 2, 64)
		}
		fmt.Fprintf(b, "%5s │%s\n", label, strings.TrimRight(string(grid[r]), " "))
	}
	b.WriteString("      └" + strings.Repeat("─", w) + "\n")

	// Delay labels under the first column's left edge (0), the middle and the end.
	axis := []rune(strings.Repeat(" ", w+7))
	put := func(col int, s string) {
		for i, r := range []rune(s) {
			if col+i < len(axis) {
				axis[col+i] = r
			}
		}
	}
	put(6, "0")
	mid := formatDuration(xmax / 2)
	put(7+w/2-1-len([]rune(mid))/2, mid)
	end := formatDuration(xmax)
	put(7+w-len([]rune(end)), end)
	b.WriteString(strings.TrimRight(string(axis), " ") + "\n")

	var legend []string
	for _, s := range []struct {
		series string
		text   string
	}{
		{seriesObserved, "# observed"},
		{seriesCalculated, "* calculated"},
		{seriesMean, "+ mean"},
		{seriesLower, ". 95% band"},
		{seriesQTA, "= QTA"},
	} {
		if len(curves[s.series]) > 0 {
			legend = append(legend, s.text)
		}
	}
	b.WriteString("       " + strings.Join(legend, "   ") + "\n")
}

// isQuarter reports whether p is (to rounding) a multiple of 0.25.
func isQuarter(p float64) bool {
	return math.Abs(p*4-math.Round(p*4)) < 1e-9
}

// linearCDF evaluates a ΔQ's CDF at t from its points: linear between points,
// from F(0) = 0 to the first point, and constant after the last (the intangible
// mass never arrives).
func linearCDF(pts []curvePoint, t float64) float64 {
	i := sort.Search(len(pts), func(i int) bool { return pts[i].delay >= t })
	switch {
	case i == len(pts):
		return pts[len(pts)-1].p
	case pts[i].delay == t:
		return pts[i].p
	}
	x0, y0 := 0.0, 0.0
	if i > 0 {
		x0, y0 = pts[i-1].delay, pts[i-1].p
	}
	if pts[i].delay <= x0 {
		return pts[i].p
	}
	return y0 + (pts[i].p-y0)*(t-x0)/(pts[i].delay-x0)
}

// stepCDF evaluates a step CDF (a QTA) at t: the value of the last point at or
// before t, and 0 before the first.
func stepCDF(pts []curvePoint, t float64) float64 {
	i := sort.Search(len(pts), func(i int) bool { return pts[i].delay > t })
	if i == 0 {
		return 0
	}
	return pts[i-1].p
}

// renderQuantiles prints one row per series and one column per quantile.
func renderQuantiles(b *strings.Builder, quantiles map[string]map[float64]float64) {
	if len(quantiles) == 0 {
		return
	}
	var qs []float64
	var series []string
	for s, m := range quantiles {
		series = append(series, s)
		for q := range m {
			if !slices.Contains(qs, q) {
				qs = append(qs, q)
			}
		}
	}
	sort.Float64s(qs)
	sort.Slice(series, func(i, j int) bool {
		ri, rj := slices.Index(seriesOrder, series[i]), slices.Index(seriesOrder, series[j])
		if ri < 0 {
			ri = len(seriesOrder)
		}
		if rj < 0 {
			rj = len(seriesOrder)
		}
		if ri != rj {
			return ri < rj
		}
		return series[i] < series[j]
	})
	fmt.Fprintf(b, "  %-10s", "quantile")
	for _, q := range qs {
		fmt.Fprintf(b, " %9s", strconv.FormatFloat(q, 'g', -1, 64))
	}
	b.WriteByte('\n')
	for _, s := range series {
		fmt.Fprintf(b, "  %-10s", printable(s))
		for _, q := range qs {
			cell := "-"
			if v, ok := quantiles[s][q]; ok {
				cell = formatDuration(v)
			}
			fmt.Fprintf(b, " %9s", cell)
		}
		b.WriteByte('\n')
	}
}
