// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package confcheck

import (
	"math"
	"strconv"
	"strings"

	"github.com/deltaq-otel/deltaq/internal/confpath"
)

// checkFloat reports a number field written as a percentage (`max_failure:
// 1%`): YAML reads it as the string "1%", which the decoder refuses only as
// a string where a float was expected. Every ratio of the configuration is
// a fraction, so the message gives the fraction to write: "1% is a
// percentage; write the fraction 0.01". A percentage is not read as its
// fraction, so that one spelling holds everywhere (the same file is read by
// the collector, `deltaq check` and the configurations' tests) and no
// percentage of a field that is not a ratio is read silently as one.
func (w *walker) checkFloat(raw any, p confpath.Path) {
	s, ok := raw.(string)
	if !ok || !percentage(s) {
		return
	}
	num := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s), "%"))
	// The fraction is read from the digits shifted, the nearest float to
	// it (99.9 % is 0.999, where 99.9/100 prints as 0.9990000000000001).
	fraction, _ := strconv.ParseFloat(num+"e-2", 64)
	w.report(p, "%s is a percentage; write the fraction %s", strings.TrimSpace(s), strconv.FormatFloat(fraction, 'g', -1, 64))
}

// percentage reports whether s is a plain decimal number followed by %
// ("1%", "99.9 %"); other strings are no number (checkShape).
func percentage(s string) bool {
	num, isPercent := strings.CutSuffix(strings.TrimSpace(s), "%")
	if !isPercent {
		return false
	}
	num = strings.TrimSpace(num)
	f, err := strconv.ParseFloat(num, 64)
	return err == nil && !math.IsNaN(f) && !math.IsInf(f, 0) && !strings.ContainsAny(num, "eExXpP")
}
