// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaqexporter // import "github.com/deltaq-otel/deltaq/exporter/deltaqexporter"

import "github.com/deltaq-otel/deltaq/internal/observer"

// OfflineAnalysis is the exporter's analysis run offline over recorded
// traces whose spans the deltaq processor has mapped (see
// observer.OfflineAnalysis): the deltaq analyze command uses it.
type OfflineAnalysis = observer.OfflineAnalysis

// NewOfflineAnalysis makes the offline analysis of the analysis options of
// cfg. Probes that the deltaq processors of this process configure
// (created before it) lend it their layouts, as in a collector.
func NewOfflineAnalysis(cfg *Config) (*OfflineAnalysis, error) {
	return observer.NewOfflineAnalysis(&cfg.Config)
}
