// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package slo

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// promUnits are the units of Prometheus's duration form, largest first
// (the year and the week are left out: a period is written in days).
var promUnits = []struct {
	name string
	d    time.Duration
}{
	{"d", 24 * time.Hour}, {"h", time.Hour}, {"m", time.Minute}, {"s", time.Second}, {"ms", time.Millisecond},
}

// FormatDuration writes d in Prometheus's duration form, the largest units
// first: 30d, 1h30m, 2s, 1m0s500ms is written 1m500ms. d is rounded to a
// millisecond, Prometheus's resolution; zero is "0s".
func FormatDuration(d time.Duration) string {
	d = d.Round(time.Millisecond)
	if d <= 0 {
		return "0s"
	}
	var b strings.Builder
	for _, u := range promUnits {
		if n := d / u.d; n > 0 {
			b.WriteString(strconv.FormatInt(int64(n), 10) + u.name)
			d -= n * u.d
		}
	}
	return b.String()
}

// maxDuration bounds a duration ParseDuration reads: 10 years.
const maxDuration = 10 * 366 * 24 * time.Hour

func tooLong(s string) error {
	return fmt.Errorf("duration %q: want a positive duration of at most 10 years", s)
}

// ParseDuration reads a positive duration of at most 10 years in
// Prometheus's form (1d, 6h, 1h30m, 5m, 30s, 250ms; a week is w) or Go's
// (1.5h).
func ParseDuration(s string) (time.Duration, error) {
	if d, err := time.ParseDuration(s); err == nil {
		if d <= 0 || d > maxDuration {
			return 0, tooLong(s)
		}
		return d, nil
	}
	rest := s
	var total time.Duration
	for rest != "" {
		i := 0
		for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
			i++
		}
		j := i
		for j < len(rest) && (rest[j] < '0' || rest[j] > '9') {
			j++
		}
		if i == 0 || i > 9 {
			return 0, fmt.Errorf("duration %q: want a whole number of units such as 30d, 6h or 1h30m", s)
		}
		n, _ := strconv.Atoi(rest[:i])
		unit := time.Duration(0)
		switch rest[i:j] {
		case "w":
			unit = 7 * 24 * time.Hour
		case "d":
			unit = 24 * time.Hour
		case "h":
			unit = time.Hour
		case "m":
			unit = time.Minute
		case "s":
			unit = time.Second
		case "ms":
			unit = time.Millisecond
		default:
			return 0, fmt.Errorf("duration %q: unknown unit %q (want w, d, h, m, s or ms)", s, rest[i:j])
		}
		// Each term and the sum are bounded before they are added: 30501w
		// is beyond an int64 of nanoseconds, and wrapped it read as 3 days.
		if time.Duration(n) > maxDuration/unit {
			return 0, tooLong(s)
		}
		if total += time.Duration(n) * unit; total > maxDuration {
			return 0, tooLong(s)
		}
		rest = rest[j:]
	}
	if total <= 0 {
		return 0, tooLong(s)
	}
	return total, nil
}
