// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaqconnector_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/deltaq-otel/deltaq/analysis"
	"github.com/deltaq-otel/deltaq/deltaq"
	"github.com/deltaq-otel/deltaq/internal/contract"
	"github.com/deltaq-otel/deltaq/internal/core/coretest"
)

// The seeded differential of deltaq analyze against the connector: many
// seeds of spans over several configurations (interval, lag, bins, dMax),
// each span's fate in both known from the rules the READMEs give
// (seedModel), so that the two are compared window by window wherever
// those rules place the same instances in the same window, and where they
// do not, each is held to its own placement.

// seedParams are a configuration's interval, lag (0: the default, one
// interval), bins and base dMax, and what it adds to the probes of every
// configuration.
type seedParams struct {
	interval, lag, dmax time.Duration
	bins                int
	// extras adds what-if scenarios, a divergence trigger pooling three
	// windows, a slack trend trigger, a load trigger, a qoo min_rate, the
	// default quantiles, log-linear buckets for auth and a probe, get,
	// that matches front's spans too, of both services.
	extras bool
	// gap leaves the traffic off for this long in the middle.
	gap time.Duration
}

func (p seedParams) String() string {
	s := fmt.Sprintf("interval %s lag %s dmax %s bins %d", p.interval, p.lag, p.dmax, p.bins)
	if p.extras {
		s += " extras"
	}
	if p.gap > 0 {
		s += " gap " + p.gap.String()
	}
	return s
}

// effLag is the lag in force.
func (p seedParams) effLag() time.Duration {
	if p.lag == 0 {
		return p.interval
	}
	return p.lag
}

// quantiles are the quantiles the connector reports.
func (p seedParams) quantiles() []float64 {
	if p.extras {
		return analysis.DefaultQuantiles
	}
	return []float64{0.25, 0.5, 0.9}
}

// seedProbe is a probe of the seeded configuration, its dMax, and whether
// it is part of the diagram.
type seedProbe struct {
	name    string
	dmax    time.Duration
	diagram bool
}

// seedProbes are the probes of p: front = cache -> a:fan(db, auth), and
// search, a dmax: auto probe (dmax_max the base dMax) whose sample is never
// full, so that it keeps dmax_max, at which deltaq analyze reads it; with
// extras, get. auth's dMax with log-linear buckets is their high edge.
func seedProbes(p seedParams) []seedProbe {
	out := []seedProbe{{"front", p.dmax, true}, {"cache", p.dmax / 4, true}, {"db", p.dmax / 2, true},
		{"auth", p.dmax / 2, true}, {"search", p.dmax, false}}
	if p.extras {
		out[3].dmax = seedLogHigh(p.dmax / 2)
		out = append(out, seedProbe{"get", p.dmax * 2, false})
	}
	return out
}

// seedLogHigh is the high edge of auth's log-linear buckets: the power of
// ten of seconds at or below d.
func seedLogHigh(d time.Duration) time.Duration {
	h := time.Duration(math.Pow(10, math.Floor(math.Log10(d.Seconds()))) * float64(time.Second))
	return h
}

// seedMs writes d in milliseconds.
func seedMs(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', -1, 64) + "ms"
}

// seedConfig is the connector-only collector configuration of p: probes
// matched by name and service, by name and kind, by a regular expression
// and an attribute, by name and attribute, and by name alone (dmax: auto);
// failures by status and by attribute; QTAs with triggers, a qoo
// requirement and a diagram with an all-to-finish operator.
func seedConfig(p seedParams) string {
	ms := seedMs
	quantiles, auth, frontExtra, top := "quantiles: [0.25, 0.5, 0.9]", fmt.Sprintf("dmax: %s\n        bins: %d", ms(p.dmax/2), max(p.bins/2, 1)), "", ""
	if p.extras {
		high := seedLogHigh(p.dmax / 2)
		quantiles = ""
		auth = fmt.Sprintf("binning: {kind: log-linear, factor: 10, low: %s, high: %s, steps: 10}", ms(high/1000), ms(high))
		frontExtra = fmt.Sprintf(`
          max_instances: 60
          slack_trend: {horizon: %s, windows: 4}
          divergence: {alpha: 0.2, pool: 3}
          max_divergence: 0.05`, ms(10*p.interval))
		top = `
    whatif:
      faster_cache: {cache: "0.5*X"}
      no_auth: {auth: remove}`
	}
	minRate := ""
	if p.extras {
		minRate = "\n          min_rate: 20"
	}
	get := ""
	if p.extras {
		get = fmt.Sprintf(`
      get:
        match: {span_name_regexp: "^GET "}
        dmax: %s
        bins: %d`, ms(2*p.dmax), p.bins)
	}
	return fmt.Sprintf(`
connectors:
  deltaq:
    interval: %s
    lag: %s
    %s%s
    diagram: |
      front = cache -> a:fan(db, auth);
    probes:
      front:
        match: {span_name: GET /front, service_name: web}
        dmax: %s
        bins: %d
        failure: {status_error: true}
        qta: {points: [{delay: %s, p: 0.5}], max_failure: 0.1}
        triggers:
          qta: true
          failure: true%s
        qoo:
          rop: {points: [{p: 0.5, delay: %s}], max_failure: 0.02}
          cpup: {points: [{p: 0.5, delay: %s}], max_failure: 0.5}%s
      cache:
        match: {span_name: cache, span_kind: client}
        dmax: %s
        bins: %d
      db:
        match: {span_name_regexp: "^db ", attributes: {db.system: postgres}}
        dmax: %s
        bins: %d
        failure: {conditions: [{attribute: db.error, value: deadlock}]}
        qta: {points: [{delay: %s, p: 0.5}], max_failure: 0.2}
      auth:
        match: {span_name: auth, attributes: {peer: idp}}
        %s
        failure: {status_error: true}
      search:
        match: {}
        dmax: auto
        bins: %d
        dmax_max: %s
        dmax_sample: 10000000%s
`, ms(p.interval), ms(p.lag), quantiles, top, ms(p.dmax), p.bins, ms(p.dmax/4), frontExtra, ms(p.dmax/8), ms(p.dmax/2), minRate,
		ms(p.dmax/4), p.bins, ms(p.dmax/2), p.bins, ms(p.dmax/8), auth, p.bins, ms(p.dmax), get)
}

