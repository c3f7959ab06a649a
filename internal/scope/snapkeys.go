// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package scope

import (
	"iter"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/deltaq-otel/deltaq/internal/contract"
)

// snapKey identifies a snapshot among those of every collector that feeds
// the scope: a connector numbers its snapshots from 1 (deltaq.snapshot.id),
// so the number alone made two collectors' snapshots one, and a restarted
// collector's new ones older than those it had sent before, refused. The
// key adds the collector (its resource's service.instance.id, else its
// service.name) and when its analysis began (deltaq.agent.start, 0 from a
// connector that does not send it).
type snapKey struct {
	source string
	start  int64
	id     int64
}

// snapKeyOf returns the key of a trigger or snapshot record of a resource
// of the given source; false when the record has no snapshot id (> 0).
func snapKeyOf(source string, a pcommon.Map) (snapKey, bool) {
	idv, ok := a.Get(contract.AttrSnapshotID)
	if !ok || idv.Type() != pcommon.ValueTypeInt || idv.Int() <= 0 {
		return snapKey{}, false
	}
	k := snapKey{source: source, id: idv.Int()}
	if v, ok := a.Get(contract.AttrAgentStart); ok && v.Type() == pcommon.ValueTypeInt {
		k.start = v.Int()
	}
	return k, true
}

// logsBySource yields the records of a request with the source of their
// resource (contract.Source), cut to nameBytes.
func logsBySource(ld plog.Logs, nameBytes int) iter.Seq2[string, plog.LogRecord] {
	return func(yield func(string, plog.LogRecord) bool) {
		for _, rl := range ld.ResourceLogs().All() {
			source, _ := cutString(contract.Source(rl.Resource()), nameBytes)
			for _, sl := range rl.ScopeLogs().All() {
				for _, lr := range sl.LogRecords().All() {
					if !yield(source, lr) {
						return
					}
				}
			}
		}
	}
}

// snapKeys gives each snapshot key a number of the scope's own, in the
// order the keys are first seen (from a trigger that names the snapshot,
// or from its first record): the page asks for a snapshot by that number.
// It holds the newest max keys; an older key seen again gets a new number.
type snapKeys struct {
	max   int
	next  int64
	byKey map[snapKey]int64
	order []snapKey // oldest first
}

func newSnapKeys(max int) *snapKeys {
	return &snapKeys{max: max, byKey: map[snapKey]int64{}}
}

// number returns k's number, giving it the next one if it has none, and
// the number forgotten to make room (0 for none).
func (s *snapKeys) number(k snapKey) (n, forgotten int64) {
	if n, ok := s.byKey[k]; ok {
		return n, 0
	}
	if len(s.order) >= s.max {
		old := s.order[0]
		forgotten = s.byKey[old]
		delete(s.byKey, old)
		s.order = s.order[1:]
	}
	s.next++
	s.byKey[k] = s.next
	s.order = append(s.order, k)
	return s.next, forgotten
}
