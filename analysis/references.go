// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package analysis

import (
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/deltaq-otel/deltaq/diagram"
	"github.com/deltaq-otel/deltaq/internal/suggest"
)

// CheckReferences checks that every probe c names is one that instances
// can arrive for: defined lists the probes counted upstream (the deltaq
// processors feeding the front end, and the front end's own probes that
// count instances). The diagram's outcomes must be defined, since their
// observed ΔQs are the inputs of every calculated one; an entry of probes
// must be defined or be a probe of the diagram (a definition's or an
// operator's calculated ΔQ can carry a QTA). Each mistake is reported with
// where it is and the closest names that exist, for example
//
//	diagram: outcome paymnet is not a probe any deltaq processor or the connector counts (did you mean payment?)
//
// c must have passed Check.
func (c *Config) CheckReferences(defined []string) error {
	cc, err := c.compile()
	if err != nil {
		return err
	}
	known := make(map[string]bool, len(defined))
	for _, n := range defined {
		known[n] = true
	}
	var outcomes, diagramNames []string
	if cc.diagram != nil {
		for _, p := range cc.diagram.Probes() {
			diagramNames = append(diagramNames, p.Name)
			if p.Kind == diagram.OutcomeProbe {
				outcomes = append(outcomes, p.Name)
			}
		}
	}
	var errs []error
	for _, n := range outcomes {
		if !known[n] {
			errs = append(errs, fmt.Errorf("diagram: outcome %s is not a probe any deltaq processor or the connector counts%s", n, suggest.Hint(n, defined)))
		}
	}
	names := make([]string, 0, len(c.Probes))
	for n := range c.Probes {
		names = append(names, n)
	}
	sort.Strings(names)
	all := append(slices.Clone(defined), diagramNames...)
	for _, n := range names {
		if !known[n] && !slices.Contains(diagramNames, n) {
			errs = append(errs, fmt.Errorf("probes[%q]: no deltaq processor, connector probe or diagram defines probe %s%s", n, n, suggest.Hint(n, all)))
		}
	}
	return errors.Join(errs...)
}