// seedSpan is a generated span and the instances it makes: the probes it
// matches, each with its outcome.
type seedSpan struct {
	diffSpan
	hits   []seedHit
	weight int64
}

// seedHit is an instance a span makes of a probe.
type seedHit struct {
	probe   string
	dmax    time.Duration
	failure bool
}

// seedSpans returns n requests' spans from coretest.T0 on, in arrival
// order, a request every interval/60 on average: front (from web, and from
// another service, which front does not match), cache (client spans from
// two services; server ones it does not match), db queries (postgres, and
// mysql ones db does not match), auth calls (to idp, and to another peer),
// search. Delays are exponential with a mean of a sixth of the probe's
// dMax, one in 25 four times longer (beyond dMax as often as not), one in
// 150 hanging for dMax + lag + two intervals (a timeout known only after
// its window closed); failures by status and by attribute; a tenth sampled
// (adjusted count 2); each span reaches the collector up to 0.8 lag after
// its end, one in 40 later still, up to lag + 1.5 intervals (too late, as
// often as not).
func seedSpans(r *rand.Rand, p seedParams, n int) []seedSpan {
	probes := map[string]seedProbe{}
	for _, pr := range seedProbes(p) {
		probes[pr.name] = pr
	}
	var out []seedSpan
	id := uint64(0)
	delay := func(probe string) time.Duration {
		d := time.Duration(r.ExpFloat64() * float64(probes[probe].dmax) / 6)
		switch {
		case r.IntN(150) == 0:
			d = probes[probe].dmax + p.effLag() + 2*p.interval + time.Duration(r.Int64N(int64(p.interval)))
		case r.IntN(25) == 0:
			d *= 4
		}
		return max(d, time.Microsecond)
	}
	add := func(s diffSpan, hits ...seedHit) {
		id++
		s.traceID[0], s.traceID[1], s.traceID[15] = byte(id), byte(id>>8), 1
		s.spanID[0], s.spanID[1], s.spanID[2] = byte(id), byte(id>>8), byte(id>>16)
		transit := time.Duration(r.Float64() * 0.8 * float64(p.effLag()))
		if r.IntN(40) == 0 {
			transit = p.effLag() + time.Duration(r.Float64()*1.5*float64(p.interval))
		}
		s.arrive = s.end.Add(transit)
		w := int64(1)
		if r.IntN(10) == 0 {
			s.traceState, w = "ot=th:8", 2
		}
		for i := range hits {
			hits[i].dmax = probes[hits[i].probe].dmax
		}
		out = append(out, seedSpan{diffSpan: s, hits: hits, weight: w})
	}
	for i := range n {
		t := coretest.At(0)
		if i > 0 {
			t = out[len(out)-1].start // the previous request's
			t = t.Add(time.Duration(r.ExpFloat64() * float64(p.interval) / 60))
		}
		if i == n/2 {
			t = t.Add(p.gap)
		}
		web := [...]string{"web", "api"}[r.IntN(2)]
		dc := delay("cache")
		cacheKind := ptrace.SpanKindClient
		if r.IntN(12) == 0 {
			cacheKind = ptrace.SpanKindServer
		}
		add(diffSpan{name: "cache", service: web, start: t, end: t.Add(dc), kind: cacheKind},
			hitsIf(cacheKind == ptrace.SpanKindClient, seedHit{probe: "cache"})...)
		dd, da := delay("db"), delay("auth")
		dbSystem, deadlock := "postgres", r.IntN(30) == 0
		if r.IntN(10) == 0 {
			dbSystem = "mysql"
		}
		attrs := [][2]string{{"db.system", dbSystem}}
		if deadlock {
			attrs = append(attrs, [2]string{"db.error", "deadlock"})
		}
		dbErr := r.IntN(20) == 0 // status ERROR: a failure too (status_error is true unless set)
		add(diffSpan{name: "db select", service: "store", start: t.Add(dc), end: t.Add(dc + dd), attrs: attrs, errored: dbErr},
			hitsIf(dbSystem == "postgres", seedHit{probe: "db", failure: deadlock || dbErr})...)
		peer, authErr := "idp", r.IntN(25) == 0
		if r.IntN(8) == 0 {
			peer = "ldap"
		}
		add(diffSpan{name: "auth", service: "login", start: t.Add(dc), end: t.Add(dc + da), attrs: [][2]string{{"peer", peer}}, errored: authErr},
			hitsIf(peer == "idp", seedHit{probe: "auth", failure: authErr})...)
		df := dc + max(dd, da) + time.Duration(r.Int64N(int64(p.dmax/50)+1))
		frontErr := r.IntN(25) == 0
		frontService := "web"
		if r.IntN(10) == 0 {
			frontService = "edge"
		}
		frontHits := hitsIf(frontService == "web", seedHit{probe: "front", failure: frontErr})
		if p.extras {
			frontHits = append(frontHits, seedHit{probe: "get", failure: frontErr})
		}
		add(diffSpan{name: "GET /front", service: frontService, start: t, end: t.Add(df), kind: ptrace.SpanKindServer, errored: frontErr}, frontHits...)
		if r.IntN(3) == 0 {
			ds, failed := delay("search"), r.IntN(30) == 0
			add(diffSpan{name: "search", service: web, start: t, end: t.Add(ds), errored: failed}, seedHit{probe: "search", failure: failed})
		}
		add(diffSpan{name: "unrelated", service: web, start: t, end: t.Add(time.Millisecond)})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].arrive.Before(out[j].arrive) })
	return out
}

