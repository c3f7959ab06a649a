// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

// Package spanmatch selects the spans of a probe and tells its failures from
// its successes: the `match:` and `failure:` options that the deltaq
// processor's probes and the deltaq connector's probes share, with one
// implementation. Compile and CompileFailure check the options and compile
// them once, each error naming its field; a Matcher finds the probes a span
// belongs to, allocating nothing for a span that no probe names; a Failure
// says whether a span that ended within dMax failed.
//
// The outcome of a matched span follows the thesis (section 3.3): a span
// longer than its probe's dMax is a timeout whatever its status, since an
// observer waiting at most dMax never sees the later end; otherwise it is
// a failure when the probe's failure rule holds, and a success when not.
// The dMax comparison belongs to the component, which knows the probe's
// layout; this package judges the rest.
package spanmatch // import "github.com/deltaq-otel/deltaq/internal/spanmatch"
