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
		if esc := printableLines(line); esc != line {
			t.Errorf("%s line %d holds raw control characters: %q", what, i+1, line)
		}
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
