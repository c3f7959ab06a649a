// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaqconnector

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/connector/connectortest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/deltaq-otel/deltaq/analysis"
	"github.com/deltaq-otel/deltaq/connector/deltaqconnector/internal/metadata"
	"github.com/deltaq-otel/deltaq/internal/collectorstate"
	"github.com/deltaq-otel/deltaq/internal/contract"
	"github.com/deltaq-otel/deltaq/internal/core"
	"github.com/deltaq-otel/deltaq/internal/core/coretest"
	"github.com/deltaq-otel/deltaq/internal/reload"
)

// The reload differential: one seeded stream of start events and spans
// fed to the connector once without a reload and once with reloads at
// random points, through the handover a SIGHUP starts (Handover.Requested,
// then the shutdown and the connector the reload builds). The collector
// delivers nothing between the shutdown and the new connector's start
// (its receivers are down): what arrives in that gap comes after the
// start, in order, as its clients resend it.

// reloadStep is the driver's step: events are delivered, and timeouts
// counted, every step; windows close at every whole second.
const reloadStep = 10 * time.Millisecond

// reloadEvent is a start event or a span of the stream, delivered at at.
type reloadEvent struct {
	at    time.Duration
	id    uint32
	probe string
	// start is the instance's start; end, for a span, its end (the span
	// lasts end − start). A start event has no end.
	start, end time.Duration
	span       bool
	error      bool
}

// reloadStream returns the seeded stream of windows 1 to windows−2 (the
// last windows receive the late spans): n instances a window of the
// probes of the reload configuration (a: dMax 200 ms, b: 400 ms), each
// with its fate — counted by its span, a span longer than dMax within the
// grace, a failure, no span (a timeout), a span after its window closed
// (late), a start event after its span, no start event, or its start
// event twice — sorted by delivery. With slow, some spans come after
// their instance timed out but before its window closed (late too): a
// reload holds an instance carried over for such a span (reloadHold), and
// counts it by its duration.
func reloadStream(seed uint64, windows, n int, slow bool) []reloadEvent {
	r := rand.New(rand.NewPCG(seed, 7))
	dmax := map[string]time.Duration{"a": 200 * time.Millisecond, "b": 400 * time.Millisecond}
	var evs []reloadEvent
	id := uint32(0)
	for w := 1; w < windows-2; w++ {
		for range n {
			id++
			p := []string{"a", "b"}[r.IntN(2)]
			start := time.Duration(w)*time.Second + time.Duration(r.Int64N(int64(time.Second)))
			// Log-uniform from 1 ms to dMax.
			d := time.Duration(math.Exp(math.Log(1e6) + r.Float64()*(math.Log(float64(dmax[p]))-math.Log(1e6))))
			transit := time.Duration(r.Int64N(int64(20 * time.Millisecond)))
			se := reloadEvent{at: start, id: id, probe: p, start: start}
			sp := reloadEvent{id: id, probe: p, start: start, span: true}
			switch f := r.IntN(20); {
			case f == 0: // longer than dMax, within the grace
				d = dmax[p] + time.Duration(1+r.Int64N(int64(20*time.Millisecond)))
			case f == 1:
				sp.error = true
			case f == 2: // no span: a timeout
				evs = append(evs, se)
				continue
			case f == 3: // late: after the window of its deadline closed
				transit = 2*time.Second + time.Duration(r.Int64N(int64(time.Second)))
			case f == 4: // the start event after its span
				se.at = start + d + transit + 10*time.Millisecond
			case f == 5: // no start event
				se.at = -1
			case f == 7 && slow: // after its timeout, before its window closes
				transit = 100*time.Millisecond + time.Duration(r.Int64N(int64(300*time.Millisecond)))
			case f == 6: // the start event twice
				again := se
				again.at += time.Duration(r.Int64N(int64(d)))
				evs = append(evs, again)
			}
			sp.end = start + d
			sp.at = sp.end + transit
			evs = append(evs, sp)
			if se.at >= 0 {
				evs = append(evs, se)
			}
		}
	}
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].at < evs[j].at })
	return evs
}

