// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"io"

	"github.com/deltaq-otel/deltaq/diagram"
)

// graphCommand is the graph command's entry of the command table.
func graphCommand() command {
	return command{
		name:    "graph",
		usage:   "graph FILE.dq",
		summary: "print an outcome diagram as Graphviz DOT",
		help: `Graph prints the diagram as a Graphviz digraph: one cluster per definition,
outcomes as ellipses, s: references as dashed boxes, operators as dashed
clusters between a fork and a join point, choice branches labelled with their
probabilities. View it with: deltaq graph FILE.dq | dot -Tsvg > FILE.svg`,
		run: runGraph,
	}
}

func runGraph(args []string, stdout, stderr io.Writer) int {
	fs := newFlags(graphCommand(), stderr)
	file, status, ok := parseOne(fs, args, "FILE.dq")
	if !ok {
		return status
	}
	d, ok := loadDiagram("graph", file, stderr)
	if !ok {
		return exitFail
	}
	if err := diagram.WriteDOT(stdout, d); err != nil {
		fmt.Fprintf(stderr, "deltaq graph: %s\n", printableLines(err.Error()))
		return exitFail
	}
	return exitOK
}
