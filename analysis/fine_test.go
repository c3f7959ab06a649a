// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package analysis

import (
	"testing"
	"time"

	"github.com/deltaq-otel/deltaq/deltaq"
)

// fineBucket returns the edges, in seconds, of the analysis-resolution
// bucket [lo, hi) that holds a delay of d (deltaq.FineLayout).
func fineBucket(t *testing.T, d time.Duration) (lo, hi float64) {
	t.Helper()
	edges, err := deltaq.FineLayout().Edges()
	if err != nil {
		t.Fatal(err)
	}
	j := deltaq.LogLinearBucket(edges, int64(d))
	return float64(edges[j]) / 1e9, float64(edges[j+1]) / 1e9
}