// reloadIDs returns the trace and span ids of instance id.
func reloadIDs(id uint32) (pcommon.TraceID, pcommon.SpanID) {
	var tid pcommon.TraceID
	var sid pcommon.SpanID
	binary.BigEndian.PutUint32(tid[12:], id)
	tid[0] = 1
	binary.BigEndian.PutUint32(sid[4:], id)
	sid[0] = 1
	return tid, sid
}

// deliver hands the events to the connector: the spans of consecutive
// span events in one batch, the start events in another.
func (r *startRig) deliver(t *testing.T, evs []reloadEvent) {
	t.Helper()
	ctx := context.Background()
	for len(evs) > 0 {
		n := 1
		for n < len(evs) && evs[n].span == evs[0].span {
			n++
		}
		if evs[0].span {
			td := ptrace.NewTraces()
			spans := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
			for _, e := range evs[:n] {
				sp := spans.AppendEmpty()
				sp.SetName(e.probe)
				tid, sid := reloadIDs(e.id)
				sp.SetTraceID(tid)
				sp.SetSpanID(sid)
				sp.SetStartTimestamp(pcommon.NewTimestampFromTime(at(e.start)))
				sp.SetEndTimestamp(pcommon.NewTimestampFromTime(at(e.end)))
				if e.error {
					sp.Status().SetCode(ptrace.StatusCodeError)
				}
			}
			require.NoError(t, r.traces.ConsumeTraces(ctx, td))
		} else {
			ld := plog.NewLogs()
			lrs := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords()
			for _, e := range evs[:n] {
				lr := lrs.AppendEmpty()
				lr.SetEventName(contract.StartEventName)
				lr.SetTimestamp(pcommon.NewTimestampFromTime(at(e.start)))
				tid, sid := reloadIDs(e.id)
				lr.SetTraceID(tid)
				lr.SetSpanID(sid)
				lr.Attributes().PutStr(contract.AttrProbe, e.probe)
			}
			require.NoError(t, r.logs.ConsumeLogs(ctx, ld))
		}
		evs = evs[n:]
	}
}

// reloadAt is a reload of a run: at the first step from at, a SIGHUP; the connector
// the new configuration (cfg, nil: the same) builds starts gap later. A
// refused reload stops the collector: the run ends there.
type reloadAt struct {
	at, gap time.Duration
	cfg     *Config
	refused bool
}

// reloadRun is what a run produced: every data point of the output,
// canonical (reloadPoints), the sums of the connector's counters by
// attribute, and the connector's logs at info level and above.
type reloadRun struct {
	points   []string
	counters map[string]map[string]int64
	logs     []observer.LoggedEntry
}

// reloadCounters are the counters a run sums, with the attribute each is
// summed by ("" none): those counted as they happen. (Those the window
// timer counts from the engine's totals, such as instances, count at each
// tick what the engine counted since the last one: what a connector counted
// after its last tick is in the windows it hands over, not in its counter.)
var reloadCounters = map[string]string{
	"start_events": "result", "start_timeouts": "probe", "late_spans": "probe",
	"windows_closed": "", "triggers_fired": "trigger", "in_flight_evictions": "state", "ended_evictions": "",
}

