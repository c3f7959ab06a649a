// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"
)

func init() {
	register(command{
		name:    "version",
		usage:   "version",
		summary: "print the version of deltaq and of the Go toolchain that built it",
		help: `Version prints one line: the module version of deltaq ("(devel)" when built
from a work tree rather than a tagged module), the version-control revision
it was built from with "modified" when the work tree had uncommitted changes
(when the build recorded them), and the Go version and platform. "deltaq
--version" prints the same. Quote the line in a bug report.`,
		run: runVersion,
	})
}

func runVersion(args []string, stdout, stderr io.Writer) int {
	c := commands["version"]
	fs := newFlags(&c, stderr)
	rest, status, ok := parseArgs(fs, args)
	if !ok {
		return status
	}
	if len(rest) != 0 {
		return fs.usageError("want no arguments, got %d", len(rest))
	}
	info, ok := debug.ReadBuildInfo()
	fmt.Fprintln(stdout, versionLine(info, ok, runtime.Version(), runtime.GOOS+"/"+runtime.GOARCH))
	return exitOK
}

// versionLine describes the build of deltaq from its build information
// (runtime/debug.ReadBuildInfo; ok false when the binary has none), e.g.
// "deltaq (devel) revision 743f8d2… modified go1.26.8 linux/amd64". The Go
// version is the one recorded in the build information, else goVersion (the
// running one); platform is GOOS/GOARCH. A separate function so that tests
// can pass build information the test binary itself does not carry.
func versionLine(info *debug.BuildInfo, ok bool, goVersion, platform string) string {
	words := []string{"deltaq"}
	if !ok || info == nil {
		words = append(words, "(unknown: no build information)")
	} else {
		v := info.Main.Version
		if v == "" {
			// A test binary or `go run` of a file: no main module version.
			v = "(devel)"
		}
		words = append(words, v)
		var revision, modified string
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				revision = s.Value
			case "vcs.modified":
				modified = s.Value
			}
		}
		if revision != "" {
			words = append(words, "revision", revision)
			if modified == "true" {
				words = append(words, "modified")
			}
		}
		if info.GoVersion != "" {
			goVersion = info.GoVersion
		}
	}
	return strings.Join(append(words, goVersion, platform), " ")
}
