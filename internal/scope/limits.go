// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package scope

import (
	"flag"
	"fmt"
	"time"
)

// Limits bound everything the scope keeps and sends, so that no sender of
// OTLP and no browser can make it grow without end (docs/design.md, "Trust
// rules"). Each bound has a default (DefaultLimits), a range (Validate) and
// a counter of what it cut (webStats on the page, the terminal's header).
type Limits struct {
	// Windows is how many windows per probe the browser view keeps for its
	// time slider (--windows).
	Windows int
	// Probes is how many probes each view keeps (--max-probes). A new probe
	// beyond it takes the slot of the probe heard from least recently when
	// that one has been silent for ProbeTTL, else it is refused
	// (probes_refused counts its data points; probes_expired the probes
	// whose slot was taken).
	Probes int
	// ProbeTTL is how long a probe keeps its slot without data
	// (--probe-ttl), measured by the scope's clock on arrival, not by the
	// timestamps sent: junk names age out, a real probe then gets a slot.
	ProbeTTL time.Duration
	// Ahead is how far ahead of the scope's clock the timestamp of a data
	// point or trigger record may be (--max-ahead): the clocks of the
	// collector and the scope differ a little. One stamped later is
	// malformed, not shown: a probe's newest timestamp is its window's end,
	// and one from the future would stand for every window until then; the
	// triggers are kept newest last, and one from the future would stay
	// listed, and take one of the places, for ever.
	Ahead time.Duration
	// Series is how many curves (and quantile rows) a probe's window holds:
	// observed, calculated, mean, band, QTA and what-if scenarios
	// (--max-series). Further series are refused (series_refused).
	Series int
	// Points is how many points a curve holds (--max-points); the
	// connector sends one per bin, at most 1,000. Further points are cut
	// (points_cut).
	Points int
	// NameBytes is the longest probe, series, scenario or outcome name, in
	// bytes (--max-name); a data point with a longer one is refused
	// (names_refused). The processor's own bound on probe names is 256.
	NameBytes int
	// AttrBytes is the longest trigger message or attribute value kept, in
	// bytes (--max-attr); longer ones are cut (attrs_cut), and a trigger
	// record keeps at most maxTriggerAttrs attributes.
	AttrBytes int
	// StatePoints is how many curve and quantile points the browser view
	// keeps over all probes and windows (--max-state-points); beyond it the
	// oldest windows go first (windows_evicted), never a probe's latest.
	StatePoints int
	// Clients is how many browsers may stream at once, and how many
	// /api/state requests may run at once (--max-clients); more are
	// answered 503 (clients_refused).
	Clients int
	// FrameBytes is the size an event sent to a browser stays within
	// (--max-frame): the state is sent as a head and then windows in frames
	// of at most this size; one window larger than it (at most Series ×
	// Points points) is sent alone.
	FrameBytes int
	// BatchBytes is the largest OTLP/gRPC message accepted (--max-batch).
	BatchBytes int
	// ClientIdle is how long a browser's stream stays open without the
	// page showing it is alive (--client-idle): the page posts to
	// /api/alive six times in that time, and a stream that heard nothing
	// for that long is closed (clients_idle), so that connections that
	// only hold a place lose it.
	ClientIdle time.Duration
}

// tooFarAhead reports whether a timestamp t is more than l.Ahead ahead of
// now, the scope's clock: a data point or trigger record stamped so is
// malformed.
func (l Limits) tooFarAhead(t, now time.Time) bool { return t.After(now.Add(l.Ahead)) }

// maxTriggerAttrs bounds the attributes a trigger record keeps.
const maxTriggerAttrs = 16

// DefaultLimits are the bounds by default: for the demo's 3 probes and a
// connector of 100 probes of 1,000 bins alike, with a few MiB per browser.
func DefaultLimits() Limits {
	return Limits{
		Windows:     60,
		Probes:      100,
		ProbeTTL:    5 * time.Minute,
		Ahead:       time.Minute,
		Series:      16,
		Points:      1024,
		NameBytes:   256,
		AttrBytes:   1024,
		StatePoints: 1 << 20,
		Clients:     8,
		FrameBytes:  512 << 10,
		BatchBytes:  16 << 20,
		// Long enough for a tab in the background, whose timers a browser
		// may run once a minute.
		ClientIdle: 2 * time.Minute,
	}
}

