// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package whatif

import (
	"errors"
	"fmt"
	"go/scanner"
	"math"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/deltaq-otel/deltaq/deltaq"
	"github.com/deltaq-otel/deltaq/distribution"
	"github.com/deltaq-otel/deltaq/internal/suggest"
	"github.com/deltaq-otel/deltaq/internal/textpos"
)

// Pattern is a resilience pattern a caller wraps a call in.
type Pattern int

// The resilience patterns (resilience.go).
const (
	// NoPattern: the intervention changes the part's delay itself.
	NoPattern Pattern = iota
	// Timeout: the call fails after D.
	Timeout
	// Retry: up to N retries, each after the previous attempt timed out
	// at D.
	Retry
	// Hedge: a second attempt after D, the first to finish wins.
	Hedge
)

// Intervention is a what-if change of one part of a system: of its delay X
// (the exclusive time of a model's node, the observed ΔQ of an outcome), or
// a resilience pattern around the call.
type Intervention struct {
	// Target is what it applies to: "service.operation" or a node's probe
	// for a model, an outcome probe for the live scenarios.
	Target string
	// Text is the expression as given.
	Text string
	// Remove removes the call: the node's whole span (its calls included)
	// takes no time and never fails.
	Remove bool
	// A and B make X′ = A·X + B (A = 1, B = 0 when Dist is set or the
	// expression does not say).
	A, B float64
	// Dist, when set, replaces X by this distribution.
	Dist distribution.Dist
	// Fail injects failures: X′ never completes with this probability.
	Fail float64
	// Pattern, when set, wraps the call in a resilience pattern with the
	// delay D (seconds) and, for Retry, N retries.
	Pattern Pattern
	D       float64
	N       int
}

// Bounds of the resilience patterns' arguments.
const (
	// MaxRetries bounds N of retry(N, D).
	MaxRetries = 10
	// MaxPatternDelay bounds D, in seconds (one hour).
	MaxPatternDelay = 3600
)

// affineRE matches "[A*]X[+B]" with the spaces removed.
var affineRE = regexp.MustCompile(`^(?:([0-9.]+)\*)?X(?:\+(.+))?$`)

// failRE matches a trailing "+ never P%" with the spaces removed.
var failRE = regexp.MustCompile(`\+never([0-9.]+)%$`)

// failBareRE matches a trailing "+ never P" without its %, with the spaces
// removed: a fraction, or a percentage without its sign.
var failBareRE = regexp.MustCompile(`\+never([0-9.]+)$`)

// patternRE matches "timeout(D)", "retry(N,D)" and "hedge(D)" with the
// spaces removed.
var patternRE = regexp.MustCompile(`^(timeout|retry|hedge)\((?:([0-9]+),)?([^,()]+)\)$`)

// Help describes the expressions of Parse.
const Help = `An intervention is TARGET=EXPR. TARGET is "service.operation" (every node of
that operation) or a node's probe name (model.json). EXPR changes the node's
exclusive time X:
  A*X + B          affine: A ≥ 0 times as slow, B ≥ 0 later (e.g. 0.5*X+1ms;
                   X, 2*X and X+3ms too; 0*X+5ms pins it to 5ms)
  DIST             substitution by a distribution of deltaq eval's language
                   (exp(5ms), uniform(1ms,3ms), …)
  EXPR + never P%  failure injection: X never completes with probability P %
  remove           the call is removed: the span and its calls take no time
or wraps the call (the node's whole span, its calls included) in a
resilience pattern, reporting the extra attempts it costs:
  timeout(D)       the call fails after D
  retry(N, D)      up to N ≤ 10 retries, each after the previous attempt
                   timed out at D (a failed attempt is retried at D too);
                   every attempt an independent draw
  hedge(D)         a second attempt after D, the first to finish wins
D is rounded to the bin width of the node's ΔQs (its root operation's).`

