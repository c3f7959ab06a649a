// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package analysis

import (
	"fmt"
	"sort"

	"github.com/deltaq-otel/deltaq/deltaq"
	"github.com/deltaq-otel/deltaq/diagram"
	"github.com/deltaq-otel/deltaq/internal/confpath"
	"github.com/deltaq-otel/deltaq/internal/suggest"
	"github.com/deltaq-otel/deltaq/whatif"
)

// MaxWhatIfScenarios bounds Config.WhatIf: each scenario evaluates the
// diagram once more in every window.
const MaxWhatIfScenarios = 16

// scenario is one checked what-if scenario.
type scenario struct {
	name string
	// targets are its interventions, by outcome probe name.
	targets []whatIfTarget
	// touches marks the calculated probes whose calculated ΔQ an
	// intervened outcome can enter (analyzer.inputsOf): they get the
	// scenario's ΔQ; the others would only repeat their calculated one.
	touches map[string]bool
}

// whatIfTarget is one intervention of a scenario: on the observed ΔQ of
// the outcome probe.
type whatIfTarget struct {
	probe string
	iv    whatif.Intervention
}

// compileWhatIf checks Config.WhatIf against the parsed diagram d (nil
// without one; diagramFailed when the diagram did not parse, whose error
// is reported already) and returns the scenarios sorted by name.
func (c *Config) compileWhatIf(d *diagram.Diagram, diagramFailed bool) ([]scenario, []error) {
	if len(c.WhatIf) == 0 || diagramFailed {
		return nil, nil
	}
	if d == nil {
		return nil, []error{confpath.Errorf(confpath.Fields("whatif"), `needs an outcome diagram (diagram or diagram_file)`)}
	}
	var errs []error
	if n := len(c.WhatIf); n > MaxWhatIfScenarios {
		errs = append(errs, confpath.Errorf(confpath.Fields("whatif"), `%d scenarios are more than the maximum %d`, n, MaxWhatIfScenarios))
	}
	kinds := make(map[string]diagram.ProbeKind)
	var outcomes []string // what a misspelled probe is compared with
	for _, p := range d.Probes() {
		kinds[p.Name] = p.Kind
		if p.Kind == diagram.OutcomeProbe {
			outcomes = append(outcomes, p.Name)
		}
	}
	inputsOf := diagramInputs(d)
	names := make([]string, 0, len(c.WhatIf))
	for n := range c.WhatIf {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]scenario, 0, len(names))
	for _, name := range names {
		ivs := c.WhatIf[name]
		switch {
		case name == "":
			errs = append(errs, confpath.Errorf(confpath.Fields("whatif"), `a scenario has an empty name`))
			continue
		case len(name) > MaxProbeNameLength:
			errs = append(errs, confpath.Errorf(confpath.Fields("whatif"), `the scenario name %.32q… of %d bytes is longer than the maximum %d`, name, len(name), MaxProbeNameLength))
			continue
		case len(ivs) == 0:
			errs = append(errs, confpath.Errorf(confpath.Fields("whatif").Key(name), `no intervention (want outcome probe: expression)`))
			continue
		}
		sc := scenario{name: name}
		probes := make([]string, 0, len(ivs))
		for p := range ivs {
			probes = append(probes, p)
		}
		sort.Strings(probes)
		for _, p := range probes {
			kind, ok := kinds[p]
			switch {
			case !ok:
				errs = append(errs, confpath.Errorf(confpath.Fields("whatif").Key(name).Key(p), `the outcome diagram has no probe %s%s`, p, suggest.Hint(p, outcomes)))
				continue
			case kind != diagram.OutcomeProbe:
				errs = append(errs, confpath.Errorf(confpath.Fields("whatif").Key(name).Key(p), `probe %s is a %s of the diagram; interventions apply to its outcomes`, p, kind))
				continue
			}
			iv, err := whatif.ParseExpr(ivs[p])
			if err != nil {
				errs = append(errs, confpath.Under(confpath.Fields("whatif").Key(name).Key(p), err))
				continue
			}
			iv.Target = p
			sc.targets = append(sc.targets, whatIfTarget{probe: p, iv: iv})
		}
		sc.touches = touchedBy(sc.targets, inputsOf)
		out = append(out, sc)
	}
	return out, errs
}

// savedInput is an observed ΔQ a scenario replaced in analyzer.inputs.
type savedInput struct {
	probe string
	dq    deltaq.DeltaQ
}

// touchedBy returns the calculated probes whose inputs (inputsOf) include
// an outcome of targets.
func touchedBy(targets []whatIfTarget, inputsOf map[string][]string) map[string]bool {
	set := make(map[string]bool)
	for probe, ins := range inputsOf {
		for _, in := range ins {
			for _, t := range targets {
				if in == t.probe {
					set[probe] = true
				}
			}
		}
	}
	return set
}

// whatIf adds to each calculated probe of r the ΔQ of every scenario that
// touches it: the diagram evaluated on the window's observed ΔQs with the
// scenario's interventions applied. An intervened outcome without an
// observed ΔQ in the window stays missing, as it is for the calculated ΔQ:
// a scenario changes what was observed, it does not stand in for it. The
// intervened ΔQs take the place of the observed ones in a.inputs for the
// evaluation only, which copies no map.
func (a *analyzer) whatIf(r *Result) {
	for k := range a.cfg.whatIf {
		sc := &a.cfg.whatIf[k]
		a.whatIfSaved = a.whatIfSaved[:0]
		var failed error
		for _, t := range sc.targets {
			x, ok := a.inputs[t.probe]
			if !ok {
				continue
			}
			y, err := t.iv.Transform(x)
			if err != nil {
				failed = fmt.Errorf("probe %s: %s: %w", t.probe, t.iv.Text, err)
				break
			}
			a.whatIfSaved = append(a.whatIfSaved, savedInput{t.probe, x})
			a.inputs[t.probe] = y
		}
		var ev *diagram.Evaluation
		if failed == nil {
			// Evaluate fails only for a diagram that was not validated.
			ev, _ = a.cfg.diagram.Evaluate(a.inputs)
		}
		for _, s := range a.whatIfSaved {
			a.inputs[s.probe] = s.dq
		}
		for j := range r.Probes {
			pr := &r.Probes[j]
			if !sc.touches[pr.Name] {
				continue
			}
			if failed != nil {
				pr.WhatIf = append(pr.WhatIf, WhatIf{Scenario: sc.name, Err: failed})
				continue
			}
			res, ok := ev.Result(pr.Name)
			switch {
			case !ok:
			case res.Err != nil:
				pr.WhatIf = append(pr.WhatIf, WhatIf{Scenario: sc.name, Err: res.Err})
			case res.OK:
				dq := res.DeltaQ
				pr.WhatIf = append(pr.WhatIf, WhatIf{Scenario: sc.name, DeltaQ: &dq})
			}
		}
	}
}
