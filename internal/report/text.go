// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package report

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/deltaq-otel/deltaq/analysis"
	"github.com/deltaq-otel/deltaq/distribution"
	"github.com/deltaq-otel/deltaq/internal/printable"
)

// WriteText writes the report as text: the instances counted, then the
// window table and the whole input, or the span names read when no span
// matched any probe.
func (r *Report) WriteText(w io.Writer) {
	res, st := r.whole, r.stats
	fmt.Fprintf(w, "%d instances", st.Counted)
	if d := st.Dropped.Total(); d > 0 {
		fmt.Fprintf(w, " (not counted: %s)", formatDrops(st.Dropped))
	}
	if st.Counted > 0 {
		fmt.Fprintf(w, ", ending from %s to %s", textTime(res.Start), textTime(res.End))
	}
	fmt.Fprintln(w)
	if r.unmatched() {
		r.names.writeText(w)
		return
	}
	r.writeWindows(w)
	fmt.Fprintf(w, "\nthe whole input as one window:\n")
	for i := range res.Probes {
		p := &res.Probes[i]
		fmt.Fprintf(w, "\n%s: %d instances: %d success, %d timeout, %d failure\n", printable.String(p.Name), p.Counts.Total(), p.Counts.Success, p.Counts.Timeout, p.Counts.Failure)
		if p.Observed == nil {
			if p.Calculated != nil {
				writeQuantiles(w, "calculated", p.Quantiles, true)
			}
			continue
		}
		fmt.Fprintf(w, "  %-11s %d bins of %s, dMax %s\n", "histogram", p.Bins, distribution.FormatDuration(p.Width), distribution.FormatDuration(p.Observed.DMax()))
		writeQuantiles(w, "observed", p.Quantiles, false)
		fr, _ := p.FailureRatio()
		fmt.Fprintf(w, "  %-11s %s\n", "failure", strconv.FormatFloat(fr, 'g', 6, 64))
		if p.Calculated != nil {
			writeQuantiles(w, "calculated", p.Quantiles, true)
		}
		if p.HasDivergence {
			fmt.Fprintf(w, "  %-11s %s\n", "divergence", strconv.FormatFloat(p.Divergence, 'g', 4, 64))
		}
		if c := p.QTACheck; c != nil {
			verdict := "pass"
			if !c.OK {
				verdict = "FAIL"
			}
			var parts []string
			for _, pc := range c.Points {
				rel := "≥"
				if !pc.OK {
					rel = "<"
				}
				parts = append(parts, fmt.Sprintf("F(%s) = %.4g %s %.4g", distribution.FormatDuration(pc.Delay), pc.Observed, rel, pc.P))
			}
			rel := "≤"
			if !c.FailureOK {
				rel = ">"
			}
			parts = append(parts, fmt.Sprintf("failure %.4g %s %.4g", c.Failure, rel, c.MaxFailure))
			fmt.Fprintf(w, "  %-11s %s: %s\n", "qta", verdict, strings.Join(parts, "; "))
		}
		writeQoO(w, p)
	}
	for _, t := range res.Triggers {
		fmt.Fprintf(w, "\ntrigger %s on %s: observed %.4g, required %.4g\n", t.Kind, printable.String(t.Probe), t.Observed, t.Required)
	}
}

// formatDrops writes the non-zero drop counters as "2 too_late, 1 invalid".
func formatDrops(d analysis.Drops) string {
	var parts []string
	for reason, n := range d {
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, analysis.DropReason(reason)))
		}
	}
	return strings.Join(parts, ", ")
}

// lagHint advises how to count the instances that arrived too late: the
// spans of the files ended up to names.behind before spans read earlier,
// so a lag of that much, rounded up to a millisecond, keeps their windows
// open; a lag longer than analysis.MaxLagIntervals intervals is refused, so
// past it the advice is to sort the input or widen the windows.
func (r *Report) lagHint(lag time.Duration) string {
	need := time.Duration(r.names.behind).Truncate(time.Millisecond) + time.Millisecond
	if need <= lag {
		return ""
	}
	if need > analysis.MaxLagIntervals*r.cfg.Interval {
		return fmt.Sprintf(": the input's spans end up to %s before spans read earlier; sort them by end time, or widen the windows with --interval",
			distribution.FormatDuration(need.Seconds()))
	}
	return fmt.Sprintf(": --lag %s would count them", distribution.FormatDuration(need.Seconds()))
}

