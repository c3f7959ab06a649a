// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package scope

import (
	"time"
	"unicode/utf8"
)

// cuts counts what the bounds of Limits cut, in both views: the terminal
// shows them in its header, the page in its stats.
type cuts struct {
	// ProbesRefused counts data points, not probes: those of a probe
	// refused for want of a slot (Limits.Probes, none silent for
	// Limits.ProbeTTL). The browser view, which gives slots to a batch's
	// probes once it is decoded, counts the points it took of a probe
	// refused (probeView.points), as the terminal does; a point is counted
	// once, under the first check or bound that refused it.
	ProbesRefused int `json:"probes_refused"`
	// ProbesExpired counts probes removed, silent for Limits.ProbeTTL, to
	// give their slot to a new one.
	ProbesExpired int `json:"probes_expired"`
	// SeriesRefused counts data points of a curve, quantile row or outcome
	// kind beyond Limits.Series in a probe.
	SeriesRefused int `json:"series_refused"`
	// PointsCut counts points beyond Limits.Points in a curve, a quantile
	// row or a QTA.
	PointsCut int `json:"points_cut"`
	// NamesRefused counts data points whose probe, series, scenario or
	// outcome name is longer than Limits.NameBytes.
	NamesRefused int `json:"names_refused"`
	// AttrsCut counts trigger attributes and messages cut to
	// Limits.AttrBytes, or left out beyond maxTriggerAttrs.
	AttrsCut int `json:"attrs_cut"`
}

func (c *cuts) add(o cuts) {
	c.ProbesRefused += o.ProbesRefused
	c.ProbesExpired += o.ProbesExpired
	c.SeriesRefused += o.SeriesRefused
	c.PointsCut += o.PointsCut
	c.NamesRefused += o.NamesRefused
	c.AttrsCut += o.AttrsCut
}

// slots admits probes into a table of at most limit of them. A probe
// already in keeps its slot while it sends; a new one takes the slot of
// the probe heard from least recently if that one has been silent for ttl
// (by the scope's clock), and is refused otherwise. So junk names hold
// their slots only while their sender keeps sending them, and a real probe
// is admitted once they stop.
type slots struct {
	limit int
	ttl   time.Duration
	seen  map[string]time.Time // arrival of each probe's latest data
	// quietUntil is a time before which no probe can expire: the oldest
	// arrival plus ttl when last computed (arrivals only move forward), so
	// that a flood of new names costs one comparison each, not a scan.
	quietUntil time.Time
}

func newSlots(limit int, ttl time.Duration) *slots {
	return &slots{limit: limit, ttl: ttl, seen: map[string]time.Time{}}
}

// admit records data of probe name at now. It reports whether the probe
// has a slot and, when a silent probe gave up its slot to it, that probe's
// name, whose data the caller removes.
func (s *slots) admit(name string, now time.Time) (ok bool, expired string) {
	if _, in := s.seen[name]; in || len(s.seen) < s.limit {
		s.seen[name] = now
		return true, ""
	}
	if now.Before(s.quietUntil) {
		return false, ""
	}
	var oldest string
	var at time.Time
	for n, t := range s.seen {
		if oldest == "" || t.Before(at) {
			oldest, at = n, t
		}
	}
	if now.Sub(at) < s.ttl {
		s.quietUntil = at.Add(s.ttl)
		return false, ""
	}
	delete(s.seen, oldest)
	s.seen[name] = now
	return true, oldest
}

// cutString returns s cut to at most n bytes at a character boundary (a
// byte of invalid UTF-8 counts as one), and whether it was cut.
func cutString(s string, n int) (string, bool) {
	if len(s) <= n {
		return s, false
	}
	i := n
	for i > 0 && i > n-utf8.UTFMax && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i], true
}
