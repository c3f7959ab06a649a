// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package diagram

import (
	"fmt"
	"strconv"
)

// Pos is a position in a .dq source: a 0-based byte offset and a 1-based
// line and column. Columns count bytes, as in go/token. The zero Pos is
// "no position".
type Pos struct {
	Offset int
	Line   int
	Column int
}

// IsValid reports whether p is a real position.
func (p Pos) IsValid() bool { return p.Line > 0 }

// String returns "LINE:COL", or "-" for the zero Pos.
func (p Pos) String() string {
	if !p.IsValid() {
		return "-"
	}
	return strconv.Itoa(p.Line) + ":" + strconv.Itoa(p.Column)
}

// tokenKind is the lexical class of a token.
type tokenKind int

const (
	tokEOF     tokenKind = iota
	tokIllegal           // a character that starts no token; the scanner has reported it
	tokIdent             // name: [A-Za-z_][A-Za-z0-9_]*
	tokNumber            // [0-9]+(.[0-9]+)?
	tokAssign            // =
	tokSemi              // ;
	tokArrow             // ->
	tokComma             // ,
	tokColon             // :
	tokLParen            // (
	tokRParen            // )
	tokLBrack            // [
	tokRBrack            // ]
)

var tokenText = [...]string{
	tokEOF:     "end of file",
	tokIllegal: "illegal character",
	tokIdent:   "name",
	tokNumber:  "number",
	tokAssign:  "'='",
	tokSemi:    "';'",
	tokArrow:   "'->'",
	tokComma:   "','",
	tokColon:   "':'",
	tokLParen:  "'('",
	tokRParen:  "')'",
	tokLBrack:  "'['",
	tokRBrack:  "']'",
}

func (k tokenKind) String() string {
	if k >= 0 && int(k) < len(tokenText) {
		return tokenText[k]
	}
	return fmt.Sprintf("token(%d)", int(k))
}

// token is one lexeme with its position and, for names and numbers, its text.
type token struct {
	kind tokenKind
	pos  Pos
	lit  string
}

// describe names the token for a "found …" message: names and numbers show
// their text, punctuation is quoted.
func (t token) describe() string {
	switch t.kind {
	case tokIdent:
		return "name " + strconv.Quote(t.lit)
	case tokNumber:
		return "number " + t.lit
	case tokIllegal:
		return "illegal character " + strconv.Quote(t.lit)
	}
	return t.kind.String()
}