// Parse parses "TARGET=EXPR" (Help). Its error is a textpos.ErrorList of
// one error, at the line and column of s, whose message names the target.
func Parse(s string) (Intervention, error) {
	target, text, ok := strings.Cut(s, "=")
	target = strings.TrimSpace(target)
	switch {
	case !ok || strings.TrimSpace(text) == "":
		return Intervention{}, textpos.Errorf(s, len(s), "want TARGET=EXPR, got %q", s)
	case target == "":
		return Intervention{}, textpos.Errorf(s, 0, "want TARGET=EXPR, got %q", s)
	}
	iv, e := parseExpr(s, len(s)-len(text))
	if e != nil {
		e.Msg = target + ": " + e.Msg
		return Intervention{}, textpos.ErrorList{e}
	}
	iv.Target = target
	return iv, nil
}

// ParseExpr parses the EXPR of an intervention (Help), without a target:
// the form a configuration that names the target elsewhere uses. Its error
// is a textpos.ErrorList of one error, at the line and column of text, and
// does not name the target.
func ParseExpr(text string) (Intervention, error) {
	iv, e := parseExpr(text, 0)
	if e != nil {
		return Intervention{}, textpos.ErrorList{e}
	}
	return iv, nil
}

// parseExpr parses the expression src[start:]. The regular expressions
// match it without its white space; each error is placed in src.
func parseExpr(src string, start int) (Intervention, *scanner.Error) {
	raw := src[start:]
	text := strings.TrimSpace(raw)
	if text == "" {
		return Intervention{}, verbatim(src, start, len(src)).errorf(0,
			"empty expression: want A*X+B, a distribution, remove, timeout(D), retry(N, D) or hedge(D)")
	}
	iv := Intervention{Text: text, A: 1}
	if text == "remove" {
		iv.Remove = true
		return iv, nil
	}
	lead := start + len(raw) - len(strings.TrimLeftFunc(raw, unicode.IsSpace))
	compact := squeeze(src, lead, lead+len(text))
	if m := patternRE.FindStringSubmatchIndex(compact.s); m != nil {
		return parsePattern(iv, compact, m)
	}
	base := verbatim(src, lead, lead+len(text))
	if m := failRE.FindStringSubmatchIndex(compact.s); m != nil {
		pct := compact.s[m[2]:m[3]]
		p, err := strconv.ParseFloat(pct, 64)
		if err != nil || p < 0 || p > 100 {
			return Intervention{}, compact.errorf(m[2], "failure %s%% must be a percentage in [0, 100]", pct)
		}
		iv.Fail = p / 100
		compact = compact.sub(0, m[0])
		base = compact
	} else if m := failBareRE.FindStringSubmatchIndex(compact.s); m != nil {
		return Intervention{}, bareFailure(compact, m[2], compact.s[m[2]:m[3]])
	}
	if m := affineRE.FindStringSubmatchIndex(compact.s); m != nil {
		return parseAffine(iv, compact, m)
	}
	if suggest.Hint(text, []string{"remove"}) != "" && strings.IndexFunc(text, func(r rune) bool { return !unicode.IsLetter(r) }) < 0 {
		return Intervention{}, base.errorf(0, "%q is neither A*X+B nor a distribution, remove, timeout(D), retry(N, D) or hedge(D): did you mean remove?", text)
	}
	d, err := distribution.Parse(base.s)
	if err != nil {
		return Intervention{}, base.inner(err, fmt.Sprintf(
			"%q is neither A*X+B nor a distribution, remove, timeout(D), retry(N, D) or hedge(D): ", base.s))
	}
	iv.Dist = d
	return iv, nil
}

// bareFailure is the error of a failure injection written without its %
// (num at offset at of compact): the percentage to write, from the digits
// shifted for a fraction (0.05 is 5 %), as the configuration's ratios give
// the fraction of a percentage.
func bareFailure(compact piece, at int, num string) *scanner.Error {
	if p, err := strconv.ParseFloat(num, 64); err == nil && p < 1 {
		pct, _ := strconv.ParseFloat(num+"e2", 64)
		return compact.errorf(at, "failure %s is a fraction; write the percentage: never %s%%", num, strconv.FormatFloat(pct, 'g', -1, 64))
	}
	return compact.errorf(at, "failure %s has no %%; write never %s%%", num, num)
}

