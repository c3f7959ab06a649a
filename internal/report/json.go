// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package report

import (
	"encoding/json"
	"io"
	"math"
	"time"

	"github.com/deltaq-otel/deltaq/analysis"
)

// JSON output. Delays are in seconds.
type (
	analysisJSON struct {
		Window  *windowJSON                   `json:"window,omitempty"`
		Counted int64                         `json:"counted"`
		Dropped map[string]int64              `json:"dropped,omitempty"`
		Probes  map[string]*probeAnalysisJSON `json:"probes"`
		Trigger []triggerAnalysisJSON         `json:"triggers,omitempty"`
		// The windows: their length and lag in seconds, those with
		// instances, and the counts of the others.
		Interval       float64             `json:"interval,omitempty"`
		Lag            float64             `json:"lag,omitempty"`
		Windows        []windowRowJSON     `json:"windows"`
		WindowsDropped map[string]int64    `json:"windows_dropped,omitempty"`
		WindowsEmpty   int                 `json:"windows_empty"`
		WindowsNotKept int                 `json:"windows_not_kept"`
		Unmatched      *unmatchedSpansJSON `json:"unmatched,omitempty"`
	}
	windowJSON struct {
		Start string `json:"start"`
		End   string `json:"end"`
	}
	probeAnalysisJSON struct {
		Count               int64               `json:"count"`
		Success             int64               `json:"success"`
		Timeout             int64               `json:"timeout"`
		Failure             int64               `json:"failure"`
		Quantiles           map[string]*float64 `json:"quantiles"`
		FailureRatio        *float64            `json:"failure_ratio"`
		QTA                 *qtaJSON            `json:"qta,omitempty"`
		CalculatedQuantiles map[string]*float64 `json:"calculated_quantiles,omitempty"`
		Divergence          *float64            `json:"divergence,omitempty"`
		QoO                 *qooAnalysisJSON    `json:"qoo,omitempty"`
		hasQTA              bool
	}
	qtaJSON struct {
		Pass       bool           `json:"pass"`
		Points     []qtaPointJSON `json:"points"`
		Failure    float64        `json:"failure"`
		MaxFailure float64        `json:"max_failure"`
		FailureOK  bool           `json:"failure_ok"`
	}
	qtaPointJSON struct {
		Delay    float64 `json:"delay"`
		P        float64 `json:"p"`
		Observed float64 `json:"observed"`
		OK       bool    `json:"ok"`
	}
	triggerAnalysisJSON struct {
		Probe    string  `json:"probe"`
		Trigger  string  `json:"trigger"`
		Observed float64 `json:"observed"`
		Required float64 `json:"required"`
	}
	windowRowJSON struct {
		Start    string                     `json:"start"`
		End      string                     `json:"end"`
		Probes   map[string]windowProbeJSON `json:"probes"`
		Triggers []triggerAnalysisJSON      `json:"triggers,omitempty"`
	}
	windowProbeJSON struct {
		Count        int64               `json:"count"`
		Success      int64               `json:"success"`
		Timeout      int64               `json:"timeout"`
		Failure      int64               `json:"failure"`
		Quantiles    map[string]*float64 `json:"quantiles"`
		FailureRatio float64             `json:"failure_ratio"`
		QTAPass      *bool               `json:"qta_pass,omitempty"`
		Divergence   *float64            `json:"divergence,omitempty"`
		// QoO is the observed Quality of Outcome's score: "withheld",
		// absent without a qoo requirement.
		QoO string `json:"qoo,omitempty"`
	}
)

// MarshalJSON writes "qta": null for a probe with a QTA but no instances,
// and leaves the key out for a probe without a QTA.
func (p *probeAnalysisJSON) MarshalJSON() ([]byte, error) {
	type plain probeAnalysisJSON
	b, err := json.Marshal((*plain)(p))
	if err != nil || !p.hasQTA || p.QTA != nil {
		return b, err
	}
	return append(b[:len(b)-1], []byte(`,"qta":null}`)...), nil
}

// jsonTime writes a time in the JSON output.
func jsonTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// dropsJSON returns the non-zero drop counters by reason, nil if none.
func dropsJSON(d analysis.Drops) map[string]int64 {
	var out map[string]int64
	for reason, n := range d {
		if n > 0 {
			if out == nil {
				out = map[string]int64{}
			}
			out[analysis.DropReason(reason).String()] = n
		}
	}
	return out
}

