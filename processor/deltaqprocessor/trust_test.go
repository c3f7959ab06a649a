// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaqprocessor

import (
	"context"
	"encoding/binary"
	"runtime"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor/processortest"

	"github.com/deltaq-otel/deltaq/deltaq"
	"github.com/deltaq-otel/deltaq/internal/collectorstate"
	"github.com/deltaq-otel/deltaq/internal/contract"
	"github.com/deltaq-otel/deltaq/internal/inflight"
	"github.com/deltaq-otel/deltaq/internal/telemetrytest"
	"github.com/deltaq-otel/deltaq/processor/deltaqprocessor/internal/metadata"
)

// TestForeignContractAttributesAreStripped: contract attributes a span
// arrives with are claims, not trace data. They are removed from every span,
// matched or not, and counted; a matched span is then mapped from its own
// timestamps and status by this processor's configuration, and a span that
// arrived as a synthetic timeout span is not mapped. Other deltaq.* keys are
// application data and stay.
func TestForeignContractAttributesAreStripped(t *testing.T) {
	const dMax = 50 * time.Millisecond
	h := newHarness(t, testConfig(probeConfig("checkout", dMax, 25)))

	in := tracesOf(
		// Took 1 s but claims a success of another probe, with a layout of
		// its own: a timeout of checkout.
		spanSpec{name: "checkout", id: 1, duration: time.Second, attrs: map[string]any{
			contract.AttrProbe: "other", contract.AttrOutcome: contract.Success,
			contract.AttrDMaxNs: int64(1), contract.AttrBins: int64(1),
			"app.k": "v", "deltaq.failed": "kept",
		}},
		// Claims to be late, which would have the exporter skip it.
		spanSpec{name: "checkout", id: 2, duration: time.Millisecond, attrs: map[string]any{
			contract.AttrLate: true, contract.AttrOutcome: contract.Timeout,
		}},
		// Matches no probe, but claims an instance of checkout.
		spanSpec{name: "browse", id: 3, duration: time.Millisecond, attrs: map[string]any{
			contract.AttrProbe: "checkout", contract.AttrOutcome: contract.Failure, "app.k": "v",
		}},
		// A synthetic timeout span of another processor: no real timing.
		spanSpec{name: "checkout", id: 4, duration: dMax, status: ptrace.StatusCodeError, attrs: map[string]any{
			contract.AttrProbe: "checkout", contract.AttrOutcome: contract.Timeout,
			contract.AttrDMaxNs: int64(dMax), contract.AttrBins: int64(25), contract.AttrSynthetic: true,
		}},
		// Clean.
		spanSpec{name: "checkout", id: 5, duration: time.Millisecond},
		// deltaq.synthetic that is not the boolean true is no synthetic span:
		// stripped and mapped.
		spanSpec{name: "checkout", id: 6, duration: time.Millisecond, attrs: map[string]any{
			contract.AttrSynthetic: "true",
		}},
	)
	h.consumeTraces(in)

	spans, _ := allSpans(h.tsink.AllTraces())
	require.Len(t, spans, 6, "every span passes through")
	want1 := outcomeAttrs("checkout", contract.Timeout, dMax, 25)
	want1["app.k"], want1["deltaq.failed"] = "v", "kept"
	assert.Equal(t, want1, attrsOf(spans[0]))
	assert.Equal(t, instanceAttrs("checkout", contract.Success), attrsOf(spans[1]))
	assert.Equal(t, map[string]any{"app.k": "v"}, attrsOf(spans[2]))
	assert.Empty(t, attrsOf(spans[3]))
	assert.Equal(t, instanceAttrs("checkout", contract.Success), attrsOf(spans[4]))
	assert.Equal(t, instanceAttrs("checkout", contract.Success), attrsOf(spans[5]))

	assert.Equal(t, map[string]int64{"": 5}, telemetrytest.Points(t, h.tel, "otelcol_processor_deltaq_foreign_attributes"))
	assert.Equal(t, map[string]int64{"reason=foreign_synthetic": 1}, telemetrytest.Points(t, h.tel, "otelcol_processor_deltaq_malformed"))
	assert.Equal(t, map[string]int64{
		"outcome=timeout,probe=checkout": 1,
		"outcome=success,probe=checkout": 3,
	}, telemetrytest.Points(t, h.tel, "otelcol_processor_deltaq_instances"))
	assert.Empty(t, telemetrytest.Points(t, h.tel, "otelcol_processor_deltaq_late_spans"))
}