// parseAffine fills iv from a match m of affineRE in compact: A and B.
func parseAffine(iv Intervention, compact piece, m []int) (Intervention, *scanner.Error) {
	if m[2] >= 0 {
		text := compact.s[m[2]:m[3]]
		a, err := strconv.ParseFloat(text, 64)
		if err != nil || math.IsInf(a, 0) {
			return Intervention{}, compact.errorf(m[2], "factor %q is not a number ≥ 0", text)
		}
		iv.A = a
	}
	if m[4] >= 0 {
		shift := compact.sub(m[4], m[5])
		b, err := distribution.ParseDuration(shift.s)
		if err != nil {
			return Intervention{}, shift.inner(err, fmt.Sprintf("shift %q: ", shift.s))
		}
		iv.B = b
	}
	return iv, nil
}

// parsePattern fills iv from a match m of patternRE in compact: the name,
// N (retry only) and D.
func parsePattern(iv Intervention, compact piece, m []int) (Intervention, *scanner.Error) {
	name, d := compact.s[m[2]:m[3]], compact.sub(m[6], m[7])
	n := ""
	if m[4] >= 0 {
		n = compact.s[m[4]:m[5]]
	}
	switch {
	case name == "retry" && n == "":
		return Intervention{}, d.errorf(0, "retry(N, D): the number of retries N is missing in %q", iv.Text)
	case name != "retry" && n != "":
		return Intervention{}, compact.errorf(m[4], "%s(D) takes one argument, got %q", name, iv.Text)
	}
	delay, err := distribution.ParseDuration(d.s)
	if err != nil {
		return Intervention{}, d.inner(err, fmt.Sprintf("%s: delay %q: ", name, d.s))
	}
	if !(delay > 0 && delay <= MaxPatternDelay) {
		return Intervention{}, d.errorf(0, "%s: delay %s must be above 0 and at most %gs", name, d.s, float64(MaxPatternDelay))
	}
	iv.D = delay
	switch name {
	case "timeout":
		iv.Pattern = Timeout
	case "hedge":
		iv.Pattern = Hedge
	default:
		iv.Pattern = Retry
		k, err := strconv.Atoi(n)
		if err != nil || k < 1 || k > MaxRetries {
			return Intervention{}, compact.errorf(m[4], "retry: %s retries: want a whole number in [1, %d]", n, MaxRetries)
		}
		iv.N = k
	}
	return iv, nil
}

// piece is a piece of the text the user typed, src, maybe with its white
// space removed, and where each of its bytes lies in src: an error found in
// the piece is reported at the line and column the user typed it at.
type piece struct {
	src string
	s   string
	at  []int // at[i]: the offset in src of s[i]
	end int   // the offset in src just after the piece
}

// verbatim returns src[start:end] as it is.
func verbatim(src string, start, end int) piece {
	at := make([]int, end-start)
	for i := range at {
		at[i] = start + i
	}
	return piece{src: src, s: src[start:end], at: at, end: end}
}

// squeeze returns src[start:end] without its white space (what
// unicode.IsSpace calls space, as strings.Fields).
func squeeze(src string, start, end int) piece {
	var b strings.Builder
	var at []int
	for i := start; i < end; {
		r, size := utf8.DecodeRuneInString(src[i:end])
		if !unicode.IsSpace(r) {
			b.WriteString(src[i : i+size])
			for k := range size {
				at = append(at, i+k)
			}
		}
		i += size
	}
	return piece{src: src, s: b.String(), at: at, end: end}
}

// offset returns the offset in src of s[k]; for k = len(s), the piece's end.
func (p piece) offset(k int) int {
	if k < len(p.at) {
		return p.at[k]
	}
	return p.end
}

// sub returns the piece s[i:j], which ends just after s[j-1].
func (p piece) sub(i, j int) piece {
	end := p.offset(i)
	if j > i {
		end = p.offset(j-1) + 1
	}
	return piece{src: p.src, s: p.s[i:j], at: p.at[i:j], end: end}
}

