// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaqprocessor

// The processor's probes and the matcher of their spans (package spanmatch,
// which the deltaq connector's probes share).

import (
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/deltaq-otel/deltaq/internal/spanmatch"
)

// matcher holds the compiled probes and finds the probe of a span: the
// first, in configuration order, whose match holds.
type matcher struct {
	probes []probe
	rules  *spanmatch.Matcher
	// byName maps probe names to indices.
	byName map[string]int32
	// auto lists the probes with dmax: auto.
	auto []int
}

// newMatcher compiles the configuration's probes.
func newMatcher(cfg *Config) (*matcher, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	def, _ := spanmatch.CompileFailure(&cfg.Failure)
	m := &matcher{
		probes: make([]probe, len(cfg.Probes)),
		byName: make(map[string]int32, len(cfg.Probes)),
	}
	rules := make([]spanmatch.Rule, len(cfg.Probes))
	for i := range cfg.Probes {
		pc := &cfg.Probes[i]
		m.probes[i], rules[i], _ = compileProbe(pc, def)
		m.byName[pc.Name] = int32(i)
		if m.probes[i].auto != nil {
			m.auto = append(m.auto, i)
		}
	}
	m.rules = spanmatch.NewMatcher(rules)
	return m, nil
}

// match returns the index of the first probe, in configuration order, whose
// conditions the span meets, or −1.
func (m *matcher) match(span ptrace.Span, res *resourceInfo) int {
	return m.rules.Match(span, &res.Resource)
}
