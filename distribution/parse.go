// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package distribution

import (
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/deltaq-otel/deltaq/deltaq"
	"github.com/deltaq-otel/deltaq/internal/suggest"
	"github.com/deltaq-otel/deltaq/internal/textpos"
)

// maxDepth bounds the nesting of choice(…) in one DIST.
const maxDepth = 32

// Parse parses a DIST. Its error is a textpos.ErrorList of one error at the
// line and column of s.
func Parse(s string) (Dist, error) {
	p := &parser{s: s}
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

// ParseDuration parses a whole string as a duration in seconds: a number
// and one of the units ns, us, µs, ms, s (none for 0). Its errors are
// Parse's.
func ParseDuration(s string) (float64, error) {
	p := &parser{s: s}
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

// parser reads s from byte i on.
type parser struct {
	s string
	i int
}

// errorf returns an error at byte i of s.
func (p *parser) errorf(format string, args ...any) error {
	return textpos.Errorf(p.s, p.i, format, args...)
}

func (p *parser) space() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
}

// expect consumes the byte c after optional spaces.
func (p *parser) expect(c byte) error {
	p.space()
	if p.i >= len(p.s) || p.s[p.i] != c {
		return p.errorf("expected %q, found %s", c, p.found())
	}
	p.i++
	return nil
}

func (p *parser) found() string {
	if p.i >= len(p.s) {
		return "end of text"
	}
	return strconv.Quote(p.s[p.i:])
}

// peek reports whether the next byte (after spaces) is c.
func (p *parser) peek(c byte) bool {
	p.space()
	return p.i < len(p.s) && p.s[p.i] == c
}

func (p *parser) word() string {
	p.space()
	start := p.i
	for p.i < len(p.s) && ('a' <= p.s[p.i] && p.s[p.i] <= 'z') {
		p.i++
	}
	return p.s[start:p.i]
}

// dist parses one distribution; depth counts the enclosing choices.
func (p *parser) dist(depth int) (Dist, error) {
	if depth > maxDepth {
		return nil, p.errorf("choices nested deeper than %d levels", maxDepth)
	}
	p.space()
	start := p.i // where the name begins, for errors about the whole distribution
	name := p.word()
	switch name {
	case "never":
		return neverDist{}, nil
	case "point", "exp":
		return p.pointOrExp(name, start)
	case "uniform":
		return p.uniform(start)
	case "steps":
		return p.steps()
	case "choice":
		return p.choice(depth, start)
	case "":
		return nil, p.errorf("expected a distribution (point, uniform, exp, never, steps or choice), found %s", p.found())
	}
	p.i = start
	return nil, p.errorf("unknown distribution %q%s (want point, uniform, exp, never, steps or choice)", name,
		suggest.Hint(name, []string{"point", "uniform", "exp", "never", "steps", "choice"}))
}

// pointOrExp parses the "(D)" after point or exp; start is where the name
// began, for errors about the whole distribution.
func (p *parser) pointOrExp(name string, start int) (Dist, error) {
	ds, err := p.durations(1)
	if err != nil {
		return nil, err
	}
	d := ds[0]
	if name == "point" {
		return pointDist{d}, nil
	}
	if d <= 0 {
		p.i = start
		return nil, p.errorf("exp needs a mean above 0")
	}
	return expDist{d}, nil
}

// uniform parses the "(LO,HI)" after uniform.
func (p *parser) uniform(start int) (Dist, error) {
	ds, err := p.durations(2)
	if err != nil {
		return nil, err
	}
	lo, hi := ds[0], ds[1]
	if hi < lo {
		p.i = start
		return nil, p.errorf("uniform(LO,HI) needs LO ≤ HI")
	}
	return uniformDist{lo, hi}, nil
}

// durations parses "(D1,...,Dn)", exactly n durations: the arguments of
// point, exp and uniform.
func (p *parser) durations(n int) ([]float64, error) {
	ds := make([]float64, n)
	sep := byte('(')
	for i := range ds {
		if err := p.expect(sep); err != nil {
			return nil, err
		}
		d, err := p.duration()
		if err != nil {
			return nil, err
		}
		ds[i], sep = d, ','
	}
	if err := p.expect(')'); err != nil {
		return nil, err
	}
	return ds, nil
}

// steps parses the "(D1:P1,...)" after steps. Whether the CDF increases is
// checked by Build (deltaq.Steps).
func (p *parser) steps() (Dist, error) {
	var s stepsDist
	var at []int // where each point was written
	err := p.list(func() error {
		start := p.i
		d, pr, err := pair(p, p.duration, p.probability)
		if err != nil {
			return err
		}
		s.pts = append(s.pts, deltaq.Step{Delay: d, P: pr})
		at = append(at, start)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return s, p.checkSteps(s.pts, at)
}

// checkSteps refuses, at the point written, what deltaq.Steps would refuse
// only when the ΔQ is built, in its own terms (a delay in raw seconds, a
// point's index after sorting): a delay given twice, and a probability
// below that of a shorter delay (a CDF never falls). The points may be
// written in any order.
func (p *parser) checkSteps(pts []deltaq.Step, at []int) error {
	order := make([]int, len(pts))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(x, y int) bool { return pts[order[x]].Delay < pts[order[y]].Delay })
	for k := 1; k < len(order); k++ {
		prev, cur := pts[order[k-1]], pts[order[k]]
		switch {
		case cur.Delay == prev.Delay:
			p.i = at[order[k]]
			return p.errorf("steps: delay %s is given twice", FormatDuration(cur.Delay))
		case cur.P < prev.P:
			p.i = at[order[k]]
			return p.errorf("steps: probability %v at %s is below %v at %s: a CDF never falls", cur.P, FormatDuration(cur.Delay), prev.P, FormatDuration(prev.Delay))
		}
	}
	return nil
}

// choice parses the "(W1:DIST1,...)" after choice.
func (p *parser) choice(depth, start int) (Dist, error) {
	var c choiceDist
	err := p.list(func() error {
		w, d, err := pair(p, p.probability, func() (Dist, error) { return p.dist(depth + 1) })
		if err != nil {
			return err
		}
		c.weights = append(c.weights, w)
		c.parts = append(c.parts, d)
		return nil
	})
	if err != nil {
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
}

// pair parses "A:B", an item of steps or choice, with a and b.
func pair[A, B any](p *parser, a func() (A, error), b func() (B, error)) (x A, y B, err error) {
	if x, err = a(); err != nil {
		return x, y, err
	}
	if err = p.expect(':'); err != nil {
		return x, y, err
	}
	y, err = b()
	return x, y, err
}

// list parses "(" item { "," item } ")".
func (p *parser) list(item func() error) error {
	if err := p.expect('('); err != nil {
		return err
	}
	for {
		if err := item(); err != nil {
			return err
		}
		if !p.peek(',') {
			break
		}
		p.i++
	}
	return p.expect(')')
}

// number scans an unsigned decimal number.
func (p *parser) number() (float64, error) {
	p.space()
	start := p.i
	for p.i < len(p.s) && ('0' <= p.s[p.i] && p.s[p.i] <= '9' || p.s[p.i] == '.') {
		p.i++
	}
	if start == p.i {
		// Every number of the notation (a delay, a probability, a count)
		// is non-negative: a minus sign is named as such, not taken for
		// something other than a number.
		if p.i < len(p.s) && p.s[p.i] == '-' {
			return 0, p.errorf("expected a number that is not negative, found %s", p.found())
		}
		return 0, p.errorf("expected a number, found %s", p.found())
	}
	// An exponent, as FormatDuration prints a duration of 10⁴ s or more
	// (1.5e+04s), so that what eval suggests (--dmax) reads back. No unit
	// begins with e, and the e of exp( follows no digit.
	if e := p.i; e < len(p.s) && (p.s[e] == 'e' || p.s[e] == 'E') {
		e++
		if e < len(p.s) && (p.s[e] == '+' || p.s[e] == '-') {
			e++
		}
		if e < len(p.s) && '0' <= p.s[e] && p.s[e] <= '9' {
			for e < len(p.s) && '0' <= p.s[e] && p.s[e] <= '9' {
				e++
			}
			p.i = e
		}
	}
	text := p.s[start:p.i]
	v, err := strconv.ParseFloat(text, 64)
	if err != nil || math.IsInf(v, 0) {
		p.i = start
		return 0, p.errorf("bad number %q", text)
	}
	return v, nil
}

// probability scans a probability, a number in [0, 1]; a percentage
// (50%), or a number above 1 that reads as one (95), is refused with the
// fraction to write.
func (p *parser) probability() (float64, error) {
	start := p.i
	v, err := p.number()
	if err != nil {
		return 0, err
	}
	end := p.i
	percent := p.peek('%')
	if percent || v > 1 {
		p.i = start
		p.space()
		// The fraction from the digits shifted: the nearest float to it.
		fraction, _ := strconv.ParseFloat(strings.TrimSpace(p.s[start:end])+"e-2", 64)
		switch {
		case percent:
			return 0, p.errorf("probability %g%% is a percentage; write the fraction %g", v, fraction)
		case v <= 100:
			return 0, p.errorf("probability %g is above 1: it is a fraction, %g %% is %g", v, v, fraction)
		}
		return 0, p.errorf("probability %g is above 1", v)
	}
	return v, nil
}

// duration scans a number followed by a unit.
func (p *parser) duration() (float64, error) {
	start := p.i
	v, err := p.number()
	if err != nil {
		return 0, err
	}
	written := p.s[start:p.i]
	rest := p.s[p.i:]
	for _, u := range durationUnits {
		if strings.HasPrefix(rest, u.name) {
			p.i += len(u.name)
			// The decimal number the user wrote, in seconds, correctly
			// rounded: v·10⁻³ would make 4.5ms 0.0045000000000000005 s,
			// the key eval's JSON prints for --at 4.5ms.
			if sec, ok := scaled(strings.TrimLeft(written, " \t"), u.exp); ok {
				return sec, nil
			}
			return v * u.seconds, nil
		}
	}
	if v == 0 {
		return 0, nil
	}
	return 0, p.errorf("expected a unit (ns, us, ms or s) after %s", written)
}

// durationUnits lists the units of a duration, longer names first so that
// "ms" is not read as "m" "s".
var durationUnits = []struct {
	name    string
	seconds float64
	exp     int // the unit as a decimal exponent
}{
	{"ns", 1e-9, -9},
	{"us", 1e-6, -6},
	{"µs", 1e-6, -6},
	{"ms", 1e-3, -3},
	{"s", 1, 0},
}

// scaled returns the decimal number written (digits, a point, an optional
// exponent) times 10^exp, correctly rounded: the exponents are added, so
// that 4.5e0ms and 1e1us read as 4.5ms and 10us do. False when the sum of
// the exponents is out of range.
func scaled(written string, exp int) (float64, bool) {
	mant := written
	if i := strings.IndexAny(written, "eE"); i >= 0 {
		x, err := strconv.Atoi(written[i+1:])
		if err != nil {
			return 0, false
		}
		mant, exp = written[:i], exp+x
	}
	v, err := strconv.ParseFloat(mant+"e"+strconv.Itoa(exp), 64)
	return v, err == nil
}

// FormatDuration prints seconds with four significant digits in the largest
// of the units ns, us, ms, s that keeps the number at least 1.
func FormatDuration(s float64) string {
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
