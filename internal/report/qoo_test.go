// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package report

import "testing"

func TestFormatScore(t *testing.T) {
	for _, c := range []struct {
		x    float64
		want string
	}{
		{50, "50"},
		{100.0 / 3, "33.33"},
		{100, "100"},
		{0, "0"},
		{85.189522044, "85.19"},
		// Below 100 is not optimal: never shown as 100.
		{99.996, "99.99"},
		{99.99999999, "99.99"},
		// No exponent, which analyze's and eval's columns do not expect.
		{2e-7, "0.0000002"},
		{0.00012345, "0.0001234"},
	} {
		if got := FormatScore(c.x); got != c.want {
			t.Errorf("FormatScore(%v) = %q, want %q", c.x, got, c.want)
		}
	}
}
