// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package main

import text "github.com/deltaq-otel/deltaq/internal/printable"

// printable returns s as it may be shown on a terminal (printable.String):
// names in the command's text output come from span data, OTLP messages and
// user files, and a terminal must not take any of them as a command.
func printable(s string) string { return text.String(s) }

// printableLines escapes a message of several lines, keeping its line
// breaks and backslashes (printable.Lines).
func printableLines(s string) string { return text.Lines(s) }
