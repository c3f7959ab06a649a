// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/deltaq-otel/deltaq/diagram"
	"github.com/deltaq-otel/deltaq/internal/offline"
)

// checkCommand is the check command's entry of the command table.
func checkCommand() command {
	return command{
		name:    "check",
		usage:   "check FILE.dq... | check --config FILE...",
		summary: "validate outcome diagrams and list their probes, or a collector configuration across its deltaq components",
		help: `Check parses and validates each file. For a valid file it prints the probes:
every definition, every operator (a:, f:, p:) and every outcome, with the
position where each is defined. For a file with errors it prints every error
as FILE:LINE:COL: message. The exit status is 1 if any file has errors.

With --config, check reads a collector configuration (several --config are
merged in order, as the collector merges them) and checks its deltaq
processors, connectors and exporters as the collector would, then what no
single component can: every probe a diagram, a QTA or a trigger names must
be counted by a deltaq processor of the pipelines that feed the connector or
exporter, or by its own probes (a gateway's: the probes it declares with
dmax and bins). A misspelled probe is reported with the closest defined one.
A processor with probes must be in a traces pipeline, and a connector that
matches spans must be fed by one, and by no two that one receiver feeds
(each span would count twice); a connector a pipeline sends to must be
a receiver of a metrics or logs pipeline, and one a pipeline receives from
must be sent to, as the collector's start requires, and no exporter or
receiver may have its ID. A probe's layout set in both a processor
and a connector must agree, a probe that two processors feeding one
connector define must have one layout there, and no receiver may feed both
their pipelines (each span would count twice); no probe may be matched in
the spans by both a processor and a connector, as the collector refuses it;
and every QTA point of a
probe with a fixed layout must be one of its bin edges (or at or beyond
dMax), as deltaq slo needs it for an exact SLI, unless the histogram is
exponential; the nearest edges are named. A deltaq component whose ID the
collector refuses (deltaq/, deltaq/a b), or a component whose type is one
slip away from deltaq (Deltaq), is refused; a configuration with no deltaq
component says so.

The language — grammar, operators, names, examples and the common errors
with their fixes — is described in docs/dq-language.md of the project.`,
		run: runCheck,
	}
}

func runCheck(args []string, stdout, stderr io.Writer) int {
	fs := newFlags(checkCommand(), stderr)
	var configs listFlag
	fs.Var(&configs, "config", "check the deltaq components of a collector configuration `FILE` (repeatable: merged in order)")
	files, status, ok := parseArgs(fs, args)
	if !ok {
		return status
	}
	if len(configs) > 0 {
		if len(files) > 0 {
			return fs.usageError("give either FILE.dq or --config, not both")
		}
		return runCheckConfig(configs, stdout, stderr)
	}
	if len(files) == 0 {
		return fs.usageError("no files")
	}
	status = exitOK
	for _, path := range files {
		d, ok := loadDiagram("check", path, stderr)
		if !ok {
			status = exitFail
			continue
		}
		printProbes(stdout, path, d)
	}
	return status
}

// printProbes lists the probes of a valid diagram as a table.
func printProbes(w io.Writer, path string, d *diagram.Diagram) {
	probes := d.Probes()
	fmt.Fprintf(w, "%s: ok, %d %s\n", printable(path), len(probes), plural(len(probes), "probe", "probes"))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, p := range probes {
		fmt.Fprintf(tw, "\t%s\t%s\t%s:%s\n", printable(p.Name), probeKind(p), printable(path), p.Pos)
	}
	tw.Flush()
}

// probeKind describes a probe: "system", "definition", "outcome" or the
// operator's kind, e.g. "first-to-finish operator".
func probeKind(p diagram.Probe) string {
	switch {
	case p.Kind == diagram.OperatorProbe:
		return p.Op.String() + " operator"
	case p.Kind == diagram.DefinitionProbe && p.Name == diagram.SystemName:
		return "system"
	}
	return p.Kind.String()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// runCheckConfig checks the deltaq components of a collector configuration.
func runCheckConfig(paths []string, stdout, stderr io.Writer) int {
	conf, err := offline.Resolve(paths)
	if err == nil {
		err = offline.Check(stdout, conf)
	}
	if err != nil {
		fmt.Fprintf(stderr, "deltaq check: %s\n", printableLines(err.Error()))
		return exitFail
	}
	return exitOK
}
