// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package analysis

import (
	"fmt"
	"hash/maphash"
	"math"
	"math/bits"
	"slices"
	"strings"
	"time"

	"github.com/deltaq-otel/deltaq/deltaq"
	"github.com/deltaq-otel/deltaq/internal/contract"
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
	// DMaxNs and Bins are the layout of BinCounts: Bins uniform bins up to
	// DMaxNs; or, when LogLinear is set, its buckets (Bins of them, DMaxNs
	// = LogLinear.High). They are the wire's form, not a deltaq.Layout,
	// whose log-linear form has no bin count: Bins says how many counts a
	// window of log-linear buckets holds, checked against the buckets
	// (logLinearLayout).
	DMaxNs    int64
	Bins      int
	LogLinear deltaq.LogLinear
	// BinCounts are the successes per bin. With BinIndex nil, one per bin;
	// otherwise sparse: BinCounts[j] successes in bin BinIndex[j], the
	// indices strictly increasing, the bins not named empty. The sparse
	// form costs what the occupied bins cost.
	BinIndex  []int
	BinCounts []uint64
	// SuccessSum is the sum of the successful delays in seconds.
	SuccessSum float64
	// Timeouts and Failures are the window's other instances.
	Timeouts, Failures int64
	// Fine says the window carries its instances at the analysis
	// resolution: FineCounts[j] completed instances in bucket FineIndex[j]
	// of deltaq.Fine (indices strictly increasing) or, with FineIndex nil,
	// in bucket FineFirst + j (a run of buckets, dense); its other
	// instances but the failures are timeouts whose end is unknown. Such a window merges
	// into any layout: where the probe's layout differs from the window's,
	// its display counts are read from these (each bucket at its upper
	// edge), so that agents agree on nothing. WeightSum and WeightSquares
	// are Σw and Σw² over its instances' adjusted counts (zero: not
	// carried, each instance counts one).
	Fine                     bool
	FineIndex                []int
	FineFirst                int
	FineCounts               []uint64
	WeightSum, WeightSquares float64
	// Source names the observer (for instance the agent collector's
	// service.instance.id): a window counts how many observers
	// contributed to it, and only named observers agree on layouts.
	Source string
	// SourceStart is when the observer's analysis began (Unix ns; 0 when
	// unknown): a window of a named observer and of the same start merged
	// already is a delivery repeated (ContributionDuplicate).
	SourceStart int64
}

// Contribution says what became of a window given to Engine.AddWindow, or
// of an observer's idle word given to Engine.AddIdle.
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
	// ContributionLayoutMismatch: the probe's layout for that window
	// differs from the window's; counts of two layouts are never added.
	// Its instances count as DropLayoutMismatch.
	ContributionLayoutMismatch
	// ContributionInvalid: no probe name, a name too long, a layout that
	// is not one, counts that do not fit the layout, a sum that is not
	// finite or does not lie within its bins, more than MaxWindowInstances
	// instances; an idle word of no observer named.
	ContributionInvalid
	// ContributionUnagreed: the probe has no layout yet, and fewer than
	// Gateway.LayoutQuorum agents proposed the window's; the window
	// counted as a vote for it (DropLayoutMismatch).
	ContributionUnagreed
	// ContributionAgentLimit: the window, of a probe a configuration
	// names, would add an agent beyond Gateway.MaxAgents to the engine's
	// window. Windows of other probes take no agent's place. An idle word
	// beyond Gateway.MaxAgents idle observers of the window, alike (they
	// have places of their own).
	ContributionAgentLimit
	// ContributionAgentInvalid: the source's name is longer than
	// MaxSourceLength bytes.
	ContributionAgentInvalid
	// ContributionProbeLimit: a new probe that no configuration names,
	// beyond Config.MaxProbes such probes.
	ContributionProbeLimit
	// ContributionUnconfiguredLimit: a new probe that no configuration
	// names, beyond Gateway.MaxUnconfiguredProbes such probes (or as many
	// names waiting for a layout quorum).
	ContributionUnconfiguredLimit
	// ContributionDuplicate: the window of the same probe and bounds from
	// the same observer (Source) of the same start (SourceStart) was
	// merged already: a delivery repeated (an exporter's retry of a
	// request the engine had taken, a relay that sends twice). Its
	// instances counted once, with the first. An idle word of the same
	// observer, start and window, alike.
	ContributionDuplicate
	// ContributionIdle: an observer's word that it saw no instance in a
	// window (Engine.AddIdle) counted it among the window's contributors.
	// Nothing was merged, nothing was refused.
	ContributionIdle
	numContributions
)

// String returns accepted, late, early, misaligned, layout_mismatch,
// invalid, unagreed, agent_limit, agent_invalid, probe_limit,
// unconfigured_limit, duplicate or idle, as the self-telemetry attribute.
func (c Contribution) String() string {
	if c >= 0 && c < numContributions {
		return contributionNames[c]
	}
	return fmt.Sprintf("Contribution(%d)", int(c))
}

var contributionNames = [numContributions]string{
	"accepted", "late", "early", "misaligned", "layout_mismatch", "invalid",
	"unagreed", "agent_limit", "agent_invalid", "probe_limit", "unconfigured_limit", "duplicate", "idle",
}

// Contributions counts the contributed windows by fate.
type Contributions [numContributions]int64

// Bounds of a contributed window.
const (
	// MaxSourceLength bounds, in bytes, an observer's name
	// (Window.Source): the gateway keeps the names of a window's agents.
	MaxSourceLength = contract.MaxNameLength
	// MaxWindowInstances bounds the instances of one contributed window:
	// a million per microsecond of a one-second window. The windows added
	// to one are bounded by its totals (acc.room), not by their number.
	MaxWindowInstances = 1 << 50
	// maxCandidates bounds the layouts proposed for a probe at a time.
	maxCandidates = 4
)

