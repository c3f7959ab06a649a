// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaqprocessor

import (
	"slices"

	"go.opentelemetry.io/collector/component"
	"go.uber.org/zap"

	"github.com/deltaq-otel/deltaq/deltaq"
	"github.com/deltaq-otel/deltaq/internal/inflight"
)

// parked is what a processor hands to its successor across a configuration
// reload (package reload): the instances in flight, with their deadlines
// and states, and the spans recently ended, with the layout of each probe
// the instances refer to by index.
type parked struct {
	tracker *inflight.Tracker
	probes  []parkedProbe
}

// parkedProbe is the layout of one probe of the parked processor, and for
// an auto probe that has chosen its dMax, the tail it chose it from.
type parkedProbe struct {
	name    string
	lay     deltaq.Layout // in force
	decided bool
	ref     int64
}

// reloadKey is the key of a processor's parked state.
func reloadKey(id component.ID) string { return "processor/" + id.String() }

// park hands the processor's in-flight state to the processor of the same
// ID that a reload builds. Called by shutdown, after the timer stopped.
func (p *deltaqProcessor) park() {
	st := &parked{tracker: p.tracker}
	for i := range p.m.probes {
		pr := &p.m.probes[i]
		pp := parkedProbe{name: pr.name, lay: pr.layout()}
		if pr.auto != nil {
			pp.decided, pp.ref = pr.auto.Decided()
		}
		st.probes = append(st.probes, pp)
	}
	p.handover.Park(reloadKey(p.id), st)
	p.logger.Info("configuration reload: handing the instances in flight to the reloaded processor",
		zap.Int("in_flight", st.tracker.Len()))
}

// adopt takes over the state a processor of the same ID parked before a
// reload. An instance keeps its deadline when its probe is still
// configured with the same dMax and bins (or binning); the instances of a probe that
// is gone or whose layout changed are dropped, and the probe starts fresh,
// as the log says.
func (p *deltaqProcessor) adopt(st *parked) {
	byName := make(map[string]int, len(p.m.probes))
	for i := range p.m.probes {
		byName[p.m.probes[i].name] = i
	}
	var fresh []string
	remap := make([]int, len(st.probes))
	for i, old := range st.probes {
		j, ok := byName[old.name]
		if ok {
			p.adoptRange(&p.m.probes[j], &old)
		}
		if ok && p.m.probes[j].layout() == old.lay {
			remap[i] = j
			continue
		}
		remap[i] = -1
		if ok {
			fresh = append(fresh, old.name)
		}
	}
	m := st.tracker.MoveTo(p.tracker, func(in *inflight.Instance) bool {
		if in.Probe < 0 || in.Probe >= len(remap) || remap[in.Probe] < 0 {
			return false
		}
		in.Probe = remap[in.Probe]
		return true
	}, p.clock.Now().UnixNano())
	p.stats.endedEvictions.Add(int64(m.Cut))
	for st, n := range m.Evicted {
		p.stats.evictions[st].Add(int64(n))
	}
	slices.Sort(fresh)
	p.logger.Info("configuration reload: instances in flight carried over",
		zap.Int("carried", m.Instances), zap.Int("dropped", m.Dropped),
		zap.Int("evicted", m.Evicted[inflight.Started]+m.Evicted[inflight.TimedOut]),
		zap.Int("remembered_spans", m.Remembered), zap.Int("remembered_spans_cut", m.Cut),
		zap.Strings("probes_started_fresh", fresh))
	for _, name := range fresh {
		p.logger.Warn("configuration reload: the probe's dmax or bins changed; its instances in flight are dropped and it starts fresh",
			zap.String("probe", name))
	}
}

// adoptRange makes an auto probe keep the dMax its predecessor had chosen,
// when the predecessor was an auto probe with the same bins that had left
// its learning phase and the dMax is within the new bounds: a reload does
// not send the probe back to learning. Called before the processor starts.
func (p *deltaqProcessor) adoptRange(pr *probe, old *parkedProbe) {
	if pr.auto == nil || !old.decided || old.lay.Bins != pr.lay.Bins || !pr.auto.Adopt(old.lay.DMaxNs, old.ref) {
		return
	}
	p.layouts.SetLayout(p, pr.name, deltaq.Layout{DMaxNs: old.lay.DMaxNs, Bins: pr.lay.Bins})
}
