// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package analysis

import (
	"encoding/hex"
	"encoding/json"
	"io"
	"time"

	"github.com/deltaq-otel/deltaq/deltaq"
)

// Snapshot is the state of every probe from before a trigger to after it
// (thesis 3.5.1): the observed and calculated ΔQs of Config.Snapshot.Before
// windows before the window in which the first trigger fired, that window,
// and the windows of Config.Snapshot.After after it. Triggers that fire
// while a snapshot is being recorded join it rather than starting another.
type Snapshot struct {
	// ID numbers the snapshots of an engine from 1.
	ID int64
	// Time is the end of the window in which the first trigger fired.
	Time time.Time
	// Triggers are the triggers that fired while the snapshot was recorded.
	Triggers []TriggerEvent
	// Windows are the recorded windows, oldest first.
	Windows []SnapshotWindow
}

// SnapshotWindow is one window of a snapshot.
type SnapshotWindow struct {
	Start, End time.Time
	Probes     []SnapshotProbe
}

// SnapshotProbe is one probe in one window of a snapshot. Observed and
// Calculated are nil when the window had no such ΔQ.
type SnapshotProbe struct {
	Name                 string
	Counts               Counts
	Observed, Calculated *deltaq.DeltaQ
	// Worst are the probe's worst instances in the window.
	Worst WorstInstances
}

// snapshotRecorder keeps the last Before windows and assembles snapshots.
type snapshotRecorder struct {
	cfg       snapshotWindows
	past      []SnapshotWindow // oldest first, at most cfg.Before
	active    *Snapshot
	remaining int
}

// window records a closed window, starts a snapshot when a trigger fired and
// none is being recorded, and appends to r.Snapshots a snapshot that this
// window completes.
func (s *snapshotRecorder) window(r *Result, nextID *int64) {
	if !s.cfg.Enabled {
		return
	}
	w := SnapshotWindow{Start: r.Start, End: r.End, Probes: make([]SnapshotProbe, len(r.Probes))}
	for i := range r.Probes {
		p := &r.Probes[i]
		w.Probes[i] = SnapshotProbe{Name: p.Name, Counts: p.Counts, Observed: p.Observed, Calculated: p.Calculated, Worst: p.Worst}
	}
	switch {
	case s.active != nil:
		s.active.Windows = append(s.active.Windows, w)
		s.remaining--
	case len(r.Triggers) > 0:
		*nextID++
		s.active = &Snapshot{ID: *nextID, Time: r.End}
		s.active.Windows = append(append(s.active.Windows, s.past...), w)
		s.remaining = s.cfg.After
	}
	if s.active != nil {
		for i := range r.Triggers {
			r.Triggers[i].SnapshotID = s.active.ID
		}
		s.active.Triggers = append(s.active.Triggers, r.Triggers...)
	}
	if s.active != nil && s.remaining <= 0 {
		r.Snapshots = append(r.Snapshots, s.active)
		s.active = nil
	}
	if s.cfg.Before > 0 {
		if len(s.past) == s.cfg.Before {
			copy(s.past, s.past[1:])
			s.past = s.past[:len(s.past)-1]
		}
		s.past = append(s.past, w)
	}
}

// Pending returns the snapshot being recorded, if any, so that a front end
// can emit it at shutdown. It is the engine's own value: do not modify it.
func (e *Engine) Pending() *Snapshot {
	e.amu.Lock()
	defer e.amu.Unlock()
	return e.an.snap.active
}

// JSON form of a snapshot file.
type (
	snapshotJSON struct {
		ID       int64                `json:"id"`
		Time     time.Time            `json:"time"`
		Triggers []triggerJSON        `json:"triggers"`
		Windows  []snapshotWindowJSON `json:"windows"`
	}
	triggerJSON struct {
		Probe        string    `json:"probe"`
		Trigger      string    `json:"trigger"`
		Time         time.Time `json:"time"`
		Observed     float64   `json:"observed"`
		Required     float64   `json:"required"`
		DelaySeconds float64   `json:"delay_seconds,omitempty"`
		// TraceIDs name the worst instances of the trigger's window.
		TraceIDs *traceIDsJSON `json:"trace_ids,omitempty"`
	}
	// traceIDsJSON is the JSON form of WorstInstances: lowercase hex trace
	// ids, as on the trigger and snapshot records.
	traceIDsJSON struct {
		Slowest []string `json:"slowest,omitempty"`
		Timeout []string `json:"timeout,omitempty"`
		Failure []string `json:"failure,omitempty"`
	}
	snapshotWindowJSON struct {
		Start  time.Time           `json:"start"`
		End    time.Time           `json:"end"`
		Probes []snapshotProbeJSON `json:"probes"`
	}
	snapshotProbeJSON struct {
		Probe      string   `json:"probe"`
		Success    int64    `json:"success"`
		Timeout    int64    `json:"timeout"`
		Failure    int64    `json:"failure"`
		Observed   *CDFJSON `json:"observed"`
		Calculated *CDFJSON `json:"calculated"`
		// TraceIDs name the probe's worst instances in the window.
		TraceIDs *traceIDsJSON `json:"trace_ids,omitempty"`
	}
)

// newTraceIDsJSON returns the JSON form of w, nil when it names none.
func newTraceIDsJSON(w WorstInstances) *traceIDsJSON {
	if w.Empty() {
		return nil
	}
	ids := func(xs []Exemplar) []string {
		out := make([]string, len(xs))
		for i := range xs {
			out[i] = hex.EncodeToString(xs[i].TraceID[:])
		}
		return out
	}
	return &traceIDsJSON{Slowest: ids(w.Slowest), Timeout: ids(w.Timeouts), Failure: ids(w.Failures)}
}

// CDFJSON is the JSON form of a ΔQ in snapshots: the bin width in seconds
// and the CDF at the right edge of every bin, CDF[i] = F((i+1)·Width).
type CDFJSON struct {
	Width float64   `json:"width"`
	CDF   []float64 `json:"cdf"`
}

// NewCDFJSON returns the JSON form of d, or nil for a nil d.
func NewCDFJSON(d *deltaq.DeltaQ) *CDFJSON {
	if d == nil {
		return nil
	}
	return &CDFJSON{Width: d.Width(), CDF: d.CDFEdges(nil)}
}

// WriteJSON writes the snapshot as one indented JSON document.
func (s *Snapshot) WriteJSON(w io.Writer) error {
	out := snapshotJSON{ID: s.ID, Time: s.Time, Triggers: make([]triggerJSON, len(s.Triggers)), Windows: make([]snapshotWindowJSON, len(s.Windows))}
	for i, t := range s.Triggers {
		out.Triggers[i] = triggerJSON{Probe: t.Probe, Trigger: t.Kind.String(), Time: t.Time,
			Observed: t.Observed, Required: t.Required, DelaySeconds: t.Delay.Seconds(), TraceIDs: newTraceIDsJSON(t.Worst)}
	}
	for i, win := range s.Windows {
		wj := snapshotWindowJSON{Start: win.Start, End: win.End, Probes: make([]snapshotProbeJSON, len(win.Probes))}
		for j, p := range win.Probes {
			wj.Probes[j] = snapshotProbeJSON{Probe: p.Name, Success: p.Counts.Success, Timeout: p.Counts.Timeout,
				Failure: p.Counts.Failure, Observed: NewCDFJSON(p.Observed), Calculated: NewCDFJSON(p.Calculated),
				TraceIDs: newTraceIDsJSON(p.Worst)}
		}
		out.Windows[i] = wj
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
