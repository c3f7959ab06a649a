// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package scope

// The Quality of Outcome of a probe as the scope shows it ("Quality of
// Outcome", draft-ietf-ippm-qoo-10): per window, the score of the observed
// and of the calculated ΔQ (deltaq.qoo.score, deltaq.series observed or
// calculated), its latency, loss and rate components, and which of them set
// the score, the least.
//
// A score withheld for too few instances has no point in the output
// (internal/contract, "Quality of Outcome"), so the scope tells a withheld
// score from a probe without a requirement by what it saw before: a series
// of a probe that has had a score is scored, and a later window that brings
// that series' ΔQ (its deltaq.cdf curve) without a score had its score
// withheld. A window without the ΔQ has nothing to score. A probe whose
// scores were all withheld since the scope started shows none, as a probe
// without a requirement does.

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// qooSeries are the series a score may have, in the order they are shown.
var qooSeries = []string{seriesObserved, seriesCalculated}

// qooReading is the Quality of Outcome of one series of a probe in one
// window: the score and its components as received, or withheld (the
// window has the series' ΔQ but no score), or neither (the window has no
// ΔQ of the series to score).
type qooReading struct {
	score, latency, loss, rate scopeReading
	withheld                   bool
}

// scored reports whether the reading has a score.
func (r qooReading) scored() bool { return r.score.ok }

// setBy names the components that set the score: those at the score, the
// least, when it is below 100 (at 100 nothing limits it); nil without a
// score.
func (r qooReading) setBy() []string {
	if !r.score.ok || r.score.v >= 100 {
		return nil
	}
	var by []string
	for _, c := range []struct {
		name string
		v    scopeReading
	}{{"latency", r.latency}, {"loss", r.loss}, {"rate", r.rate}} {
		if c.v.ok && c.v.v <= r.score.v+1e-9 {
			by = append(by, c.name)
		}
	}
	return by
}

// merge returns r with the values of got that are present: a window sent
// in several requests brings its score and components in pieces.
func (r qooReading) merge(got qooReading) qooReading {
	for _, f := range []struct{ dst, src *scopeReading }{
		{&r.score, &got.score}, {&r.latency, &got.latency}, {&r.loss, &got.loss}, {&r.rate, &got.rate},
	} {
		if f.src.ok {
			*f.dst = *f.src
		}
	}
	r.withheld = !r.score.ok
	return r
}

// nextQoO returns a probe's readings after a batch: prev are the readings
// of the window shown so far (nil when the probe never had a score), got
// the scores and components the batch sent by series, curves the series
// of which it sent a ΔQ, and sameWindow whether the batch belongs to the
// window of prev (a window sent in several requests) rather than a later
// one. A series the batch scored takes its score (merged into prev's in the
// same window); a series scored before and not in the batch is withheld
// when the batch sent its ΔQ (unless the same window already has its
// score), has nothing to score in a later window without its ΔQ, and is
// otherwise kept.
func nextQoO(prev map[string]qooReading, got map[string]*qooReading, curves map[string]bool, sameWindow bool) map[string]qooReading {
	if len(prev) == 0 && len(got) == 0 {
		return nil
	}
	next := make(map[string]qooReading, len(qooSeries))
	for s, r := range prev {
		switch {
		case got[s] != nil:
		case curves[s] && !(sameWindow && r.scored()):
			next[s] = qooReading{withheld: true}
		case !sameWindow:
			next[s] = qooReading{}
		default:
			next[s] = r
		}
	}
	for s, r := range got {
		if sameWindow {
			next[s] = prev[s].merge(*r)
		} else {
			next[s] = qooReading{}.merge(*r)
		}
	}
	return next
}

// qooLine states a probe's Quality of Outcome for the terminal: each
// series' score, the components that set it and all its components, or
// that it was withheld; empty for a probe without scores.
func qooLine(q map[string]qooReading) string {
	var parts []string
	for _, s := range qooSeries {
		r, ok := q[s]
		if !ok {
			continue
		}
		switch {
		case r.withheld:
			parts = append(parts, s+" withheld (too few instances)")
		case !r.scored():
			parts = append(parts, s+" -")
		default:
			parts = append(parts, s+" "+qooText(r))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "QoO: " + strings.Join(parts, " │ ")
}

// qooText is a score, what set it and its components:
// "63.2 set by latency (latency 63.2, loss 100)".
func qooText(r qooReading) string {
	text := formatScore(r.score.v)
	if by := r.setBy(); len(by) > 0 {
		text += " set by " + strings.Join(by, " and ")
	}
	var comps []string
	for _, c := range []struct {
		name string
		v    scopeReading
	}{{"latency", r.latency}, {"loss", r.loss}, {"rate", r.rate}} {
		if c.v.ok {
			comps = append(comps, fmt.Sprintf("%s %s", c.name, formatScore(c.v.v)))
		}
	}
	if len(comps) > 0 {
		text += " (" + strings.Join(comps, ", ") + ")"
	}
	return text
}

// formatScore writes a score rounded down to one decimal, so that a score
// shown as 100 is 100 and one shown at a threshold is not below it.
func formatScore(v float64) string {
	return strconv.FormatFloat(math.Floor(v*10+1e-9)/10, 'f', -1, 64)
}
