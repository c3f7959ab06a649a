// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

// Package diagram implements the outcome-diagram language of ΔQSD: the
// textual form of an outcome diagram (thesis sections 2.1.7, 4.3 and 5.3),
// its validation, a canonical formatter, a Graphviz view, and the evaluation
// of every probe's calculated ΔQ from observed ΔQs. docs/dq-language.md is
// the language's reference; in short, a .dq source is a list of
// definitions, each ending with ';':
//
//	# An M/M/1/K pipeline of two workers (thesis 6.1).
//	probe  = worker_1 -> worker_2;
//	system = s:probe;
//
// A definition `name = chain;` names a probe; a chain `c1 -> c2 -> …` is a
// sequential composition of
//
//	worker        an outcome, observed directly
//	s:probe       the probe of another definition (a sub-system)
//	a:x(c1, c2)   all-to-finish: every branch must finish
//	f:x(c1, c2)   first-to-finish: the first branch to finish wins
//	p:x[0.9, 0.1](c1, c2)
//	              probabilistic choice: branch i runs with probability pᵢ
//
// Every definition, operator and outcome has a probe of its own name
// (thesis 3.4.1), so these names are distinct; the definition "system" is
// the whole system. a, f, p and s are keywords only before a ':', so,
// unlike in the thesis's parser (5.3.2), outcomes may have those names.
//
// Parse reads and validates a source; its errors come as one list, sorted
// and printed `FILE:LINE:COL: message`, whose Unwrap gives each as a
// *go/scanner.Error. Diagram.Evaluate takes observed ΔQs by probe name and
// returns every probe's calculated ΔQ: chains convolve, a: multiplies
// CDFs, f: combines complements, p: mixes (thesis equations 2.2 to 2.5). A
// reference s:x contributes x's observed ΔQ where one is given and its
// calculated ΔQ otherwise, and the result records which. A missing input
// is reported by name and leaves the probes that need it uncalculated: it
// is never taken as zero delay. The package has no collector types: the
// exporter and the command line share it. Works cited by short name are
// listed in the repository's docs/references.md.
package diagram