// errorf returns an error at s[k].
func (p piece) errorf(k int, format string, args ...any) *scanner.Error {
	return &scanner.Error{Pos: textpos.Position(p.src, p.offset(k)), Msg: fmt.Sprintf(format, args...)}
}

// inner returns the error err that package distribution found in the piece,
// placed in src, its message after prefix.
func (p piece) inner(err error, prefix string) *scanner.Error {
	var e *scanner.Error
	if !errors.As(err, &e) {
		return p.errorf(0, "%s%v", prefix, err)
	}
	return p.errorf(e.Pos.Offset, "%s%s", prefix, e.Msg)
}

// maxCutMass is the most of a substituted distribution's mass that may lie
// beyond the MaxBins bins of the part's width: below it the cut is within
// the rounding of the figures printed.
const maxCutMass = 1e-4

// buildDist builds the distribution d on the bins of width w up to the
// largest delay it names (its Horizon; one bin for never and point(0)):
// the bin width is the part's, so a rounder dMax would only take bins from
// the sequences the part is in. When that needs more than MaxBins bins,
// those MaxBins must hold all of its mass but maxCutMass: else it is an
// error, not a ΔQ whose mass beyond them counts as failures the
// intervention does not say.
func buildDist(d distribution.Dist, w float64) (deltaq.DeltaQ, error) {
	need := max(math.Ceil(d.Horizon()/w), 1)
	x, err := d.Build(w, int(min(need, deltaq.MaxBins)))
	if err != nil || need <= deltaq.MaxBins {
		return x, err
	}
	whole, err := d.Build(distribution.DefaultDMax([]distribution.Dist{d}), 1)
	if err != nil {
		return deltaq.DeltaQ{}, err
	}
	if cut := whole.Tangible() - x.Tangible(); cut > maxCutMass {
		return deltaq.DeltaQ{}, fmt.Errorf("the distribution needs %.3g bins of %s to reach %s, more than MaxBins = %d: %.1f %% of its mass would count as failure",
			need, distribution.FormatDuration(w), distribution.FormatDuration(d.Horizon()), deltaq.MaxBins, 100*cut)
	}
	return x, nil
}

// OnCall reports whether the intervention replaces the call's whole ΔQ (the
// node's span, its calls included) rather than its exclusive time: removal
// and the resilience patterns.
func (iv Intervention) OnCall() bool { return iv.Remove || iv.Pattern != NoPattern }

// Transform returns the ΔQ X′ the intervention makes of the ΔQ x of one
// part, on x's bin width: for Remove, all of the mass at delay 0 (the call
// takes no time and never fails); for a resilience pattern, the call's ΔQ
// under it (Apply); for a substitution, the distribution built up to the
// largest delay it names (buildDist); else A·x + B (deltaq.TimeTransform);
// then the injected failures, a choice between that and never. It is the
// one application of an intervention, shared by the model's what-if and
// the live what-if scenarios of package analysis.
func (iv Intervention) Transform(x deltaq.DeltaQ) (deltaq.DeltaQ, error) {
	w := x.Width()
	if iv.Remove {
		return deltaq.Point(0, w, 1)
	}
	if iv.Pattern != NoPattern {
		return iv.applyPattern(x)
	}
	var err error
	if iv.Dist != nil {
		if x, err = buildDist(iv.Dist, w); err != nil {
			return deltaq.DeltaQ{}, err
		}
	} else if iv.A != 1 || iv.B != 0 {
		if x, err = deltaq.TimeTransform(x, iv.A, iv.B); err != nil {
			return deltaq.DeltaQ{}, err
		}
	}
	if iv.Fail > 0 {
		never, err := deltaq.Never(w, x.Bins())
		if err != nil {
			return deltaq.DeltaQ{}, err
		}
		return deltaq.Choice([]float64{1 - iv.Fail, iv.Fail}, []deltaq.DeltaQ{x, never})
	}
	return x, nil
}
