// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package reload

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMain lets the test binary stand in for the collector's `validate`
// command (validateByCommand runs the process's own executable): given
// "validate --config=FILE", it refuses a file that contains "invalid" as the
// collector does, with a message and exit status 1.
func TestMain(m *testing.M) {
	if len(os.Args) > 2 && os.Args[1] == "validate" {
		file := strings.TrimPrefix(os.Args[2], "--config=")
		b, err := os.ReadFile(file)
		if err != nil || strings.Contains(string(b), "invalid") {
			fmt.Fprintln(os.Stderr, "Error: invalid configuration: processors::deltaq: unknown probe")
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// withCheck replaces h's configuration check.
func withCheck(h *Handover, f func(context.Context) error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.checkConfig = f
}

// TestRefusedConfigurationIsNotAReload: after a SIGHUP whose configuration
// the collector refuses, the collector exits after the shutdown; the
// components must flush, so Pending is false and Status says why. Before
// the check existed, Pending was true and the open windows were parked for
// components that never started.
func TestRefusedConfigurationIsNotAReload(t *testing.T) {
	h, _ := fakeClock(t)
	refusal := errors.New("invalid configuration")
	withCheck(h, func(context.Context) error { return refusal })
	h.Requested()
	pending, refused := h.Status()
	assert.False(t, pending, "the collector stops after this shutdown")
	assert.Equal(t, refusal, refused)
	assert.False(t, h.Pending())

	withCheck(h, func(context.Context) error { return nil })
	h.Requested()
	pending, refused = h.Status()
	assert.True(t, pending, "an accepted configuration is a reload")
	assert.NoError(t, refused)

	h.Refused(refusal)
	assert.False(t, h.Pending(), "Refused is a request with a refused configuration")
	h.Done()
	pending, refused = h.Status()
	assert.False(t, pending)
	assert.NoError(t, refused, "no reload under way")
}

// TestValidateByCommandAsksTheExecutable runs the check as the collector
// would: this executable's validate subcommand on the process's flags
// (TestMain stands in for the collector).
func TestValidateByCommandAsksTheExecutable(t *testing.T) {
	dir := t.TempDir()
	good, bad := filepath.Join(dir, "good.yaml"), filepath.Join(dir, "bad.yaml")
	require.NoError(t, os.WriteFile(good, []byte("receivers: {}\n"), 0o600))
	require.NoError(t, os.WriteFile(bad, []byte("invalid\n"), 0o600))
	oldArgs := os.Args
	t.Cleanup(func() { os.Args = oldArgs })

	os.Args = []string{oldArgs[0], "--config=" + good}
	assert.NoError(t, validateByCommand(context.Background()))
	os.Args = []string{oldArgs[0], "--config=" + bad}
	err := validateByCommand(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "unknown probe", "the collector's own message")
}

func TestCollectorFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want bool
	}{
		{[]string{"--config=c.yaml"}, true},
		{[]string{"--config", "c.yaml", "--feature-gates=x"}, true},
		{nil, false},
		{[]string{"validate", "--config=c.yaml"}, false},
		{[]string{"-test.v", "-test.run=X"}, false},
	} {
		assert.Equal(t, c.want, collectorFlags(c.args), "%q", c.args)
	}
}

func TestBoundedBufferKeepsTheEnd(t *testing.T) {
	var b boundedBuffer
	for range 3 {
		n, err := b.Write([]byte(strings.Repeat("x", maxCheckOutput/2+1)))
		require.NoError(t, err)
		require.Equal(t, maxCheckOutput/2+1, n)
	}
	_, _ = b.Write([]byte("\nlast line\n"))
	assert.LessOrEqual(t, len(b.String()), maxCheckOutput)
	assert.Equal(t, "last line", lastLine(b.String()))
}