// TestMalformedOutcomeAttributeIsRederived: a matched span whose
// deltaq.outcome has the wrong type, or is empty, used to be skipped as
// "already mapped" and counted nowhere; it is now stripped, counted and
// mapped.
func TestMalformedOutcomeAttributeIsRederived(t *testing.T) {
	const dMax = 50 * time.Millisecond
	h := newHarness(t, testConfig(probeConfig("checkout", dMax, 25)))
	h.consumeTraces(tracesOf(
		spanSpec{name: "checkout", id: 1, duration: time.Millisecond, attrs: map[string]any{contract.AttrOutcome: int64(5)}},
		spanSpec{name: "checkout", id: 2, duration: time.Second, attrs: map[string]any{contract.AttrOutcome: ""}},
	))
	spans, _ := allSpans(h.tsink.AllTraces())
	require.Len(t, spans, 2)
	assert.Equal(t, outcomeAttrs("checkout", contract.Success, dMax, 25), attrsOf(spans[0]))
	assert.Equal(t, outcomeAttrs("checkout", contract.Timeout, dMax, 25), attrsOf(spans[1]))
	assert.Equal(t, map[string]int64{"": 2}, telemetrytest.Points(t, h.tel, "otelcol_processor_deltaq_foreign_attributes"))
	assert.Equal(t, map[string]int64{
		"outcome=success,probe=checkout": 1,
		"outcome=timeout,probe=checkout": 1,
	}, telemetrytest.Points(t, h.tel, "otelcol_processor_deltaq_instances"))
}

// TestChainedProcessorsRemapSpans: a second deltaq processor in the same
// collector (another ID, later in the pipeline) re-derives the spans the
// first mapped, by its own configuration, and drops the first one's
// synthetic timeout spans' claims without counting them as instances.
func TestChainedProcessorsRemapSpans(t *testing.T) {
	second := newHarness(t, testConfig(probeConfig("checkout", 2*time.Second, 10)))
	first := newHarnessWith(t, testConfig(probeConfig("checkout", 50*time.Millisecond, 25)), second.traces)
	first.consumeLogs(logsOf(startEvent{probe: "checkout", id: 1, at: base}))
	first.consumeTraces(tracesOf(spanSpec{name: "checkout", id: 2, duration: time.Second}))
	first.clock.tick(base.Add(time.Second)) // instance 1 times out in the first

	assert.Equal(t, map[string]int64{"outcome=timeout,probe=checkout": 2},
		telemetrytest.Points(t, first.tel, "otelcol_processor_deltaq_instances"))
	// The second: span 2 took 1 s, within its dMax of 2 s; the synthetic
	// span is stripped and not counted.
	assert.Equal(t, map[string]int64{"outcome=success,probe=checkout": 1},
		telemetrytest.Points(t, second.tel, "otelcol_processor_deltaq_instances"))
	assert.Equal(t, map[string]int64{"": 2}, telemetrytest.Points(t, second.tel, "otelcol_processor_deltaq_foreign_attributes"))
	assert.Equal(t, map[string]int64{"reason=foreign_synthetic": 1}, telemetrytest.Points(t, second.tel, "otelcol_processor_deltaq_malformed"))
	spans, _ := allSpans(second.tsink.AllTraces())
	require.Len(t, spans, 2)
	assert.Equal(t, outcomeAttrs("checkout", contract.Success, 2*time.Second, 10), attrsOf(spans[0]))
	assert.Empty(t, attrsOf(spans[1]))
}