// runReloads feeds evs to a connector of cfg from 1 s to end, reloading
// it as reloads say (sorted by at), and shuts it down at end.
func runReloads(t *testing.T, cfg *Config, evs []reloadEvent, end time.Duration, reloads ...reloadAt) reloadRun {
	t.Helper()
	st := collectorstate.New()
	st.Reload = reload.New()
	run := reloadRun{counters: map[string]map[string]int64{}}
	collect := func(r *startRig) {
		for _, md := range r.sink.AllMetrics() {
			run.points = append(run.points, reloadPoints(md)...)
		}
		for name, key := range reloadCounters {
			for v, n := range counterByAttr(t, r.tel, name, key) {
				if run.counters[name] == nil {
					run.counters[name] = map[string]int64{}
				}
				run.counters[name][v] += n
			}
		}
		run.logs = append(run.logs, r.warnings.All()...)
	}
	r := newRigAt(t, cfg, st, zapcore.InfoLevel, true, at(time.Second))
	next, now := 0, time.Second
	deliverUpTo := func(to time.Duration) {
		i := next
		for i < len(evs) && evs[i].at <= to {
			i++
		}
		r.deliver(t, evs[next:i])
		next = i
	}
	for now < end {
		now += reloadStep
		deliverUpTo(now)
		r.expire(at(now))
		if now%time.Second == 0 {
			r.clk.Tick(at(now))
		}
		if len(reloads) == 0 || reloads[0].at > now {
			continue
		}
		rl := reloads[0]
		reloads = reloads[1:]
		if rl.refused {
			st.Reload.Refused(fmt.Errorf("invalid configuration"))
			r.shutdown(t)
			collect(r)
			return run
		}
		st.Reload.Requested()
		r.shutdown(t)
		collect(r)
		c := cfg
		if rl.cfg != nil {
			c, cfg = rl.cfg, rl.cfg
		}
		now += rl.gap
		r = newRigAt(t, c, st, zapcore.InfoLevel, true, at(now))
		// What was sent in the gap comes now, in order; then the timer runs.
		deliverUpTo(now)
		r.expire(at(now))
	}
	r.shutdown(t)
	collect(r)
	return run
}

// reloadPoints returns the data points of md, each as one line: the
// metric, its attributes, its start and end times, and its value. The
// exemplars are left out.
func reloadPoints(md pmetric.Metrics) []string {
	var out []string
	rms := md.ResourceMetrics()
	for i := range rms.Len() {
		sms := rms.At(i).ScopeMetrics()
		for j := range sms.Len() {
			ms := sms.At(j).Metrics()
			for k := range ms.Len() {
				m := ms.At(k)
				head := func(attrs pcommon.Map, start, ts pcommon.Timestamp) string {
					var kv []string
					for key, v := range attrs.All() {
						kv = append(kv, key+"="+v.AsString())
					}
					slices.Sort(kv)
					return fmt.Sprintf("%s{%s} [%d, %d]", m.Name(), strings.Join(kv, ","), start, ts)
				}
				switch m.Type() {
				case pmetric.MetricTypeGauge:
					dps := m.Gauge().DataPoints()
					for l := range dps.Len() {
						dp := dps.At(l)
						out = append(out, fmt.Sprintf("%s %v %v", head(dp.Attributes(), dp.StartTimestamp(), dp.Timestamp()), dp.DoubleValue(), dp.IntValue()))
					}
				case pmetric.MetricTypeSum:
					dps := m.Sum().DataPoints()
					for l := range dps.Len() {
						dp := dps.At(l)
						out = append(out, fmt.Sprintf("%s %v %v", head(dp.Attributes(), dp.StartTimestamp(), dp.Timestamp()), dp.DoubleValue(), dp.IntValue()))
					}
				case pmetric.MetricTypeHistogram:
					dps := m.Histogram().DataPoints()
					for l := range dps.Len() {
						dp := dps.At(l)
						out = append(out, fmt.Sprintf("%s %d %v %v %v", head(dp.Attributes(), dp.StartTimestamp(), dp.Timestamp()),
							dp.Count(), dp.Sum(), dp.BucketCounts().AsRaw(), dp.ExplicitBounds().AsRaw()))
					}
				case pmetric.MetricTypeExponentialHistogram:
					dps := m.ExponentialHistogram().DataPoints()
					for l := range dps.Len() {
						dp := dps.At(l)
						out = append(out, fmt.Sprintf("%s %d %v %d %d %v", head(dp.Attributes(), dp.StartTimestamp(), dp.Timestamp()),
							dp.Count(), dp.Sum(), dp.Scale(), dp.Positive().Offset(), dp.Positive().BucketCounts().AsRaw()))
					}
				}
			}
		}
	}
	return out
}

