// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

//go:build unix

package main

import (
	"os"

	"golang.org/x/sys/unix"
)

// terminalSize returns the rows and columns of the terminal f is, or zeros
// when f is no terminal (a pipe, a file).
func terminalSize(f *os.File) (rows, cols int) {
	ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
	if err != nil {
		return 0, 0
	}
	return int(ws.Row), int(ws.Col)
}
