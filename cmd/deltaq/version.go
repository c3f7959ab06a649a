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

// version is the release version the build was stamped with (make commands
// and make release: go build -ldflags "-X main.version=…", from
// scripts/version.sh), empty in a plain go build.
var version string

// versionCommand is the version command's entry of the command table.
func versionCommand() command {
	return command{
		name:    "version",
		usage:   "version",
		summary: "print the version of deltaq and of the Go toolchain that built it",
		help: `Version prints one line: the version of deltaq — the one its build was
stamped with by make (a release's X.Y.Z, or X.Y.Z-dev+REVISION between
releases, the same as the collector's --version), else the module version
("(devel)" when built from a work tree rather than a tagged module) — the
version-control revision it was built from with "modified" when the work
tree had uncommitted changes (when the build recorded them), and the Go
version and platform. "deltaq --version" prints the same. Quote the line
in a bug report.`,
		run: runVersion,
	}
}

func runVersion(args []string, stdout, stderr io.Writer) int {
	fs := newFlags(versionCommand(), stderr)
	rest, status, ok := parseArgs(fs, args)
	if !ok {
		return status
	}
	if len(rest) != 0 {
		return fs.usageError("want no arguments, got %d", len(rest))
	}
	info, ok := debug.ReadBuildInfo()
	fmt.Fprintln(stdout, versionLine(version, info, ok, runtime.Version(), runtime.GOOS+"/"+runtime.GOARCH))
	return exitOK
}

// versionLine describes the build of deltaq from the version it was stamped
// with (stamped, empty for none) and its build information
// (runtime/debug.ReadBuildInfo; ok false when the binary has none), e.g.
// "deltaq (devel) revision 743f8d2… modified go1.26.8 linux/amd64". The Go
// version is the one recorded in the build information, else goVersion (the
// running one); platform is GOOS/GOARCH. A separate function so that tests
// can pass build information the test binary itself does not carry.
func versionLine(stamped string, info *debug.BuildInfo, ok bool, goVersion, platform string) string {
	words := []string{"deltaq"}
	switch {
	case !ok || info == nil:
		if stamped == "" {
			stamped = "(unknown: no build information)"
		}
		words = append(words, stamped)
	default:
		v := info.Main.Version
		if stamped != "" {
			v = stamped
		} else if v == "" {
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
