// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package core

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/deltaq-otel/deltaq/analysis"
	"github.com/deltaq-otel/deltaq/internal/contract"
)

// TestTriggerRecordDelay: deltaq.delay is the QTA point's delay of a qta
// trigger and the projected time to violation of a slack_trend trigger, in
// seconds, and absent from the other kinds, as the connector's README
// ("Log records") documents. A slack_trend record once had none: its time
// to violation was in the body's sentence only.
func TestTriggerRecordDelay(t *testing.T) {
	for _, tt := range []struct {
		kind  analysis.TriggerKind
		delay time.Duration
		want  any // nil: no deltaq.delay
	}{
		{analysis.TriggerQTA, 250 * time.Millisecond, 0.25},
		{analysis.TriggerSlackTrend, 90 * time.Second, 90.0},
		{analysis.TriggerSlackTrend, 0, 0.0}, // below zero already
		{analysis.TriggerFailure, 0, nil},
		{analysis.TriggerLoad, 0, nil},
		{analysis.TriggerDivergence, 0, nil},
	} {
		t.Run(tt.kind.String(), func(t *testing.T) {
			lr := plog.NewLogRecord()
			ev := analysis.TriggerEvent{Probe: "p", Kind: tt.kind, Time: at(time.Second), Observed: -0.1, Required: 0, Delay: tt.delay}
			triggerRecord(lr, &ev, pcommon.NewTimestampFromTime(at(2*time.Second)), 0)
			assert.Equal(t, contract.EventTrigger, lr.EventName())
			assert.Equal(t, plog.SeverityNumberWarn, lr.SeverityNumber())
			assert.Equal(t, pcommon.NewTimestampFromTime(at(time.Second)), lr.Timestamp(), "the end of the window that fired it")
			assert.Equal(t, tt.kind.String(), lr.Attributes().AsRaw()[contract.AttrTrigger])
			v, ok := lr.Attributes().Get(contract.AttrDelay)
			if tt.want == nil {
				assert.False(t, ok, "no deltaq.delay on a %s trigger", tt.kind)
				return
			}
			if assert.True(t, ok, "deltaq.delay on a %s trigger", tt.kind) {
				assert.Equal(t, tt.want, v.Double())
			}
		})
	}
}