// AddWindow merges a window another engine observed into this engine's
// window of the same bounds, and says what became of it. Its instances
// count in Stats.Counted when accepted, in Stats.Dropped otherwise (by the
// reasons the fates name). With Interval = 0 every window merges into the
// single window.
//
// Trust: a window is checked whole — its name, layout and values, its
// bounds, its window still open, its agent within Gateway.MaxAgents (for
// a probe a configuration names; agents count only there, so that windows
// of invented probes cannot take the places of the agents of the
// configured ones), a probe no configuration names within
// Gateway.MaxUnconfiguredProbes and what an agent's processor can give
// it — before it is allowed to change anything, so that a refused window
// changes nothing. A probe's layout comes from Config.Probes or from a
// processor of this process when either gives one (the windows must have
// it); otherwise only from the agreement of Gateway.LayoutQuorum distinct
// agents whose windows, each passing every check, propose it within the
// open windows. The agreed layout applies from a window boundary
// (relayout.go): the windows that hold counts of the old layout close in
// it, and a window of the other layout is refused until then, never mixed.
//
// AddWindow is safe for concurrent use, and the windows of concurrent
// callers are checked in parallel: the check reads the window alone, and
// the engine is locked only to add it (AddWindows adds a batch under one
// lock).
func (e *Engine) AddWindow(w *Window) Contribution {
	var ck windowCheck
	e.checkWindow(w, &ck)
	e.mu.Lock()
	defer e.mu.Unlock()
	var sh sourceHash
	return e.addChecked(w, ck, &sh)
}

// AddWindows adds the windows ws as AddWindow adds each, in order, and
// writes their fates to fates, which must be at least as long as ws. The
// windows are checked before the engine is locked, and the engine is
// locked once for up to windowBatch of them: concurrent callers contend
// for it once a batch rather than once a window.
func (e *Engine) AddWindows(ws []Window, fates []Contribution) {
	fates = fates[:len(ws)]
	if len(ws) <= fewWindows {
		// The checks of a few dense windows: an array of windowBatch
		// checks is 20 KiB to zero at each call, more than the check of a
		// window of a thousand bins costs.
		var checks [fewWindows]windowCheck
		e.checkAndAdd(ws, checks[:len(ws)], fates)
		return
	}
	var checks [windowBatch]windowCheck
	for len(ws) > 0 {
		m := min(len(ws), windowBatch)
		e.checkAndAdd(ws[:m], checks[:m], fates[:m])
		ws, fates = ws[m:], fates[m:]
	}
}

// fewWindows bounds the batches whose checks AddWindows keeps in a small
// array: the few dense windows a request's reader gives at once.
const fewWindows = 8

// checkAndAdd checks the windows ws into checks, without the lock, then
// adds them under one lock (addBatch).
func (e *Engine) checkAndAdd(ws []Window, checks []windowCheck, fates []Contribution) {
	for i := range ws {
		e.checkWindow(&ws[i], &checks[i])
	}
	e.addBatch(ws, checks, fates)
}

// windowBatch is the number of windows AddWindows adds under one lock: the
// sparse windows of a request of a few hundred probes at once. With 32,
// two concurrent requests took turns at the lock often enough that
// BenchmarkGatewayMergeSparse merged in 2.1 ms in 4 runs of 10 rather than
// 1.4 ms (the check runs unlocked; the lock is held about 0.1 µs a sparse
// window).
const windowBatch = 256

// addBatch adds the checked windows ws under one lock and writes their
// fates.
func (e *Engine) addBatch(ws []Window, checks []windowCheck, fates []Contribution) {
	e.mu.Lock()
	defer e.mu.Unlock()
	var sh sourceHash
	for i := range ws {
		fates[i] = e.addChecked(&ws[i], checks[i], &sh)
	}
}

// addChecked adds w, whose check is ck, when the check accepted it, and
// counts its fate and its instances; sh holds the hash of the source of
// the batch's last window. Called with mu held.
func (e *Engine) addChecked(w *Window, ck windowCheck, sh *sourceHash) Contribution {
	c, n := ck.c, ck.n
	if c == ContributionAccepted {
		c = e.addWindow(w, ck, n, sh)
	}
	e.contributions[c]++
	switch c {
	case ContributionAccepted:
		e.counted += n
	case ContributionLate:
		e.drops[DropTooLate] += n
	case ContributionEarly:
		e.drops[DropTooEarly] += n
	case ContributionLayoutMismatch, ContributionUnagreed:
		e.drops[DropLayoutMismatch] += n
	case ContributionProbeLimit, ContributionUnconfiguredLimit:
		e.drops[DropProbeLimit] += n
	case ContributionAgentLimit:
		e.drops[DropAgentLimit] += n
	case ContributionDuplicate:
		// Counted with the delivery it repeats.
	default:
		e.drops[DropInvalid] += n
	}
	return c
}

// addWindow does AddWindow's work for a window that passed checkWindow,
// whose check is ck, of n instances, and returns its fate; sh holds the
// hash of the source of the batch's last window. Called with mu held.
func (e *Engine) addWindow(w *Window, ck windowCheck, n int64, sh *sourceHash) Contribution {
	lay := ck.lay
	start, end := w.Start.UnixNano(), w.End.UnixNano()
	k, c := e.openWindow(start, end)
	if c != ContributionAccepted {
		return c
	}
	s := &e.slots[e.slotOf(k)]
	// e.known changes only at the end: the source and start of the last
	// window noted among the window's agents.
	wasKnown := e.known.is(k, w.Source, w.SourceStart)
	known := wasKnown
	st := e.known.st
	if !known {
		st, known = s.sources[w.Source]
	}
	newAgent := w.Source != "" && !known
	p, c := e.windowProbe(w, lay, k, newAgent && len(s.sources) >= e.cfg.Gateway.MaxAgents)
	if p == nil {
		return c
	}
	wp := e.printOf(w, p.key, sh)
	at, dup := s.prints.find(wp) // where the print goes once the window is added
	if dup {
		return ContributionDuplicate
	}
	convert := false
	// The probe's layout of window k, the window's most often, is
	// agree's first case, compared here without its call and its
	// arguments (70 instructions a window).
	if !p.layoutRefAt(k).Equal(lay) {
		if c := e.agree(p, lay, w.Source, k, w.Fine); c != ContributionAccepted {
			if !w.Fine || !p.layoutAt(k).Valid() {
				return c
			}
			convert = true // another layout: the display counts from the analysis counts (finemerge.go)
		}
	}
	a := s.accs[p.idx]
	if a == nil {
		a = e.newAcc(p.layoutAt(k))
		s.accs[p.idx] = a
	}
	if !a.room(n) {
		return ContributionInvalid
	}
	if !convert {
		// checkWindow checked the counts, and room the sums.
		a.addChecked(w, ck.successes)
		a.sum += w.SuccessSum
	}
	if w.Fine {
		if err := e.addFine(a, w, n, ck.done, convert); err != nil {
			return ContributionInvalid
		}
	}
	s.prints.add(at, wp)
	p.lastK = max(p.lastK, k)
	if e.interval == 0 {
		e.minEnd = min(e.minEnd, start)
		e.maxEnd = max(e.maxEnd, end)
		e.minStart = min(e.minStart, start)
	}
	if w.Source != "" && p.configured {
		e.noteSource(s, st, wasKnown, w, p.key, sh, k)
	}
	return ContributionAccepted
}

