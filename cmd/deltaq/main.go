// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

// Command deltaq is the command line of the ΔQSD toolkit.
//
// Usage:
//
//	deltaq COMMAND [arguments]
//
// Commands (TestDocListsEveryCommand keeps this list equal to the command
// table):
//
//	analyze   analyse recorded traces as the components would
//	check     validate outcome diagrams, or a collector configuration across components
//	eval      design-time evaluation with assumed distributions
//	fmt       print outcome diagrams in canonical form
//	graph     print an outcome diagram as Graphviz DOT
//	model     learn a ΔQ model from recorded traces
//	scope     the ΔQ oscilloscope (terminal, or a browser with --http)
//	slo       QTAs as error budgets: Prometheus burn-rate rules, OpenSLO and Sloth
//	version   the module version, revision and Go version
//	whatif    predict what changes to the parts of a model do to the whole
//
// `deltaq help` lists every command and `deltaq help COMMAND` describes
// one; `deltaq --version` is `deltaq version`. Each command lives in its
// own file, its entry of the command table (commands) beside its flags; the
// work is done by the packages it calls, so main stays a dispatcher.
//
// Exit status: 0 on success, 1 when an input is wrong (a .dq file with
// errors, an outcome without a distribution), 2 on a usage error.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/deltaq-otel/deltaq/diagram"
	"github.com/deltaq-otel/deltaq/internal/suggest"
)

// Exit statuses of every command.
const (
	exitOK    = 0
	exitFail  = 1 // the input is wrong
	exitUsage = 2 // the command line is wrong
)

// command is one subcommand of deltaq.
type command struct {
	// name is the word that selects the command.
	name string
	// usage is the synopsis after "deltaq ", e.g. "check FILE.dq...".
	usage string
	// summary is a one-line description for the command list.
	summary string
	// help, if set, is printed after the synopsis by `deltaq help NAME` and
	// by the command's -h, before the flag defaults.
	help string
	// run executes the command with the arguments after its name and
	// returns the exit status.
	run func(args []string, stdout, stderr io.Writer) int
}

// commands returns the command table: every subcommand, sorted by name, as
// `deltaq help` lists them. Each entry is made in its command's file.
func commands() []command {
	return []command{
		analyzeCommand(), checkCommand(), evalCommand(), fmtCommand(), graphCommand(),
		modelCommand(), scopeCommand(), sloCommand(), versionCommand(), whatifCommand(),
	}
}

// lookup returns the command of the given name.
func lookup(name string) (command, bool) {
	cs := commands()
	i := slices.IndexFunc(cs, func(c command) bool { return c.name == name })
	if i < 0 {
		return command{}, false
	}
	return cs[i], true
}

// commandNames returns the commands' names, for a misspelt one's hint.
func commandNames() []string {
	var names []string
	for _, c := range commands() {
		names = append(names, c.name)
	}
	return names
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run dispatches to a command and returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return exitUsage
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		if len(args) > 1 {
			c, ok := lookup(args[1])
			if !ok {
				fmt.Fprintf(stderr, "deltaq help: unknown command %q%s\n", args[1], suggest.Hint(args[1], commandNames()))
				return exitUsage
			}
			// The command's own -h prints its synopsis, help and flags to
			// the command's stderr: here, stdout.
			return c.run([]string{"-h"}, stdout, stdout)
		}
		usage(stdout)
		return exitOK
	case "-version", "--version":
		args = append([]string{"version"}, args[1:]...)
	}
	c, ok := lookup(args[0])
	if !ok {
		fmt.Fprintf(stderr, "deltaq: unknown command %q%s\n\n", args[0], suggest.Hint(args[0], commandNames()))
		usage(stderr)
		return exitUsage
	}
	return c.run(args[1:], stdout, stderr)
}

// usage lists the commands.
func usage(w io.Writer) {
	fmt.Fprint(w, "deltaq works with ΔQ: outcome diagrams (.dq files) and ΔQ measurements.\n\nUsage:\n\n\tdeltaq COMMAND [arguments]\n\nCommands:\n\n")
	width := 0
	for _, c := range commands() {
		width = max(width, len(c.name))
	}
	for _, c := range commands() {
		fmt.Fprintf(w, "\t%-*s  %s\n", width, c.name, c.summary)
	}
	fmt.Fprint(w, "\nRun \"deltaq help COMMAND\" for a command's arguments.\n")
}

// flagSet is the flag set of one command.
type flagSet struct {
	*flag.FlagSet
	cmd    command
	stderr io.Writer
}

// newFlags returns the flag set of command c, reporting to stderr. A flag
// error prints the error and the command's synopsis; -h prints the
// command's whole help.
func newFlags(c command, stderr io.Writer) *flagSet {
	fs := &flagSet{FlagSet: flag.NewFlagSet("deltaq "+c.name, flag.ContinueOnError), cmd: c, stderr: stderr}
	fs.SetOutput(stderr)
	fs.Usage = func() { fs.shortUsage(stderr) }
	return fs
}