// writeWindows writes the window table and the triggers of the windows.
func (r *Report) writeWindows(w io.Writer) {
	if r.cfg.Interval <= 0 {
		return
	}
	lag := r.cfg.Lag
	if lag == 0 {
		lag = r.cfg.Interval
	}
	fmt.Fprintf(w, "\nwindows of %s by span end time, closed %s after their end: %d with instances", distribution.FormatDuration(r.cfg.Interval.Seconds()),
		distribution.FormatDuration(lag.Seconds()), len(r.rows)+r.notKept)
	if r.empty > 0 {
		fmt.Fprintf(w, ", %d without (not shown)", r.empty)
	}
	if r.notKept > 0 {
		fmt.Fprintf(w, "; the last %d not kept (at most %d are; see --interval)", r.notKept, MaxWindowRows)
	}
	if n := r.tooLate(); n > 0 {
		fmt.Fprintf(w, "; %d instances ended in a window already closed (too_late, not counted in the windows)%s", n, r.lagHint(lag))
	}
	if n := r.windowStats.Dropped[analysis.DropTooEarly]; n > 0 {
		fmt.Fprintf(w, "; %d instances ended beyond the windows open when they were read, among instances of an earlier time (too_early, not counted in the windows: their host's clock ahead, as the collector drops them)", n)
	}
	fmt.Fprintln(w)
	if len(r.rows) == 0 {
		return
	}
	diagram := r.cfg.Diagram != "" || r.cfg.DiagramFile != ""
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := []string{"window start (UTC)", "probe", "instances", "success", "timeout", "failure"}
	for _, q := range r.qs {
		head = append(head, "q"+formatQ(q))
	}
	head = append(head, "qta")
	if diagram {
		head = append(head, "divergence")
	}
	qoo := hasQoO(r.cfg.Probes)
	if qoo {
		head = append(head, "qoo")
	}
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for _, row := range r.rows {
		for i, p := range row.probes {
			start := ""
			if i == 0 {
				start = textTime(row.start)
			}
			cells := []string{start, printable.String(p.name), strconv.FormatInt(p.counts.Total(), 10),
				strconv.FormatInt(p.counts.Success, 10), strconv.FormatInt(p.counts.Timeout, 10), strconv.FormatInt(p.counts.Failure, 10)}
			for _, v := range p.quantiles {
				s := "unreachable"
				if !math.IsNaN(v) {
					s = distribution.FormatDuration(v)
				}
				cells = append(cells, s)
			}
			cells = append(cells, p.verdict())
			if diagram {
				d := "-"
				if p.hasDivergence {
					d = strconv.FormatFloat(p.divergence, 'g', 4, 64)
				}
				cells = append(cells, d)
			}
			if qoo {
				cells = append(cells, p.qoo)
			}
			fmt.Fprintln(tw, strings.Join(cells, "\t"))
		}
	}
	tw.Flush()
	for _, row := range r.rows {
		for _, t := range row.triggers {
			fmt.Fprintf(w, "trigger %s on %s in the window from %s: observed %.4g, required %.4g\n", t.Kind, printable.String(t.Probe),
				textTime(row.start), t.Observed, t.Required)
		}
	}
}

func writeQuantiles(w io.Writer, label string, qs []analysis.QuantileValue, calculated bool) {
	fmt.Fprintf(w, "  %-11s", label)
	for _, q := range qs {
		v, ok := q.Observed, q.ObservedOK
		if calculated {
			v, ok = q.Calculated, q.CalculatedOK
		}
		s := "unreachable"
		if ok {
			s = distribution.FormatDuration(v)
		}
		fmt.Fprintf(w, " %s=%s", formatQ(q.Q), s)
	}
	fmt.Fprintln(w)
}
