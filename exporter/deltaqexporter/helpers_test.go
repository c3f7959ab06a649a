package deltaqexporter

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/deltaq-otel/deltaq/internal/outcome"
)

// t0 is a window boundary (windows are aligned on the Unix epoch).
var t0 = time.Unix(1_700_000_000, 0).UTC()

func at(d time.Duration) time.Time { return t0.Add(d) }

// span describes one outcome-instance span as the processor writes it.
type span struct {
	probe   string
	outcome string
	// end is relative to t0; delay is end − start.
	end, delay time.Duration
	dmax       time.Duration
	bins       int
	late       bool
}

// instanceTraces builds traces holding one span per spec, with the
// deltaq.* attributes, plus one span that is not an instance.
func instanceTraces(specs ...span) ptrace.Traces {
	td := ptrace.NewTraces()
	ss := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
	other := ss.AppendEmpty()
	other.SetName("unrelated")
	other.Attributes().PutStr("http.method", "GET")
	for _, s := range specs {
		sp := ss.AppendEmpty()
		sp.SetName(s.probe)
		end := at(s.end)
		sp.SetStartTimestamp(pcommon.NewTimestampFromTime(end.Add(-s.delay)))
		sp.SetEndTimestamp(pcommon.NewTimestampFromTime(end))
		a := sp.Attributes()
		a.PutStr("http.route", "/x")
		a.PutStr(outcome.AttrProbe, s.probe)
		a.PutStr(outcome.AttrOutcome, s.outcome)
		a.PutInt(outcome.AttrDMaxNs, int64(s.dmax))
		a.PutInt(outcome.AttrBins, int64(s.bins))
		if s.late {
			a.PutBool(outcome.AttrLate, true)
		}
		if s.outcome == outcome.Timeout {
			a.PutBool(outcome.AttrSynthetic, true)
		}
	}
	return td
}

// sinkSender is an exporter.Metrics and exporter.Logs that keeps what it is
// given.
type sinkSender struct {
	component.StartFunc
	component.ShutdownFunc
	*consumertest.MetricsSink
	*consumertest.LogsSink
}

func (sinkSender) Capabilities() consumer.Capabilities { return consumer.Capabilities{} }

// harness runs an exporter whose output goes to sinks and whose clock the
// test sets; tick closes windows synchronously.
type harness struct {
	t       *testing.T
	exp     *deltaqExporter
	metrics *consumertest.MetricsSink
	logs    *consumertest.LogsSink
	tel     *componenttest.Telemetry
}

func newHarness(t *testing.T, cfg *Config, now time.Time) *harness {
	return newHarnessWith(t, cfg, now, nil)
}

// newHarnessWith is newHarness with the exporter's settings adjusted by
// adjust before the exporter is made.
func newHarnessWith(t *testing.T, cfg *Config, now time.Time, adjust func(*exporter.Settings)) *harness {
	t.Helper()
	h := &harness{t: t, metrics: new(consumertest.MetricsSink), logs: new(consumertest.LogsSink), tel: componenttest.NewTelemetry()}
	t.Cleanup(func() { require.NoError(t, h.tel.Shutdown(context.Background())) })
	set := exportertest.NewNopSettings(typ)
	set.TelemetrySettings = h.tel.NewTelemetrySettings()
	set.BuildInfo.Version = "test"
	if adjust != nil {
		adjust(&set)
	}
	exp, err := newExporter(cfg, set,
		func(e *deltaqExporter) {
			e.now = func() time.Time { return now }
			e.ticks = make(chan time.Time) // never ticks: the test calls tick
			e.newSenders = func(context.Context, component.Host) (exporter.Metrics, exporter.Logs, error) {
				return sinkSender{MetricsSink: h.metrics}, sinkSender{LogsSink: h.logs}, nil
			}
		})
	require.NoError(t, err)
	require.NoError(t, exp.start(context.Background(), componenttest.NewNopHost()))
	t.Cleanup(func() { require.NoError(t, exp.shutdown(context.Background())) })
	h.exp = exp
	return h
}

func (h *harness) consume(specs ...span) {
	h.t.Helper()
	require.NoError(h.t, h.exp.consumeTraces(context.Background(), instanceTraces(specs...)))
}

// testConfig is a valid configuration with sinks for output.
func testConfig() *Config {
	cfg := createDefaultConfig().(*Config)
	cfg.ClientConfig.Endpoint = "127.0.0.1:4317"
	return cfg
}
