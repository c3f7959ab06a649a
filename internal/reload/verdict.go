// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package reload // import "github.com/deltaq-otel/deltaq/internal/reload"

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// maxCheckOutput bounds what is kept of the validate command's output: its
// last line is the refusal quoted in the components' logs.
const maxCheckOutput = 64 << 10

// validateByCommand runs this executable's `validate` subcommand with the
// flags the process was started with, as the collector's command line
// accepts them (`otelcol-deltaq validate --config=…`): the collector's own
// loading and validation of the configuration, with its factories and
// providers, as a reload would do it. It returns the refusal when the
// command exits non-zero, and nil when it accepts the configuration or
// cannot tell: the process was not started as a collector (a test binary,
// a subcommand), the command could not run or ran out of time.
func validateByCommand(ctx context.Context) error {
	args := os.Args[1:]
	if !collectorFlags(args) {
		return nil
	}
	exe, err := os.Executable()
	if err != nil {
		return nil
	}
	var out boundedBuffer
	cmd := exec.CommandContext(ctx, exe, append([]string{"validate"}, args...)...)
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	var exit *exec.ExitError
	if err == nil || ctx.Err() != nil || !errors.As(err, &exit) {
		return nil
	}
	return fmt.Errorf("%s validate refused the configuration (%v): %s", filepath.Base(exe), err, lastLine(out.String()))
}

// collectorFlags reports whether args are those of a collector run: flags
// only (the collector's root command takes no argument; a subcommand would
// be one), none of them a Go test binary's.
func collectorFlags(args []string) bool {
	if len(args) == 0 || !strings.HasPrefix(args[0], "-") {
		return false
	}
	for _, a := range args {
		if strings.HasPrefix(a, "-test.") || strings.HasPrefix(a, "--test.") {
			return false
		}
	}
	return true
}

// lastLine is the last non-empty line of s, trimmed.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// boundedBuffer keeps the last maxCheckOutput bytes written to it.
type boundedBuffer struct{ b bytes.Buffer }

func (w *boundedBuffer) Write(p []byte) (int, error) {
	n := len(p)
	if len(p) > maxCheckOutput {
		p = p[len(p)-maxCheckOutput:]
	}
	if over := w.b.Len() + len(p) - maxCheckOutput; over > 0 {
		w.b.Next(over)
	}
	w.b.Write(p)
	return n, nil
}

func (w *boundedBuffer) String() string { return w.b.String() }
