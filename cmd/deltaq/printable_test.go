// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// evilName is a probe name that, printed raw, clears the screen (ESC [ 2 J),
// retitles the terminal (OSC 0 ; x BEL) and rings the bell.
const evilName = "evil\x1b[2J\x1b]0;x\a"

// evilEscaped is evilName as printable shows it.
const evilEscaped = `evil\x1b[2J\x1b]0;x\a`

// assertNoControls fails if text holds a character printable escapes: a C0
// control other than the line break, DEL, a C1 control, a bidirectional
// override or isolate, or invalid UTF-8.
func assertNoControls(t *testing.T, what, text string) {
	t.Helper()
	for i, line := range strings.Split(text, "\n") {
		if esc := escapeText(line, false); esc != line {
			t.Errorf("%s line %d holds raw control characters: %q", what, i+1, line)
		}
	}
}

// TestPrintable: the escapes are those of Go string literals (The Go
// Programming Language Specification, "Rune literals": \a \b \f \n \r \t
// \v \\, \xhh for a byte, \uhhhh for a code point).
func TestPrintable(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"checkout", "checkout"},
		{"GET /api/v1/items?id=1", "GET /api/v1/items?id=1"},
		// Printable Unicode is kept: Greek, accents, CJK, emoji with a
		// zero-width joiner.
		{"ΔQ café 日本 👩‍💻", "ΔQ café 日本 👩‍💻"},
		{evilName, evilEscaped},
		{"a\tb\nc\rd\ve\ff\bg", `a\tb\nc\rd\ve\ff\bg`},
		{"\x00\x01\x1f\x7f", `\x00\x01\x1f\x7f`},
		// C1: U+009B is CSI, which some terminals take as ESC [.
		{"x\u009b2J\u0080\u009f", `x\u009b2J\u0080\u009f`},
		// Bidirectional embeddings, overrides and isolates, and the line and
		// paragraph separators.
		{"abc\u202edcba", `abc\u202edcba`},
		{"\u202a\u202b\u202c\u202d\u2066\u2067\u2068\u2069\u2028\u2029",
			`\u202a\u202b\u202c\u202d\u2066\u2067\u2068\u2069\u2028\u2029`},
		// Invalid UTF-8, byte by byte: a lone continuation byte, a truncated
		// 3-byte sequence, 0xff.
		{"a\x80b\xe2\x82c\xff", `a\x80b\xe2\x82c\xff`},
		// The backslash, so that the escaped ESC and the text "\x1b" differ.
		{`a\x1b`, `a\\x1b`},
		{"", ""},
	} {
		if got := printable(tc.in); got != tc.want {
			t.Errorf("printable(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	// Multi-line messages keep their line breaks and their backslashes.
	msg := "a.dq:1:1: illegal character '\\x1b'\nb\x1b[2J.dq: no such file"
	if got, want := printableLines(msg), "a.dq:1:1: illegal character '\\x1b'\nb\\x1b[2J.dq: no such file"; got != want {
		t.Errorf("printableLines(%q) = %q, want %q", msg, got, want)
	}
	if n := testing.AllocsPerRun(100, func() { _ = printable("checkout-ΔQ") }); n != 0 {
		t.Errorf("printable of a clean name allocates %v times", n)
	}
}

// TestDiagramCommandsEscape: a file name or a --probe argument with control
// characters reaches the output of check and eval escaped.
func TestDiagramCommandsEscape(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(examples, "ftf.dq"))
	if err != nil {
		t.Fatal(err)
	}
	path := writeTemp(t, "x"+evilName+".dq", string(src))
	status, stdout, stderr := runCmd("check", path)
	assertNoControls(t, "check stdout", stdout)
	if status != exitOK || !strings.Contains(stdout, "x"+evilEscaped+".dq: ok, 4 probes") {
		t.Errorf("check: status %d, stdout %q, stderr %q", status, stdout, stderr)
	}
	status, stdout, stderr = runCmd("check", path+".missing")
	assertNoControls(t, "check stdout", stdout)
	assertNoControls(t, "check stderr", stderr)
	if status != exitFail || !strings.Contains(stderr, evilEscaped) {
		t.Errorf("check of a missing file: status %d, stderr %q", status, stderr)
	}
	status, stdout, stderr = runCmd("eval", path, "--outcome", "worker_1=never", "--probe", evilName)
	assertNoControls(t, "eval stderr", stderr)
	if status != exitUsage || !strings.Contains(stderr, "--probe "+evilEscaped+": ") || stdout != "" {
		t.Errorf("eval --probe: status %d, stdout %q, stderr %q", status, stdout, stderr)
	}
}