// limitRange is one bound's flag, documentation and range, and whether it
// bounds the browser view alone.
type limitRange struct {
	flag    string
	usage   string
	lo, hi  int
	field   func(*Limits) *int
	browser bool
}

// limitRanges lists the integer bounds with their flags and ranges.
var limitRanges = []limitRange{
	{"windows", "the browser view keeps `K` windows per probe for its time slider", 1, 1000, func(l *Limits) *int { return &l.Windows }, true},
	{"max-probes", "`N` probes kept; a new one takes the slot of one silent for --probe-ttl, else is refused", 1, 10000, func(l *Limits) *int { return &l.Probes }, false},
	{"max-series", "`N` curves per probe, what-if scenarios included", 1, 256, func(l *Limits) *int { return &l.Series }, false},
	{"max-points", "`N` points per curve", 2, 100000, func(l *Limits) *int { return &l.Points }, false},
	{"max-name", "longest probe, series or outcome name, in `bytes`", 16, 65536, func(l *Limits) *int { return &l.NameBytes }, false},
	{"max-attr", "longest trigger message or attribute value kept, in `bytes`", 64, 1 << 20, func(l *Limits) *int { return &l.AttrBytes }, false},
	{"max-state-points", "the browser view keeps `N` curve and quantile points in all", 1000, 1 << 28, func(l *Limits) *int { return &l.StatePoints }, true},
	{"max-clients", "`N` browsers streaming at once, and as many /api/state requests", 1, 1000, func(l *Limits) *int { return &l.Clients }, true},
	{"max-frame", "size of one event sent to a browser, in `bytes`", 64 << 10, 256 << 20, func(l *Limits) *int { return &l.FrameBytes }, true},
	{"max-batch", "largest OTLP/gRPC message accepted, in `bytes`", 64 << 10, 256 << 20, func(l *Limits) *int { return &l.BatchBytes }, false},
}

// BrowserFlags returns the flags of the bounds of the browser view alone
// (--http), which mean nothing without it.
func BrowserFlags() []string {
	names := []string{"client-idle"}
	for _, r := range limitRanges {
		if r.browser {
			names = append(names, r.flag)
		}
	}
	return names
}

// RegisterFlags defines a flag for every bound, defaulting to l's values.
func (l *Limits) RegisterFlags(fs *flag.FlagSet) {
	for _, r := range limitRanges {
		p := r.field(l)
		fs.IntVar(p, r.flag, *p, fmt.Sprintf("%s, in [%d, %d]", r.usage, r.lo, r.hi))
	}
	fs.DurationVar(&l.ProbeTTL, "probe-ttl", l.ProbeTTL, "how long a silent probe keeps its slot (`duration`, in [1s, 24h])")
	fs.DurationVar(&l.Ahead, "max-ahead", l.Ahead,
		"how far ahead of this machine's clock the timestamp of a data point or trigger record may be; later ones are malformed (`duration`, in [1s, 24h])")
	fs.DurationVar(&l.ClientIdle, "client-idle", l.ClientIdle,
		"how long a browser's stream stays open without its page saying it is alive (`duration`, in [10s, 1h])")
}

// Validate reports the first bound outside its range, named by its flag.
func (l Limits) Validate() error {
	for _, r := range limitRanges {
		if v := *r.field(&l); v < r.lo || v > r.hi {
			return fmt.Errorf("--%s %d outside [%d, %d]", r.flag, v, r.lo, r.hi)
		}
	}
	if l.ProbeTTL < time.Second || l.ProbeTTL > 24*time.Hour {
		return fmt.Errorf("--probe-ttl %v outside [1s, 24h]", l.ProbeTTL)
	}
	if l.Ahead < time.Second || l.Ahead > 24*time.Hour {
		return fmt.Errorf("--max-ahead %v outside [1s, 24h]", l.Ahead)
	}
	if l.ClientIdle < 10*time.Second || l.ClientIdle > time.Hour {
		return fmt.Errorf("--client-idle %v outside [10s, 1h]", l.ClientIdle)
	}
	return nil
}