// hitsIf returns hit when ok, else none.
func hitsIf(ok bool, hit seedHit) []seedHit {
	if ok {
		return []seedHit{hit}
	}
	return nil
}

// seedPlace is where an instance is counted: its window's end, or 0 when
// it is dropped.
type seedPlace struct {
	live, off int64
}

// seedInstance is one instance of the model: its probe, outcome, weight
// and places.
type seedInstance struct {
	probe   string
	outcome string
	weight  int64
	place   seedPlace
	own     int64 // the end of the window of its end (a timeout's: start + dMax)
	end     int64 // its span's end
	timeout bool
}

// seedModel places every instance of spans (in arrival order) as the
// READMEs say the connector and deltaq analyze place it. Window k holds
// the instances ending in [k·interval, (k+1)·interval), a timeout ending
// at start + dMax, and closes lag after its end; an instance of a closed
// window is dropped, but a timeout whose span itself ended in a window
// still open counts in the oldest open window. The connector's clock is
// each span's arrival (its windows close on its timer, before any span
// that arrives at or after their close); deltaq analyze's is the latest
// span end read (seedOffline).
func seedModel(t *testing.T, spans []seedSpan, p seedParams) []seedInstance {
	iv, lag := int64(p.interval), int64(p.effLag())
	off := seedOffline{iv: iv, lag: lag, clock: math.MinInt64, nslots: (lag+iv-1)/iv + 3}
	var ins []*seedInstance // the held ones are pointers
	for _, s := range spans {
		start, end, arrive := s.start.UnixNano(), s.end.UnixNano(), s.arrive.UnixNano()
		for _, h := range s.hits {
			in := &seedInstance{probe: h.probe, weight: s.weight, outcome: contract.Success, end: end}
			instEnd := end
			switch {
			case s.end.Sub(s.start) > h.dmax:
				in.outcome, in.timeout, instEnd = contract.Timeout, true, start+int64(h.dmax)
			case h.failure:
				in.outcome = contract.Failure
			}
			in.own = off.windowEnd(instEnd)
			in.place.live = off.place(in, arrive)
			ins = append(ins, in)
			off.add(t, in)
		}
	}
	off.catchUp()
	out := make([]seedInstance, len(ins))
	for i, in := range ins {
		out[i] = *in
	}
	return out
}

// seedOffline is the clock of deltaq analyze's windows, as its help and
// the README describe it: the latest instance end read, but an instance
// ending beyond the windows open is not taken for the time until the
// input says whether the time moved on to it (the traffic resumes after a
// gap: it counts, once the windows reach it or many instances are held)
// or it was ahead of the recording collector's clock (its host's clock is
// wrong: as many instances come after it within the open windows, at
// least 16: it is dropped). The seeded spans have no host clock ahead, so
// the model fails the test if it would drop one.
type seedOffline struct {
	iv, lag, nslots int64
	clock           int64 // math.MinInt64 before the first instance
	k0              int64 // the oldest open window, from the first instance on
	ahead           []*seedInstance
	behind          int
}

func (o *seedOffline) windowEnd(t int64) int64 { return (floorDivNs(t, o.iv) + 1) * o.iv }

