// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package diagram

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestLanguageReferenceErrors keeps docs/dq-language.md true: every row of
// its table of common errors is parsed as written, and the message the
// parser gives must be the one the table quotes. Every example block must
// parse without error.
func TestLanguageReferenceErrors(t *testing.T) {
	doc, err := os.ReadFile("../docs/dq-language.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `([^`]+)`[^|]*\\| `([^`]+)` \\|")
	rows := row.FindAllStringSubmatch(string(doc), -1)
	if len(rows) < 8 {
		t.Fatalf("found %d rows of common errors in docs/dq-language.md, want the whole table", len(rows))
	}
	for _, r := range rows {
		src, want := r[1], r[2]
		_, err := Parse("x.dq", []byte(src))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("docs/dq-language.md: %q gives %v, the table says %q", src, err, want)
		}
	}
	parsed := 0
	for _, b := range fencedBlocks(string(doc)) {
		if b.lang != "" || strings.Contains(b.text, "(*") {
			continue // the shell commands and the grammar
		}
		if _, err := Parse("example.dq", []byte(b.text)); err != nil {
			t.Errorf("docs/dq-language.md example does not parse: %v\n%s", err, b.text)
		}
		parsed++
	}
	if parsed < 2 {
		t.Errorf("parsed %d example blocks, want the first diagram and the examples", parsed)
	}
}

type fenced struct{ lang, text string }

// fencedBlocks returns the fenced code blocks of a Markdown text, each with
// the language written after its opening fence.
func fencedBlocks(md string) []fenced {
	var blocks []fenced
	var cur *fenced
	for _, line := range strings.Split(md, "\n") {
		switch {
		case cur == nil && strings.HasPrefix(line, "```"):
			cur = &fenced{lang: strings.TrimPrefix(line, "```")}
		case cur != nil && line == "```":
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			cur.text += line + "\n"
		}
	}
	return blocks
}