// noteSource records the agent of window w, added to slot s of window k
// for the probe of key: the window's agents (Result.Contributors,
// expected_agents) are those of the configured probes, each with when it
// began. st is what the slot knew of the agent (nil: nothing), wasKnown
// whether it was the last agent noted. Called with mu held.
func (e *Engine) noteSource(s *slot, st *agentStarts, wasKnown bool, w *Window, key uint64, sh *sourceHash, k int64) {
	if st == nil {
		if s.sources == nil {
			s.sources = make(map[string]*agentStarts)
		}
		st = new(agentStarts)
		s.sources[strings.Clone(w.Source)] = st
	} else if !st.shared && e.sharedName(s, st, w, key, sh, k) {
		st.shared = true
	}
	if !wasKnown {
		st.note(w.SourceStart)
		st.noteWindow(w.SourceStart)
		e.known = knownSource{ok: true, k: k, source: strings.Clone(w.Source), start: w.SourceStart, st: st}
	}
}

// openWindow returns the open window k whose bounds are [start, end)
// (Unix ns), or why a contribution to it is refused: bounds that are not
// one window of the engine's interval (ContributionMisaligned), a window
// closed already (ContributionLate) or beyond the open ones
// (ContributionEarly). With Interval = 0 every window is window 0. Called
// with mu held.
func (e *Engine) openWindow(start, end int64) (int64, Contribution) {
	if e.interval == 0 {
		return 0, ContributionAccepted
	}
	k := floorDiv(start, e.interval)
	switch {
	case end-start != e.interval || k*e.interval != start:
		return k, ContributionMisaligned
	case k < e.k0:
		return k, ContributionLate
	case k >= e.k0+e.nslots:
		return k, ContributionEarly
	}
	return k, ContributionAccepted
}