// TestProbesAreRegistered: a processor registers its probes' layouts, from
// its configuration, for the exporters and connectors of the process, and
// unregisters them when it shuts down or when the collector refuses the
// configuration that created it.
func TestProbesAreRegistered(t *testing.T) {
	f := newFactory(newFakeClock(), collectorstate.New())
	pf := f.processorFactory()
	exponent := 2
	cfg := testConfig(
		probeConfig("registry-a", 40*time.Millisecond, 20),
		ProbeConfig{Name: "registry-b", Exponent: &exponent, Bins: 100}, // 1 ms · 2² · 100 = 400 ms
	)
	set := processortest.NewNopSettings(metadata.Type)
	set.ID = component.NewIDWithName(metadata.Type, "registry")

	tp, err := pf.CreateTraces(context.Background(), set, cfg, consumertest.NewNop())
	require.NoError(t, err)
	l, ok := f.state.Layouts.LookupLayout("registry-a")
	assert.True(t, ok)
	assert.Equal(t, deltaq.Layout{DMaxNs: int64(40 * time.Millisecond), Bins: 20}, l)
	l, ok = f.state.Layouts.LookupLayout("registry-b")
	assert.True(t, ok)
	assert.Equal(t, deltaq.Layout{DMaxNs: int64(400 * time.Millisecond), Bins: 100}, l)
	assert.Subset(t, f.state.Layouts.RegisteredProbes(), []string{"registry-a", "registry-b"})

	require.NoError(t, tp.Start(context.Background(), componenttest.NewNopHost()))
	require.NoError(t, tp.Shutdown(context.Background()))
	_, ok = f.state.Layouts.LookupLayout("registry-a")
	assert.False(t, ok, "unregistered at shutdown")
	assert.NotContains(t, f.state.Layouts.RegisteredProbes(), "registry-b")

	// A second traces pipeline for one ID: the collector refuses the
	// configuration, and the instance leaves the registry.
	_, err = pf.CreateTraces(context.Background(), set, cfg, consumertest.NewNop())
	require.NoError(t, err)
	_, ok = f.state.Layouts.LookupLayout("registry-a")
	require.True(t, ok)
	_, err = pf.CreateTraces(context.Background(), set, cfg, consumertest.NewNop())
	require.Error(t, err)
	_, ok = f.state.Layouts.LookupLayout("registry-a")
	assert.False(t, ok, "unregistered when creation fails")
}

// TestStoredString: the cut is at most contract.MaxNameLength (256) bytes, at
// a rune boundary, and the result never shares the input's memory.
func TestStoredString(t *testing.T) {
	ascii := strings.Repeat("a", 300)
	// "a" then "é" (2 bytes) repeatedly: bytes 255–256 hold one é, so 256
	// bytes would split it and the cut is at 255.
	twoByte := "a" + strings.Repeat("é", 200)
	// "ab" then "𝛥" (4 bytes): runes at 2, 6, …, 254; the one at 254 ends
	// at 257, so the cut is at 254.
	fourByte := "ab" + strings.Repeat("𝛥", 100)
	invalid := strings.Repeat("\x80", 300) // no rune start: cut at the bound
	tests := []struct {
		in   string
		want string
	}{
		{"", ""},
		{"checkout", "checkout"},
		{ascii[:256], ascii[:256]},
		{ascii, ascii[:256]},
		{twoByte, twoByte[:255]},
		{fourByte, fourByte[:254]},
		{invalid, invalid[:256]},
	}
	for i, tt := range tests {
		got := storedString(tt.in)
		assert.Equal(t, tt.want, got, "case %d", i)
		assert.Equal(t, utf8.ValidString(tt.in), utf8.ValidString(got), "case %d", i)
		if got != "" {
			assert.NotSame(t, unsafe.StringData(tt.in), unsafe.StringData(got), "case %d shares memory", i)
		}
	}
}

// TestStartEventStringsAreCutAndCopied: the span name and the service name
// of a start event are kept cut to contract.MaxNameLength and copied out of
// the batch; the synthetic timeout span carries the kept strings.
func TestStartEventStringsAreCutAndCopied(t *testing.T) {
	h := newHarness(t, testConfig(probeConfig("checkout", 50*time.Millisecond, 25)))
	long := strings.Repeat("n", 16<<10)
	short := "POST /checkout"
	ld := logsOf(
		startEvent{probe: "checkout", id: 1, at: base, spanName: long, service: long},
		startEvent{probe: "checkout", id: 2, at: base, spanName: short, service: "shop"},
	)
	h.consumeLogs(ld)
	h.clock.tick(base.Add(time.Second))
	spans, resources := allSpans(h.tsink.AllTraces())
	require.Len(t, spans, 2)
	for i, s := range spans {
		svc, _ := resources[i].Attributes().Get("service.name")
		switch s.SpanID() {
		case spanID(1):
			assert.Equal(t, long[:contract.MaxNameLength], s.Name())
			assert.Equal(t, long[:contract.MaxNameLength], svc.Str())
			assert.NotSame(t, unsafe.StringData(long), unsafe.StringData(s.Name()))
		case spanID(2):
			// pdata stores the string it is given: a different address
			// means the processor kept a copy, not the batch's string.
			assert.Equal(t, short, s.Name())
			assert.Equal(t, "shop", svc.Str())
			assert.NotSame(t, unsafe.StringData(short), unsafe.StringData(s.Name()))
		default:
			t.Fatalf("unexpected span %v", s.SpanID())
		}
	}
}

