// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package e2etest

import (
	"os/exec"
	"syscall"
)

// dieWithTest has the kernel kill the program should the test binary die
// before the test's cleanup ran (the parent-death signal).
func dieWithTest(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