// AddIdle counts source, an observer (an agent) that saw no instance in the
// window [start, end) and so sent no window of it, among the contributors
// of that window (Result.Contributors, Gateway.ExpectedAgents): an agent
// that is up and idle is not missing. It merges nothing — no probe, no
// count, no layout, no accumulator is touched — so the window's analysis
// is what it would be without it. sourceStart is when the observer's
// analysis began (Unix ns; 0 unknown), as Window.SourceStart: the same
// word delivered again is ContributionDuplicate.
//
// The fates: ContributionIdle when the observer counts (or counted
// already, by its windows or its word); ContributionAgentInvalid for a name
// longer than MaxSourceLength, ContributionInvalid for no name (an
// anonymous observer is no agent to count); the bounds refused as
// AddWindow refuses them (misaligned, late, early); ContributionAgentLimit
// when Gateway.MaxAgents idle observers are counted in the window already.
// Idle observers have places of their own, apart from the agents whose
// windows of configured probes were merged: they never take those agents'
// places, and the window counts the union of both.
//
// AddIdle is safe for concurrent use.
func (e *Engine) AddIdle(source string, start, end time.Time, sourceStart int64) Contribution {
	var c Contribution
	switch {
	case len(source) > MaxSourceLength:
		c = ContributionAgentInvalid
	case source == "":
		c = ContributionInvalid
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if c == ContributionAccepted {
		c = e.addIdle(source, start.UnixNano(), end.UnixNano(), sourceStart)
	}
	e.contributions[c]++
	return c
}

// addIdle does AddIdle's work for a named source. Called with mu held.
func (e *Engine) addIdle(source string, start, end, sourceStart int64) Contribution {
	k, c := e.openWindow(start, end)
	if c != ContributionAccepted {
		return c
	}
	s := &e.slots[e.slotOf(k)]
	if a, ok := s.idle[source]; ok {
		if sourceStart != 0 && (a.last == sourceStart || a.prev == sourceStart) {
			return ContributionDuplicate
		}
		// The agent restarted (or its start is unknown): still one
		// contributor, and one entry, whatever the starts a sender claims.
		// The start before is kept too: the word of the agent before its
		// restart, delivered again after the restarted one's (a relay's
		// retry), is a repeat as well.
		a.prev, a.last = a.last, sourceStart
		a.note(sourceStart)
		return ContributionIdle
	}
	if len(s.idle) >= e.cfg.Gateway.MaxAgents {
		return ContributionAgentLimit
	}
	if s.idle == nil {
		s.idle = make(map[string]*idleAgent)
	}
	a := &idleAgent{last: sourceStart}
	a.note(sourceStart)
	s.idle[strings.Clone(source)] = a
	return ContributionIdle
}

// agentStarts is when an agent of a window (a name among its contributors)
// began, by the starts (Window.SourceStart) of its windows and words.
type agentStarts struct {
	// first is the earliest start (Unix ns), 0 when none was given;
	// unknown says that a window or word of no start came (from an agent
	// older than the start), taken as up throughout.
	first   int64
	unknown bool
	// shared says that two agents running at once sent their windows
	// under the name (Engine.sharedName); starts are the last two
	// distinct starts of its windows (0: none), which tell it.
	shared bool
	starts [2]int64
}

// noteWindow notes the start of a window of the agent.
func (a *agentStarts) noteWindow(start int64) {
	if start != 0 && start != a.starts[0] && start != a.starts[1] {
		a.starts[1], a.starts[0] = a.starts[0], start
	}
}

// note notes a start of the agent in a window.
func (a *agentStarts) note(start int64) {
	switch {
	case start == 0:
		a.unknown = true
	case a.first == 0:
		a.first = start
	default:
		a.first = min(a.first, start)
	}
}

// sharedName reports whether w, a window of the probe of key probe just
// added to slot s of window k, and a window of the same probe and name of
// another of its starts st.starts are two agents' running at once: both
// starts by the start of the window before (Engine.sharedBy). A
// restart under the name gives the window two starts too, but the later
// one after the window's start: the agent before the restart stopped
// before the agent after it began, and both sent windows of this window
// (the window before is allowed too, so that a clock of the agents up to
// an interval ahead of the spans' cannot make a restart look like two
// agents). Windows of one probe, not of any: two deltaq connectors of
// one collector share its name and begin apart, with probes of their
// own; and not idle words, which name no probe. sh holds the hash of w's
// source (printOf). Called with mu held.
func (e *Engine) sharedName(s *slot, st *agentStarts, w *Window, probe uint64, sh *sourceHash, k int64) bool {
	before := e.sharedBy(k)
	start := w.SourceStart
	if start == 0 || start > before {
		return false
	}
	for _, o := range st.starts {
		if o != 0 && o != start && o <= before {
			if _, ok := s.prints.find(windowPrint(probe, sh.h, o)); ok {
				return true
			}
		}
	}
	return false
}

// steady reports whether the agent was up throughout the window whose
// agents up throughout began by began (Engine.beganBy).
func (a *agentStarts) steady(began int64) bool {
	return a.unknown || (a.first != 0 && a.first <= began)
}

// idleAgent is an idle agent of a window: when it began, and the starts
// of its last two words (0: none, or a word of no start).
type idleAgent struct {
	agentStarts
	last, prev int64
}

// beganBy returns the latest start (Unix ns) of an agent up throughout
// window k: the window's start. With Interval = 0 (one window) every
// start.
func (e *Engine) beganBy(k int64) int64 {
	if e.interval == 0 {
		return math.MaxInt64
	}
	return k * e.interval
}

// sharedBy returns the latest start (Unix ns) of the agents of window k
// that tell two agents running at once under one name
// (Engine.sharedName): the start of the window before. With Interval = 0
// none: one window holds an agent's windows before and after a restart.
func (e *Engine) sharedBy(k int64) int64 {
	if e.interval == 0 {
		return math.MinInt64
	}
	return (k - 1) * e.interval
}

// holds reports whether the window holds instances or other engines'
// windows or idle words.
func (s *slot) holds() bool {
	return len(s.sources) > 0 || len(s.idle) > 0 || slices.ContainsFunc(s.accs, func(a *acc) bool { return a != nil })
}

// contributors returns the slot's contributors: the agents whose windows
// of configured probes it merged, and the idle agents not among them;
// those of them up throughout the window, whose agents up throughout
// began by began (Engine.beganBy); and the names, sorted, under which
// two agents running at once sent their windows (Engine.sharedName).
func (s *slot) contributors(began int64) (n, steady int, shared []string) {
	n = len(s.sources)
	for src, a := range s.sources {
		b := *a
		if i, ok := s.idle[src]; ok {
			b.merge(&i.agentStarts)
		}
		if b.steady(began) {
			steady++
		}
		if b.shared {
			shared = append(shared, src)
		}
	}
	for src, a := range s.idle {
		if _, ok := s.sources[src]; ok {
			continue
		}
		n++
		if a.steady(began) {
			steady++
		}
	}
	slices.Sort(shared)
	return n, steady, shared
}

// merge adds to a the starts of b, the same agent's by its words.
func (a *agentStarts) merge(b *agentStarts) {
	if b.unknown {
		a.note(0)
	}
	if b.first != 0 {
		a.note(b.first)
	}
}

// printOf returns the print of w, a window of the probe of key probe
// (probe.key), or 0 for a window of no named observer or of no start; sh
// holds the hash of the source of the batch's last window.
func (e *Engine) printOf(w *Window, probe uint64, sh *sourceHash) uint64 {
	if w.Source == "" || w.SourceStart == 0 {
		return 0
	}
	if !sh.ok || sh.source != w.Source {
		*sh = sourceHash{source: w.Source, h: maphash.String(e.seed, w.Source), ok: true}
	}
	return windowPrint(probe, sh.h, w.SourceStart)
}

// sourceHash is the hash of an observer's name in the prints (printOf),
// kept for the next window of a batch: a request's windows share their
// source, whose hash is then taken once a batch rather than once a window:
// 60 instructions of a sparse window's 4,000, for 20 that compare the
// names.
type sourceHash struct {
	source string
	h      uint64
	ok     bool
}

// windowPrint is a window of a slot by its probe and its observer — the
// hash of its name, and its start — in 64 bits: the observer's mixed, plus
// the probe's key (probe.key) times printStride. Two windows of one
// observer and start never print alike (the stride is odd: distinct keys
// times it differ modulo 2⁶⁴); of two, with one chance in 2⁶⁴ a pair (the
// second would be a duplicate). Two deliveries of one window print alike;
// the windows of an agent restarted under the same name differ in their
// start. A set of such integers (printSet) costs the merge a fraction of
// what a map keyed by the three fields did.
func windowPrint(probe, source uint64, start int64) uint64 {
	return mix(source^mix(uint64(start))) + probe*printStride
}

// printStride spaces the prints of an observer's windows by probe, in
// slots of a printSet's table, whose low bits index it. An agent's
// request holds its windows probe after probe, by name, the order of the
// keys of the probes a configuration names (New registers them by name,
// one key after another; a reload gives the probes it adds the next
// keys): their prints' slots follow one another a
// constant 264 bytes apart, which the processor's prefetcher follows,
// where hashed prints each missed the cache (printSet.find, 14 % of the
// merge's CPU time). Odd, so that an agent's prints fall on distinct
// slots of any table that holds them; wide enough that the agents' runs
// of slots interleave without clustering: in 600 random sets of windows
// of each of five shapes a print lay at most 30 slots from its own,
// hashed ones 37, where strides of 8 or 17 made clusters of a thousand
// (TestPrintSetOfWindows). merge-cpu-ns/op with one processor, medians of
// 6 alternating runs: 2.51 ms hashed, 2.26 ms.
const printStride = 33

// mix is the finalizer of splitmix64 (Steele, Lea and Flood, "Fast
// splittable pseudorandom number generators", 2014): every bit of x moves
// about half the bits of the result.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// knownSource is a source among the agents of window k (Engine.known),
// when ok.
type knownSource struct {
	ok     bool
	k      int64
	source string
	start  int64        // its start, noted
	st     *agentStarts // the source's entry among the window's agents
}

// is reports whether ks says that source, of the start given, is among
// the agents of window k, its start noted.
func (ks knownSource) is(k int64, source string, start int64) bool {
	return ks.ok && ks.k == k && ks.start == start && ks.source == source
}

// room reports whether n more instances keep a's display and analysis
// counts within int64, so that neither a bucket nor a total wraps: a
// window's instances add to both, and a window of a probe may arrive any
// number of times (an agent may repeat one; windows of a probe no
// configuration names come from any number of agents). A window beyond
// it is refused before it changes anything.
func (a *acc) room(n int64) bool {
	t := a.fine.Total()
	if a.ll != nil {
		t = max(t, a.ll.Total())
	} else {
		t = max(t, a.hist.Total())
	}
	return n <= math.MaxInt64-t
}

// addChecked adds the display counts of a checked window of a's layout,
// of successes successes (deltaq.Histogram.AddChecked).
func (a *acc) addChecked(w *Window, successes uint64) {
	if a.ll != nil {
		a.ll.AddChecked(w.BinIndex, 0, w.BinCounts, successes, w.Timeouts, w.Failures)
		return
	}
	a.hist.AddChecked(w.BinIndex, w.BinCounts, successes, w.Timeouts, w.Failures)
}

// windowCheck is what checkWindow found of a window: its layout, its
// instance count, saturated at math.MaxInt64 (for the drop counters of a
// refused window), its successes (Σ of its bin counts), its completed
// instances at the analysis resolution (Σ of its analysis counts), and its
// fate so far.
type windowCheck struct {
	lay       deltaq.Layout
	n         int64
	successes uint64
	done      uint64
	c         Contribution
}

// checkWindow checks what a window says of itself: its probe's name, its
// source's, its layout, its counts and its sum, in one pass over its
// counts, and writes what it found to ck (written in place, and the scan
// read through a pointer: copied between the calls, they took 60
// instructions of a sparse window's 4,000). Called without mu: it reads w
// and the cached edges alone.
func (e *Engine) checkWindow(w *Window, ck *windowCheck) {
	// The layout: uniform bins of at most deltaq.MaxBins, taken in line
	// (returned from a call, the layout was copied twice, 40 instructions
	// of a sparse window's 4,000), or log-linear buckets.
	lay, layOK := deltaq.Layout{DMaxNs: w.DMaxNs, Bins: w.Bins}, false
	var edges []int64
	if w.LogLinear == (deltaq.LogLinear{}) {
		layOK = lay.Valid()
	} else {
		lay, edges, layOK = e.logLinearLayout(w)
	}
	sc := scanWindow(w, lay, layOK, edges)
	n, countsOK := sc.count(w)
	if len(w.Source) > MaxSourceLength {
		*ck = windowCheck{n: n, c: ContributionAgentInvalid}
		return
	}
	ok := layOK && countsOK && sc.binsOK && w.Probe != "" && len(w.Probe) <= MaxProbeNameLength && sc.sumWithin(w.SuccessSum)
	var done uint64
	if ok {
		done, ok = e.checkFine(w, n)
	}
	if !ok {
		*ck = windowCheck{n: n, c: ContributionInvalid}
		return
	}
	*ck = windowCheck{lay: lay, n: n, successes: sc.n, done: done, c: ContributionAccepted}
}

// windowScan is what a pass over a window's counts finds: their sum (sat:
// beyond uint64), whether they fit the bins (one per bin, or sparse
// indices strictly increasing within them), and the bounds lo and hi, in
// seconds, of the sum of the successes' delays: each success of bin i
// lies in [eᵢ, eᵢ₊₁] (both ends, whichever of the two the layout
// includes); f is the successes as a float.
type windowScan struct {
	n         uint64
	sat       bool
	binsOK    bool
	lo, hi, f float64
}

// scanWindow makes the pass over w's counts, against its layout l of
// w.Bins bins and, for log-linear buckets, their edges (ns); when the
// layout is not valid only the sum is taken. For uniform bins of width δ, Σ cᵢ·eᵢ = δ·Σ cᵢ·i and
// Σ cᵢ·eᵢ₊₁ = Σ cᵢ·eᵢ + δ·Σ cᵢ (binMoments).
func scanWindow(w *Window, l deltaq.Layout, valid bool, edges []int64) windowScan {
	var sc windowScan
	nb := w.Bins
	logLinear := l.IsLogLinear()
	var ci float64
	summed := false // sc.n, sc.sat and ci taken
	switch {
	case !valid:
	case w.BinIndex == nil:
		sc.binsOK = len(w.BinCounts) == nb
	case len(w.BinIndex) == len(w.BinCounts):
		// Sparse: indices strictly increasing, the last within the bins,
		// checked in the pass that sums the counts (sparseMoments): a pass
		// of its own took 80 instructions of a sparse window's 4,000.
		n, carries, m, last, ok := sparseMoments(w.BinIndex, w.BinCounts)
		sc.binsOK = ok && last < nb
		switch {
		case !sc.binsOK:
		case logLinear:
			sc.n, sc.sat, summed = n, carries != 0, true
		default:
			sc.n, sc.sat, ci = binMomentsOf(w.BinIndex, w.BinCounts, nb, n, carries, m)
			summed = true
		}
	}
	if !summed && (!sc.binsOK || logLinear) {
		sc.n, sc.sat = countSum(w.BinCounts)
	}
	if !sc.binsOK {
		return sc
	}
	if !logLinear {
		if !summed {
			sc.n, sc.sat, ci = binMoments(w.BinIndex, w.BinCounts, nb)
		}
		sc.f = float64(sc.n)
		width := float64(l.DMaxNs) / float64(l.Bins) / 1e9
		sc.lo = ci * width
		sc.hi = sc.lo + sc.f*width
		return sc
	}
	// Log-linear: the edges themselves.
	sc.f = float64(sc.n)
	for j, c := range w.BinCounts {
		i := j
		if w.BinIndex != nil {
			i = w.BinIndex[j]
		}
		sc.lo += float64(c) * float64(edges[i])
		sc.hi += float64(c) * float64(edges[i+1])
	}
	sc.lo, sc.hi = sc.lo/1e9, sc.hi/1e9
	return sc
}

// countSum returns Σ c and whether it overflows uint64 (the sum is then
// wrapped). Four partial sums, independent of each other, take eight
// counts a round, their carries added up as they come (an add with
// carry); the sum overflows when one of them or their total does.
func countSum(c []uint64) (n uint64, sat bool) {
	var s0, s1, s2, s3, carries uint64
	i := 0
	for ; i+8 <= len(c); i += 8 {
		q := c[i : i+8 : i+8]
		s0, carries = addCarry(s0, q[0], carries)
		s1, carries = addCarry(s1, q[1], carries)
		s2, carries = addCarry(s2, q[2], carries)
		s3, carries = addCarry(s3, q[3], carries)
		s0, carries = addCarry(s0, q[4], carries)
		s1, carries = addCarry(s1, q[5], carries)
		s2, carries = addCarry(s2, q[6], carries)
		s3, carries = addCarry(s3, q[7], carries)
	}
	for ; i < len(c); i++ {
		s0, carries = addCarry(s0, c[i], carries)
	}
	var c1, c2, c3 uint64
	n, c1 = bits.Add64(s0, s1, 0)
	n, c2 = bits.Add64(n, s2, 0)
	n, c3 = bits.Add64(n, s3, 0)
	return n, carries|c1|c2|c3 != 0
}

// addCarry returns s + x and carries plus the carry out of that sum: two
// adds, the second with carry.
func addCarry(s, x, carries uint64) (uint64, uint64) {
	s, cy := bits.Add64(s, x, 0)
	carries, _ = bits.Add64(carries, 0, cy)
	return s, carries
}

// binMoments returns Σ cⱼ (sat: it overflows uint64) and Σ cⱼ·iⱼ of the
// counts c of bins iⱼ < bins (idx nil: iⱼ = j, one count per bin). Both
// are summed in integers, without the latency of a floating-point sum:
// Σ cⱼ·iⱼ ≤ (bins − 1)·Σ cⱼ is exact when that bound is within uint64,
// as it is for every window of at most MaxWindowInstances instances of up
// to 2¹⁴ bins; a larger sum is taken again in floating point
// (binMomentFloat).
func binMoments(idx []int, c []uint64, bins int) (n uint64, sat bool, ci float64) {
	var carries, m uint64
	if idx == nil {
		n, carries, m = denseMoments(c)
	} else {
		n, carries, m, _, _ = sparseMoments(idx, c)
	}
	return binMomentsOf(idx, c, bins, n, carries, m)
}

// binMomentsOf returns binMoments of the counts c of bins idx from their
// integer sums: Σ cⱼ, its carries (not zero: it overflows uint64) and
// Σ cⱼ·iⱼ modulo 2⁶⁴, taken again in floating point when that could
// have wrapped.
func binMomentsOf(idx []int, c []uint64, bins int, n, carries, m uint64) (uint64, bool, float64) {
	if carries != 0 || (bins > 1 && n > math.MaxUint64/uint64(bins-1)) {
		return n, carries != 0, binMomentFloat(idx, c)
	}
	return n, false, float64(m)
}

// sparseMoments returns Σ cⱼ, its carries (not zero when it overflows
// uint64) and Σ cⱼ·iⱼ modulo 2⁶⁴ of the counts c of bins idx, as many,
// and the last index; ok is false, and the sums are not all taken, when
// the indices do not strictly increase from 0.
func sparseMoments(idx []int, c []uint64) (n, carries, m uint64, last int, ok bool) {
	c = c[:len(idx)]
	last = -1
	for j, i := range idx {
		if i <= last {
			return n, carries, m, last, false
		}
		last = i
		x := c[j]
		var cy uint64
		n, cy = bits.Add64(n, x, 0)
		carries |= cy
		m += x * uint64(i)
	}
	return n, carries, m, last, true
}

// denseMoments returns Σ cᵢ, its carries (not zero when it overflows
// uint64: their count) and Σ cᵢ·i modulo 2⁶⁴, from the running sums
// Pₖ = Σ_{i≤k} cᵢ: Σₖ Pₖ = Σᵢ cᵢ·(L − i) over the L counts, so
// Σ cᵢ·i = L·n − Σₖ Pₖ, two additions a bin and no multiplication. Eight
// bins a round; each carry is added to the count as it comes (an add with
// carry), not extracted and or'ed.
func denseMoments(c []uint64) (n, carries, m uint64) {
	var t uint64 // Σₖ Pₖ
	i := 0
	for ; i+8 <= len(c); i += 8 {
		q := c[i : i+8 : i+8]
		n, carries = addCarry(n, q[0], carries)
		t += n
		n, carries = addCarry(n, q[1], carries)
		t += n
		n, carries = addCarry(n, q[2], carries)
		t += n
		n, carries = addCarry(n, q[3], carries)
		t += n
		n, carries = addCarry(n, q[4], carries)
		t += n
		n, carries = addCarry(n, q[5], carries)
		t += n
		n, carries = addCarry(n, q[6], carries)
		t += n
		n, carries = addCarry(n, q[7], carries)
		t += n
	}
	for ; i < len(c); i++ {
		n, carries = addCarry(n, c[i], carries)
		t += n
	}
	return n, carries, uint64(len(c))*n - t
}

// binMomentFloat returns Σ cⱼ·iⱼ (binMoments) summed in floating point,
// for counts whose integer sum might overflow.
func binMomentFloat(idx []int, c []uint64) float64 {
	var ci float64
	for j, x := range c {
		i := j
		if idx != nil {
			i = idx[j]
		}
		ci += float64(x) * float64(i)
	}
	return ci
}

// count returns the instances of w, saturated at math.MaxInt64, and
// whether its counts are valid: timeouts and failures not negative, and
// at most MaxWindowInstances instances in all.
func (sc *windowScan) count(w *Window) (int64, bool) {
	ok := w.Timeouts >= 0 && w.Failures >= 0 && !sc.sat
	n := min(sc.n, MaxWindowInstances+1)
	total := int64(n) + max(w.Timeouts, 0) // n ≤ 2⁵⁰+1: no overflow
	if total < 0 || total > math.MaxInt64-max(w.Failures, 0) {
		return math.MaxInt64, false
	}
	total += max(w.Failures, 0)
	return total, ok && total <= MaxWindowInstances
}

// sumWithin reports whether s, the sum of the successful delays, is finite
// and lies in [lo, hi], up to the rounding of a sum of floats (a relative
// 1e-6) and of each delay to the nearest nanosecond.
func (sc *windowScan) sumWithin(s float64) bool {
	if math.IsNaN(s) || math.IsInf(s, 0) || s < 0 {
		return false
	}
	tol := 1e-6*sc.hi + sc.f*1e-9
	return s >= sc.lo-tol && s <= sc.hi+tol
}

// logLinearLayout returns the layout of w's log-linear buckets and their
// edges in nanoseconds (e₀ = 0 < … < e_N), or false when they are not a
// valid layout: at most deltaq.MaxThesisBins buckets, the processor's
// bound, Bins of them, ending at DMaxNs. The edges are cached under
// edgesMu. (checkWindow takes uniform bins itself.)
func (e *Engine) logLinearLayout(w *Window) (deltaq.Layout, []int64, bool) {
	l, ok := deltaq.LogLinearLayout(w.LogLinear)
	if !ok || w.DMaxNs != w.LogLinear.High {
		return deltaq.Layout{}, nil, false
	}
	e.edgesMu.Lock()
	defer e.edgesMu.Unlock()
	edges, ok := e.llEdges[w.LogLinear]
	if !ok {
		var err error
		if edges, err = w.LogLinear.Edges(); err != nil || len(edges)-1 > deltaq.MaxThesisBins {
			return deltaq.Layout{}, nil, false
		}
		if len(e.llEdges) >= maxCachedEdges {
			clear(e.llEdges)
		}
		e.llEdges[w.LogLinear] = edges
	}
	if len(edges)-1 != w.Bins {
		return deltaq.Layout{}, nil, false
	}
	return l, edges, true
}

// maxCachedEdges bounds the cached edges of window layouts.
const maxCachedEdges = 64

// windowProbe returns the probe a valid window w of layout own for window
// k names, or nil and why not; full says that w's agent would be one
// beyond Gateway.MaxAgents in the window, which refuses a window of a
// configured probe before it changes anything. A probe no configuration
// names is unconfiguredProbe's. Called with mu held.
func (e *Engine) windowProbe(w *Window, own deltaq.Layout, k int64, full bool) (*probe, Contribution) {
	p := e.byName[w.Probe]
	if p != nil {
		if p.configured && full {
			return nil, ContributionAgentLimit
		}
		if !p.lay.Valid() && !p.fixed {
			if l, ok := e.lookup(p.name); ok {
				p.lay, p.local, p.cands = l, true, nil
			}
		}
		return p, ContributionAccepted
	}
	if l, ok := e.lookup(w.Probe); ok {
		if full {
			return nil, ContributionAgentLimit
		}
		p = e.register(w.Probe, true, l)
		p.local = true
		return p, ContributionAccepted
	}
	return e.unconfiguredProbe(w, own, k)
}

// unconfiguredProbe returns the probe a valid window w of layout own for
// window k names when no configuration names it and the engine does not
// track it yet, or nil and why not. Such a probe is held to what an
// agent's processor can give a probe (agentLayout) and to
// Gateway.MaxUnconfiguredProbes places, which bound its memory. A window
// with analysis counts registers it in its own layout, as an engine's
// first instance does. Otherwise the probe is not tracked — no series, no
// place — until its layout is agreed: until then its name and the layouts
// proposed for it wait among the pending probes (at most
// Gateway.MaxUnconfiguredProbes, each gone once its votes' windows have
// closed), and the window is a vote (ContributionUnagreed). Called with mu
// held.
func (e *Engine) unconfiguredProbe(w *Window, own deltaq.Layout, k int64) (*probe, Contribution) {
	name := w.Probe
	if !agentLayout(own) {
		return nil, ContributionInvalid
	}
	if w.Fine {
		if c := e.unconfiguredPlace(e.unconfigured); c != ContributionAccepted {
			return nil, c
		}
		delete(e.pending, name)
		return e.register(name, false, own), ContributionAccepted
	}
	pp := e.pending[name]
	if pp == nil {
		if w.Source == "" {
			return nil, ContributionUnagreed // an anonymous window never votes
		}
		if c := e.unconfiguredPlace(max(e.unconfigured, len(e.pending))); c != ContributionAccepted {
			return nil, c
		}
		pp = &probe{name: strings.Clone(name), lastK: noWindow, lastVote: noWindow}
		e.pending[pp.name] = pp
	}
	if !e.vote(pp, own, w.Source, k) {
		return nil, ContributionUnagreed
	}
	if c := e.unconfiguredPlace(e.unconfigured); c != ContributionAccepted {
		return nil, c
	}
	delete(e.pending, name)
	e.layoutsAgreed++
	return e.register(name, false, own), ContributionAccepted
}

// unconfiguredPlace says whether a window may add a probe no configuration
// names, or a name waiting for a layout quorum, when n of them are tracked
// (or waiting): not from Config.MaxProbes (ContributionProbeLimit), nor
// from Gateway.MaxUnconfiguredProbes, at most as many
// (ContributionUnconfiguredLimit).
func (e *Engine) unconfiguredPlace(n int) Contribution {
	switch {
	case n >= e.cfg.MaxProbes:
		return ContributionProbeLimit
	case n >= e.cfg.Gateway.MaxUnconfiguredProbes:
		return ContributionUnconfiguredLimit
	}
	return ContributionAccepted
}

// minAgentDMaxNs is the shortest dMax an agent's processor gives a probe:
// the thesis form's 1 ms·2⁻¹⁰ with one bin, 10⁶·2⁻¹⁰ ns rounded as the
// processor rounds it (977 ns), below deltaq.MinDMax, the bound of a dMax
// written as a duration.
const minAgentDMaxNs = (int64(deltaq.DeltaBase*1e9) + 1<<(-deltaq.MinExponent-1)) >> -deltaq.MinExponent

// agentLayout reports whether l is a layout an agent's processor can give
// a probe, within the bound a probe no configuration names is held to: a
// dMax in [minAgentDMaxNs, deltaq.MaxDMax] and a ΔQ of at most
// deltaq.MaxThesisBins bins. Log-linear buckets are read on a grid of up
// to deltaq.MaxGridBins bins, ten times the memory: a gateway names such
// probes (with their binning) or shows them in another agent's uniform
// layout. So each such probe costs at most what a configured probe of
// 1000 bins costs (Gateway.MaxUnconfiguredProbes).
func agentLayout(l deltaq.Layout) bool {
	if l.DMaxNs < min(minAgentDMaxNs, int64(deltaq.MinDMax)) || l.DMaxNs > int64(deltaq.MaxDMax) {
		return false
	}
	_, bins := l.Grid()
	return bins <= deltaq.MaxThesisBins
}

// expirePending forgets the pending probes whose votes' windows have all
// closed. Called with mu held, when windows close.
func (e *Engine) expirePending() {
	for name, pp := range e.pending {
		if pp.lastVote < e.k0 {
			delete(e.pending, name)
		}
	}
}

// candidate is a layout other engines' windows propose for a probe, and
// the agents that proposed it with the newest window each did.
type candidate struct {
	lay    deltaq.Layout
	voters []voter
}

type voter struct {
	source string
	k      int64
}

// agree decides whether a valid window of layout own from source for
// window k may be added to probe p: yes when own is the probe's layout of
// window k; otherwise the window is refused, and, when no configuration
// fixes the probe's layout, it is a vote for own, which the probe takes,
// from a window boundary, once Gateway.LayoutQuorum agents proposed it.
// Called with mu held.
func (e *Engine) agree(p *probe, own deltaq.Layout, source string, k int64, fine bool) Contribution {
	at := p.layoutAt(k)
	switch {
	case at.Equal(own):
		return ContributionAccepted
	case fine && !p.lay.Valid() && len(p.pend) == 0:
		// A probe of no layout yet (configured without one) takes the
		// first window's that carries analysis counts, as its first
		// instance's; later windows of other layouts convert.
		if !p.configured && !agentLayout(own) {
			return ContributionInvalid
		}
		p.lay, p.cands = own, nil
		return ContributionAccepted
	case fine:
		return ContributionLayoutMismatch // converted by addWindow
	case p.fixed || p.local || own == p.latest():
		// A fixed layout, or own is agreed already but applies from a
		// later window.
		return ContributionLayoutMismatch
	case !p.configured && !agentLayout(own):
		// No agent gives a probe this layout: the probe's memory is held
		// to what one can (unconfiguredProbe).
		return ContributionInvalid
	}
	if !e.vote(p, own, source, k) {
		if !at.Valid() {
			return ContributionUnagreed
		}
		return ContributionLayoutMismatch
	}
	p.cands = p.cands[:0]
	e.layoutsAgreed++
	e.switchLayout(p, own)
	if p.layoutAt(k) != own {
		// Window k holds counts of the old layout: the new one applies
		// from a later window.
		return ContributionLayoutMismatch
	}
	return ContributionAccepted
}

// vote records that source proposes layout own for probe p in window k,
// and reports whether Gateway.LayoutQuorum distinct named agents now
// propose it within the open windows. A vote lasts while its window is
// open. At most maxCandidates layouts are proposed at a time: a new one
// replaces the one proposed longest ago. Called with mu held.
func (e *Engine) vote(p *probe, own deltaq.Layout, source string, k int64) bool {
	if source == "" {
		return false
	}
	p.lastVote = max(p.lastVote, k)
	var c *candidate
	oldest := -1
	for i := range p.cands {
		cd := &p.cands[i]
		// Forget the votes whose windows have closed.
		cd.voters = slices.DeleteFunc(cd.voters, func(v voter) bool { return e.interval > 0 && v.k < e.k0 })
		if cd.lay.Equal(own) {
			c = cd
		}
		if oldest < 0 || newestVote(cd) < newestVote(&p.cands[oldest]) {
			oldest = i
		}
	}
	if c == nil {
		if len(p.cands) < maxCandidates {
			p.cands = append(p.cands, candidate{})
			oldest = len(p.cands) - 1
		}
		c = &p.cands[oldest]
		*c = candidate{lay: own, voters: c.voters[:0]}
	}
	for i := range c.voters {
		if c.voters[i].source == source {
			c.voters[i].k = max(c.voters[i].k, k)
			return len(c.voters) >= e.cfg.Gateway.LayoutQuorum
		}
	}
	c.voters = append(c.voters, voter{source: strings.Clone(source), k: k})
	return len(c.voters) >= e.cfg.Gateway.LayoutQuorum
}

// newestVote returns the window of a candidate's newest vote.
func newestVote(c *candidate) int64 {
	k := int64(noWindow)
	for _, v := range c.voters {
		k = max(k, v.k)
	}
	return k
}

// WindowOf returns probe p's window of r in the form AddWindow merges, from
// source (dense: BinIndex nil; the bin counts are p's); false when the
// probe had no instance in the window: an empty window adds nothing. A
// probe of log-linear buckets gives its bucket counts and its LogLinear
// layout.
func WindowOf(r *Result, p *ProbeResult, source string) (Window, bool) {
	if p.BinCounts == nil || p.Bins == 0 {
		return Window{}, false
	}
	w := Window{
		Probe: p.Name, Start: r.Start, End: r.End,
		DMaxNs: int64(math.Round(p.Width * float64(p.Bins) * 1e9)), Bins: p.Bins,
		BinCounts: p.BinCounts, SuccessSum: p.SuccessSum,
		Timeouts: p.Counts.Timeout, Failures: p.Counts.Failure,
		Source: source,
	}
	if p.Edges != nil {
		if p.LogLinear == (deltaq.LogLinear{}) {
			return Window{}, false
		}
		w.LogLinear, w.DMaxNs, w.Bins = p.LogLinear, p.LogLinear.High, len(p.BinCounts)
	}
	if p.fineComplete {
		w.Fine, w.FineIndex, w.FineCounts = true, p.FineIndex, p.FineCounts
		w.WeightSum, w.WeightSquares = p.WeightSum, p.WeightSquares
	}
	return w, true
}