// newRigAt is newRig whose clock starts at now.
func newRigAt(t *testing.T, cfg *Config, st *collectorstate.State, level zapcore.Level, withLogs bool, now time.Time) *startRig {
	t.Helper()
	r := &startRig{clk: coretest.NewClock(now), sink: new(consumertest.MetricsSink), tel: componenttest.NewTelemetry()}
	r.starts = r.clk.Starts
	t.Cleanup(func() { require.NoError(t, r.tel.Shutdown(context.Background())) })
	f := newFactory(st, func(s *core.Settings) {
		s.Now, s.Ticks, s.StartTicks, s.Ticked = r.clk.Now, r.clk.C, r.starts, r.clk.Ticked
	})
	set := connectortest.NewNopSettings(metadata.Type)
	set.ID = component.NewID(metadata.Type)
	set.TelemetrySettings = r.tel.NewTelemetrySettings()
	var logs zapcore.Core
	logs, r.warnings = observer.New(level)
	set.Logger = zap.New(logs)
	cf := f.connectorFactory()
	var err error
	r.traces, err = cf.CreateTracesToMetrics(context.Background(), set, cfg, r.sink)
	require.NoError(t, err)
	if withLogs {
		r.logs, err = cf.CreateLogsToMetrics(context.Background(), set, cfg, r.sink)
		require.NoError(t, err)
	}
	require.NoError(t, r.traces.Start(context.Background(), componenttest.NewNopHost()))
	if withLogs {
		require.NoError(t, r.logs.Start(context.Background(), componenttest.NewNopHost()))
	}
	return r
}

// TestReloadDifferential: with the configuration unchanged, a run with
// reloads at random points, each with a random gap, has the same output as
// the run without: every window's outcomes, histograms, CDF, quantiles,
// QTA verdicts and cumulative streams (their start times too), and the
// same start-event results, timeouts, late spans and triggers. Two of the
// reloads fall in one window. A reload the collector refuses ends the run
// as a stop at its SIGHUP would.
func TestReloadDifferential(t *testing.T) {
	const windows = 12
	for seed := range uint64(4) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			evs := reloadStream(seed, windows, 40, false)
			cfg := loadConfig(t, "reload")
			end := windows * time.Second
			want := runReloads(t, cfg, evs, end)
			r := rand.New(rand.NewPCG(seed, 11))
			var reloads []reloadAt
			for s := 2; s < windows-1; s += 2 + r.IntN(3) {
				first := time.Duration(s)*time.Second + reloadStep*time.Duration(1+r.IntN(60))
				reloads = append(reloads, reloadAt{at: first, gap: reloadStep * time.Duration(r.IntN(30))})
				if s == 2 { // a second SIGHUP in the same window
					reloads = append(reloads, reloadAt{at: first + reloads[0].gap + reloadStep*time.Duration(1+r.IntN(5)), gap: reloadStep})
				}
			}
			got := runReloads(t, cfg, evs, end, reloads...)
			slices.Sort(want.points)
			slices.Sort(got.points)
			require.Equal(t, want.counters, got.counters, "reloads %v", reloads)
			require.Equal(t, strings.Join(want.points, "\n"), strings.Join(got.points, "\n"), "reloads %v", reloads)

			// A reload the collector refuses stops it: the output is a
			// stop's, after the reloads before it.
			last := reloads[len(reloads)-1]
			stop := last.at + last.gap + reloadStep*time.Duration(1+r.IntN(50))
			want = runReloads(t, cfg, evs, stop, reloads...)
			got = runReloads(t, cfg, evs, end, append(slices.Clone(reloads), reloadAt{at: stop, refused: true})...)
			slices.Sort(want.points)
			slices.Sort(got.points)
			require.Equal(t, want.counters, got.counters)
			require.Equal(t, strings.Join(want.points, "\n"), strings.Join(got.points, "\n"))
		})
	}
}

