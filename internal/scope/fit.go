// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package scope

import (
	"fmt"
	"strings"
	"unicode/utf8"
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
		note := fmt.Sprintf("… %d more lines below: the terminal has %d rows; enlarge it, or draw smaller plots (--height)",
			len(lines)-keep, rows)
		if utf8.RuneCountInString(note) >= cols {
			note = string([]rune(note)[:cols-1])
		}
		return strings.Join(lines[:keep], "") + note + "\n"
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

// wide reports whether a terminal draws r two columns wide: the main East
// Asian wide and fullwidth blocks (Unicode UAX #11) and the emoji.
func wide(r rune) bool {
	switch {
	case r < 0x1100:
		return false
	case r <= 0x115f, // Hangul Jamo initials
		r >= 0x2e80 && r <= 0x303e, // CJK radicals, punctuation
		r >= 0x3041 && r <= 0x33ff, // kana, CJK compatibility
		r >= 0x3400 && r <= 0x4dbf, // CJK extension A
		r >= 0x4e00 && r <= 0x9fff, // CJK unified ideographs
		r >= 0xa000 && r <= 0xa4cf, // Yi
		r >= 0xac00 && r <= 0xd7a3, // Hangul syllables
		r >= 0xf900 && r <= 0xfaff, // CJK compatibility ideographs
		r >= 0xfe30 && r <= 0xfe4f, // CJK compatibility forms
		r >= 0xff00 && r <= 0xff60, // fullwidth forms
		r >= 0xffe0 && r <= 0xffe6,
		r >= 0x1f300 && r <= 0x1f64f, // emoji
		r >= 0x1f900 && r <= 0x1f9ff,
		r >= 0x20000 && r <= 0x3fffd: // CJK extensions B–
		return true
	}
	return false
}
