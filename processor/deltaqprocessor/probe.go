// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaqprocessor

import (
	"errors"
	"fmt"
	"regexp"
	"slices"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/deltaq-otel/deltaq/deltaq"
	"github.com/deltaq-otel/deltaq/internal/outcome"
)

// Outcome indices, in the order of outcomeValues.
const (
	outcomeSuccess = iota
	outcomeTimeout
	outcomeFailure
	numOutcomes
)

// attrServiceName is the resource attribute naming the service
// (OpenTelemetry semantic conventions, service.name).
const attrServiceName = "service.name"

// probe is a compiled ProbeConfig.
type probe struct {
	name string
	// dMaxNs is the configured dMax; for an auto probe (auto != nil) the
	// provisional one, and auto.dMax is in force.
	dMaxNs int64
	bins   int64
	// ll is the probe's log-linear buckets (binning), bins 0 then; zero for
	// uniform bins.
	ll deltaq.LogLinear
	// auto is the state of a probe with dmax: auto, nil otherwise.
	auto *autoRange

	// re is the span name expression; nil when the probe matches an exact
	// name (the matcher's map holds it).
	re *regexp.Regexp
	// rePrefix is a literal every match of re contains (regexp.LiteralPrefix),
	// a cheap test that rejects most names before the expression runs.
	rePrefix string

	hasKind    bool
	kind       ptrace.SpanKind
	hasService bool
	service    string
	attrs      []attrEquals

	failure failureRule
}

// attrEquals requires a span attribute to equal a value.
type attrEquals struct {
	key string
	val literal
}

// compileProbe checks a probe's configuration and compiles it; def is the
// failure rule of probes that have none of their own. Each error names the
// field.
func compileProbe(pc *ProbeConfig, def failureRule) (probe, []error) {
	var errs []error
	p := probe{name: pc.Name, bins: int64(pc.Bins), failure: def}
	if pc.Name == "" {
		errs = append(errs, errors.New("name: must not be empty"))
	}
	d, derrs := pc.DMaxNanos()
	errs = append(errs, derrs...)
	p.dMaxNs = d
	if pc.Binning != nil && len(derrs) == 0 {
		p.ll, _ = pc.logLinear()
	}
	if pc.DMaxAuto && len(derrs) == 0 {
		p.auto = newAutoRange(pc)
	}

	m := &pc.Match
	if m.SpanName != "" && m.SpanNameRegexp != "" {
		errs = append(errs, errors.New("match.span_name, match.span_name_regexp: set at most one"))
	}
	if m.SpanNameRegexp != "" {
		re, err := compileRegexp(m.SpanNameRegexp)
		if err != nil {
			errs = append(errs, err)
		} else {
			p.re = re
			p.rePrefix, _ = re.LiteralPrefix()
		}
	}
	if m.SpanKind != "" {
		k, err := parseSpanKind(m.SpanKind)
		if err != nil {
			errs = append(errs, err)
		}
		p.hasKind, p.kind = true, ptrace.SpanKind(k)
	}
	if m.ServiceName != "" {
		p.hasService, p.service = true, m.ServiceName
	}
	keys := make([]string, 0, len(m.Attributes))
	for k := range m.Attributes {
		keys = append(keys, k)
	}
	slices.Sort(keys) // a fixed evaluation order
	for _, k := range keys {
		if k == "" {
			errs = append(errs, errors.New("match.attributes: a key must not be empty"))
			continue
		}
		if isContractAttr(k) {
			errs = append(errs, fmt.Errorf("match.attributes[%q] %w", k, errContractKey))
			continue
		}
		lit, err := literalOf(m.Attributes[k])
		if err != nil {
			errs = append(errs, fmt.Errorf("match.attributes[%q]: %w", k, err))
			continue
		}
		p.attrs = append(p.attrs, attrEquals{key: k, val: lit})
	}
	if pc.Failure != nil {
		f, ferrs := compileFailure("failure", pc.Failure)
		errs = append(errs, ferrs...)
		p.failure = f
	}
	return p, errs
}

// exactName returns the span name an exact-name probe matches.
func (pc *ProbeConfig) exactName() string {
	if pc.Match.SpanName != "" {
		return pc.Match.SpanName
	}
	return pc.Name
}

// matchesRest reports whether the span meets the probe's conditions other
// than the name.
func (p *probe) matchesRest(span ptrace.Span, res *resourceInfo) bool {
	if p.hasKind && span.Kind() != p.kind {
		return false
	}
	if p.hasService && res.serviceName() != p.service {
		return false
	}
	if len(p.attrs) > 0 {
		attrs := span.Attributes()
		for i := range p.attrs {
			v, ok := attrs.Get(p.attrs[i].key)
			if !ok || !p.attrs[i].val.equal(v) {
				return false
			}
		}
	}
	return true
}

// layout returns the probe's layout in force, as the registry holds it.
func (p *probe) layout() outcome.Layout {
	if p.ll != (deltaq.LogLinear{}) {
		return outcome.Layout{DMaxNs: p.ll.High, LogLinear: outcome.LogLinear(p.ll)}
	}
	return outcome.Layout{DMaxNs: p.currentDMax(), Bins: int(p.bins)}
}

// currentDMax returns the dMax in force.
func (p *probe) currentDMax() int64 {
	if p.auto != nil {
		return p.auto.dMax.Load()
	}
	return p.dMaxNs
}

// classify returns the outcome of a span of duration d ns under a dMax of
// dMax ns (thesis, section 3.3): timeout when d > dMax, whatever the span's
// status (an observer waiting at most dMax never sees the later end);
// otherwise failure when the failure rule holds, and success when it does
// not.
func (p *probe) classify(span ptrace.Span, d, dMax int64) int {
	if d > dMax {
		return outcomeTimeout
	}
	if p.failure.holds(span) {
		return outcomeFailure
	}
	return outcomeSuccess
}

// resourceInfo reads the service name of a resource once, when a probe first
// needs it.
type resourceInfo struct {
	res     pcommon.Resource
	loaded  bool
	service string
	// stored is the service name as in-flight instances keep it
	// (storedString), made once per resource and shared by its instances.
	stored       string
	storedLoaded bool
}

func (r *resourceInfo) serviceName() string {
	if !r.loaded {
		r.loaded = true
		if v, ok := r.res.Attributes().Get(attrServiceName); ok && v.Type() == pcommon.ValueTypeStr {
			r.service = v.Str()
		}
	}
	return r.service
}

// storedServiceName returns the service name cut to outcome.MaxNameLength
// bytes and copied, for an in-flight instance to keep.
func (r *resourceInfo) storedServiceName() string {
	if !r.storedLoaded {
		r.storedLoaded = true
		r.stored = storedString(r.serviceName())
	}
	return r.stored
}