func triggersJSON(ts []analysis.TriggerEvent) []triggerAnalysisJSON {
	var out []triggerAnalysisJSON
	for _, t := range ts {
		out = append(out, triggerAnalysisJSON{Probe: t.Probe, Trigger: t.Kind.String(), Observed: t.Observed, Required: t.Required})
	}
	return out
}

// WriteJSON writes the report as one JSON document (see deltaq help
// analyze): delays in seconds, a quantile out of reach null.
func (r *Report) WriteJSON(w io.Writer) error {
	res, st := r.whole, r.stats
	out := analysisJSON{Counted: st.Counted, Probes: map[string]*probeAnalysisJSON{}, Dropped: dropsJSON(st.Dropped),
		Trigger: triggersJSON(res.Triggers), Windows: []windowRowJSON{}, WindowsDropped: dropsJSON(r.windowStats.Dropped),
		WindowsEmpty: r.empty, WindowsNotKept: r.notKept}
	if st.Counted > 0 {
		out.Window = &windowJSON{Start: jsonTime(res.Start), End: jsonTime(res.End)}
	}
	if r.cfg.Interval > 0 {
		out.Interval = r.cfg.Interval.Seconds()
		out.Lag = r.cfg.Lag.Seconds()
		if r.cfg.Lag == 0 {
			out.Lag = out.Interval
		}
	}
	for i := range res.Probes {
		p := &res.Probes[i]
		pj := &probeAnalysisJSON{
			Count: p.Counts.Total(), Success: p.Counts.Success, Timeout: p.Counts.Timeout, Failure: p.Counts.Failure,
			Quantiles: map[string]*float64{}, hasQTA: p.QTA != nil,
		}
		for _, q := range p.Quantiles {
			pj.Quantiles[formatQ(q.Q)] = optional(q.Observed, q.ObservedOK)
		}
		if fr, ok := p.FailureRatio(); ok {
			pj.FailureRatio = &fr
		}
		if c := p.QTACheck; c != nil {
			qj := &qtaJSON{Pass: c.OK, Failure: c.Failure, MaxFailure: c.MaxFailure, FailureOK: c.FailureOK, Points: []qtaPointJSON{}}
			for _, pc := range c.Points {
				qj.Points = append(qj.Points, qtaPointJSON{Delay: pc.Delay, P: pc.P, Observed: pc.Observed, OK: pc.OK})
			}
			pj.QTA = qj
		}
		if p.Calculated != nil {
			pj.CalculatedQuantiles = map[string]*float64{}
			for _, q := range p.Quantiles {
				pj.CalculatedQuantiles[formatQ(q.Q)] = optional(q.Calculated, q.CalculatedOK)
			}
		}
		if p.HasDivergence {
			d := p.Divergence
			pj.Divergence = &d
		}
		pj.QoO = qooJSONOf(p.QoO)
		out.Probes[p.Name] = pj
	}
	for _, row := range r.rows {
		rj := windowRowJSON{Start: jsonTime(row.start), End: jsonTime(row.end), Probes: map[string]windowProbeJSON{}, Triggers: triggersJSON(row.triggers)}
		for _, p := range row.probes {
			pj := windowProbeJSON{Count: p.counts.Total(), Success: p.counts.Success, Timeout: p.counts.Timeout, Failure: p.counts.Failure,
				Quantiles: map[string]*float64{}, FailureRatio: p.failure, Divergence: optional(p.divergence, p.hasDivergence), QoO: p.qoo}
			for j, q := range r.qs {
				pj.Quantiles[formatQ(q)] = optional(p.quantiles[j], !math.IsNaN(p.quantiles[j]))
			}
			if p.qta != 0 {
				pass := p.qta > 0
				pj.QTAPass = &pass
			}
			rj.Probes[p.name] = pj
		}
		out.Windows = append(out.Windows, rj)
	}
	if r.unmatched() {
		out.Unmatched = r.names.json()
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

func optional(v float64, ok bool) *float64 {
	if !ok {
		return nil
	}
	return &v
}
