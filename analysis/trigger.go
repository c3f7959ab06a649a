// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package analysis

// condition is the value of a trigger's condition in one window.
type condition int8

const (
	// unknown: the window cannot decide the condition (no observed ΔQ; for
	// divergence no calculated ΔQ, or a divergence withheld because a probe
	// is under-resolved; for slack_trend too few windows with a slack). It
	// neither fires a trigger nor counts towards re-arming it.
	unknown condition = iota
	condFalse
	condTrue
)

// trigger is the firing state of one trigger of one probe.
//
// A trigger starts armed. When its condition is true in a window and it is
// armed, it fires once and disarms. It re-arms after its condition has been
// false in rearm consecutive windows; a true window resets that count, and a
// window that cannot decide the condition (unknown) leaves it as it is. So
// while a condition holds the trigger fires once, not in every window.
type trigger struct {
	disarmed bool
	falseRun int
}

// step advances the state by one window and reports whether the trigger
// fires.
func (t *trigger) step(c condition, rearm int) bool {
	switch c {
	case condTrue:
		t.falseRun = 0
		if !t.disarmed {
			t.disarmed = true
			return true
		}
	case condFalse:
		if t.disarmed {
			t.falseRun++
			if t.falseRun >= rearm {
				t.disarmed = false
				t.falseRun = 0
			}
		}
	}
	return false
}

// WorstInstance returns the instance a trigger's record links to by its own
// trace context: for a failure trigger the window's first failure, else its
// first timeout (both make the failure ratio); for every other trigger the
// window's worst instance (WorstInstances.Worst). It reports false when the
// window named none.
func (t *TriggerEvent) WorstInstance() (Exemplar, bool) {
	if t.Kind == TriggerFailure {
		return firstOf(t.Worst.Failures, t.Worst.Timeouts, t.Worst.Slowest)
	}
	return t.Worst.Worst()
}
