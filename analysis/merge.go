// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package analysis

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// Window is one probe's window as another engine observed it, in the form
// that merges exactly: the bin counts of its successes, its timeouts and
// failures, the sum of its successful delays, its bounds and its layout.
// Agents (collectors that see a share of the instances) send their windows
// to a gateway, whose engine adds the windows of the same probe and bounds
// (Engine.AddWindow) and analyses the sums as if it had seen every
// instance itself.
type Window struct {
	// Probe names the probe.
	Probe string
	// Start and End bound the window: [Start, End).
	Start, End time.Time
	// DMaxNs and Bins are the layout of BinCounts.
	DMaxNs int64
	Bins   int
	// BinCounts are the successes per bin, Bins of them.
	BinCounts []uint64
	// SuccessSum is the sum of the successful delays in seconds.
	SuccessSum float64
	// Timeouts and Failures are the window's other instances.
	Timeouts, Failures int64
	// Source names the observer (for instance the agent collector's
	// service.instance.id): a window counts how many observers
	// contributed to it.
	Source string
}

// Contribution says what became of a window given to Engine.AddWindow.
type Contribution int

// The fates of a contributed window.
const (
	// ContributionAccepted: its counts were added to the engine's window.
	ContributionAccepted Contribution = iota
	// ContributionLate: the engine's window had closed (the contribution
	// came later than Config.Lag allows); its instances count as
	// DropTooLate.
	ContributionLate
	// ContributionEarly: the window lies beyond the open windows.
	ContributionEarly
	// ContributionMisaligned: its bounds are not one window of this
	// engine's interval, aligned on the Unix epoch (another interval).
	ContributionMisaligned
	// ContributionLayoutMismatch: the probe's layout here differs from the
	// window's; counts of two layouts are never added. Its instances count
	// as DropLayoutMismatch.
	ContributionLayoutMismatch
	// ContributionInvalid: no probe name, a name too long, counts that do
	// not fit the layout, a probe that cannot be admitted (MaxProbes).
	ContributionInvalid
	numContributions
)

// String returns accepted, late, early, misaligned, layout_mismatch or
// invalid, as the self-telemetry attribute.
func (c Contribution) String() string {
	switch c {
	case ContributionAccepted:
		return "accepted"
	case ContributionLate:
		return "late"
	case ContributionEarly:
		return "early"
	case ContributionMisaligned:
		return "misaligned"
	case ContributionLayoutMismatch:
		return "layout_mismatch"
	case ContributionInvalid:
		return "invalid"
	}
	return fmt.Sprintf("Contribution(%d)", int(c))
}

// Contributions counts the contributed windows by fate.
type Contributions [numContributions]int64

// maxSources bounds the observers a window remembers: far more agents than
// one gateway serves.
const maxSources = 4096

// AddWindow merges a window another engine observed into this engine's
// window of the same bounds, and says what became of it. Its instances
// count in Stats.Counted when accepted, in Stats.Dropped otherwise (by the
// reasons the fates name). With Interval = 0 every window merges into the
// single window.
func (e *Engine) AddWindow(w *Window) Contribution {
	e.mu.Lock()
	defer e.mu.Unlock()
	c, n := e.addWindow(w)
	e.contributions[c]++
	switch c {
	case ContributionAccepted:
		e.counted += n
	case ContributionLate:
		e.drops[DropTooLate] += n
	case ContributionEarly:
		e.drops[DropTooEarly] += n
	case ContributionLayoutMismatch:
		e.drops[DropLayoutMismatch] += n
	case ContributionMisaligned, ContributionInvalid:
		e.drops[DropInvalid] += n
	}
	return c
}

// addWindow does AddWindow's work and returns the fate and the window's
// instance count. Called with mu held.
func (e *Engine) addWindow(w *Window) (Contribution, int64) {
	// The instance count is needed only to count a refused window's
	// instances: an accepted one is summed while it is added.
	count := func() int64 {
		var s uint64
		for _, c := range w.BinCounts {
			s += c
		}
		return max(int64(s)+w.Timeouts+w.Failures, 0)
	}
	if w.Probe == "" || len(w.Probe) > MaxProbeNameLength || w.Timeouts < 0 || w.Failures < 0 ||
		len(w.BinCounts) != w.Bins {
		return ContributionInvalid, count()
	}
	var k int64
	start, end := w.Start.UnixNano(), w.End.UnixNano()
	if e.interval > 0 {
		k = floorDiv(start, e.interval)
		if end-start != e.interval || k*e.interval != start {
			return ContributionMisaligned, count()
		}
	}
	own := layout{dmaxNs: w.DMaxNs, bins: w.Bins}
	p, _ := e.probeFor(w.Probe, own)
	if p == nil {
		return ContributionInvalid, count()
	}
	if e.interval == 0 {
		e.minEnd = min(e.minEnd, start)
		e.maxEnd = max(e.maxEnd, end)
	} else {
		switch {
		case k < e.k0:
			return ContributionLate, count()
		case k >= e.k0+e.nslots:
			return ContributionEarly, count()
		}
	}
	// The layout of the window: a probe whose processor changed its layout
	// (dmax: auto) has other layouts in other windows (relayout.go).
	if p.layoutAt(k) != own {
		return ContributionLayoutMismatch, count()
	}
	s := &e.slots[e.slotOf(k)]
	a := s.accs[p.idx]
	if a == nil {
		a = e.newAcc(own)
		s.accs[p.idx] = a
	}
	successes, err := a.hist.AddCounts(w.BinCounts, w.Timeouts, w.Failures)
	if err != nil {
		return ContributionInvalid, count()
	}
	a.sum += w.SuccessSum
	p.lastK = max(p.lastK, k)
	if w.Source != "" && len(s.sources) < maxSources && !slices.Contains(s.sources, w.Source) {
		s.sources = append(s.sources, strings.Clone(w.Source))
	}
	return ContributionAccepted, int64(successes) + w.Timeouts + w.Failures
}

// WindowOf returns probe p's window of r in the form AddWindow merges, from
// source; false when the probe had no instance in the window (an empty
// window adds nothing) or has log-linear buckets (Edges), which a Window,
// of uniform bins, cannot carry: such a probe is analysed where its
// processor runs, not merged at a gateway.
func WindowOf(r *Result, p *ProbeResult, source string) (Window, bool) {
	if p.BinCounts == nil || p.Bins == 0 || p.Edges != nil {
		return Window{}, false
	}
	return Window{
		Probe: p.Name, Start: r.Start, End: r.End,
		DMaxNs: int64(math.Round(p.Width * float64(p.Bins) * 1e9)), Bins: p.Bins,
		BinCounts: p.BinCounts, SuccessSum: p.SuccessSum,
		Timeouts: p.Counts.Timeout, Failures: p.Counts.Failure,
		Source: source,
	}, true
}