// reloadTotals returns, by probe, the instances the run's deltaq.outcomes
// counted: the last value of each cumulative stream (a probe's outcome and
// start time), summed. It fails the test when a stream's value goes down.
func reloadTotals(t *testing.T, run reloadRun) map[string]int64 {
	t.Helper()
	type point struct {
		ts    uint64
		value int64
	}
	streams := map[string][]point{}
	probeOf := map[string]string{}
	for _, line := range run.points {
		if !strings.HasPrefix(line, contract.MetricOutcomes+"{") {
			continue
		}
		var start, ts uint64
		var v float64
		var n int64
		i := strings.Index(line, "} [")
		_, err := fmt.Sscanf(line[i+3:], "%d, %d] %v %d", &start, &ts, &v, &n)
		require.NoError(t, err, line)
		stream := fmt.Sprint(line[:i], start)
		streams[stream] = append(streams[stream], point{ts, n})
		for _, kv := range strings.Split(line[len(contract.MetricOutcomes)+1:i], ",") {
			if p, ok := strings.CutPrefix(kv, contract.AttrProbe+"="); ok {
				probeOf[stream] = p
			}
		}
	}
	totals := map[string]int64{}
	for stream, ps := range streams {
		sort.Slice(ps, func(i, j int) bool { return ps[i].ts < ps[j].ts })
		for i := 1; i < len(ps); i++ {
			require.GreaterOrEqual(t, ps[i].value, ps[i-1].value, "a cumulative stream goes down without a new start: %s", stream)
		}
		if p := probeOf[stream]; p == "a" || p == "b" { // the diagram's flow has no outcomes
			totals[p] += ps[len(ps)-1].value
		}
	}
	return totals
}

// reloadInstances returns the instances of the stream by probe: those
// with a span or a start event.
func reloadInstances(evs []reloadEvent) map[string]int64 {
	seen := map[uint32]bool{}
	out := map[string]int64{}
	for _, e := range evs {
		if !seen[e.id] {
			seen[e.id] = true
			out[e.probe]++
		}
	}
	return out
}

