// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

// Package model learns ΔQ models of a traced system from its spans, and
// predicts what interventions on its parts would do to the whole.
//
// # Learning
//
// A Learner takes spans (plain Span values: the package has no collector
// types) record by record (AddRecord: a request or document of a trace
// file, in any order within it), assembles them into traces by trace id,
// and closes a trace once a grace period of trace time (the latest span end
// of the records read) has passed since the record of its last span; open
// traces are capped, the oldest closed early and counted, and traces deeper
// than MaxDepth are left out. For every span of a closed trace it computes
// (Siphon, section "accounting of time"):
//
//   - the exclusive time: the time within the span during which none of its
//     children was in flight, |I_A \ ∪ I_C|, with every interval clipped to
//     its parent's. When no two siblings overlap, the exclusive intervals of
//     a trace partition the root's interval (ExclusiveIntervals);
//   - the execution pattern: its children grouped into sequential steps,
//     children whose intervals overlap running in parallel in one step.
//
// Spans are grouped into nodes of a calling-context tree: a node is a
// service and operation reached by one path of calls from a root operation,
// so the tree has no cycles and the same operation called from two places
// keeps two distributions. Each node keeps the ΔQ of its exclusive time (a
// log/linear sketch, see Sketch: bounded memory whatever the corpus), how
// often its parent calls it, and the frequencies of its patterns.
//
// # Incoherent traces
//
// Spans whose parent never arrived, children outside their parent's
// interval, traces with no root and the like are counted by kind
// (Incoherence). A trace with orphan spans is left out of the model; at the
// end, the most likely missing chain of parents of each orphan is inferred
// from the transition statistics of the coherent traces, as the shortest
// path with weights −log(transition frequency) ("lost events": Dijkstra over
// the learned transitions), and reported with its posterior probability
// given the orphans (Inferred.Probability). With
// Config.Infer, the traces so repaired also enter the model.
//
// # The model
//
// Build turns what was learned into a Model: per node, its exclusive-time
// ΔQ (failures that originate in the span, not in a child, as intangible
// mass) and its patterns, on bins that the bulk of the root operations'
// durations sets (extreme outliers, Sketch.Extremes, are timeouts and
// Model.Outliers, a doubt); Model.Diagram writes it as an outcome diagram
// (package diagram): a node with children is a definition
//
//	node = node_self -> step₁ -> step₂ …;
//
// a step of parallel calls is an all-to-finish a:, alternative patterns and
// optional calls a probabilistic choice p: over the chains of each pattern.
// Evaluating the diagram with the exclusive-time ΔQs as the outcomes'
// inputs predicts the end-to-end ΔQ of each root operation, under the
// independence hypothesis of ΔQSD; Model.Validate compares it with the
// observed one.
//
// # What-if
//
// An intervention (package whatif) changes a node's exclusive time — an
// affine map a·X + b (Siphon's interventions; a = 0 pins it), a substituted
// distribution, injected failures — or wraps the call, the node's whole
// span, in removal, timeout(D), retry(N, D) or hedge(D). Model.Predict
// evaluates the diagram with and without them and reports the extra
// attempts (Load) the resilience patterns cost.
//
// # Doubts
//
// Doubts says, in words and with the likely cause, when a model should not
// be trusted: many incoherent traces (grace too short when traces got spans
// after they closed, Stats.Reopened; spans missing otherwise), traces
// closed early, spans outside their parents (clocks skewed), a prediction
// far from observation (dependence).
//
// Works cited by short name ("Siphon", "lost events", "the thesis") are
// listed in the repository's docs/references.md.
package model
