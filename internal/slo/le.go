// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package slo

import (
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// LeForms returns the values the le label of the bucket of upper bound
// bound takes in Prometheus, by the way its series arrive, each once, in
// this order:
//
//   - remote write (the collector's prometheusremotewrite exporter, and
//     Prometheus's own OTLP receiver) writes strconv.FormatFloat(bound,
//     'f', -1, 64): "1", "0.00005", "0.0000001";
//   - Prometheus 2 scraping the collector's prometheus exporter keeps the
//     text exposition's le, strconv 'g', -1: "1", "5e-05", "1e-07";
//   - Prometheus 3 normalizes the le of every classic histogram it scrapes
//     (and Prometheus 2 reads OpenMetrics and protobuf expositions so) to
//     the OpenMetrics float: 'g', -1 with ".0" appended when it has neither
//     '.' nor 'e': "1.0", "5e-05" (Prometheus 3's migration guide, "le and
//     quantile label values").
//
// A selector of the one form misses the others: le="1" matches nothing
// Prometheus 3 scraped, le="0.00005" nothing either version scraped.
func LeForms(bound float64) []string {
	forms := []string{strconv.FormatFloat(bound, 'f', -1, 64), strconv.FormatFloat(bound, 'g', -1, 64)}
	om := forms[1]
	if !math.IsInf(bound, 0) && !math.IsNaN(bound) && !strings.ContainsAny(om, ".e") {
		om += ".0"
	}
	forms = append(forms, om)
	var distinct []string
	for _, f := range forms {
		if !slices.Contains(distinct, f) {
			distinct = append(distinct, f)
		}
	}
	return distinct
}

// leMatcher is the PromQL matcher of the le label of the bucket whose
// remote-write label is le (Objective.Le): le="0.04" where every form of
// the bound is the same, else a regular expression of its forms, each
// escaped (le=~"1|1\\.0"), which Prometheus anchors at both ends.
func leMatcher(le string) string {
	bound, err := strconv.ParseFloat(le, 64)
	if err != nil { // not a number: the label as it is
		return "le=" + quote(le)
	}
	forms := LeForms(bound)
	if len(forms) == 1 {
		return "le=" + quote(forms[0])
	}
	for i, f := range forms {
		forms[i] = regexp.QuoteMeta(f)
	}
	return "le=~" + quote(strings.Join(forms, "|"))
}