// TestReloadChangesCountEachInstanceOnce: reloads that change the
// configuration count every instance at most once, and exactly once when
// the change does not concern its probe; without a reload every instance
// counts exactly once. The changes: a QTA edit, a changed diagram, a
// probe's bins, a probe's dmax (its instances in flight are dropped, as
// the log says: those whose span never comes are not counted), a smaller
// max_in_flight (those it evicts before their timeouts likewise) or
// max_ended, a probe removed and added back (its spans meanwhile are no
// instances), another interval (nothing carried: the open windows close
// as at a stop, and the probes start afresh).
func TestReloadChangesCountEachInstanceOnce(t *testing.T) {
	const windows = 12
	end := windows * time.Second
	evs := reloadStream(5, windows, 40, true)
	base := loadConfig(t, "reload")
	want := reloadTotals(t, runReloads(t, base, evs, end))
	require.Equal(t, reloadInstances(evs), want, "without a reload, each instance once")
	spans := map[uint32]bool{}
	for _, e := range evs {
		spans[e.id] = spans[e.id] || e.span
	}
	timeouts := map[string]int64{} // the instances without a span
	for _, e := range evs {
		if !spans[e.id] {
			timeouts[e.probe]++ // one start event each
		}
	}
	edit := func(f func(c *Config)) *Config {
		c := loadConfig(t, "reload")
		f(c)
		return c
	}
	probe := func(name string, f func(p *analysis.ProbeConfig)) func(c *Config) {
		return func(c *Config) {
			p := c.Probes[name]
			f(&p)
			c.Probes[name] = p
		}
	}
	for _, c := range []struct {
		name    string
		reloads []reloadAt
		// exact are the probes counted exactly as without the reload; the
		// others at most as often, and at least less their timeouts
		// (less what they lose otherwise: lost).
		exact []string
		lost  int64
		// afresh are the probes that start afresh (a new layout, another
		// interval): a new deltaq.observed stream, and the log says so.
		afresh []string
	}{
		{"qta", []reloadAt{{at: 4*time.Second + 370*time.Millisecond, gap: 120 * time.Millisecond,
			cfg: edit(probe("a", func(p *analysis.ProbeConfig) { p.QTA.Points[0].Delay = 20 * time.Millisecond }))}}, []string{"a", "b"}, 0, nil},
		{"diagram", []reloadAt{{at: 4*time.Second + 370*time.Millisecond, gap: 120 * time.Millisecond,
			cfg: edit(func(c *Config) { c.Diagram = "flow = f:ftf(a, b);" })}}, []string{"a", "b"}, 0, nil},
		{"bins", []reloadAt{{at: 4*time.Second + 370*time.Millisecond, gap: 120 * time.Millisecond,
			cfg: edit(probe("a", func(p *analysis.ProbeConfig) { p.Bins = 20 }))}}, []string{"a", "b"}, 0, []string{"a"}},
		{"dmax", []reloadAt{{at: 4*time.Second + 370*time.Millisecond, gap: 120 * time.Millisecond,
			cfg: edit(probe("a", func(p *analysis.ProbeConfig) { p.DMax = 300 * time.Millisecond }))}}, []string{"b"}, 0, []string{"a"}},
		{"max_in_flight", []reloadAt{{at: 4*time.Second + 370*time.Millisecond, gap: 120 * time.Millisecond,
			cfg: edit(func(c *Config) { c.StartEvents.MaxInFlight = 3 })}}, nil, 0, nil},
		{"max_ended", []reloadAt{{at: 4*time.Second + 370*time.Millisecond, gap: 120 * time.Millisecond,
			cfg: edit(func(c *Config) { c.StartEvents.MaxEnded = 100 })}}, nil, 0, nil},
		{"probe removed and added back", []reloadAt{
			{at: 3*time.Second + 370*time.Millisecond, gap: 120 * time.Millisecond, cfg: edit(func(c *Config) {
				delete(c.Probes, "b")
				delete(c.Matched, "b")
				c.Diagram = ""
			})},
			{at: 6*time.Second + 510*time.Millisecond, gap: 30 * time.Millisecond, cfg: base}}, []string{"a"}, 80, nil},
		{"lag", []reloadAt{
			{at: 2*time.Second + 370*time.Millisecond, gap: 120 * time.Millisecond, cfg: edit(func(c *Config) { c.Lag = 5 * time.Second })},
			{at: 7*time.Second + 730*time.Millisecond, gap: 60 * time.Millisecond, cfg: base}}, []string{"a", "b"}, 0, nil},
		{"interval", []reloadAt{{at: 4*time.Second + 370*time.Millisecond, gap: 120 * time.Millisecond,
			cfg: edit(func(c *Config) { c.Interval = 2 * time.Second })}}, []string{"a", "b"}, 0, []string{"a", "b"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			run := runReloads(t, base, evs, end, c.reloads...)
			got := reloadTotals(t, run)
			for _, p := range []string{"a", "b"} {
				streams := 1
				if slices.Contains(c.afresh, p) {
					streams = 2
				}
				require.Len(t, reloadStreams(run, contract.MetricObserved, p), streams, "the deltaq.observed streams of %s", p)
			}
			for _, p := range c.afresh {
				said := false
				for _, e := range run.logs {
					probe, named := e.ContextMap()["probe"]
					said = said || strings.Contains(e.Message, "starts afresh") && (!named || probe == p)
				}
				require.True(t, said, "the log says that %s starts afresh", p)
			}
			if c.name == "qta" {
				qtaFromNextWindow(t, runReloads(t, base, evs, end), runReloads(t, c.reloads[0].cfg, evs, end), run, at(c.reloads[0].at))
			}
			// An instance max_in_flight evicts before its timeout is not
			// counted unless its span comes.
			evicted := run.counters["in_flight_evictions"]["started"]
			for _, p := range []string{"a", "b"} {
				if slices.Contains(c.exact, p) {
					require.Equal(t, want[p], got[p], "probe %s", p)
					continue
				}
				require.LessOrEqual(t, got[p], want[p], "probe %s: an instance counted twice", p)
				require.GreaterOrEqual(t, got[p], want[p]-timeouts[p]-c.lost-evicted, "probe %s", p)
			}
		})
	}
}

