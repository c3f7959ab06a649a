// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/otelcol"

	"github.com/deltaq-otel/deltaq/internal/globtest"
)

// repoRoot is the repository root, from this package's directory.
const repoRoot = "../.."

// readmes are the documents whose commands TestREADMECommands checks,
// relative to the repository root.
var readmes = []string{
	"README.md",
	"examples/README.md",
	"processor/deltaqprocessor/README.md",
	"exporter/deltaqexporter/README.md",
	"connector/deltaqconnector/README.md",
	"erlang/README.md",
	"docs/runbook.md",
	"docs/install.md",
	"docs/design.md",
}

// shownCommand is one command line a document shows.
type shownCommand struct {
	line  int    // 1-based line of the document
	text  string // as written, for the report
	words []string
}

// inlineCode matches one inline code span of Markdown.
var inlineCode = regexp.MustCompile("`([^`\n]+)`")

// shownCommands returns the simple commands of a Markdown document: those of
// every line of its fenced code blocks (a "$ " prompt removed, lines ending
// in a backslash joined to the next) and of every inline code span outside
// them. Which of them invoke this project's programs is commandChecker's
// business.
func shownCommands(doc string) []shownCommand {
	var out []shownCommand
	add := func(line int, text string) {
		for _, words := range shellCommands(text) {
			out = append(out, shownCommand{line: line, text: strings.TrimSpace(text), words: words})
		}
	}
	lines := strings.Split(doc, "\n")
	fenced := false
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			for _, m := range inlineCode.FindAllStringSubmatch(line, -1) {
				add(i+1, strings.TrimPrefix(m[1], "$ "))
			}
			continue
		}
		start := i
		text := strings.TrimPrefix(strings.TrimSpace(line), "$ ")
		for strings.HasSuffix(text, `\`) && i+1 < len(lines) {
			i++
			text = strings.TrimSuffix(text, `\`) + " " + strings.TrimSpace(lines[i])
		}
		add(start+1, text)
	}
	return out
}

// shellCommands splits a command line into its simple commands, each as its
// words, as a POSIX shell would for the purpose of naming programs and
// arguments: quotes group (and are removed), an unquoted # starts a comment,
// |, & and ; separate commands, and a redirection (>, 2>, <) drops with its
// target. Unterminated quotes run to the end of the line.
func shellCommands(line string) [][]string {
	var (
		cmds     [][]string
		words    []string
		word     strings.Builder
		inWord   bool
		redirect bool // the next word is a redirection's target
	)
	endWord := func() {
		if inWord && !redirect {
			words = append(words, word.String())
		} else if inWord {
			redirect = false
		}
		word.Reset()
		inWord = false
	}
	endCommand := func() {
		endWord()
		if len(words) > 0 {
			cmds = append(cmds, words)
		}
		words = nil
	}
	for i := 0; i < len(line); i++ {
		switch ch := line[i]; {
		case ch == '\'' || ch == '"':
			n := strings.IndexByte(line[i+1:], ch)
			if n < 0 {
				n = len(line) - i - 1
			}
			word.WriteString(line[i+1 : i+1+n])
			inWord = true
			i += n + 1
		case ch == '#' && !inWord:
			endCommand()
			return cmds
		case ch == ' ' || ch == '\t':
			endWord()
		case ch == '|' || ch == '&' || ch == ';':
			endCommand()
		case ch == '<' || ch == '>':
			if strings.Trim(word.String(), "0123456789") == "" {
				// "2>": the file descriptor belongs to the redirection.
				word.Reset()
				inWord = false
			}
			endWord()
			redirect = true
			if i+1 < len(line) && line[i+1] == '&' {
				i++ // ">&2": the target follows
			}
		default:
			word.WriteByte(ch)
			inWord = true
		}
	}
	endCommand()
	return cmds
}

// commandChecker knows what this project's programs accept.
type commandChecker struct {
	// deltaqFlags are the flags of each deltaq command, from its help.
	deltaqFlags map[string][]string
	// collectorSub and collectorFlag say whether the collector has a
	// subcommand and whether a subcommand ("" for none) has a flag.
	collectorSub  func(name string) bool
	collectorFlag func(sub, name string) bool
	// makeTargets are the targets of the Makefile in each directory ("" is
	// the root) that documents run make in, by `make -C DIR`.
	makeTargets map[string][]string
	// programs are the names bin/NAME may have: the commands under cmd/ and
	// whatever the Makefiles build into $(BIN).
	programs []string
}

// flagLine matches the first line of one flag in flag.PrintDefaults' output.
var flagLine = regexp.MustCompile(`(?m)^  -(\S+)`)

// newCommandChecker reads what the programs accept from this package's
// command table, the collector's command (built, not run) and the
// repository's Makefiles under root.
func newCommandChecker(t *testing.T, root string) *commandChecker {
	t.Helper()
	c := &commandChecker{deltaqFlags: map[string][]string{}, makeTargets: map[string][]string{}}
	for _, name := range deltaqNames() {
		var help bytes.Buffer
		if status := run([]string{"help", name}, &help, &help); status != exitOK {
			t.Fatalf("deltaq help %s: status %d\n%s", name, status, help.String())
		}
		for _, m := range flagLine.FindAllStringSubmatch(help.String(), -1) {
			c.deltaqFlags[name] = append(c.deltaqFlags[name], m[1])
		}
	}

	// The collector's command line as otelcol builds it for the distribution
	// (builder-config.yaml); cobra adds help and completion when it runs.
	collector := otelcol.NewCommand(otelcol.CollectorSettings{})
	c.collectorSub = func(name string) bool {
		if name == "help" || name == "completion" {
			return true
		}
		for _, sub := range collector.Commands() {
			if sub.Name() == name || slices.Contains(sub.Aliases, name) {
				return true
			}
		}
		return false
	}
	c.collectorFlag = func(sub, name string) bool {
		if name == "help" || name == "h" || (sub == "" && name == "version") {
			return true
		}
		cmd := collector
		if sub != "" {
			for _, s := range collector.Commands() {
				if s.Name() == sub {
					cmd = s
				}
			}
		}
		return cmd.Flags().Lookup(name) != nil || (len(name) == 1 && cmd.Flags().ShorthandLookup(name) != nil)
	}

	for _, dir := range []string{"", "erlang"} {
		c.makeTargets[dir] = makeTargets(t, filepath.Join(root, dir), "Makefile")
	}
	for _, e := range globtest.ReadDir(t, filepath.Join(root, "cmd")) {
		if e.IsDir() {
			c.programs = append(c.programs, e.Name())
		}
	}
	binRule := regexp.MustCompile(`\$\(BIN\)/([A-Za-z0-9_.-]+)`)
	for _, mk := range append([]string{filepath.Join(root, "Makefile")}, globtest.Glob(t, filepath.Join(root, "mk", "*.mk"))...) {
		src, err := os.ReadFile(mk)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range binRule.FindAllStringSubmatch(string(src), -1) {
			c.programs = append(c.programs, m[1])
		}
	}
	return c
}

// makeRule matches a rule's targets: "a b: prerequisites" or "a::", not a
// variable assignment (":=", "::=").
var makeRule = regexp.MustCompile(`^([^\s#:=][^:=]*?)\s*::?(?:[^=]|$)`)

// makeTargets returns the explicit targets of makefile in dir and of the
// files it includes (paths relative to dir, globs allowed): pattern rules,
// special targets (.PHONY) and targets named by a variable are left out.
func makeTargets(t *testing.T, dir, makefile string) []string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(dir, makefile))
	if err != nil {
		t.Fatal(err)
	}
	var targets []string
	for line := range strings.Lines(string(src)) {
		if rest, ok := strings.CutPrefix(line, "include "); ok {
			for _, pattern := range strings.Fields(rest) {
				for _, inc := range globtest.Glob(t, filepath.Join(dir, pattern)) {
					rel, _ := filepath.Rel(dir, inc)
					targets = append(targets, makeTargets(t, dir, rel)...)
				}
			}
			continue
		}
		m := makeRule.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		for _, name := range strings.Fields(m[1]) {
			if !strings.ContainsAny(name, "$%") && !strings.HasPrefix(name, ".") {
				targets = append(targets, name)
			}
		}
	}
	return targets
}

// envAssignment matches a shell variable assignment before a command.
var envAssignment = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)

