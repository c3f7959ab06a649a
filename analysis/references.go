// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package analysis

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/deltaq-otel/deltaq/diagram"
	"github.com/deltaq-otel/deltaq/internal/confpath"
	"github.com/deltaq-otel/deltaq/internal/suggest"
)

// UnknownProbe is a probe a configuration names that no instances can
// arrive for (Config.CheckReferences).
type UnknownProbe struct {
	// Name is the probe; Where the option that names it ("diagram",
	// "diagram_file: FILE:LINE:COL", `probes["x"]`).
	Name, Where string
	// Closest are the defined probes nearest to Name, nearest first; empty
	// when none is close.
	Closest []string
}

// IsTypo reports whether the probe is, by all appearances, a misspelling:
// its name has at least four letters and a defined probe is one edit away
// (two for a name of eight or more; suggest.Distance). Short names one
// edit apart (a and b) and names that differ only in their digits
// (worker_1, worker_3) are as likely two probes.
func (u UnknownProbe) IsTypo() bool {
	n := len([]rune(u.Name))
	if len(u.Closest) == 0 || n < 4 {
		return false
	}
	limit := 1
	if n >= 8 {
		limit = 2
	}
	return !numbered(u.Name, u.Closest[0]) && suggest.Distance(strings.ToLower(u.Name), strings.ToLower(u.Closest[0])) <= limit
}

// numbered reports whether a and b differ only in their digits (worker_1,
// worker_3): numbered probes of one kind, not a slip of the keyboard.
func numbered(a, b string) bool {
	digitless := func(s string) string {
		return strings.Map(func(r rune) rune {
			if r >= '0' && r <= '9' {
				return '#'
			}
			return r
		}, s)
	}
	return a != b && digitless(a) == digitless(b)
}

func (u UnknownProbe) String() string {
	hint := ""
	switch len(u.Closest) {
	case 1:
		hint = fmt.Sprintf(" (did you mean %s?)", u.Closest[0])
	case 2:
		hint = fmt.Sprintf(" (did you mean %s or %s?)", u.Closest[0], u.Closest[1])
	}
	if u.Where == "diagram" || strings.HasPrefix(u.Where, "diagram_file") {
		return fmt.Sprintf("%s: outcome %s is not a probe any deltaq processor or the connector counts%s", u.Where, u.Name, hint)
	}
	return fmt.Sprintf("%s: no deltaq processor, connector probe or diagram defines probe %s%s", u.Where, u.Name, hint)
}

// ReferenceError lists the unknown probes of a configuration.
type ReferenceError []UnknownProbe

func (e ReferenceError) Error() string {
	lines := make([]string, len(e))
	for i, u := range e {
		lines[i] = u.String()
	}
	return strings.Join(lines, "\n")
}

// CheckReferences checks that every probe c names is one that instances
// can arrive for: defined lists the probes counted upstream (the deltaq
// processors feeding the front end, and the front end's own probes that
// count instances). The diagram's outcomes must be defined, since their
// observed ΔQs are the inputs of every calculated one; an entry of probes
// must be defined or be a probe of the diagram (a definition's or an
// operator's calculated ΔQ can carry a QTA). The error, a ReferenceError,
// reports each mistake with where it is and the closest names that exist,
// for example
//
//	diagram: outcome paymnet is not a probe any deltaq processor or the connector counts (did you mean payment?)
//
// A configuration that does not pass Check returns Check's error.
func (c *Config) CheckReferences(defined []string) error {
	cc, err := c.compile()
	if err != nil {
		return err
	}
	known := make(map[string]bool, len(defined))
	for _, n := range defined {
		known[n] = true
	}
	var diagramNames []string
	var outcomes []diagram.Probe
	if cc.diagram != nil {
		for _, p := range cc.diagram.Probes() {
			diagramNames = append(diagramNames, p.Name)
			if p.Kind == diagram.OutcomeProbe {
				outcomes = append(outcomes, p)
			}
		}
	}
	var unknown ReferenceError
	for _, p := range outcomes {
		if known[p.Name] {
			continue
		}
		// A diagram_file's outcome is named where it is, as its syntax
		// errors are.
		where := "diagram"
		if c.DiagramFile != "" {
			where = fmt.Sprintf("diagram_file: %s:%s", c.DiagramFile, p.Pos)
		}
		unknown = append(unknown, UnknownProbe{Name: p.Name, Where: where, Closest: suggest.Closest(p.Name, defined, 2)})
	}
	names := make([]string, 0, len(c.Probes))
	for n := range c.Probes {
		names = append(names, n)
	}
	sort.Strings(names)
	all := append(slices.Clone(defined), diagramNames...)
	for _, n := range names {
		if !known[n] && !slices.Contains(diagramNames, n) {
			unknown = append(unknown, UnknownProbe{Name: n, Where: confpath.Fields("probes").Key(n).String(), Closest: suggest.Closest(n, all, 2)})
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	return unknown
}
