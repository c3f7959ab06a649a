// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package printable

import "testing"

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
		// A name that, printed raw, clears the screen (ESC [ 2 J), retitles
		// the terminal (OSC 0 ; x BEL) and rings the bell.
		{"evil\x1b[2J\x1b]0;x\a", `evil\x1b[2J\x1b]0;x\a`},
		{"a\tb\nc\rd\ve\ff\bg", `a\tb\nc\rd\ve\ff\bg`},
		{"\x00\x01\x1f\x7f", `\x00\x01\x1f\x7f`},
		// C1: U+009B is CSI, which some terminals take as ESC [.
		{"x\u009b2J\u0080\u009f", `x\u009b2J\u0080\u009f`},
		// Bidirectional embeddings, overrides and isolates, and the line and
		// paragraph separators.
		{"abc\u202edcba", `abc\u202edcba`},
		{"\u202a\u202b\u202c\u202d\u2066\u2067\u2068\u2069\u2028\u2029",
			`\u202a\u202b\u202c\u202d\u2066\u2067\u2068\u2069\u2028\u2029`},
		// Bidirectional marks, and the invisible characters that make one
		// name pass for another; the joiners (above) are kept.
		{"job\u200b \u200e\u200f\u2060\u2064\ufeff", `job\u200b \u200e\u200f\u2060\u2064\ufeff`},
		// Invalid UTF-8, byte by byte: a lone continuation byte, a truncated
		// 3-byte sequence, 0xff.
		{"a\x80b\xe2\x82c\xff", `a\x80b\xe2\x82c\xff`},
		// The backslash, so that the escaped ESC and the text "\x1b" differ.
		{`a\x1b`, `a\\x1b`},
		{"", ""},
	} {
		if got := String(tc.in); got != tc.want {
			t.Errorf("String(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	// Multi-line messages keep their line breaks and their backslashes.
	msg := "a.dq:1:1: illegal character '\\x1b'\nb\x1b[2J.dq: no such file"
	if got, want := Lines(msg), "a.dq:1:1: illegal character '\\x1b'\nb\\x1b[2J.dq: no such file"; got != want {
		t.Errorf("Lines(%q) = %q, want %q", msg, got, want)
	}
	if n := testing.AllocsPerRun(100, func() { _ = String("checkout-ΔQ") }); n != 0 {
		t.Errorf("String of a clean name allocates %v times", n)
	}
}
