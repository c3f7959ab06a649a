// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

// Package telemetrytest reads a component's self-telemetry, as recorded by
// componenttest.Telemetry, for the components' tests: the data points of one
// int64 metric, keyed by their attributes.
package telemetrytest

import (
	"sort"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// Points returns the data points of the int64 sum or gauge name, each under
// its attributes written key=value, sorted and joined by commas ("" for a
// point without attributes). A metric never recorded has no points: an
// empty map. A metric of another kind fails the test.
func Points(t testing.TB, tel *componenttest.Telemetry, name string) map[string]int64 {
	t.Helper()
	return points(t, tel, name, true)
}

// Sum is Points for a metric that must be an int64 sum (a counter or an
// up-down counter): a gauge fails the test.
func Sum(t testing.TB, tel *componenttest.Telemetry, name string) map[string]int64 {
	t.Helper()
	return points(t, tel, name, false)
}

func points(t testing.TB, tel *componenttest.Telemetry, name string, gauge bool) map[string]int64 {
	t.Helper()
	m, err := tel.GetMetric(name)
	if err != nil {
		return map[string]int64{}
	}
	var dps []metricdata.DataPoint[int64]
	switch d := m.Data.(type) {
	case metricdata.Sum[int64]:
		dps = d.DataPoints
	case metricdata.Gauge[int64]:
		if !gauge {
			t.Fatalf("metric %s is a gauge, want an int64 sum", name)
		}
		dps = d.DataPoints
	default:
		t.Fatalf("metric %s has data %T", name, m.Data)
	}
	out := make(map[string]int64, len(dps))
	for _, dp := range dps {
		var kv []string
		for _, a := range dp.Attributes.ToSlice() {
			kv = append(kv, string(a.Key)+"="+a.Value.String())
		}
		sort.Strings(kv)
		out[strings.Join(kv, ",")] = dp.Value
	}
	return out
}