func floorDivNs(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// place returns where an instance is counted at clock: the end of its
// window, or 0 when dropped.
func (o *seedOffline) place(in *seedInstance, clock int64) int64 {
	closed := func(end int64) bool { return end+o.lag <= clock }
	switch {
	case !closed(in.own):
		return in.own
	case in.timeout && !closed(o.windowEnd(in.end)):
		e := o.windowEnd(clock - o.lag) // the oldest window open
		for closed(e) {
			e += o.iv
		}
		return e
	}
	return 0
}

// beyond reports whether an instance ending at end lies beyond the open
// windows.
func (o *seedOffline) beyond(end int64) bool {
	return floorDivNs(end, o.iv) >= o.k0+o.nslots
}

// add reads an instance.
func (o *seedOffline) add(t *testing.T, in *seedInstance) {
	if o.clock == math.MinInt64 {
		o.clock, o.k0 = in.end, floorDivNs(in.end-o.lag, o.iv)
	}
	if o.beyond(in.end) {
		if o.ahead = append(o.ahead, in); len(o.ahead) == 1024 {
			o.catchUp()
		}
		return
	}
	if len(o.ahead) > 0 {
		o.behind++
		require.Less(t, o.behind, max(len(o.ahead), 16), "the model would drop instances ahead of the open windows: %+v", o.ahead[0])
	}
	o.count(in)
	for moved := true; moved; {
		moved = false
		kept := o.ahead[:0]
		for _, h := range o.ahead {
			if o.beyond(h.end) {
				kept = append(kept, h)
				continue
			}
			o.count(h)
			moved = true
		}
		o.ahead = kept
	}
	if len(o.ahead) == 0 {
		o.behind = 0
	}
}

// count places an instance within the open windows, the clock moving on
// to its end.
func (o *seedOffline) count(in *seedInstance) {
	if in.end > o.clock {
		o.clock = in.end
		o.k0 = max(o.k0, floorDivNs(o.clock-o.lag, o.iv))
	}
	in.place.off = o.place(in, o.clock)
}

// catchUp counts the instances held, the clock following them.
func (o *seedOffline) catchUp() {
	for _, h := range o.ahead {
		o.count(h)
	}
	o.ahead, o.behind = nil, 0
}

// seedKey is a probe's window, by its end in Unix ns.
type seedKey struct {
	end   int64
	probe string
}

// seedCounts returns the model's counts by window, for one side.
func seedCounts(ins []seedInstance, side func(seedPlace) int64) map[seedKey]map[string]int64 {
	out := map[seedKey]map[string]int64{}
	for _, in := range ins {
		at := side(in.place)
		if at == 0 {
			continue
		}
		k := seedKey{at, in.probe}
		if out[k] == nil {
			out[k] = map[string]int64{}
		}
		out[k][in.outcome] += in.weight
	}
	return out
}

// seedView is what the differential compares of a probe's window, by what
// each value depends on: the window alone ("window"), the windows of the
// diagram's probes ("diagram": the calculated ΔQ and what is read from it)
// and the probe's past windows too ("history": the band, the slack's
// trend). Values are text, so that views compare whole.
type seedView map[string]map[string]string

func (v seedView) put(group, name string, value float64) {
	if v[group] == nil {
		v[group] = map[string]string{}
	}
	v[group][name] = strconv.FormatFloat(value, 'g', -1, 64)
}

// seedCurve is a deltaq.cdf curve: its values by delay.
type seedCurve map[float64]float64

// text is the curve's values in order of delay.
func (c seedCurve) text() string {
	les := slices.Sorted(maps.Keys(c))
	out := ""
	for _, le := range les {
		out += strconv.FormatFloat(c[le], 'g', -1, 64) + " "
	}
	return out
}

// seedSeriesGroup is the group of a deltaq.series.
func seedSeriesGroup(series string) string {
	switch series {
	case contract.SeriesCalculated, contract.SeriesWhatIf:
		return "diagram"
	case contract.SeriesMean, contract.SeriesLower, contract.SeriesUpper:
		return "history"
	}
	return "window"
}

// seedLiveViews reads the connector's metrics into views of the probes'
// windows: the window's outcome counts (the cumulative deltaq.outcomes
// differenced within its stream; a new stream, as of a new deltaq.service,
// counts from its window's start), observed and calculated quantiles and
// curves, the band, the failure ratio, the QTA's verdict, holds and
// slacks, the divergence and its test, the bounds' width and the QoO
// scores.
func seedLiveViews(mds []pmetric.Metrics) map[seedKey]seedView {
	out := map[seedKey]seedView{}
	type stream struct {
		start pcommon.Timestamp
		last  int64
	}
	prev := map[string]stream{}
	curves := map[seedKey]map[string]seedCurve{}
	view := func(k seedKey) seedView {
		if out[k] == nil {
			out[k] = seedView{}
		}
		return out[k]
	}
	for _, md := range mds {
		for _, rm := range md.ResourceMetrics().All() {
			for _, sm := range rm.ScopeMetrics().All() {
				for _, m := range sm.Metrics().All() {
					if m.Name() == contract.MetricOutcomes {
						for _, dp := range m.Sum().DataPoints().All() {
							k, a := seedPoint(dp)
							sk := k.probe + "/" + a[contract.AttrOutcome]
							st, n := prev[sk], dp.IntValue()
							d := n - st.last
							if dp.StartTimestamp() != st.start {
								d = n
							}
							prev[sk] = stream{dp.StartTimestamp(), n}
							if d != 0 {
								view(k).put("window", "outcome "+a[contract.AttrOutcome], float64(d))
							}
						}
						continue
					}
					if m.Type() != pmetric.MetricTypeGauge {
						continue
					}
					for _, dp := range m.Gauge().DataPoints().All() {
						k, a := seedPoint(dp)
						v, series := dp.DoubleValue(), a[contract.AttrSeries]
						if sc, ok := a[contract.AttrScenario]; ok {
							series += " " + sc
						}
						switch m.Name() {
						case contract.MetricCDF:
							if series == contract.SeriesQTA {
								continue
							}
							le, err := strconv.ParseFloat(a[contract.AttrLE], 64)
							if err != nil {
								panic(err)
							}
							if curves[k] == nil {
								curves[k] = map[string]seedCurve{}
							}
							if curves[k][series] == nil {
								curves[k][series] = seedCurve{}
							}
							curves[k][series][le] = v
						case contract.MetricQuantile:
							view(k).put(seedSeriesGroup(strings.Fields(series)[0]), "q "+series+" "+a[contract.AttrQ], v)
						case contract.MetricQTAHolds, contract.MetricQoOScore, contract.MetricQoOLatency, contract.MetricQoOLoss:
							view(k).put(seedSeriesGroup(series), m.Name()+" "+series, v)
						case contract.MetricFailureRatio, contract.MetricQTAViolation, contract.MetricQTASlackMin, contract.MetricQTAMarginMin:
							view(k).put("window", m.Name(), v)
						case contract.MetricQTASlack:
							view(k).put("window", m.Name()+" "+a[contract.AttrLE], v)
						case contract.MetricDivergence, contract.MetricDivergenceP, contract.MetricDivergenceStatistic,
							contract.MetricDivergenceDetectable, contract.MetricBoundsWidth:
							view(k).put("diagram", m.Name(), v)
						case contract.MetricQTATimeToViolation, contract.MetricQTASlackTrendStdErr, contract.MetricQTASlackTrendUpper:
							view(k).put("history", m.Name(), v)
						}
					}
				}
			}
		}
	}
	for k, cs := range curves {
		for series, c := range cs {
			v := view(k)
			g := seedSeriesGroup(strings.Fields(series)[0])
			if v[g] == nil {
				v[g] = map[string]string{}
			}
			v[g]["cdf "+series] = c.text()
		}
	}
	return out
}

// seedPoint returns a point's probe window and its attributes.
func seedPoint(dp pmetric.NumberDataPoint) (seedKey, map[string]string) {
	a := map[string]string{}
	for k, v := range dp.Attributes().All() {
		a[k] = v.AsString()
	}
	return seedKey{int64(dp.Timestamp()), a[contract.AttrProbe]}, a
}

// seedOfflineViews reads the offline analysis's windows into the views
// seedLiveViews reads from the connector's metrics: the same values, at
// the quantiles configured (the report reads more) and the curves' edges
// (cdf_points, the default 32).
func seedOfflineViews(rs []*analysis.Result, quantiles []float64) map[seedKey]seedView {
	out := map[seedKey]seedView{}
	fq := func(q float64) string { return strconv.FormatFloat(q, 'g', -1, 64) }
	for _, r := range rs {
		for i := range r.Probes {
			p := &r.Probes[i]
			v := seedView{}
			for _, oc := range [...]struct {
				name string
				n    int64
			}{{contract.Success, p.Counts.Success}, {contract.Timeout, p.Counts.Timeout}, {contract.Failure, p.Counts.Failure}} {
				if oc.n != 0 {
					v.put("window", "outcome "+oc.name, float64(oc.n))
				}
			}
			for _, q := range p.Quantiles {
				if !slices.Contains(quantiles, q.Q) {
					continue
				}
				if q.ObservedOK {
					v.put("window", "q observed "+fq(q.Q), q.Observed)
				}
				if q.CalculatedOK {
					v.put("diagram", "q calculated "+fq(q.Q), q.Calculated)
				}
				for _, w := range p.WhatIf {
					if w.DeltaQ == nil {
						continue
					}
					if x, ok := w.DeltaQ.Quantile(q.Q); ok {
						v.put("diagram", "q whatif "+w.Scenario+" "+fq(q.Q), x)
					}
				}
			}
			seedOfflineCurves(v, p)
			if fr, ok := p.FailureRatio(); ok {
				v.put("window", contract.MetricFailureRatio, fr)
			}
			if c := p.QTACheck; c != nil {
				v.put("window", contract.MetricQTAViolation, map[bool]float64{true: 0, false: 1}[c.OK])
				v.put("window", contract.MetricQTAHolds+" observed", float64(c.Holds))
			}
			if c := p.CalculatedQTACheck; c != nil {
				v.put("diagram", contract.MetricQTAHolds+" calculated", float64(c.Holds))
			}
			if p.Bounds != nil {
				v.put("diagram", contract.MetricBoundsWidth, p.BoundsWidth)
			}
			if p.HasDivergence {
				v.put("diagram", contract.MetricDivergence, p.Divergence)
				v.put("diagram", contract.MetricDivergenceP, p.DivergenceTest.P)
				v.put("diagram", contract.MetricDivergenceStatistic, p.DivergenceTest.Statistic)
				v.put("diagram", contract.MetricDivergenceDetectable, p.DetectableDivergence)
			}
			if sl := p.Slack; sl != nil {
				for _, pt := range sl.Points {
					v.put("window", contract.MetricQTASlack+" "+fq(pt.Delay), pt.Slack)
				}
				v.put("window", contract.MetricQTASlackMin, sl.Min)
				if sl.MarginOK {
					v.put("window", contract.MetricQTAMarginMin, sl.MinMargin)
				}
				if sl.Trend.OK && sl.Trend.Projected {
					v.put("history", contract.MetricQTATimeToViolation, sl.Trend.TimeToViolation.Seconds())
				}
				if sl.Trend.OK {
					v.put("history", contract.MetricQTASlackTrendStdErr, sl.Trend.StdErr)
				}
				if sl.Trend.OK && sl.Trend.Falling {
					v.put("history", contract.MetricQTASlackTrendUpper, sl.Trend.Upper)
				}
			}
			if q := p.QoO; q != nil {
				for _, sc := range [...]struct {
					series string
					score  *analysis.QoOScore
				}{{contract.SeriesObserved, &q.Observed}, {contract.SeriesCalculated, &q.Calculated}} {
					if !sc.score.OK {
						continue
					}
					g := seedSeriesGroup(sc.series)
					v.put(g, contract.MetricQoOScore+" "+sc.series, sc.score.QoO.Score)
					if sc.score.QoO.HasLoss {
						v.put(g, contract.MetricQoOLoss+" "+sc.series, sc.score.QoO.Loss)
					}
					if sc.score.QoO.HasLatency {
						v.put(g, contract.MetricQoOLatency+" "+sc.series, sc.score.QoO.Latency)
					}
				}
			}
			if len(v) > 0 {
				out[seedKey{r.End.UnixNano(), p.Name}] = v
			}
		}
	}
	return out
}

// seedOfflineCurves puts the curves of p into v: the observed and
// calculated ΔQs' CDFs and the band's, at the edges the connector reports
// them (deltaq.CurveEdges of the default cdf_points).
func seedOfflineCurves(v seedView, p *analysis.ProbeResult) {
	const cdfPoints = 32
	text := func(vals []float64) string {
		out := ""
		for _, x := range vals {
			out += strconv.FormatFloat(x, 'g', -1, 64) + " "
		}
		return out
	}
	set := func(series, t string) {
		g := seedSeriesGroup(strings.Fields(series)[0])
		if v[g] == nil {
			v[g] = map[string]string{}
		}
		v[g]["cdf "+series] = t
	}
	for _, c := range [...]struct {
		series string
		d      *deltaq.DeltaQ
	}{{contract.SeriesObserved, p.Observed}, {contract.SeriesCalculated, p.Calculated}} {
		if c.d != nil {
			set(c.series, text(c.d.CDFEdgesAt(nil, deltaq.CurveEdges(c.d.Bins(), cdfPoints))))
		}
	}
	for _, w := range p.WhatIf {
		if w.DeltaQ != nil {
			set(contract.SeriesWhatIf+" "+w.Scenario, text(w.DeltaQ.CDFEdgesAt(nil, deltaq.CurveEdges(w.DeltaQ.Bins(), cdfPoints))))
		}
	}
	if bd := p.Band; bd != nil {
		for _, c := range [...]struct {
			series string
			cdf    []float64
		}{{contract.SeriesMean, bd.Mean}, {contract.SeriesLower, bd.Lower}, {contract.SeriesUpper, bd.Upper}} {
			vals := c.cdf
			if bd.At == nil {
				vals = nil
				for _, i := range deltaq.CurveEdges(bd.Bins(), cdfPoints) {
					vals = append(vals, c.cdf[i])
				}
			}
			set(c.series, text(vals))
		}
	}
}

// seedDiagram are the probes of the diagram: front, its operator fan, and
// the outcomes it is calculated from.
var seedDiagram = []string{"front", "fan", "cache", "db", "auth"}

// seedCheck compares the connector's and deltaq analyze's windows of spans
// (run) with each other and with the model, and returns how many probes'
// windows it compared whole and how many there were.
func seedCheck(t *testing.T, p seedParams, spans []seedSpan, run diffRun) (whole, all int) {
	t.Helper()
	model := seedModel(t, spans, p)
	live, off := seedLiveViews(run.metrics), seedOfflineViews(run.windows, p.quantiles())
	// Each side counts what the model places in its windows.
	for side, c := range map[string]struct {
		views  map[seedKey]seedView
		counts map[seedKey]map[string]int64
	}{"connector": {live, seedCounts(model, func(pl seedPlace) int64 { return pl.live })},
		"deltaq analyze": {off, seedCounts(model, func(pl seedPlace) int64 { return pl.off })}} {
		keys := map[seedKey]bool{}
		for k, v := range c.views {
			if len(v["window"]) > 0 && slices.ContainsFunc(slices.Collect(maps.Keys(v["window"])), func(n string) bool { return len(n) > 8 && n[:8] == "outcome " }) {
				keys[k] = true
			}
		}
		for k := range c.counts {
			keys[k] = true
		}
		for k := range keys {
			for _, oc := range []string{contract.Success, contract.Timeout, contract.Failure} {
				want := ""
				if n := c.counts[k][oc]; n != 0 {
					want = strconv.FormatInt(n, 10)
				}
				require.Equal(t, want, c.views[k]["window"]["outcome "+oc], "%s: %s, window ending %s, %s %s", p, side, time.Unix(0, k.end).UTC(), k.probe, oc)
			}
		}
	}
	// The whole input counts every instance.
	total := map[string]analysis.Counts{}
	for _, in := range model {
		c := total[in.probe]
		*map[string]*int64{contract.Success: &c.Success, contract.Timeout: &c.Timeout, contract.Failure: &c.Failure}[in.outcome] += in.weight
		total[in.probe] = c
	}
	for _, pr := range run.whole.Probes {
		require.Equal(t, total[pr.Name], pr.Counts, "%s: the whole input, %s", p, pr.Name)
	}
	// Where the two place an instance differently, it is as documented:
	// deltaq analyze's clock, the latest end read, runs behind the
	// connector's, the spans' arrival, so it counts a span the connector
	// found too late, and a timeout known late in an earlier window.
	differs := map[seedKey]bool{}
	firstDiff := map[string]int64{}
	for _, in := range model {
		pl := in.place
		if pl.live == pl.off {
			continue
		}
		require.True(t, pl.live == 0 || in.timeout && pl.off != 0 && pl.off < pl.live, "%s: %+v", p, in)
		for _, at := range []int64{pl.live, pl.off} {
			if at != 0 {
				differs[seedKey{at, in.probe}] = true
				if f, ok := firstDiff[in.probe]; !ok || at < f {
					firstDiff[in.probe] = at
				}
			}
		}
	}
	before := func(probe string, end int64) bool {
		f, ok := firstDiff[probe]
		return !ok || end < f
	}
	// The triggers of the diagram's probes (the divergence's) depend on
	// the windows of all of them.
	beforeAll := func(probe string, end int64) bool {
		if !slices.Contains(seedDiagram, probe) {
			return before(probe, end)
		}
		return !slices.ContainsFunc(seedDiagram, func(pr string) bool { return !before(pr, end) })
	}
	diagramDiffers := func(end int64) bool {
		return slices.ContainsFunc(seedDiagram, func(pr string) bool { return differs[seedKey{end, pr}] })
	}
	// pooledDiffer says whether the windows of a probe a divergence test
	// pools (the last three with a divergence, up to k) differ.
	pooledDiffer := func(views map[seedKey]seedView, k seedKey) bool {
		var ends []int64
		for vk, v := range views {
			if _, ok := v["diagram"][contract.MetricDivergence]; ok && vk.probe == k.probe && vk.end <= k.end {
				ends = append(ends, vk.end)
			}
		}
		slices.Sort(ends)
		return slices.ContainsFunc(ends[max(len(ends)-3, 0):], diagramDiffers)
	}
	counted := map[int64]bool{}
	lastWindow := int64(0) // the window of the last end read
	for _, in := range model {
		lastWindow = max(lastWindow, (in.end/int64(p.interval)+1)*int64(p.interval))
		counted[in.place.live], counted[in.place.off] = true, true
	}
	keys := map[seedKey]bool{}
	for k := range live {
		keys[k] = true
	}
	for k := range off {
		keys[k] = true
	}
	for k := range keys {
		if !counted[k.end] || k.end == 0 {
			continue // before the first instance, or after the last
		}
		all++
		at := fmt.Sprintf("%s: window ending %s, %s", p, time.Unix(0, k.end).UTC().Format(time.RFC3339Nano), k.probe)
		if !differs[k] {
			whole++
			lv, ov := live[k]["window"], off[k]["window"]
			if p.extras && k.end == lastWindow {
				// The last window's rate, which min_rate is checked
				// against, is over its instances' time up to the last
				// end (deltaq analyze's help), not its whole interval.
				lv, ov = maps.Clone(lv), maps.Clone(ov)
				delete(lv, contract.MetricQoOScore+" "+contract.SeriesObserved)
				delete(ov, contract.MetricQoOScore+" "+contract.SeriesObserved)
			}
			require.Equal(t, lv, ov, at)
		}
		if slices.Contains(seedDiagram, k.probe) && !diagramDiffers(k.end) {
			lv, ov := maps.Clone(live[k]["diagram"]), maps.Clone(off[k]["diagram"])
			if p.extras && (pooledDiffer(live, k) || pooledDiffer(off, k)) {
				// The divergence test pools the last three windows with
				// a divergence.
				for _, m := range []map[string]string{lv, ov} {
					for _, n := range []string{contract.MetricDivergenceP, contract.MetricDivergenceStatistic, contract.MetricDivergenceDetectable} {
						delete(m, n)
					}
				}
			}
			require.Equal(t, lv, ov, at+" (diagram)")
		}
		if before(k.probe, k.end) {
			require.Equal(t, live[k]["history"], off[k]["history"], at+" (history)")
		}
	}
	// The triggers of each probe, until its windows differ.
	keep := func(events []string) []string {
		var out []string
		for _, e := range events {
			var ts, probe, kind string
			_, err := fmt.Sscan(e, &ts, &probe, &kind)
			require.NoError(t, err)
			tm, err := time.Parse(time.RFC3339Nano, ts)
			require.NoError(t, err)
			if beforeAll(probe, tm.UnixNano()) {
				out = append(out, e)
			}
		}
		return out
	}
	require.Equal(t, keep(run.liveTriggers), keep(run.offTriggers), "%s: triggers", p)
	seedCheckReport(t, p, run.report, live, differs, diagramDiffers)
	return whole, all
}

// seedCheckReport compares deltaq analyze's --json windows with the
// connector's: counts, quantiles, failure ratio, QTA verdict and
// divergence of every probe's window the two count alike.
func seedCheckReport(t *testing.T, p seedParams, report []byte, live map[seedKey]seedView, differs map[seedKey]bool, diagramDiffers func(int64) bool) {
	t.Helper()
	var out struct {
		Windows []struct {
			End    string
			Probes map[string]struct {
				Count, Success, Timeout, Failure int64
				Quantiles                        map[string]*float64
				FailureRatio                     float64  `json:"failure_ratio"`
				QTAPass                          *bool    `json:"qta_pass"`
				Divergence                       *float64 `json:"divergence"`
			}
		}
	}
	require.NoError(t, json.Unmarshal(report, &out))
	require.NotEmpty(t, out.Windows)
	for _, w := range out.Windows {
		end, err := time.Parse(time.RFC3339Nano, w.End)
		require.NoError(t, err)
		for name, pj := range w.Probes {
			k := seedKey{end.UnixNano(), name}
			at := fmt.Sprintf("%s: --json window ending %s, %s", p, w.End, name)
			lv := live[k]["window"]
			if differs[k] {
				continue
			}
			got := map[string]string{}
			num := func(name string, v float64) { got[name] = strconv.FormatFloat(v, 'g', -1, 64) }
			for _, oc := range [...]struct {
				name string
				n    int64
			}{{contract.Success, pj.Success}, {contract.Timeout, pj.Timeout}, {contract.Failure, pj.Failure}} {
				if oc.n != 0 {
					num("outcome "+oc.name, float64(oc.n))
				}
			}
			require.Equal(t, pj.Count, pj.Success+pj.Timeout+pj.Failure, at)
			// The table's quantiles the connector reports too (the
			// table's are the median and 0.95 with the default ones).
			var qs []string
			for _, q := range p.quantiles() {
				fq := strconv.FormatFloat(q, 'g', -1, 64)
				if v, ok := pj.Quantiles[fq]; ok {
					qs = append(qs, "q observed "+fq)
					if v != nil {
						num("q observed "+fq, *v)
					}
				}
			}
			require.NotEmpty(t, qs, at)
			num(contract.MetricFailureRatio, pj.FailureRatio)
			if pj.QTAPass != nil {
				num(contract.MetricQTAViolation, map[bool]float64{true: 0, false: 1}[*pj.QTAPass])
			}
			want := map[string]string{}
			for n, v := range lv {
				if _, ok := got[n]; ok || slices.Contains(qs, n) || strings.HasPrefix(n, "outcome ") {
					want[n] = v
				}
			}
			require.Equal(t, want, got, at)
			if pj.Divergence != nil && !diagramDiffers(k.end) {
				require.Equal(t, live[k]["diagram"][contract.MetricDivergence], strconv.FormatFloat(*pj.Divergence, 'g', -1, 64), at)
			}
		}
	}
}

// seedRuns are the configurations of the seeded differential: windows of
// 1 s, 200 ms and 500 ms, lags from one interval down to a fifth and up to
// two and a half, bins from 20 to 200, dMax below and above the interval.
var seedRuns = []seedParams{
	{interval: time.Second, lag: 400 * time.Millisecond, dmax: 200 * time.Millisecond, bins: 50},
	{interval: 200 * time.Millisecond, lag: 500 * time.Millisecond, dmax: 100 * time.Millisecond, bins: 100},
	{interval: 500 * time.Millisecond, dmax: time.Second, bins: 20},
	{interval: 100 * time.Millisecond, lag: 100 * time.Millisecond, dmax: 40 * time.Millisecond, bins: 200},
	{interval: time.Second, lag: 200 * time.Millisecond, dmax: 800 * time.Millisecond, bins: 80},
	{interval: time.Second, lag: 400 * time.Millisecond, dmax: 200 * time.Millisecond, bins: 50, extras: true},
	{interval: 200 * time.Millisecond, lag: 300 * time.Millisecond, dmax: 400 * time.Millisecond, bins: 40, extras: true, gap: 2 * time.Second},
	{interval: 500 * time.Millisecond, dmax: 100 * time.Millisecond, bins: 100, gap: 3 * time.Second},
}

// TestOfflineAgreesWithTheConnectorSeeded: for many seeds of spans, over
// configurations of several intervals, lags, bins and dMax, deltaq
// analyze's windows (the offline analysis, and its --json report) are the
// connector's wherever the READMEs' rules place the same instances in the
// same window: outcome counts, observed quantiles and curves, the failure
// ratio, the QTA's verdict and slacks, the Quality of Outcome; with the
// diagram's probes alike, the calculated ΔQs, their quantiles and the
// divergence; with the probe's past windows alike, the band and the
// triggers. Where the rules place an instance differently (a span the
// connector found too late, a timeout known late), each side counts what
// they place in each window. Probes are matched by name and service, by
// kind, by a regular expression and an attribute, and one is dmax: auto.
func TestOfflineAgreesWithTheConnectorSeeded(t *testing.T) {
	seeds := uint64(2)
	if testing.Short() {
		seeds = 1
	}
	whole, all := 0, 0
	for i, p := range seedRuns {
		for seed := range seeds {
			r := rand.New(rand.NewPCG(seed, uint64(i)))
			spans := seedSpans(r, p, 9*60)
			diff := make([]diffSpan, len(spans))
			for j := range spans {
				diff[j] = spans[j].diffSpan
			}
			run := runDiffEvery(t, seedConfig(p), p.interval, p.effLag(), diff)
			w, a := seedCheck(t, p, spans, run)
			whole, all = whole+w, all+a
		}
	}
	t.Logf("%d of %d probes' windows compared whole", whole, all)
	require.Greater(t, whole, all*3/4)
}

// TestOfflineOverridesAgreeWithTheConnectorSeeded: deltaq analyze's
// --interval and --lag, given over a configuration of other windows, give
// the windows of a connector configured with that interval and lag, as
// TestOfflineAgreesWithTheConnectorSeeded compares them, and the very
// analysis (windows, triggers, --json report) of that configuration read
// without the flags: both flags over another interval and lag, --interval
// alone over a lag left to its default (then one interval, the interval
// given), and --lag alone.
func TestOfflineOverridesAgreeWithTheConnectorSeeded(t *testing.T) {
	whole, all := 0, 0
	for i, c := range []struct {
		p             seedParams
		configured    seedParams // the windows of the configuration analyze reads
		interval, lag time.Duration
	}{
		{p: seedRuns[0], configured: seedParams{interval: 3 * time.Second, lag: 2 * time.Second}, interval: seedRuns[0].interval, lag: seedRuns[0].lag},
		{p: seedRuns[2], configured: seedParams{interval: 2 * time.Second}, interval: seedRuns[2].interval},
		{p: seedRuns[5], configured: seedParams{interval: seedRuns[5].interval, lag: 3 * time.Second}, lag: seedRuns[5].lag},
		{p: seedRuns[6], configured: seedParams{interval: time.Second, lag: 500 * time.Millisecond}, interval: seedRuns[6].interval, lag: seedRuns[6].lag},
	} {
		p := c.p
		yaml := seedConfig(p)
		windows := func(q seedParams) string {
			return fmt.Sprintf("\n    interval: %s\n    lag: %s\n", seedMs(q.interval), seedMs(q.lag))
		}
		require.Equal(t, 1, strings.Count(yaml, windows(p)), "the configuration's windows")
		analyzed := strings.Replace(yaml, windows(p), windows(c.configured), 1)
		r := rand.New(rand.NewPCG(uint64(i), 99))
		spans := seedSpans(r, p, 9*60)
		diff := make([]diffSpan, len(spans))
		for j := range spans {
			diff[j] = spans[j].diffSpan
		}
		run := runDiffAnalyzedAs(t, yaml, p.interval, p.effLag(), diff, analyzedAs{yaml: analyzed, interval: c.interval, lag: c.lag})
		plain := runDiffEvery(t, yaml, p.interval, p.effLag(), diff)
		require.Equal(t, plain.off, run.off, "%s: the windows", p)
		require.Equal(t, plain.offTriggers, run.offTriggers, "%s: the triggers", p)
		require.JSONEq(t, string(plain.report), string(run.report), "%s: the report", p)
		w, a := seedCheck(t, p, spans, run)
		whole, all = whole+w, all+a
	}
	require.Greater(t, whole, all*3/4)
}
