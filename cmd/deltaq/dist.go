package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/deltaq-otel/deltaq/deltaq"
)

// expHorizon is how many means of an exponential distribution the default
// dMax covers: the tail beyond, e^−20 ≈ 2·10⁻⁹, becomes intangible.
const expHorizon = 20

// maxDistDepth bounds the nesting of choice(…) in one DIST.
const maxDistDepth = 32

// dist is an assumed delay distribution of an outcome, written on the
// command line as DIST (see distHelp).
type dist interface {
	// build returns the ΔQ of the distribution on bins bins of width width.
	build(width float64, bins int) (deltaq.DeltaQ, error)
	// horizon is the largest delay the distribution names (expHorizon
	// means for exp), from which the default dMax is chosen.
	horizon() float64
}

const distHelp = `DIST is one of (durations take ns, us, ms or s, e.g. 2.5ms):
  point(D)                  always exactly D
  uniform(LO,HI)            uniform on [LO, HI)
  exp(MEAN)                 exponential with the given mean
  never                     never completes (all failure)
  steps(D1:P1,D2:P2,...)    step CDF reaching probability Pi at delay Di
  choice(W1:DIST1,...)      DISTi with probability Wi (the Wi sum to 1)`

type pointDist struct{ d float64 }
type uniformDist struct{ lo, hi float64 }
type expDist struct{ mean float64 }
type neverDist struct{}
type stepsDist struct{ pts []deltaq.Step }
type choiceDist struct {
	weights []float64
	parts   []dist
}

func (p pointDist) build(w float64, n int) (deltaq.DeltaQ, error) { return deltaq.Point(p.d, w, n) }
func (p pointDist) horizon() float64                              { return p.d }

func (u uniformDist) build(w float64, n int) (deltaq.DeltaQ, error) {
	return deltaq.Uniform(u.lo, u.hi, w, n)
}
func (u uniformDist) horizon() float64 { return u.hi }

func (e expDist) build(w float64, n int) (deltaq.DeltaQ, error) {
	return deltaq.Exponential(e.mean, w, n)
}
func (e expDist) horizon() float64 { return expHorizon * e.mean }

func (neverDist) build(w float64, n int) (deltaq.DeltaQ, error) { return deltaq.Never(w, n) }
func (neverDist) horizon() float64                              { return 0 }

func (s stepsDist) build(w float64, n int) (deltaq.DeltaQ, error) { return deltaq.Steps(s.pts, w, n) }
func (s stepsDist) horizon() float64 {
	h := 0.0
	for _, p := range s.pts {
		h = math.Max(h, p.Delay)
	}
	return h
}

func (c choiceDist) build(w float64, n int) (deltaq.DeltaQ, error) {
	ds := make([]deltaq.DeltaQ, len(c.parts))
	for i, p := range c.parts {
		d, err := p.build(w, n)
		if err != nil {
			return deltaq.DeltaQ{}, err
		}
		ds[i] = d
	}
	return deltaq.Choice(c.weights, ds)
}
func (c choiceDist) horizon() float64 {
	h := 0.0
	for _, p := range c.parts {
		h = math.Max(h, p.horizon())
	}
	return h
}

// parseDist parses a DIST. Errors name the column (1-based) in s.
func parseDist(s string) (dist, error) {
	p := &distParser{s: s}
	d, err := p.dist(0)
	if err != nil {
		return nil, err
	}
	p.space()
	if p.i < len(p.s) {
		return nil, p.errorf("unexpected %q after the distribution", p.s[p.i:])
	}
	return d, nil
}

type distParser struct {
	s string
	i int
}

func (p *distParser) errorf(format string, args ...any) error {
	return fmt.Errorf("column %d: %s", p.i+1, fmt.Sprintf(format, args...))
}

func (p *distParser) space() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
}

// expect consumes the byte c after optional spaces.
func (p *distParser) expect(c byte) error {
	p.space()
	if p.i >= len(p.s) || p.s[p.i] != c {
		return p.errorf("expected %q, found %s", c, p.found())
	}
	p.i++
	return nil
}

func (p *distParser) found() string {
	if p.i >= len(p.s) {
		return "end of text"
	}
	return strconv.Quote(p.s[p.i:])
}

// peek reports whether the next byte (after spaces) is c.
func (p *distParser) peek(c byte) bool {
	p.space()
	return p.i < len(p.s) && p.s[p.i] == c
}

func (p *distParser) word() string {
	p.space()
	start := p.i
	for p.i < len(p.s) && ('a' <= p.s[p.i] && p.s[p.i] <= 'z') {
		p.i++
	}
	return p.s[start:p.i]
}

