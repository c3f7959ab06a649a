// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package core

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deltaq-otel/deltaq/analysis"
	"github.com/deltaq-otel/deltaq/internal/contract"
)

// counts returns the counts of probe a in each window, by window start
// relative to t0.
func counts(windows []*analysis.Result) map[time.Duration]analysis.Counts {
	out := map[time.Duration]analysis.Counts{}
	for _, w := range windows {
		for _, p := range w.Probes {
			if p.Name == "a" && p.Counts.Total() > 0 {
				out[w.Start.Sub(t0)] = p.Counts
			}
		}
	}
	return out
}

// TestOfflineWindows: instances go into the windows of the interval by end
// time, aligned on multiples of the interval (t0 is one), as the
// collector's engine counts them; a timeout ends at start + dMax. A window
// closes once an instance ending lag after it has been read; the rest
// close at Result. The whole input keeps every instance.
func TestOfflineWindows(t *testing.T) {
	s := func(end time.Duration, oc string) span {
		return span{probe: "a", outcome: oc, end: end, delay: 2 * time.Millisecond, dmax: 10 * time.Millisecond, bins: 10}
	}
	var closedBefore []int
	cfg := testConfig()
	cfg.Interval = time.Second
	a, err := NewOfflineAnalysis(cfg, nil, nil)
	require.NoError(t, err)
	var windows []*analysis.Result
	a.OnWindow(func(r *analysis.Result) { windows = append(windows, r) })
	batches := [][]span{
		{s(100*time.Millisecond, contract.Success), s(999*time.Millisecond, contract.Success)},
		// Ends at 1.0005 s, though it started in [0, 1 s): window 1.
		{s(1000*time.Millisecond+500*time.Microsecond, contract.Failure), s(2050*time.Millisecond, contract.Success)},
		// A timeout whose span lasted 2.5 s, read at its end (4.5 s): its
		// own window, by start + dMax = 2.01 s, closed at 4 s, so it counts
		// in the oldest open window, 3 s, as in the collector (a late
		// timeout).
		{{probe: "a", outcome: contract.Timeout, end: 4500 * time.Millisecond, delay: 2500 * time.Millisecond, dmax: 10 * time.Millisecond, bins: 10}},
		{s(2100*time.Millisecond, contract.Success)},
	}
	for _, b := range batches {
		require.NoError(t, a.ConsumeTraces(context.Background(), instanceTraces(b...)))
		closedBefore = append(closedBefore, len(windows))
	}
	whole, st := a.Result()
	// The engine starts at the first end, 0.1 s, with window −1 open (within
	// the lag): it closes, empty, at 1 s, and window 0 at 2 s (its end + 1 s
	// of lag), when the success ending at 2.05 s is read. Windows 1 and 2
	// close at 3 and 4 s, when the timeout's span, ending at 4.5 s, is read.
	assert.Equal(t, []int{0, 2, 4, 4}, closedBefore, "windows closed after each batch")
	assert.Equal(t, map[time.Duration]analysis.Counts{
		0:               {Success: 2},
		time.Second:     {Failure: 1},
		2 * time.Second: {Success: 1},
		3 * time.Second: {Timeout: 1},
	}, counts(windows))
	assert.Equal(t, int64(1), a.WindowStats().LateTimeouts)
	// The last span, ending at 2.1 s, came after window 2 closed (at 4 s):
	// too late for the windows, counted in the whole input.
	assert.Equal(t, int64(1), a.WindowStats().Dropped[analysis.DropTooLate])
	assert.Equal(t, int64(6), st.Counted)
	assert.Zero(t, st.Dropped.Total())
	assert.Equal(t, analysis.Counts{Success: 4, Failure: 1, Timeout: 1}, whole.Probes[0].Counts)
	for _, w := range windows {
		assert.Equal(t, time.Second, w.End.Sub(w.Start), "windows last one interval")
	}
}

