// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

// Package model learns ΔQ models of a traced system from its spans, and
// predicts what interventions on its parts would do to the whole.
//
// A Learner takes spans (Span: plain values, no collector types) record by
// record (AddRecord), assembles them into traces, and learns each closed
// trace into a calling-context tree, whose node is an operation reached by
// one path of calls from a root operation. Per node it keeps the ΔQ of the
// exclusive time (the time within the span during which none of its
// children was in flight: Siphon's accounting of time; ExclusiveIntervals)
// in a bounded Sketch, its execution patterns (its children in sequential
// steps, those that overlap by half the shorter in parallel) and how often
// its parent calls it.
// Config bounds what it holds. What is wrong with traces is counted by
// kind (Incoherence); a trace with orphan spans, no root or a cycle is left
// out, and Finish infers the missing parents of the orphans
// (Learner.Inference).
//
// Build makes the Model of what was learned. Model.Diagram writes it as an
// outcome diagram (package diagram) whose inputs are the exclusive-time
// ΔQs (Model.Inputs). Model.Validate compares each root operation's
// predicted end-to-end ΔQ with the observed one; Model.Predict evaluates
// the diagram without and with interventions (package whatif) and reports
// the extra attempts the resilience patterns cost (Load). Doubts says, in
// words and with the likely cause, when a model should not be trusted.
//
// docs/design.md, "Models learned from traces", gives the learning, the
// inference of missing parents, the diagram, the what-if and the doubts in
// full. Works cited by short name ("Siphon", "lost events") are listed in
// docs/references.md.
package model