// qtaFromNextWindow checks a run with a reload at the time reload that
// edits a QTA: the windows that closed before the reload are those of the
// run of the old configuration (old), those that close after it judged
// by the new QTA, as in the run of the new configuration (nu), and
// everything else is old's: the observed ΔQs, the band, the totals (the
// slack's trend, which waits for windows of the new QTA, aside).
func qtaFromNextWindow(t *testing.T, old, nu, run reloadRun, reload time.Time) {
	t.Helper()
	verdict := func(line string) bool {
		if strings.Contains(line, contract.AttrSeries+"="+"qta") { // the QTA's curve in deltaq.cdf
			return true
		}
		for _, name := range []string{contract.MetricQTAViolation, contract.MetricQTAPoint, contract.MetricQTAHolds, contract.MetricQTASlack,
			contract.MetricQTASlackMin, contract.MetricQTAMarginMin} {
			if strings.HasPrefix(line, name+"{") {
				return true
			}
		}
		return false
	}
	// A window closes a lag (one interval) after its end, the time of
	// its points.
	closedAfter := func(line string) bool {
		var start, ts int64
		i := strings.Index(line, "} [")
		_, err := fmt.Sscanf(line[i+3:], "%d, %d]", &start, &ts)
		require.NoError(t, err)
		return time.Unix(0, ts).Add(time.Second).After(reload)
	}
	// The slack's trend runs over the windows of the new QTA alone
	// (analysis.Engine.Adopt): it has fewer of them than nu's.
	trend := func(line string) bool {
		return strings.HasPrefix(line, contract.MetricQTASlackTrendStdErr+"{") || strings.HasPrefix(line, contract.MetricQTASlackTrendUpper+"{") ||
			strings.HasPrefix(line, contract.MetricQTATimeToViolation+"{")
	}
	var want, got []string
	for _, line := range old.points {
		if !verdict(line) && !(trend(line) && closedAfter(line)) || !closedAfter(line) {
			want = append(want, line)
		}
	}
	for _, line := range nu.points {
		if verdict(line) && closedAfter(line) {
			want = append(want, line)
		}
	}
	for _, line := range run.points {
		if !trend(line) || !closedAfter(line) {
			got = append(got, line)
		}
	}
	slices.Sort(want)
	slices.Sort(got)
	require.Equal(t, strings.Join(want, "\n"), strings.Join(got, "\n"))
}

// reloadStreams returns the start times of the streams of a cumulative
// metric of a probe in a run.
func reloadStreams(run reloadRun, metric, probe string) []uint64 {
	var starts []uint64
	for _, line := range run.points {
		i := strings.Index(line, "} [")
		if !strings.HasPrefix(line, metric+"{") || !slices.Contains(strings.Split(line[len(metric)+1:i], ","), contract.AttrProbe+"="+probe) {
			continue
		}
		var start uint64
		if _, err := fmt.Sscanf(line[i+3:], "%d,", &start); err == nil && !slices.Contains(starts, start) {
			starts = append(starts, start)
		}
	}
	return starts
}
