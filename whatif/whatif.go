// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package whatif

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/deltaq-otel/deltaq/deltaq"
	"github.com/deltaq-otel/deltaq/dist"
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
	Dist dist.Dist
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
D is rounded to the model's bin width.`

// Parse parses "TARGET=EXPR" (Help).
func Parse(s string) (Intervention, error) {
	target, text, ok := strings.Cut(s, "=")
	target, text = strings.TrimSpace(target), strings.TrimSpace(text)
	if !ok || target == "" || text == "" {
		return Intervention{}, fmt.Errorf("want TARGET=EXPR, got %q", s)
	}
	iv, err := ParseExpr(text)
	if err != nil {
		return Intervention{}, fmt.Errorf("%s: %w", target, err)
	}
	iv.Target = target
	return iv, nil
}

// ParseExpr parses the EXPR of an intervention (Help), without a target:
// the form a configuration that names the target elsewhere uses. Its
// errors do not name the target.
func ParseExpr(text string) (Intervention, error) {
	text = strings.TrimSpace(text)
	if text == "" {
		return Intervention{}, fmt.Errorf("empty expression: want A*X+B, a distribution, remove, timeout(D), retry(N, D) or hedge(D)")
	}
	iv := Intervention{Text: text, A: 1}
	if text == "remove" {
		iv.Remove = true
		return iv, nil
	}
	compact := strings.Join(strings.Fields(text), "")
	if m := patternRE.FindStringSubmatch(compact); m != nil {
		return parsePattern(iv, m)
	}
	base := text
	if m := failRE.FindStringSubmatch(compact); m != nil {
		p, err := strconv.ParseFloat(m[1], 64)
		if err != nil || p < 0 || p > 100 {
			return Intervention{}, fmt.Errorf("failure %s%% must be a percentage in [0, 100]", m[1])
		}
		iv.Fail = p / 100
		compact = compact[:len(compact)-len(m[0])]
		base = compact
	}
	if m := affineRE.FindStringSubmatch(compact); m != nil {
		if m[1] != "" {
			a, err := strconv.ParseFloat(m[1], 64)
			if err != nil || math.IsInf(a, 0) {
				return Intervention{}, fmt.Errorf("factor %q is not a number ≥ 0", m[1])
			}
			iv.A = a
		}
		if m[2] != "" {
			b, err := dist.ParseDuration(m[2])
			if err != nil {
				return Intervention{}, fmt.Errorf("shift %q: %v", m[2], err)
			}
			iv.B = b
		}
		return iv, nil
	}
	d, err := dist.Parse(base)
	if err != nil {
		return Intervention{}, fmt.Errorf("%q is neither A*X+B nor a distribution, remove, timeout(D), retry(N, D) or hedge(D): %v", base, err)
	}
	iv.Dist = d
	return iv, nil
}

// parsePattern fills iv from a match of patternRE: the name, N (retry
// only) and D.
func parsePattern(iv Intervention, m []string) (Intervention, error) {
	name, n, d := m[1], m[2], m[3]
	switch {
	case name == "retry" && n == "":
		return Intervention{}, fmt.Errorf("retry(N, D): the number of retries N is missing in %q", iv.Text)
	case name != "retry" && n != "":
		return Intervention{}, fmt.Errorf("%s(D) takes one argument, got %q", name, iv.Text)
	}
	delay, err := dist.ParseDuration(d)
	if err != nil {
		return Intervention{}, fmt.Errorf("%s: delay %q: %v", name, d, err)
	}
	if !(delay > 0 && delay <= MaxPatternDelay) {
		return Intervention{}, fmt.Errorf("%s: delay %s must be above 0 and at most %gs", name, d, float64(MaxPatternDelay))
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
			return Intervention{}, fmt.Errorf("retry: %s retries: want a whole number in [1, %d]", n, MaxRetries)
		}
		iv.N = k
	}
	return iv, nil
}

// OnCall reports whether the intervention replaces the call's whole ΔQ (the
// node's span, its calls included) rather than its exclusive time: removal
// and the resilience patterns.
func (iv Intervention) OnCall() bool { return iv.Remove || iv.Pattern != NoPattern }

// Transform returns the ΔQ X′ the intervention makes of the ΔQ x of one
// part, on x's bin width: for Remove, all of the mass at delay 0 (the call
// takes no time and never fails); for a resilience pattern, the call's ΔQ
// under it (Apply); for a substitution, the distribution built over its
// default dMax (dist.DefaultDMax); else A·x + B (deltaq.TimeTransform);
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
		bins := min(max(int(math.Ceil(dist.DefaultDMax([]dist.Dist{iv.Dist})/w)), 1), deltaq.MaxBins)
		if x, err = iv.Dist.Build(w, bins); err != nil {
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