// TestInFlightMemoryPerEntry floods the processor with max_in_flight
// (100,000, the default) start events that never end, each in a resource of
// its own, with a 16 KiB span name and a 16 KiB service name, each in a
// buffer of its own as a receiver decodes them: the worst case for the
// memory an in-flight instance keeps. Measured after runtime.GC, the heap
// grows per entry by (sizes on 64-bit platforms)
//
//	slot in the table             112 B (inflight.Instance 88 B, due 8, state, heap, prev, next 16)
//	spare capacity of the slots  0–28 B (append grows a large slice by about 1.25×)
//	index map[Key]int32         33–66 B (29 B per slot with its control byte, at a load of 7/8 to 7/16)
//	heap []int32, with spare      4–5 B
//	span name, service name       512 B (2 × contract.MaxNameLength, an exact size class)
//	                          ≈ 660–720 B per entry, 63–69 MiB for 100,000
//
// (measured: 64 MiB, 670 B per entry), and the test allows 80 MiB. Without
// the cut each entry kept both 16 KiB strings: 32.9 KB per entry, about
// 3.1 GiB for 100,000.
func TestInFlightMemoryPerEntry(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates about 3 GiB in passing")
	}
	const (
		entries = inflight.DefaultMaxInFlight
		nameLen = 16 << 10
		batch   = 1000
		bound   = 80 << 20
	)
	h := newHarness(t, testConfig(probeConfig("job", time.Hour, 100)))
	require.Equal(t, entries, h.p.tracker.Capacity())
	buf := make([]byte, nameLen)
	for i := range buf {
		buf[i] = 'x'
	}
	// unique returns a string in a new buffer of its own, different for
	// each n and tag.
	unique := func(n uint32, tag byte) string {
		binary.BigEndian.PutUint32(buf, n)
		buf[4] = tag
		return string(buf)
	}

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for b := 0; b < entries; b += batch {
		ld := plog.NewLogs()
		for i := b; i < b+batch; i++ {
			rl := ld.ResourceLogs().AppendEmpty()
			rl.Resource().Attributes().PutStr("service.name", unique(uint32(i), 's'))
			lr := rl.ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
			tid, sid := wideIDs(uint32(i))
			lr.SetEventName(contract.StartEventName)
			lr.SetTraceID(tid)
			lr.SetSpanID(sid)
			lr.SetTimestamp(pcommon.NewTimestampFromTime(base))
			lr.Attributes().PutStr(contract.AttrProbe, "job")
			lr.Attributes().PutStr(contract.AttrSpanName, unique(uint32(i), 'n'))
		}
		h.consumeLogs(ld)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	require.Equal(t, entries, h.p.tracker.Len())
	assert.Empty(t, telemetrytest.Points(t, h.tel, "otelcol_processor_deltaq_evictions"))
	growth := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("heap grew by %.1f MiB for %d in-flight instances: %d B per instance",
		float64(growth)/(1<<20), entries, growth/entries)
	assert.Less(t, growth, int64(bound), "heap grew by %d bytes", growth)
	runtime.KeepAlive(h)
}

// TestLongProbeNameIsRefused: a start event naming a probe longer than
// contract.MaxNameLength, which no configuration holds, is refused as an
// unknown probe before the lookup (which would hash the whole name): even a
// name the matcher had is refused.
func TestLongProbeNameIsRefused(t *testing.T) {
	h := newHarness(t, testConfig(probeConfig("checkout", 50*time.Millisecond, 25)))
	long := strings.Repeat("p", contract.MaxNameLength+1)
	h.p.m.byName[long] = 0 // the lookup would find it
	h.consumeLogs(logsOf(
		startEvent{probe: long, id: 1, at: base},
		startEvent{probe: strings.Repeat("q", 1<<20), id: 2, at: base},
		startEvent{probe: "checkout", id: 3, at: base},
	))
	assert.Equal(t, map[string]int64{"reason=unknown_probe": 2}, telemetrytest.Points(t, h.tel, "otelcol_processor_deltaq_malformed"))
	assert.Equal(t, 1, h.p.tracker.Len())
}
