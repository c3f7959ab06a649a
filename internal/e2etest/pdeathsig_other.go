// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

//go:build !linux

package e2etest

import "os/exec"

// dieWithTest does nothing: only Linux has a parent-death signal, and the
// end-to-end tests run on Linux.
func dieWithTest(*exec.Cmd) {}