// check reports whether a command line invokes one of this project's
// programs (deltaq, otelcol-deltaq, make, bin/NAME) and what is wrong with
// it, "" when nothing is.
func (c *commandChecker) check(words []string) (ours bool, problem string) {
	for len(words) > 0 && envAssignment.MatchString(words[0]) {
		words = words[1:]
	}
	if len(words) == 0 {
		return false, ""
	}
	program, args := words[0], words[1:]
	if name, ok := strings.CutPrefix(strings.TrimPrefix(program, "./"), "bin/"); ok {
		if !slices.Contains(c.programs, name) {
			return true, fmt.Sprintf("no program %s: bin/ holds %s", program, strings.Join(c.programs, ", "))
		}
		program = name
	} else if base := path.Base(program); program != base && (base == "deltaq" || base == "otelcol-deltaq") {
		// An unpacked release archive's programs: ./deltaq,
		// deltaq_VERSION_linux_amd64/otelcol-deltaq.
		program = base
	}
	if len(args) == 0 {
		// A bare name in prose ("the `deltaq` exporter") is no command.
		return false, ""
	}
	switch program {
	case "deltaq":
		return true, c.checkDeltaq(args)
	case "otelcol-deltaq":
		return true, c.checkCollector(args)
	case "make":
		return true, c.checkMake(args)
	}
	return false, ""
}

