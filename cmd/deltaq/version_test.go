// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func TestVersionLine(t *testing.T) {
	const rev = "743f8d2c6a0e4b1f9d3c5e7a8b9c0d1e2f3a4b5c"
	vcs := func(modified string) []debug.BuildSetting {
		return []debug.BuildSetting{
			{Key: "-compiler", Value: "gc"},
			{Key: "vcs", Value: "git"},
			{Key: "vcs.revision", Value: rev},
			{Key: "vcs.time", Value: "2026-11-24T10:00:00Z"},
			{Key: "vcs.modified", Value: modified},
		}
	}
	for _, tc := range []struct {
		name    string
		stamped string
		info    *debug.BuildInfo
		ok      bool
		want    string
	}{
		{"tagged module, no VCS", "", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.4.0"}},
			true, "deltaq v0.4.0 go1.26.8 linux/amd64"},
		{"work tree, clean", "", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: vcs("false")},
			true, "deltaq (devel) revision " + rev + " go1.26.8 linux/amd64"},
		{"work tree, modified", "", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: vcs("true")},
			true, "deltaq (devel) revision " + rev + " modified go1.26.8 linux/amd64"},
		// No recorded Go version or module version: the running Go's, and (devel).
		{"bare", "", &debug.BuildInfo{}, true, "deltaq (devel) go1.99 linux/amd64"},
		{"no build information", "", nil, false, "deltaq (unknown: no build information) go1.99 linux/amd64"},
		// Stamped by make (scripts/version.sh): the stamp names the version.
		{"stamped release", "0.4.0", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}},
			true, "deltaq 0.4.0 go1.26.8 linux/amd64"},
		{"stamped development build", "0.4.0-dev+743f8d2c6a0e", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: vcs("true")},
			true, "deltaq 0.4.0-dev+743f8d2c6a0e revision " + rev + " modified go1.26.8 linux/amd64"},
		{"stamped, no build information", "0.4.0", nil, false, "deltaq 0.4.0 go1.99 linux/amd64"},
	} {
		if got := versionLine(tc.stamped, tc.info, tc.ok, "go1.99", "linux/amd64"); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestVersionCommand(t *testing.T) {
	platform := runtime.GOOS + "/" + runtime.GOARCH
	for _, args := range [][]string{{"version"}, {"--version"}, {"-version"}} {
		status, stdout, stderr := runCmd(args...)
		// The test binary's own build information: whatever the version, the
		// line names deltaq and ends with the Go version and platform.
		if status != exitOK || stderr != "" || !strings.HasPrefix(stdout, "deltaq ") ||
			!strings.HasSuffix(stdout, " "+runtime.Version()+" "+platform+"\n") || strings.Count(stdout, "\n") != 1 {
			t.Errorf("%v: status %d, stdout %q, stderr %q", args, status, stdout, stderr)
		}
	}
	status, _, stderr := runCmd("version", "extra")
	if status != exitUsage || !strings.Contains(stderr, "deltaq version: want no arguments, got 1") {
		t.Errorf("version extra: status %d, stderr %q", status, stderr)
	}
	status, stdout, _ := runCmd("help", "version")
	if status != exitOK || !strings.Contains(stdout, "usage: deltaq version") || !strings.Contains(stdout, "modified") {
		t.Errorf("help version: status %d, stdout %q", status, stdout)
	}
	_, _, stderr = runCmd()
	if !strings.Contains(stderr, "\tversion ") {
		t.Errorf("usage does not list version:\n%s", stderr)
	}
}
