// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package diagram

// equalDiagrams reports whether two diagrams have the same definitions,
// ignoring positions and comments (what the formatter may move).
func equalDiagrams(a, b *Diagram) bool {
	if len(a.Defs) != len(b.Defs) {
		return false
	}
	for i := range a.Defs {
		if a.Defs[i].Name != b.Defs[i].Name || !equalChains(a.Defs[i].Chain, b.Defs[i].Chain) {
			return false
		}
	}
	return true
}

func equalChains(a, b *Chain) bool {
	if (a == nil) != (b == nil) {
		return false
	}
	if a == nil {
		return true
	}
	if len(a.Elems) != len(b.Elems) {
		return false
	}
	for i := range a.Elems {
		if !equalComponents(a.Elems[i], b.Elems[i]) {
			return false
		}
	}
	return true
}

func equalComponents(a, b Component) bool {
	switch a := a.(type) {
	case *Outcome:
		b, ok := b.(*Outcome)
		return ok && a.Name == b.Name
	case *ProbeRef:
		b, ok := b.(*ProbeRef)
		return ok && a.Name == b.Name
	case *Operator:
		b, ok := b.(*Operator)
		if !ok || a.Kind != b.Kind || a.Name != b.Name ||
			len(a.Probs) != len(b.Probs) || (a.Probs == nil) != (b.Probs == nil) || len(a.Branches) != len(b.Branches) {
			return false
		}
		for i := range a.Probs {
			if a.Probs[i].Value != b.Probs[i].Value {
				return false
			}
		}
		for i := range a.Branches {
			if !equalChains(a.Branches[i], b.Branches[i]) {
				return false
			}
		}
		return true
	}
	return false
}
