// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package scope

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/width"
)

// fitScreen cuts a frame to a terminal of rows × cols, counting a line
// longer than cols as the rows it wraps to: what fits from the top (the
// header, then the probes in order), then a line that says how much is
// below. A frame taller than the screen scrolled, and showed its tail —
// the triggers, without the header and the first probes. Fewer than 3
// rows or no column (no terminal, or its size unknown) leave the frame
// whole.
func fitScreen(frame string, rows, cols int) string {
	if rows < 3 || cols < 1 {
		return frame
	}
	// The last line's line break would scroll a full screen by one row:
	// rows − 1 rows hold the frame.
	room := rows - 1
	lines := strings.SplitAfter(strings.TrimSuffix(frame, "\n"), "\n")
	used := 0
	for i, l := range lines {
		if w := wrapped(l, cols); used+w <= room {
			used += w
			continue
		}
		// Line i does not fit: keep the lines before it that leave a row
		// for the note.
		keep := i
		for keep > 0 && used > room-1 {
			keep--
			used -= wrapped(lines[keep], cols)
		}
		return strings.Join(lines[:keep], "") + moreNote(len(lines)-keep, rows, cols) + "\n"
	}
	return frame
}

// wrapped is the number of rows line takes on a terminal of cols columns:
// one column a character, two for a wide one (East Asian wide and
// fullwidth: CJK, Hangul, emoji), which a terminal moves to the next row
// whole when one column is left. The frame's own text is of narrow
// characters, names received may be of wide ones.
func wrapped(line string, cols int) int {
	rows, col := 1, 0
	for _, r := range strings.TrimSuffix(line, "\n") {
		w := 1
		if wide(r) {
			w = 2
		}
		if col+w > cols && col > 0 {
			rows, col = rows+1, 0
		}
		col += w
	}
	return rows
}

// wide reports whether a terminal draws r two columns wide: East Asian
// wide and fullwidth (Unicode UAX #11), which takes in CJK, Hangul and the
// emoji.
func wide(r rune) bool {
	k := width.LookupRune(r).Kind()
	return k == width.EastAsianWide || k == width.EastAsianFullwidth
}

// moreNote says how many lines of a frame are below a terminal of rows ×
// cols, in fewer than cols columns (the note's line break would wrap
// otherwise): the longest of its forms that fits, so that a narrow
// terminal reads "… 86 more lines" rather than "… 86 more lines bel".
func moreNote(more, rows, cols int) string {
	notes := []string{
		fmt.Sprintf("… %d more lines below: the terminal has %d rows; enlarge it, or draw smaller plots (--height)", more, rows),
		fmt.Sprintf("… %d more lines below: the terminal has %d rows; enlarge it or lower --height", more, rows),
		fmt.Sprintf("… %d more lines below: enlarge the terminal or lower --height", more),
		fmt.Sprintf("… %d more lines below", more),
		fmt.Sprintf("… %d more lines", more),
		fmt.Sprintf("… %d more", more),
	}
	for _, note := range notes {
		if utf8.RuneCountInString(note) < cols {
			return note
		}
	}
	note := []rune(notes[len(notes)-1])
	return string(note[:max(0, cols-1)])
}