// TestOfflineInstancesAhead: an instance ending an hour after those read
// before and after it (its host's clock is wrong) is beyond the windows
// open, as it was beyond the recording collector's, which dropped it (too
// early): it neither closes the windows nor counts in them, and the
// instances after it count in theirs. An hour's gap in the traffic is no
// such instance: the windows after it count the instances that follow,
// however few, up to the end of the input.
func TestOfflineInstancesAhead(t *testing.T) {
	s := func(end time.Duration) span {
		return span{probe: "a", outcome: contract.Success, end: end, delay: 2 * time.Millisecond, dmax: 10 * time.Millisecond, bins: 10}
	}
	cfg := testConfig()
	cfg.Interval = time.Second
	a, err := NewOfflineAnalysis(cfg, nil, nil)
	require.NoError(t, err)
	var windows []*analysis.Result
	a.OnWindow(func(r *analysis.Result) { windows = append(windows, r) })
	var in []span
	for i := range 40 {
		in = append(in, s(time.Duration(i)*100*time.Millisecond+time.Millisecond))
		if i == 5 {
			in = append(in, s(time.Hour))
		}
	}
	// The traffic resumes two hours later: three instances.
	in = append(in, s(2*time.Hour+time.Millisecond), s(2*time.Hour+500*time.Millisecond), s(2*time.Hour+1500*time.Millisecond))
	for _, sp := range in {
		require.NoError(t, a.ConsumeTraces(context.Background(), instanceTraces(sp)))
	}
	_, st := a.Result()
	assert.Equal(t, map[time.Duration]analysis.Counts{
		0: {Success: 10}, time.Second: {Success: 10}, 2 * time.Second: {Success: 10}, 3 * time.Second: {Success: 10},
		2 * time.Hour: {Success: 2}, 2*time.Hour + time.Second: {Success: 1},
	}, counts(windows))
	ws := a.WindowStats()
	assert.Equal(t, int64(1), ws.Dropped[analysis.DropTooEarly])
	assert.Equal(t, int64(1), ws.Dropped.Total())
	assert.Equal(t, int64(44), st.Counted, "the whole input counts every instance")
}

// TestOfflineInstancesAheadReachedAfterAGap: after a gap in the traffic,
// the first instance read of the traffic that resumes ends beyond the
// windows open (it reached the collector a little before an instance
// ending 100 ms earlier); the next, within them, moves the clock on, so
// that the windows reach it. It is not ahead of the time: it counts in its
// window, as the collector counted it, and not, once enough instances came
// after it, as too late (the traffic is sparse: 16 of them, 250 ms apart,
// took the clock past its window's close).
func TestOfflineInstancesAheadReachedAfterAGap(t *testing.T) {
	s := func(end time.Duration) span {
		return span{probe: "a", outcome: contract.Success, end: end, delay: 2 * time.Millisecond, dmax: 10 * time.Millisecond, bins: 10}
	}
	cfg := testConfig()
	cfg.Interval = time.Second // and the lag one interval: windows 2 to 5 are open at 3.9 s
	a, err := NewOfflineAnalysis(cfg, nil, nil)
	require.NoError(t, err)
	var windows []*analysis.Result
	a.OnWindow(func(r *analysis.Result) { windows = append(windows, r) })
	var in []span
	for i := range 40 {
		in = append(in, s(time.Duration(i)*100*time.Millisecond+time.Millisecond))
	}
	// Nothing ends from 3.901 s to 5.95 s; then an instance every 250 ms,
	// that of 6.05 s read first.
	in = append(in, s(6050*time.Millisecond))
	for i := range 20 {
		in = append(in, s(5950*time.Millisecond+time.Duration(i)*250*time.Millisecond))
	}
	for _, sp := range in {
		require.NoError(t, a.ConsumeTraces(context.Background(), instanceTraces(sp)))
	}
	_, st := a.Result()
	assert.Equal(t, map[time.Duration]analysis.Counts{
		0: {Success: 10}, time.Second: {Success: 10}, 2 * time.Second: {Success: 10}, 3 * time.Second: {Success: 10},
		5 * time.Second: {Success: 1}, 6 * time.Second: {Success: 5}, 7 * time.Second: {Success: 4},
		8 * time.Second: {Success: 4}, 9 * time.Second: {Success: 4}, 10 * time.Second: {Success: 3},
	}, counts(windows))
	assert.Zero(t, a.WindowStats().Dropped.Total())
	assert.Equal(t, int64(61), st.Counted)
}

// TestOfflineWindowsOff: without OnWindow, or with a zero interval, there
// are no windows; the whole input is analysed alike.
func TestOfflineWindowsOff(t *testing.T) {
	spans := []span{{probe: "a", outcome: contract.Success, end: time.Second, delay: time.Millisecond, dmax: 10 * time.Millisecond, bins: 10}}
	a, err := NewOfflineAnalysis(testConfig(), nil, nil)
	require.NoError(t, err)
	require.NoError(t, a.ConsumeTraces(context.Background(), instanceTraces(spans...)))
	res, st := a.Result()
	assert.Equal(t, int64(1), st.Counted)
	assert.Equal(t, analysis.Counts{Success: 1}, res.Probes[0].Counts)
	assert.Equal(t, analysis.Stats{}, a.WindowStats())

	cfg := testConfig()
	cfg.Interval = 0
	b, err := NewOfflineAnalysis(cfg, nil, nil)
	require.NoError(t, err)
	called := false
	b.OnWindow(func(*analysis.Result) { called = true })
	require.NoError(t, b.ConsumeTraces(context.Background(), instanceTraces(spans...)))
	_, st = b.Result()
	assert.False(t, called, "interval 0: no windows")
	assert.Equal(t, int64(1), st.Counted)
}
