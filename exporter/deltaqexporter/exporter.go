package deltaqexporter // import "github.com/deltaq-otel/deltaq/exporter/deltaqexporter"

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/deltaq-otel/deltaq/analysis"
	"github.com/deltaq-otel/deltaq/diagram"
	"github.com/deltaq-otel/deltaq/exporter/deltaqexporter/internal/metadata"
	"github.com/deltaq-otel/deltaq/internal/outcome"
)

// deltaqExporter is the deltaq exporter. ConsumeTraces counts the outcome
// instances into the analysis engine's windows; a window timer closes the
// windows, turns each into OTLP metrics and logs and hands them to two
// exporterhelper senders (timeout, retry, bounded queue) that push them to
// the OTLP endpoint. The traces path never waits for the network, and a
// downstream failure costs data (counted), never the process.
type deltaqExporter struct {
	cfg    *Config
	set    exporter.Settings
	logger *zap.Logger
	tel    *metadata.TelemetryBuilder
	engine *analysis.Engine
	build  *builder

	// now is the clock; ticks, when set, replaces the interval timer. Tests
	// set both so that windows close without sleeping.
	now   func() time.Time
	ticks <-chan time.Time

	// newSenders builds the metrics and logs senders at Start; tests may
	// replace it to capture the output.
	newSenders func(ctx context.Context, host component.Host) (exporter.Metrics, exporter.Logs, error)

	client     otlpClient
	metricsOut exporter.Metrics
	logsOut    exporter.Logs

	stop      chan struct{}
	done      chan struct{}
	running   bool // the window timer was started
	runCtx    context.Context
	cancelRun context.CancelFunc
	stopOnce  sync.Once

	prev     analysis.Stats // for telemetry deltas, used by the timer only
	dropAttr [len(analysis.Drops{})]metric.MeasurementOption
	trigAttr map[analysis.TriggerKind]metric.MeasurementOption
	// referenced are the outcomes of the diagram and the entries of
	// probes, sorted.
	referenced []string
	// coarseWarned holds the probes warned about as under-resolved, so that
	// each is warned about once; used by the timer only.
	coarseWarned map[string]bool

	// snapshots writes and prunes the snapshot files; made at the first
	// snapshot, used by the timer only.
	snapshots *snapshotStore
}

// exporterOption adjusts an exporter in tests.
type exporterOption func(*deltaqExporter)

func newExporter(cfg *Config, set exporter.Settings, opts ...exporterOption) (*deltaqExporter, error) {
	ac, err := cfg.AnalysisConfig()
	if err != nil {
		return nil, err
	}
	tel, err := metadata.NewTelemetryBuilder(set.TelemetrySettings)
	if err != nil {
		return nil, err
	}
	e := &deltaqExporter{
		cfg:    cfg,
		set:    set,
		logger: set.Logger,
		tel:    tel,
		now:    time.Now,
		stop:   make(chan struct{}),
		done:   make(chan struct{}),
	}
	e.newSenders = e.otlpSenders
	for _, o := range opts {
		o(e)
	}
	now := e.now()
	if e.engine, err = analysis.New(ac, now); err != nil {
		return nil, err
	}
	e.referenced = referencedProbes(&ac)
	e.build = newBuilder(cfg.CDFPoints, set.BuildInfo.Version, now)
	if set.Resource != (pcommon.Resource{}) {
		set.Resource.CopyTo(e.build.resource)
	}
	for r := range e.dropAttr {
		e.dropAttr[r] = metric.WithAttributeSet(attribute.NewSet(attribute.String("reason", analysis.DropReason(r).String())))
	}
	e.trigAttr = make(map[analysis.TriggerKind]metric.MeasurementOption)
	for _, k := range []analysis.TriggerKind{analysis.TriggerQTA, analysis.TriggerFailure, analysis.TriggerLoad, analysis.TriggerDivergence} {
		e.trigAttr[k] = metric.WithAttributeSet(attribute.NewSet(attribute.String("trigger", k.String())))
	}
	e.runCtx, e.cancelRun = context.WithCancel(context.Background())
	return e, nil
}