// flagName returns the name of a flag word ("--config=FILE" → "config") and
// whether the word is one; "[--json]" as a synopsis writes an optional flag
// counts too. "--" and "-" are not flags.
func flagName(word string) (string, bool) {
	word = strings.Trim(word, "[]")
	if len(word) < 2 || word[0] != '-' || word == "--" {
		return "", false
	}
	name, _, _ := strings.Cut(strings.TrimLeft(word, "-"), "=")
	return name, true
}

func (c *commandChecker) checkDeltaq(args []string) string {
	name := args[0]
	if flag, ok := flagName(name); ok {
		if !slices.Contains([]string{"h", "help", "version"}, flag) {
			return fmt.Sprintf("deltaq has no flag %s", name)
		}
		return ""
	}
	if name == "help" {
		if len(args) == 1 {
			return ""
		}
		if _, ok := lookup(args[1]); !ok {
			return fmt.Sprintf("deltaq has no command %q", args[1])
		}
		return ""
	}
	if _, ok := lookup(name); !ok {
		return fmt.Sprintf("deltaq has no command %q (it has %s)", name, strings.Join(deltaqNames(), ", "))
	}
	for _, w := range args[1:] {
		if w == "--" {
			break
		}
		flag, ok := flagName(w)
		if ok && flag != "h" && flag != "help" && !slices.Contains(c.deltaqFlags[name], flag) {
			return fmt.Sprintf("deltaq %s has no flag %s", name, w)
		}
	}
	return ""
}

// deltaqNames returns the names of deltaq's commands, sorted.
func deltaqNames() []string {
	var names []string
	for _, c := range commands() {
		names = append(names, c.name)
	}
	slices.Sort(names)
	return names
}

func (c *commandChecker) checkCollector(args []string) string {
	sub := ""
	if _, ok := flagName(args[0]); !ok {
		sub = args[0]
		if !c.collectorSub(sub) {
			return fmt.Sprintf("the collector has no subcommand %q", sub)
		}
		args = args[1:]
	}
	for _, w := range args {
		if flag, ok := flagName(w); ok && !c.collectorFlag(sub, flag) {
			return fmt.Sprintf("otelcol-deltaq %s has no flag %s", sub, w)
		}
	}
	return ""
}

func (c *commandChecker) checkMake(args []string) string {
	dir := ""
	var targets []string
	for i := 0; i < len(args); i++ {
		w := args[i]
		switch {
		case w == "-C" && i+1 < len(args):
			dir = filepath.Clean(args[i+1])
			i++
		case strings.HasPrefix(w, "-C"):
			dir = filepath.Clean(w[2:])
		case strings.HasPrefix(w, "-"), strings.Contains(w, "="):
			// another option, or a variable
		default:
			targets = append(targets, w)
		}
	}
	known, ok := c.makeTargets[dir]
	if !ok {
		return fmt.Sprintf("make -C %s: no Makefile known there", dir)
	}
	where := "Makefile and mk/*.mk"
	if dir != "" {
		where = dir + "/Makefile"
	}
	for _, target := range targets {
		if !slices.Contains(known, target) {
			return fmt.Sprintf("no target %q in %s", target, where)
		}
	}
	return ""
}

// checkDocument returns one problem per wrong command of doc, each as
// "NAME:LINE: `COMMAND`: what is wrong", and how many commands of this
// project's programs it checked.
func (c *commandChecker) checkDocument(name, doc string) (problems []string, checked int) {
	for _, sc := range shownCommands(doc) {
		ours, p := c.check(sc.words)
		if ours {
			checked++
		}
		if p != "" {
			problems = append(problems, fmt.Sprintf("%s:%d: `%s`: %s", name, sc.line, sc.text, p))
		}
	}
	return problems, checked
}

