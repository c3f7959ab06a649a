// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

// Package diagram implements the outcome-diagram language of ΔQSD: the
// textual form of an outcome diagram (thesis sections 2.1.7, 4.3 and 5.3),
// its validation, a canonical formatter, a Graphviz view, and the evaluation
// of every probe's calculated ΔQ from observed ΔQs.
//
// # Language
//
// A .dq source is a list of definitions, each ending with ';':
//
//	# An M/M/1/K pipeline of two workers (thesis 6.1).
//	probe  = worker_1 -> worker_2;
//	system = s:probe;
//
// A definition `name = chain;` names a probe. A chain `c1 -> c2 -> …` is a
// sequential composition. Its components are:
//
//	worker        an outcome, observed directly
//	s:probe       the probe of another definition (a sub-system)
//	a:x(c1, c2)   all-to-finish: every branch must finish
//	f:x(c1, c2)   first-to-finish: the first branch to finish wins
//	p:x[0.9, 0.1](c1, c2)
//	              probabilistic choice: branch i runs with probability pᵢ
//
// Branches are chains. Every definition, every operator and every outcome
// has a probe of its own name (thesis 3.4.1), so these names must be
// distinct; the definition named "system", if any, is the whole system.
// Comments run from '#' or '//' to the end of the line. The single letters
// a, f, p and s are keywords only when a ':' follows them, so, unlike in the
// thesis's parser (5.3.2), outcomes may be named s, a, f or p.
//
// Parse reads and validates a source; errors come as a list printed
// `FILE:LINE:COL: message`, all of them, sorted, whose Unwrap gives each
// as a *go/scanner.Error. Operators may nest at most
// MaxNesting levels deep.
//
// # Evaluation
//
// Diagram.Evaluate takes observed ΔQs by probe name and returns, for every
// probe, its calculated ΔQ: chains convolve, a: multiplies CDFs, f: combines
// complements, p: mixes (thesis equations 2.2 to 2.5). A reference s:x
// contributes x's observed ΔQ where one is given and its calculated ΔQ
// otherwise, and the result records which. Inputs that are missing are
// reported by name and leave the probes that need them uncalculated; they are
// never taken as zero delay. The package has no collector types: the
// exporter and the command line share it.
//
// Works cited by short name ("the thesis, section 3.6", "the draft, section
// 5.6") are listed in the repository's docs/references.md; the architecture
// and the contracts are described in docs/design.md.
package diagram