// referencedProbes returns, sorted, the probes the configuration expects
// instances of: the outcomes of the diagram and the entries of probes.
func referencedProbes(ac *analysis.Config) []string {
	var names []string
	for n := range ac.Probes {
		names = append(names, n)
	}
	if ac.Diagram != nil {
		for _, p := range ac.Diagram.Probes() {
			if p.Kind == diagram.OutcomeProbe {
				names = append(names, p.Name)
			}
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// otlpSenders connects to the endpoint and builds the metrics and logs
// senders with the configured timeout, retry and sending queue.
func (e *deltaqExporter) otlpSenders(ctx context.Context, host component.Host) (exporter.Metrics, exporter.Logs, error) {
	client, err := newOTLPClient(ctx, e.cfg, host, e.set.TelemetrySettings)
	if err != nil {
		return nil, nil, err
	}
	e.client = client
	opts := []exporterhelper.Option{
		exporterhelper.WithTimeout(e.cfg.TimeoutConfig),
		exporterhelper.WithRetry(e.cfg.RetryConfig),
		exporterhelper.WithQueue(e.cfg.QueueConfig),
	}
	m, err := exporterhelper.NewMetrics(ctx, e.set, e.cfg, client.pushMetrics, opts...)
	if err != nil {
		return nil, nil, err
	}
	l, err := exporterhelper.NewLogs(ctx, e.set, e.cfg, client.pushLogs, opts...)
	if err != nil {
		return nil, nil, err
	}
	return m, l, nil
}

func (e *deltaqExporter) start(ctx context.Context, host component.Host) error {
	m, l, err := e.newSenders(ctx, host)
	if err != nil {
		return err
	}
	if err := m.Start(ctx, host); err != nil {
		return err
	}
	e.metricsOut = m
	if err := l.Start(ctx, host); err != nil {
		return err
	}
	e.logsOut = l
	e.warnUnproduced()
	ticks := e.ticks
	var ticker *time.Ticker
	if ticks == nil {
		ticker = time.NewTicker(e.cfg.Interval)
		ticks = ticker.C
	}
	e.running = true
	go e.run(ticks, ticker)
	return nil
}

// run is the window timer.
func (e *deltaqExporter) run(ticks <-chan time.Time, ticker *time.Ticker) {
	defer close(e.done)
	if ticker != nil {
		defer ticker.Stop()
	}
	for {
		select {
		case <-e.stop:
			return
		case <-ticks:
			e.tick(e.now())
		}
	}
}

// tick closes the windows due at now and sends their output.
func (e *deltaqExporter) tick(now time.Time) {
	began := time.Now()
	results := e.engine.Advance(now)
	for _, r := range results {
		e.inspect(e.runCtx, r)
		e.emit(e.runCtx, r, now)
	}
	ctx := e.runCtx
	if len(results) > 0 {
		e.tel.DeltaqExporterWindowsClosed.Add(ctx, int64(len(results)))
		e.tel.DeltaqExporterWindowCloseDuration.Record(ctx, time.Since(began).Seconds()/float64(len(results)))
	}
	st := e.engine.Stats()
	if d := st.Counted - e.prev.Counted; d > 0 {
		e.tel.DeltaqExporterInstances.Add(ctx, d)
	}
	if d := st.LateTimeouts - e.prev.LateTimeouts; d > 0 {
		e.tel.DeltaqExporterLateTimeouts.Add(ctx, d)
	}
	if d := st.Rebinned - e.prev.Rebinned; d > 0 {
		e.tel.DeltaqExporterInstancesRebinned.Add(ctx, d)
	}
	if d := st.ExpiredProbes - e.prev.ExpiredProbes; d > 0 {
		e.tel.DeltaqExporterProbesExpired.Add(ctx, d)
	}
	for r, n := range st.Dropped {
		if d := n - e.prev.Dropped[r]; d > 0 {
			e.tel.DeltaqExporterInstancesDropped.Add(ctx, d, e.dropAttr[r])
		}
	}
	e.tel.DeltaqExporterProbes.Record(ctx, int64(st.Probes))
	e.prev = st
}

// inspect counts what a closed window says about the input rather than the
// system: referenced probes without instances, and under-resolved probes,
// about each of which it warns once (while the probe is tracked).
func (e *deltaqExporter) inspect(ctx context.Context, r *analysis.Result) {
	if n := len(r.NoInstances); n > 0 {
		e.tel.DeltaqExporterReferencedProbeEmptyWindows.Add(ctx, int64(n))
	}
	coarse := int64(0)
	for i := range r.Probes {
		p := &r.Probes[i]
		if !p.UnderResolved {
			continue
		}
		coarse++
		if e.coarseWarned[p.Name] {
			continue
		}
		if e.coarseWarned == nil {
			e.coarseWarned = make(map[string]bool)
		}
		e.coarseWarned[p.Name] = true
		e.logger.Warn(fmt.Sprintf("probe %s: most instances are shorter than one bin (%s); use a smaller dmax or more bins",
			p.Name, time.Duration(math.Round(p.Width*1e9))),
			zap.String("probe", p.Name), zap.Float64("bin_width_seconds", p.Width))
	}
	if coarse > 0 {
		e.tel.DeltaqExporterUnderResolvedWindows.Add(ctx, coarse)
	}
	// Forget the warnings of probes no longer tracked, so that names that
	// come and go do not grow the set.
	if len(e.coarseWarned) > len(r.Probes) {
		tracked := make(map[string]bool, len(r.Probes))
		for i := range r.Probes {
			tracked[r.Probes[i].Name] = true
		}
		for n := range e.coarseWarned {
			if !tracked[n] {
				delete(e.coarseWarned, n)
			}
		}
	}
}

// warnUnproduced warns, at start, about the referenced probes — the
// outcomes of the diagram and the entries of probes — that no deltaq
// processor of this collector produces. The processors are created, and
// register their probes, before any component starts. Such a probe's
// instances may come from another collector; if none does, its windows
// stay empty (counted by deltaq_exporter_referenced_probe_empty_windows).
func (e *deltaqExporter) warnUnproduced() {
	produced := outcome.RegisteredProbes()
	var missing []string
	for _, n := range e.referenced {
		if _, ok := slices.BinarySearch(produced, n); !ok {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		e.logger.Warn("no deltaq processor of this collector produces these probes of the diagram or probes; their instances may come from another collector",
			zap.Strings("probes", missing))
	}
}

// emit hands one window's metrics and logs to the senders and writes its
// completed snapshots. Output larger than max_request_bytes goes in several
// requests (split.go), each handed to the sender on its own: a request the
// endpoint refuses, or the queue has no room for, costs that request only,
// which is counted and logged, never the windows after it.
func (e *deltaqExporter) emit(ctx context.Context, r *analysis.Result, now time.Time) {
	limit := e.cfg.MaxRequestBytes
	if n := e.build.split.metrics(e.build.metrics(r), limit, func(md pmetric.Metrics) {
		if err := e.metricsOut.ConsumeMetrics(ctx, md); err != nil {
			e.dropped(ctx, "metrics", err)
		}
	}); n > 0 {
		e.oversized(ctx, "metrics", n)
	}
	for i := range r.Triggers {
		e.tel.DeltaqExporterTriggersFired.Add(ctx, 1, e.trigAttr[r.Triggers[i].Kind])
	}
	if ld, ok := e.build.logs(r, now); ok {
		if n := e.build.split.logs(ld, limit, func(ld plog.Logs) {
			if err := e.logsOut.ConsumeLogs(ctx, ld); err != nil {
				e.dropped(ctx, "logs", err)
			}
		}); n > 0 {
			e.oversized(ctx, "logs", n)
		}
	}
	if dir := e.cfg.Snapshot.Directory; dir != "" && len(r.Snapshots) > 0 {
		if e.snapshots == nil {
			e.snapshots = newSnapshotStore(dir, e.cfg.Snapshot.MaxFiles, e.cfg.Snapshot.MaxBytes, e.logger)
		}
		for _, s := range r.Snapshots {
			removed, err := e.snapshots.write(s)
			if err != nil {
				e.logger.Warn("cannot write ΔQ snapshot", zap.Int64("snapshot", s.ID), zap.Error(err))
			}
			if removed > 0 {
				e.tel.DeltaqExporterSnapshotFilesRemoved.Add(ctx, int64(removed))
			}
		}
	}
}

func (e *deltaqExporter) dropped(ctx context.Context, signal string, err error) {
	e.tel.DeltaqExporterOutputDropped.Add(ctx, 1, metric.WithAttributeSet(attribute.NewSet(attribute.String("signal", signal))))
	e.logger.Warn("dropping ΔQ output: the sender did not accept it", zap.String("signal", signal), zap.Error(err))
}

// oversized counts the n data points or log records of a window dropped
// because each alone is larger than max_request_bytes.
func (e *deltaqExporter) oversized(ctx context.Context, signal string, n int) {
	e.tel.DeltaqExporterOutputOversized.Add(ctx, int64(n), metric.WithAttributeSet(attribute.NewSet(attribute.String("signal", signal))))
	e.logger.Warn("dropping ΔQ output larger than max_request_bytes on its own", zap.String("signal", signal),
		zap.Int("items", n), zap.Int("max_request_bytes", e.cfg.MaxRequestBytes))
}

func (e *deltaqExporter) shutdown(ctx context.Context) error {
	var errs []error
	e.stopOnce.Do(func() {
		close(e.stop)
		e.cancelRun()
		flush := false
		if e.running {
			select {
			case <-e.done:
				flush = true
			case <-ctx.Done():
				errs = append(errs, ctx.Err())
			}
		}
		// The windows still open hold instances already accepted: close
		// them now, the current one included though it is partial, rather
		// than lose them. The senders below drain their queues on shutdown.
		if flush && e.metricsOut != nil && e.logsOut != nil {
			now := e.now()
			for _, r := range e.engine.Flush(now) {
				e.inspect(ctx, r)
				e.emit(ctx, r, now)
			}
		}
		if e.metricsOut != nil {
			errs = append(errs, e.metricsOut.Shutdown(ctx))
		}
		if e.logsOut != nil {
			errs = append(errs, e.logsOut.Shutdown(ctx))
		}
		if e.client != nil {
			errs = append(errs, e.client.close())
		}
		e.tel.Shutdown()
	})
	return errors.Join(errs...)
}

// consumeTraces counts the outcome instances among the spans. Spans without
// the deltaq.probe attribute are not instances and are ignored; a span
// marked deltaq.late was already counted as a timeout when its instance
// timed out and is not counted again.
func (e *deltaqExporter) consumeTraces(_ context.Context, td ptrace.Traces) error {
	b := e.engine.Begin()
	addTraces(b, td)
	b.End()
	return nil
}

// addTraces adds the outcome instances among the spans of td.
func addTraces(b analysis.Batch, td ptrace.Traces) {
	var in analysis.Instance
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		sss := rss.At(i).ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			spans := sss.At(j).Spans()
			for k := 0; k < spans.Len(); k++ {
				if readInstance(spans.At(k), &in) {
					b.Add(&in)
				}
			}
		}
	}
}

// readInstance reads the outcome attributes of a span in one pass over its
// attributes. It returns false for a span that is not an instance (no
// deltaq.probe) or is late. A span with a probe but a missing or unknown
// outcome is returned with Outcome 0, for the engine to count as invalid.
func readInstance(span ptrace.Span, in *analysis.Instance) bool {
	*in = analysis.Instance{}
	var hasProbe, late bool
	for k, v := range span.Attributes().All() {
		switch k {
		case outcome.AttrProbe:
			if v.Type() == pcommon.ValueTypeStr {
				in.Probe, hasProbe = v.Str(), true
			}
		case outcome.AttrOutcome:
			if v.Type() == pcommon.ValueTypeStr {
				in.Outcome, _ = analysis.ParseOutcome(v.Str())
			}
		case outcome.AttrDMaxNs:
			if v.Type() == pcommon.ValueTypeInt {
				in.DMaxNs = v.Int()
			}
		case outcome.AttrBins:
			if v.Type() == pcommon.ValueTypeInt {
				in.Bins = int(v.Int())
			}
		case outcome.AttrLate:
			late = v.Type() == pcommon.ValueTypeBool && v.Bool()
		}
	}
	if !hasProbe || late {
		return false
	}
	in.Start = int64(span.StartTimestamp())
	in.End = int64(span.EndTimestamp())
	return true
}