// TestREADMECommands checks every command the READMEs show that invokes one
// of this project's programs: deltaq commands and flags against the command
// table, the collector's subcommands and flags against otelcol's command,
// make targets against the Makefiles, bin/NAME against what is built there.
func TestREADMECommands(t *testing.T) {
	c := newCommandChecker(t, repoRoot)
	checked := 0
	for _, name := range readmes {
		src, err := os.ReadFile(filepath.Join(repoRoot, name))
		if err != nil {
			t.Fatal(err)
		}
		problems, n := c.checkDocument(name, string(src))
		for _, p := range problems {
			t.Error(p)
		}
		checked += n
	}
	// The documents show over fifty commands of this project's programs
	// (55 when this test was written); few found means the extraction
	// broke, not that all is well.
	if checked < 40 {
		t.Errorf("only %d commands found in %v", checked, readmes)
	}
}

// TestREADMECommandChecker shows that the checker finds each kind of mistake
// on synthetic documents, and lets pass what is right or no command.
func TestREADMECommandChecker(t *testing.T) {
	c := newCommandChecker(t, repoRoot)
	for _, tc := range []struct {
		doc  string
		want []string // fragments of the one problem; none for a good document
	}{
		// The mistake kind that prompted the check: a collector subcommand
		// given to deltaq.
		{"Validate with `deltaq validate x.dq`.\n", []string{`doc.md:1: ` + "`deltaq validate x.dq`" + `: deltaq has no command "validate"`}},
		{"```\n$ deltaq check a.dq\n$ deltaq eval a.dq --outcome 'w=exp(5ms)' \\\n    --json\n```\n", nil},
		{"```\n$ deltaq eval a.dq \\\n    --outcom 'w=exp(5ms)'\n```\n", []string{"doc.md:2: ", "deltaq eval has no flag --outcom"}},
		{"`deltaq analyze --config c.yaml t.json [--json] [--plot DIR]`", nil},
		{"`deltaq analyze --config c.yaml [--plots DIR]`", []string{"deltaq analyze has no flag [--plots"}},
		{"`deltaq graph FILE.dq | dot -Tsvg > FILE.svg`, `deltaq help scope`, `deltaq --version`", nil},
		{"`deltaq help validate`", []string{`deltaq has no command "validate"`}},
		{"`otelcol-deltaq validate --config=FILE` and `bin/otelcol-deltaq components`", nil},
		{"`otelcol-deltaq check --config=FILE`", []string{`the collector has no subcommand "check"`}},
		{"`otelcol-deltaq validate --configs=FILE`", []string{"otelcol-deltaq validate has no flag --configs=FILE"}},
		{"| `make e2e-connector` | … |\n`LOAD_ARGS=\"-duration 10m\" make load`, `make -C erlang bench`", nil},
		{"```\nmake e2e-erlangs   # typo\n```\n", []string{`no target "e2e-erlangs" in Makefile and mk/*.mk`}},
		{"`make -C erlang benchmark`", []string{`no target "benchmark" in erlang/Makefile`}},
		{"`bin/dqworkloads -rate 5`", []string{"no program bin/dqworkloads"}},
		// The programs of an unpacked release archive, by their path.
		{"```sh\n./otelcol-deltaq validate --config=config.yaml\n./deltaq check --config=config.yaml\n```\n", nil},
		{"```sh\n./deltaq check --configs=config.yaml\n```\n", []string{"deltaq check has no flag --configs=config.yaml"}},
		{"`deltaq_VERSION_linux_amd64/otelcol-deltaq --conf=config.yaml`", []string{"otelcol-deltaq  has no flag --conf=config.yaml"}},
		// Not commands: a component named in prose, configuration, comments.
		{"the `deltaq` exporter, `deltaq.outcome`, `deltaq-snapshot-*.json`\n```yaml\nprocessors: [deltaq]   # deltaq first\n```\n", nil},
	} {
		got, _ := c.checkDocument("doc.md", tc.doc)
		if tc.want == nil {
			if len(got) != 0 {
				t.Errorf("%q: problems %q, want none", tc.doc, got)
			}
			continue
		}
		if len(got) != 1 {
			t.Errorf("%q: problems %q, want one containing %q", tc.doc, got, tc.want)
			continue
		}
		assertContainsAll(t, "the problem of "+strconv.Quote(tc.doc), got[0], tc.want...)
	}
}

func TestShellCommands(t *testing.T) {
	got := shellCommands(`A=1 make load 2>&1 | tee "out file" && deltaq fmt -w 'x y.dq' > /dev/null # deltaq nothing`)
	want := [][]string{{"A=1", "make", "load"}, {"tee", "out file"}, {"deltaq", "fmt", "-w", "x y.dq"}}
	if fmt.Sprint(got) != fmt.Sprint(want) || len(got) != len(want) {
		t.Errorf("got %q, want %q", got, want)
	}
}
