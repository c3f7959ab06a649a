// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package contract

import "go.opentelemetry.io/collector/pdata/pcommon"

// Source names the collector whose output a resource carries: its
// service.instance.id, else its service.name, else "". A gateway tells
// its agents' windows apart by it, and deltaq scope the snapshots of
// several collectors.
func Source(r pcommon.Resource) string {
	for _, k := range [...]string{"service.instance.id", "service.name"} {
		if v, ok := r.Attributes().Get(k); ok && v.Type() == pcommon.ValueTypeStr && v.Str() != "" {
			return v.Str()
		}
	}
	return ""
}
