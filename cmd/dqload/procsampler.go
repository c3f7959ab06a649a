// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// procSampler reads a process's resident memory and CPU time from Linux's
// /proc. A zero pid or an unreadable /proc turns it into a no-op.
type procSampler struct {
	pid               int
	first, last, max  int64 // resident bytes
	sampled, disabled bool
}

func newProcSampler(pid int) *procSampler {
	return &procSampler{pid: pid, disabled: pid == 0}
}

func (p *procSampler) ok() bool { return !p.disabled && p.sampled }

// sample records the current resident set size (VmRSS).
func (p *procSampler) sample() {
	if p.disabled {
		return
	}
	rss, err := readRSS(p.pid)
	if err != nil {
		fmt.Fprintln(os.Stderr, "dqload: collector memory:", err)
		p.disabled = true
		return
	}
	if !p.sampled {
		p.first = rss
		p.sampled = true
	}
	p.last = rss
	p.max = max(p.max, rss)
}

// cpu returns the process's user+system CPU time so far, 0 if unknown.
func (p *procSampler) cpu() time.Duration {
	if p.disabled {
		return 0
	}
	d, err := readCPU(p.pid)
	if err != nil {
		return 0
	}
	return d
}

func readRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest) // "123456 kB"
			if len(f) != 2 || f[1] != "kB" {
				break
			}
			kb, err := strconv.ParseInt(f[0], 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("/proc/%d/status has no VmRSS line", pid)
}

// clockTick is USER_HZ, the unit of /proc/PID/stat times: 100 on every Linux
// architecture Go supports.
const clockTick = 100

func readCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces; fields after its closing
	// parenthesis are space-separated: state is field 3, utime 14, stime 15.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	var ticks int64
	for _, s := range f[11:13] {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
		}
		ticks += v
	}
	return time.Duration(ticks) * time.Second / clockTick, nil
}
