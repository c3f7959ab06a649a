// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package diagram

import (
	"strings"
	"unicode/utf8"
)

// scanner turns a .dq source into tokens, after go/scanner: it tracks line
// starts for positions, reports lexical errors to the sink and keeps going,
// and hands comments to the parser separately from tokens.
type scanner struct {
	src  []byte
	errs *errorSink

	off      int // offset of the next unread byte
	line     int // line of src[off]
	lineOff  int // offset of the first byte of that line
	comments []*Comment
}

func newScanner(src []byte, errs *errorSink) *scanner {
	s := &scanner{src: src, errs: errs, line: 1}
	// A byte order mark at the very start is not part of the text.
	if len(src) >= 3 && src[0] == 0xEF && src[1] == 0xBB && src[2] == 0xBF {
		s.off, s.lineOff = 3, 3
	}
	return s
}

// pos returns the position of src[off].
func (s *scanner) pos(off int) Pos {
	return Pos{Offset: off, Line: s.line, Column: off - s.lineOff + 1}
}

func isLetter(c byte) bool { return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isDigit(c byte) bool  { return '0' <= c && c <= '9' }

// skipSpace skips white space and collects comments.
func (s *scanner) skipSpace() {
	for s.off < len(s.src) {
		switch c := s.src[s.off]; {
		case c == '\n', c == '\r' && (s.off+1 == len(s.src) || s.src[s.off+1] != '\n'):
			// A line ends at LF, CRLF or, as old Mac files have it, a CR
			// alone.
			s.off++
			s.line++
			s.lineOff = s.off
		case c == ' ' || c == '\t' || c == '\r':
			s.off++
		case c == '#' || c == '/' && s.off+1 < len(s.src) && s.src[s.off+1] == '/':
			s.comment()
		default:
			return
		}
	}
}

// comment scans a '#' or '//' comment up to (not including) the end of line.
func (s *scanner) comment() {
	start := s.off
	for s.off < len(s.src) && s.src[s.off] != '\n' && s.src[s.off] != '\r' {
		s.off++
	}
	text := strings.TrimRight(string(s.src[start:s.off]), " \t\r")
	s.comments = append(s.comments, &Comment{Pos: s.pos(start), Text: text})
}

// punctuation is the token of each one-byte operator; '-' starts the
// two-byte '->' and is scanned apart.
var punctuation = map[byte]tokenKind{
	'=': tokAssign,
	';': tokSemi,
	',': tokComma,
	':': tokColon,
	'(': tokLParen,
	')': tokRParen,
	'[': tokLBrack,
	']': tokRBrack,
}

// next returns the next token. At the end of the source it returns tokEOF,
// repeatedly.
func (s *scanner) next() token {
	s.skipSpace()
	if s.off >= len(s.src) {
		return token{kind: tokEOF, pos: s.pos(s.off)}
	}
	start := s.off
	pos := s.pos(start)
	c := s.src[s.off]
	switch {
	case isLetter(c):
		for s.off < len(s.src) && (isLetter(s.src[s.off]) || isDigit(s.src[s.off])) {
			s.off++
		}
		return token{kind: tokIdent, pos: pos, lit: string(s.src[start:s.off])}
	case isDigit(c):
		return s.number(pos)
	}
	s.off++
	if k, ok := punctuation[c]; ok {
		return token{kind: k, pos: pos}
	}
	if c == '-' {
		if s.off < len(s.src) && s.src[s.off] == '>' {
			s.off++
			return token{kind: tokArrow, pos: pos}
		}
		s.errs.errorf(pos, "expected '->', found '-' alone")
		return token{kind: tokIllegal, pos: pos, lit: "-"}
	}
	// Anything else is one illegal character; decode it so that the message
	// shows the character rather than its first byte.
	r, size := utf8.DecodeRune(s.src[start:])
	s.off = start + size
	if r == utf8.RuneError && size == 1 {
		s.errs.errorf(pos, "illegal UTF-8 encoding")
		return token{kind: tokIllegal, pos: pos, lit: string(s.src[start:s.off])}
	}
	s.errs.errorf(pos, "illegal character %q", r)
	return token{kind: tokIllegal, pos: pos, lit: string(r)}
}

// number scans digits ['.' digits]. A '.' not followed by a digit is an
// error: "1." and ".5" are not numbers, so that every number has one
// spelling the formatter can reproduce.
func (s *scanner) number(pos Pos) token {
	start := s.off
	for s.off < len(s.src) && isDigit(s.src[s.off]) {
		s.off++
	}
	if s.off < len(s.src) && s.src[s.off] == '.' {
		s.off++
		if s.off >= len(s.src) || !isDigit(s.src[s.off]) {
			s.errs.errorf(s.pos(s.off), "expected digit after '.' in number")
			return token{kind: tokIllegal, pos: pos, lit: string(s.src[start:s.off])}
		}
		for s.off < len(s.src) && isDigit(s.src[s.off]) {
			s.off++
		}
	}
	return token{kind: tokNumber, pos: pos, lit: string(s.src[start:s.off])}
}
