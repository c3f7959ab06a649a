// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package scope

import (
	"strings"
	"testing"

	"github.com/deltaq-otel/deltaq/internal/printable"
)

func assertContainsAll(t *testing.T, what, text string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(text, want) {
			t.Errorf("%s lacks %q:\n%s", what, want, text)
		}
	}
}

// evilName is a probe name that, printed raw, clears the screen (ESC [ 2 J),
// retitles the terminal (OSC 0 ; x BEL) and rings the bell.
const evilName = "evil\x1b[2J\x1b]0;x\a"

// evilEscaped is evilName as printable.String shows it.
const evilEscaped = `evil\x1b[2J\x1b]0;x\a`

// assertNoControls fails if text holds a character printable escapes: a C0
// control other than the line break, DEL, a C1 control, a bidirectional
// override or isolate, or invalid UTF-8.
func assertNoControls(t *testing.T, what, text string) {
	t.Helper()
	for i, line := range strings.Split(text, "\n") {
		if esc := printable.Lines(line); esc != line {
			t.Errorf("%s line %d holds raw control characters: %q", what, i+1, line)
		}
	}
}
