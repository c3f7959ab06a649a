// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaqprocessor

import (
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/deltaq-otel/deltaq/deltaq"
	"github.com/deltaq-otel/deltaq/internal/autorange"
	"github.com/deltaq-otel/deltaq/internal/confpath"
	"github.com/deltaq-otel/deltaq/internal/spanmatch"
)

// Outcome indices, in the order of outcomeValues.
const (
	outcomeSuccess = iota
	outcomeTimeout
	outcomeFailure
	numOutcomes
)

// attrServiceName is the resource attribute naming the service
// (OpenTelemetry semantic conventions, service.name), which synthetic
// timeout spans carry.
const attrServiceName = "service.name"

// probe is a compiled ProbeConfig.
type probe struct {
	name string
	// lay is the configured layout: uniform bins, or the log-linear
	// buckets of binning. For an auto probe (auto != nil) its dMax is the
	// provisional one, and auto.DMax is in force (layout).
	lay deltaq.Layout
	// auto is the state of a probe with dmax: auto, nil otherwise.
	auto *autorange.Range

	// failure judges the spans that end within dMax.
	failure spanmatch.Failure
}

// compileProbe checks a probe's configuration and compiles it, with the
// rule of its match; def is the failure rule of probes that have none of
// their own. Each error names the field.
func compileProbe(pc *ProbeConfig, def spanmatch.Failure) (probe, spanmatch.Rule, []error) {
	var errs []error
	p := probe{name: pc.Name, lay: deltaq.Layout{Bins: pc.Bins}, failure: def}
	if pc.Name == "" {
		errs = append(errs, confpath.Errorf(confpath.Fields("name"), "must not be empty"))
	}
	d, derrs := pc.DMaxNanos()
	errs = append(errs, derrs...)
	p.lay.DMaxNs = d
	if pc.Binning != nil && len(derrs) == 0 {
		p.lay.LogLinear, _ = pc.logLinear()
	}
	if pc.DMaxAuto && len(derrs) == 0 {
		p.auto = autorange.New(pc.autoOptions(), pc.Bins)
	}
	rule, merrs := spanmatch.Compile(&pc.Match, pc.Name)
	errs = append(errs, merrs...)
	if pc.Failure != nil {
		f, ferrs := spanmatch.CompileFailure(pc.Failure)
		errs = append(errs, ferrs...)
		p.failure = f
	}
	return p, rule, errs
}

// layout returns the probe's layout in force, as the registry holds it.
func (p *probe) layout() deltaq.Layout {
	l := p.lay
	l.DMaxNs = p.currentDMax()
	return l
}

// currentDMax returns the dMax in force.
func (p *probe) currentDMax() int64 {
	if p.auto != nil {
		return p.auto.DMax()
	}
	return p.lay.DMaxNs
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
	if p.failure.Holds(span) {
		return outcomeFailure
	}
	return outcomeSuccess
}

// resourceInfo is the resource of a batch's spans or start events: its
// service name, read once when a probe first needs it (spanmatch.Resource),
// and kept for in-flight instances.
type resourceInfo struct {
	spanmatch.Resource
	// stored is the service name as in-flight instances keep it
	// (storedString), made once per resource and shared by its instances.
	stored       string
	storedLoaded bool
}

func newResourceInfo(r pcommon.Resource) resourceInfo {
	return resourceInfo{Resource: spanmatch.NewResource(r)}
}

// storedServiceName returns the service name cut to contract.MaxNameLength
// bytes and copied, for an in-flight instance to keep.
func (r *resourceInfo) storedServiceName() string {
	if !r.storedLoaded {
		r.storedLoaded = true
		r.stored = storedString(r.ServiceName())
	}
	return r.stored
}
