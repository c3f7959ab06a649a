// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

// Package printable shows text received from outside (span data, OTLP
// messages, user files) on a terminal without letting any of it act as a
// command: control characters, bidirectional overrides and invalid UTF-8
// are written as Go escapes.
package printable

import (
	"strings"
	"unicode/utf8"
)

// String returns s as it may be shown on a terminal: names in the
// command's text output come from span data, OTLP messages and user files,
// and a terminal must not take any of them as a command. It writes as Go
// escapes
//
//   - the C0 controls and DEL: \a \b \t \n \v \f \r, else \x00 … \x1f, \x7f;
//   - the C1 controls U+0080 … U+009F: \u0080 … \u009f (some terminals act
//     on them as on ESC [ and friends);
//   - the bidirectional embeddings, overrides and isolates U+202A … U+202E
//     and U+2066 … U+2069, the marks U+200E and U+200F, and the line and
//     paragraph separators U+2028 and U+2029: \u202e and so on (they reorder
//     or break what follows them);
//   - the invisible zero-width space U+200B, word joiner and invisible
//     operators U+2060 … U+2064 and byte order mark U+FEFF, which make one
//     name look like another ("job" and "job\u200b"); the joiners U+200C and
//     U+200D, which scripts and emoji need, are kept;
//   - every byte of invalid UTF-8: \xff and so on;
//   - the backslash: \\, so that two different names never look alike.
//
// Every other character, printable Unicode included, is kept as is. s is
// returned unchanged, without allocating, when nothing needs escaping.
func String(s string) string { return escapeText(s, true) }

// Lines is String for a message of several lines, such as an
// error that joins several: each line is escaped, the line breaks are kept,
// and so are backslashes, which in a message mostly belong to the escapes of
// a %q-quoted value.
func Lines(s string) string {
	if !strings.Contains(s, "\n") {
		return escapeText(s, false)
	}
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = escapeText(l, false)
	}
	return strings.Join(lines, "\n")
}

// escapeText is String, with the backslash escaped or not.
func escapeText(s string, backslash bool) string {
	i := 0
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		if needsEscape(r, size, backslash) {
			break
		}
		i += size
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteString(s[:i])
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		if !needsEscape(r, size, backslash) {
			b.WriteString(s[i : i+size])
			i += size
			continue
		}
		const hex = "0123456789abcdef"
		e, short := shortEscapes[r]
		switch {
		case short:
			b.WriteString(e)
		case r < 0x80 || r == utf8.RuneError && size == 1:
			// A control byte, or a byte of invalid UTF-8: that byte.
			c := s[i]
			b.WriteString(`\x`)
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&0xf])
		default:
			b.WriteString(`\u`)
			for shift := 12; shift >= 0; shift -= 4 {
				b.WriteByte(hex[(r>>shift)&0xf])
			}
		}
		i += size
	}
	return b.String()
}

// shortEscapes are the escapes of one letter, by the rune they stand for.
var shortEscapes = map[rune]string{
	'\\': `\\`, '\a': `\a`, '\b': `\b`, '\t': `\t`, '\n': `\n`, '\v': `\v`, '\f': `\f`, '\r': `\r`,
}

// needsEscape reports whether escapeText escapes the rune r decoded from
// size bytes.
func needsEscape(r rune, size int, backslash bool) bool {
	switch {
	case r == utf8.RuneError && size == 1: // invalid UTF-8
		return true
	case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f:
		return true
	case r == '\\':
		return backslash
	case r >= 0x2028 && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	case r == 0x200b, r == 0x200e, r == 0x200f, r >= 0x2060 && r <= 0x2064, r == 0xfeff:
		return true
	}
	return false
}
