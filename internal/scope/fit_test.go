// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package scope

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestFitScreen: a frame taller than the terminal keeps its top (the
// header and the first probes) and says how much is below, in rows − 1 rows
// (the last line break would scroll a full screen); lines longer than the
// terminal count the rows they wrap to; a frame that fits, or an unknown
// size, is left whole.
func TestFitScreen(t *testing.T) {
	var b strings.Builder
	for i := range 30 {
		fmt.Fprintf(&b, "line %02d\n", i)
	}
	frame := b.String()
	rowsOf := func(s string, cols int) int {
		n := 0
		for _, l := range strings.Split(strings.TrimSuffix(s, "\n"), "\n") {
			n += max(1, (utf8.RuneCountInString(l)+cols-1)/cols)
		}
		return n
	}
	got := fitScreen(frame, 24, 80)
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if len(lines) != 23 || lines[0] != "line 00" || lines[21] != "line 21" ||
		!strings.HasPrefix(lines[22], "… 8 more lines below: the terminal has 24 rows") {
		t.Errorf("30 lines on 24 rows:\n%s", got)
	}
	// A long line wraps: 100 characters on 40 columns are 3 rows.
	long := strings.Repeat("x", 100) + "\n" + frame
	got = fitScreen(long, 10, 40)
	if rowsOf(got, 40) != 9 || !strings.HasPrefix(got, strings.Repeat("x", 100)+"\nline 00\n") ||
		!strings.Contains(got, "… 25 more lines below") {
		t.Errorf("a wrapped line on 10 rows of 40 columns (%d rows):\n%s", rowsOf(got, 40), got)
	}
	// The note fits the width, in the longest of its forms that does, not
	// cut in the middle of a word ("… 27 more lines bel").
	for cols, want := range map[int]string{
		80: `^… 27 more lines below: the terminal has 5 rows; enlarge it or lower --height$`,
		64: `^… 27 more lines below: enlarge the terminal or lower --height$`,
		40: `^… 27 more lines below$`, 20: `^… 27 more lines$`, 12: `^… 2\d more$`, 5: `^… 2\d$`, 1: `^$`,
	} {
		got = fitScreen(frame, 5, cols)
		lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
		note := lines[len(lines)-1]
		if !regexp.MustCompile(want).MatchString(note) || cols > 1 && utf8.RuneCountInString(note) >= cols {
			t.Errorf("%d columns: the note %q, want %s in fewer than %d columns", cols, note, want, cols)
		}
	}
	for _, c := range []struct{ rows, cols int }{{31, 80}, {0, 0}, {2, 80}, {24, 0}} {
		if got := fitScreen(frame, c.rows, c.cols); got != frame {
			t.Errorf("%d rows × %d columns: the frame was cut:\n%s", c.rows, c.cols, got)
		}
	}
}

// TestFitScreenWideCharacters: a probe name of wide characters (CJK, two
// columns each) takes twice the rows its characters count; the frame cut to
// the screen must still fit it, else it scrolls and the header goes.
func TestFitScreenWideCharacters(t *testing.T) {
	var b strings.Builder
	for i := range 30 {
		fmt.Fprintf(&b, "%s%02d\n", strings.Repeat("プ", 10), i) // 12 characters, 22 columns
	}
	got := fitScreen(b.String(), 24, 20)
	rows := 0
	for _, l := range strings.Split(strings.TrimSuffix(got, "\n"), "\n") {
		w := utf8.RuneCountInString(l) + strings.Count(l, "プ")
		rows += max(1, (w+19)/20)
	}
	if rows > 23 || !strings.Contains(got, "more lines") {
		t.Errorf("wide lines on 24 rows of 20 columns take %d rows:\n%s", rows, got)
	}
}