func (p *distParser) dist(depth int) (dist, error) {
	if depth > maxDistDepth {
		return nil, p.errorf("choices nested deeper than %d levels", maxDistDepth)
	}
	start := p.i
	name := p.word()
	switch name {
	case "never":
		return neverDist{}, nil
	case "point", "exp":
		if err := p.expect('('); err != nil {
			return nil, err
		}
		d, err := p.duration()
		if err != nil {
			return nil, err
		}
		if err := p.expect(')'); err != nil {
			return nil, err
		}
		if name == "point" {
			return pointDist{d}, nil
		}
		if d <= 0 {
			p.i = start
			return nil, p.errorf("exp needs a mean above 0")
		}
		return expDist{d}, nil
	case "uniform":
		if err := p.expect('('); err != nil {
			return nil, err
		}
		lo, err := p.duration()
		if err != nil {
			return nil, err
		}
		if err := p.expect(','); err != nil {
			return nil, err
		}
		hi, err := p.duration()
		if err != nil {
			return nil, err
		}
		if err := p.expect(')'); err != nil {
			return nil, err
		}
		if hi < lo {
			p.i = start
			return nil, p.errorf("uniform(LO,HI) needs LO ≤ HI")
		}
		return uniformDist{lo, hi}, nil
	case "steps":
		var s stepsDist
		if err := p.expect('('); err != nil {
			return nil, err
		}
		for {
			d, err := p.duration()
			if err != nil {
				return nil, err
			}
			if err := p.expect(':'); err != nil {
				return nil, err
			}
			pr, err := p.probability()
			if err != nil {
				return nil, err
			}
			s.pts = append(s.pts, deltaq.Step{Delay: d, P: pr})
			if !p.peek(',') {
				break
			}
			p.i++
		}
		if err := p.expect(')'); err != nil {
			return nil, err
		}
		return s, nil
	case "choice":
		var c choiceDist
		if err := p.expect('('); err != nil {
			return nil, err
		}
		for {
			w, err := p.probability()
			if err != nil {
				return nil, err
			}
			if err := p.expect(':'); err != nil {
				return nil, err
			}
			d, err := p.dist(depth + 1)
			if err != nil {
				return nil, err
			}
			c.weights = append(c.weights, w)
			c.parts = append(c.parts, d)
			if !p.peek(',') {
				break
			}
			p.i++
		}
		if err := p.expect(')'); err != nil {
			return nil, err
		}
		sum := 0.0
		for _, w := range c.weights {
			sum += w
		}
		if math.Abs(sum-1) > 1e-9 {
			p.i = start
			return nil, p.errorf("choice weights sum to %g, not 1", sum)
		}
		return c, nil
	case "":
		return nil, p.errorf("expected a distribution (point, uniform, exp, never, steps or choice), found %s", p.found())
	}
	p.i = start
	p.space()
	return nil, p.errorf("unknown distribution %q (want point, uniform, exp, never, steps or choice)", name)
}

// number scans an unsigned decimal number.
func (p *distParser) number() (float64, error) {
	p.space()
	start := p.i
	for p.i < len(p.s) && ('0' <= p.s[p.i] && p.s[p.i] <= '9' || p.s[p.i] == '.') {
		p.i++
	}
	if start == p.i {
		return 0, p.errorf("expected a number, found %s", p.found())
	}
	text := p.s[start:p.i]
	v, err := strconv.ParseFloat(text, 64)
	if err != nil || math.IsInf(v, 0) {
		p.i = start
		return 0, p.errorf("bad number %q", text)
	}
	return v, nil
}

func (p *distParser) probability() (float64, error) {
	start := p.i
	v, err := p.number()
	if err != nil {
		return 0, err
	}
	if v > 1 {
		p.i = start
		p.space()
		return 0, p.errorf("probability %g is above 1", v)
	}
	return v, nil
}

// duration scans a number followed by a unit.
func (p *distParser) duration() (float64, error) {
	v, err := p.number()
	if err != nil {
		return 0, err
	}
	rest := p.s[p.i:]
	for _, u := range durationUnits {
		if strings.HasPrefix(rest, u.name) {
			p.i += len(u.name)
			return v * u.seconds, nil
		}
	}
	if v == 0 {
		return 0, nil
	}
	return 0, p.errorf("expected a unit (ns, us, ms or s) after %g", v)
}

// durationUnits lists the units of a duration, longer names first so that
// "ms" is not read as "m" "s".
var durationUnits = []struct {
	name    string
	seconds float64
}{
	{"ns", 1e-9},
	{"us", 1e-6},
	{"µs", 1e-6},
	{"ms", 1e-3},
	{"s", 1},
}

// parseDuration parses a whole string as a duration in seconds.
func parseDuration(s string) (float64, error) {
	p := &distParser{s: s}
	d, err := p.duration()
	if err != nil {
		return 0, err
	}
	p.space()
	if p.i < len(p.s) {
		return 0, p.errorf("unexpected %q after the duration", p.s[p.i:])
	}
	return d, nil
}

// niceSteps are the mantissas a default dMax is rounded up to.
var niceSteps = []float64{1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10}

// niceAbove returns the smallest m·10ᵏ above x with m from niceSteps, so
// that bin widths come out round; 1 s when x ≤ 0.
func niceAbove(x float64) float64 {
	if !(x > 0) || math.IsInf(x, 0) {
		return 1
	}
	// Start a decade low: Log10 may round across a power of ten.
	k := math.Floor(math.Log10(x)) - 1
	for ; ; k++ {
		for _, m := range niceSteps {
			// m/10^−k rather than m·10^k: correctly rounded for negative k.
			v := m * math.Pow(10, k)
			if k < 0 {
				v = m / math.Pow(10, -k)
			}
			if v > x {
				return v
			}
		}
	}
}

// formatDuration prints seconds with four significant digits in the largest
// unit that keeps the number at least 1.
func formatDuration(s float64) string {
	a := math.Abs(s)
	switch {
	case s == 0:
		return "0s"
	case a < 1e-6:
		return strconv.FormatFloat(s*1e9, 'g', 4, 64) + "ns"
	case a < 1e-3:
		return strconv.FormatFloat(s*1e6, 'g', 4, 64) + "us"
	case a < 1:
		return strconv.FormatFloat(s*1e3, 'g', 4, 64) + "ms"
	}
	return strconv.FormatFloat(s, 'g', 4, 64) + "s"
}