// parse is fs.Parse with the error printed as the flag package prints it,
// and for a flag that is not defined, the one meant: "flag provided but
// not defined: -dmx (did you mean --dmax?)".
func (fs *flagSet) parse(args []string) error {
	out, usage := fs.Output(), fs.Usage
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	err := fs.Parse(args)
	fs.SetOutput(out)
	fs.Usage = usage
	if err == nil {
		return nil
	}
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: "); ok {
		var names []string
		fs.VisitAll(func(f *flag.Flag) { names = append(names, "--"+f.Name) })
		msg += suggest.Hint("--"+strings.TrimLeft(name, "-"), names)
	}
	fmt.Fprintln(out, msg)
	usage()
	return err
}

// given reports whether the flag name was given on the command line (its
// value may be the default).
func (fs *flagSet) given(name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

func (fs *flagSet) shortUsage(w io.Writer) {
	fmt.Fprintf(w, "usage: deltaq %s\nRun \"deltaq help %s\" for details.\n", fs.cmd.usage, fs.cmd.name)
}

// help prints the synopsis, the help text and the flags.
func (fs *flagSet) help(w io.Writer) {
	fmt.Fprintf(w, "usage: deltaq %s\n", fs.cmd.usage)
	if fs.cmd.help != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimRight(fs.cmd.help, "\n"))
	}
	hasFlags := false
	fs.VisitAll(func(*flag.Flag) { hasFlags = true })
	if hasFlags {
		fmt.Fprint(w, "\nFlags:\n")
		out := fs.Output()
		fs.SetOutput(w)
		fs.PrintDefaults()
		fs.SetOutput(out)
	}
}

// usageError prints "deltaq NAME: message" and the synopsis, and returns
// exitUsage.
func (fs *flagSet) usageError(format string, args ...any) int {
	fmt.Fprintf(fs.stderr, "deltaq %s: %s\n", fs.cmd.name, fmt.Sprintf(format, args...))
	fs.shortUsage(fs.stderr)
	return exitUsage
}

// parseArgs parses flags that may come before, between or after the
// positional arguments (`deltaq eval FILE.dq --outcome …`) and returns the
// positional ones; after "--" everything is positional. When ok is false the
// command must return status: -h printed the help to the command's stderr
// (status 0; `deltaq help NAME` passes stdout there) or a flag was wrong
// (status 2, already reported).
func parseArgs(fs *flagSet, args []string) (positional []string, status int, ok bool) {
	for _, a := range args {
		if a == "--" {
			break
		}
		if a == "-h" || a == "-help" || a == "--help" {
			fs.help(fs.stderr)
			return nil, exitOK, false
		}
	}
	for {
		if err := fs.parse(args); err != nil {
			return nil, exitUsage, false
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return positional, exitOK, true
		}
		// flag stops at "--" or at the first non-flag; tell them apart by
		// what preceded the rest.
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			return append(positional, rest...), exitOK, true
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

// parseFiles is parseArgs for a command that takes one or more files: no
// file is a usage error.
func parseFiles(fs *flagSet, args []string) (files []string, status int, ok bool) {
	files, status, ok = parseArgs(fs, args)
	if ok && len(files) == 0 {
		return nil, fs.usageError("no files"), false
	}
	return files, status, ok
}

// parsed is the run of a command that parse reads the arguments of into
// options O, which run carries out: a usage error or a request for help
// ends it with the status parse gives.
func parsed[O any](parse func(args []string, stderr io.Writer) (O, int, bool), run func(o O, stdout, stderr io.Writer) int) func(args []string, stdout, stderr io.Writer) int {
	return func(args []string, stdout, stderr io.Writer) int {
		o, status, ok := parse(args, stderr)
		if !ok {
			return status
		}
		return run(o, stdout, stderr)
	}
}

// parseOne is parseArgs for a command that takes exactly one argument,
// named by what ("FILE.dq") in the usage error.
func parseOne(fs *flagSet, args []string, what string) (arg string, status int, ok bool) {
	pos, status, ok := parseArgs(fs, args)
	if !ok {
		return "", status, false
	}
	if len(pos) != 1 {
		return "", fs.usageError("want one %s, got %d arguments", what, len(pos)), false
	}
	return pos[0], exitOK, true
}

// failure returns how a command ends on an error: a function that prints
// "deltaq NAME: error" to stderr and returns exitFail. The error is escaped
// like the output: errors quote the input (the JSON unmarshaler shows the
// bytes around a syntax error).
func failure(name string, stderr io.Writer) func(error) int {
	return func(err error) int {
		fmt.Fprintf(stderr, "deltaq %s: %s\n", name, printableLines(err.Error()))
		return exitFail
	}
}

// listFiles prints "wrote PATH" for each file written.
func listFiles(w io.Writer, paths []string) {
	for _, p := range paths {
		fmt.Fprintf(w, "wrote %s\n", printable(p))
	}
}

// loadDiagram reads and parses (with validation) a .dq file for the command
// named name. On error it prints every error, one per line, to stderr,
// through printableLines: the messages carry the path and the file's text.
// An error reading the file is "deltaq NAME: …", as every other error of
// the command; the diagram's errors are FILE:LINE:COL: message.
func loadDiagram(name, path string, stderr io.Writer) (*diagram.Diagram, bool) {
	src, err := os.ReadFile(path)
	if err != nil {
		fmt.Fprintf(stderr, "deltaq %s: %s\n", name, printableLines(err.Error()))
		return nil, false
	}
	d, err := diagram.Parse(path, src)
	if err != nil {
		fmt.Fprintln(stderr, printableLines(err.Error()))
		return nil, false
	}
	return d, true
}
