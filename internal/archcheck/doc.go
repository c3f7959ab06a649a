// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

// Package archcheck holds the checks that keep the architecture as
// docs/design.md draws it. Its tests
//
//   - compare the design's package table (what each package is and what it
//     may import) with the imports `go list` reports, both ways;
//   - hold every function of the module's non-test, non-generated code to
//     at most MaxFunctionLines lines;
//   - keep mutable state out of package variables but the one of
//     internal/collectorstate, which only the components' NewFactory
//     functions and main packages reach;
//   - make every test that globs or lists a directory fail when it finds
//     nothing (internal/globtest), so that none passes on no input.
//   - keep test-only packages (componenttest, processortest,
//     internal/otlptest, …) out of the module's non-test code but the
//     test-support packages', the few imports still to remove listed.
//   - hold every package's documentation to a screen, MaxPackageDocLines
//     lines, the rest being docs/design.md's;
//   - give a file name that files of several packages share one meaning
//     in all of them, listed with it (the command files of cmd/deltaq
//     aside).
//
// `make vet` runs them, so they hold after every change. It has no code of
// its own.
package archcheck // import "github.com/deltaq-otel/deltaq/internal/archcheck"

// MaxFunctionLines is the longest a function may be, from its func keyword
// to its closing brace.
const MaxFunctionLines = 80

// MaxPackageDocLines is the longest a package's documentation may be: a
// screen.
const MaxPackageDocLines = 40
