// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"fmt"
	"io"
	"os"

	"github.com/deltaq-otel/deltaq/diagram"
)

// fmtCommand is the fmt command's entry of the command table.
func fmtCommand() command {
	return command{
		name:    "fmt",
		usage:   "fmt [-w] FILE.dq...",
		summary: "print outcome diagrams in canonical form",
		help: `Fmt prints each file in canonical form: one definition per line, single
spaces around '=' and '->', long definitions broken one operator branch per
line, comments kept (those written inside a definition move above it).
A file with syntax errors is left alone and its errors are printed.`,
		run: runFmt,
	}
}

func runFmt(args []string, stdout, stderr io.Writer) int {
	fs := newFlags(fmtCommand(), stderr)
	write := fs.Bool("w", false, "write the result back to each file instead of printing it")
	files, status, ok := parseFiles(fs, args)
	if !ok {
		return status
	}
	status = exitOK
	for _, path := range files {
		src, err := os.ReadFile(path)
		if err != nil {
			fmt.Fprintf(stderr, "deltaq fmt: %s\n", printableLines(err.Error()))
			status = exitFail
			continue
		}
		// Formatting needs only the syntax: a file with, say, an undefined
		// reference can still be tidied.
		d, err := diagram.ParseSyntax(path, src)
		if err != nil {
			fmt.Fprintln(stderr, printableLines(err.Error()))
			status = exitFail
			continue
		}
		out := diagram.Format(d)
		if !*write {
			stdout.Write(out)
			continue
		}
		if bytes.Equal(out, src) {
			continue
		}
		if err := writeFile(path, out); err != nil {
			fmt.Fprintf(stderr, "deltaq fmt: %s\n", printableLines(err.Error()))
			status = exitFail
		}
	}
	return status
}

// writeFile replaces the contents of an existing file, keeping its mode.
func writeFile(path string, data []byte) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, fi.Mode().Perm())
}
