// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package slo

// The SLI over an exponential histogram (histogram_fraction), evaluated
// by a real Prometheus: promtool's series notation in the Prometheus of
// Debian 12 (2.42) has no native histograms, so the samples go in by remote
// write, encoded here (the remote-write protocol's protobuf, prompb, with
// snappy's block format), and the rules' expressions are queried.

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/deltaq-otel/deltaq/internal/e2etest"
)

// rwSeries is one series to remote-write: float samples, or native
// histograms of one positive bucket.
type rwSeries struct {
	labels map[string]string
	floats []rwFloat
	hists  []rwHist
}

type rwFloat struct {
	t int64 // ms
	v float64
}

// rwHist is a cumulative native histogram of schema 0 whose observations
// are all in the bucket (2^(index−1), 2^index].
type rwHist struct {
	t     int64
	count uint64
	sum   float64
	index int32
}

// protobuf wire encoding, as much of it as prompb.WriteRequest needs.
func pbTag(b []byte, field, wire int) []byte { return binary.AppendUvarint(b, uint64(field<<3|wire)) }
func pbVarint(b []byte, field int, v uint64) []byte {
	return binary.AppendUvarint(pbTag(b, field, 0), v)
}
func pbSint(b []byte, field int, v int64) []byte { return pbVarint(b, field, uint64(v<<1^v>>63)) }
func pbDouble(b []byte, field int, v float64) []byte {
	return binary.LittleEndian.AppendUint64(pbTag(b, field, 1), math.Float64bits(v))
}
func pbBytes(b []byte, field int, v []byte) []byte {
	return append(binary.AppendUvarint(pbTag(b, field, 2), uint64(len(v))), v...)
}

// writeRequest encodes a prompb.WriteRequest: timeseries = 1; a
// TimeSeries's labels = 1 (name = 1, value = 2), samples = 2 (value = 1,
// timestamp = 2), histograms = 4 (count_int = 1, sum = 3, schema = 4,
// zero_threshold = 5, zero_count_int = 6, positive_spans = 11 (offset = 1,
// length = 2), positive_deltas = 12, timestamp = 15).
func writeRequest(series []rwSeries) []byte {
	var req []byte
	for _, s := range series {
		var ts []byte
		names := make([]string, 0, len(s.labels))
		for n := range s.labels {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			ts = pbBytes(ts, 1, pbBytes(pbBytes(nil, 1, []byte(n)), 2, []byte(s.labels[n])))
		}
		for _, f := range s.floats {
			ts = pbBytes(ts, 2, pbVarint(pbDouble(nil, 1, f.v), 2, uint64(f.t)))
		}
		for _, h := range s.hists {
			hb := pbVarint(nil, 1, h.count)
			hb = pbDouble(hb, 3, h.sum)
			hb = pbSint(hb, 4, 0)
			hb = pbDouble(hb, 5, 0)
			hb = pbVarint(hb, 6, 0)
			if h.count > 0 {
				hb = pbBytes(hb, 11, pbVarint(pbSint(nil, 1, int64(h.index)), 2, 1))
				hb = pbBytes(hb, 12, binary.AppendUvarint(nil, uint64(int64(h.count)<<1)))
			}
			hb = pbVarint(hb, 15, uint64(h.t))
			ts = pbBytes(ts, 4, hb)
		}
		req = pbBytes(req, 1, ts)
	}
	return req
}

// snappyBlock writes b in snappy's block format as literals alone: the
// length, then each chunk of up to 1 MiB as a literal with a 4-byte length.
func snappyBlock(b []byte) []byte {
	out := binary.AppendUvarint(nil, uint64(len(b)))
	for len(b) > 0 {
		n := min(len(b), 1<<20)
		out = append(out, 63<<2)
		out = binary.LittleEndian.AppendUint32(out, uint32(n-1))
		out = append(out, b[:n]...)
		b = b[n:]
	}
	return out
}

// nativePrometheus starts Prometheus with the remote-write receiver and
// native histograms, or skips the test where it is not installed.
func nativePrometheus(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Skip("prometheus not installed")
	}
	dir := t.TempDir()
	config := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(config, []byte("global:\n  evaluation_interval: 1m\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := e2etest.FreeAddr(t)
	p := e2etest.Start(t, "prometheus", exec.Command(bin, "--config.file="+config,
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+addr,
		"--web.enable-remote-write-receiver", "--enable-feature=native-histograms"))
	base := "http://" + addr
	e2etest.Until(t, "Prometheus ready on "+addr, 30*time.Second, func() bool {
		resp, err := http.Get(base + "/-/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, p)
	return base
}

// promWrite remote-writes series.
func promWrite(t *testing.T, base string, series []rwSeries) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+"/api/v1/write", bytes.NewReader(snappyBlock(writeRequest(series))))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Encoding", "snappy")
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("X-Prometheus-Remote-Write-Version", "0.1.0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		t.Fatalf("remote write: %s: %s", resp.Status, b.String())
	}
}

// promQuery evaluates q at ts (ms) and returns the values of its result.
func promQuery(t *testing.T, base, q string, ts int64) []float64 {
	t.Helper()
	resp, err := http.Get(base + "/api/v1/query?" + url.Values{"query": {q}, "time": {strconv.FormatFloat(float64(ts)/1e3, 'f', 3, 64)}}.Encode())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []struct {
				Value []any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatal(err)
	}
	if r.Status != "success" {
		t.Fatalf("query %s: %s", q, r.Error)
	}
	var out []float64
	for _, s := range r.Data.Result {
		v, err := strconv.ParseFloat(fmt.Sprint(s.Value[1]), 64)
		if err != nil {
			t.Fatalf("query %s: value %v: %v", q, s.Value, err)
		}
		out = append(out, v)
	}
	return out
}

// TestExponentialSLIWithoutSuccesses: over an exponential histogram, a
// window in which instances came but none succeeded — every one timed out
// — has an error ratio of 1 for a latency objective, not NaN, which no
// alert compares above a threshold and which, recorded, makes the
// period's error ratio (an average over every sample of the period) NaN
// for the whole period. A window without instances has no error (0
// errors a second), as with explicit buckets.
//
// The series: probe p, one sample every 15 s for 10 minutes; for the first
// 5 minutes 10 successes a step, all in the bucket (2⁻⁶, 2⁻⁵] s, within
// 40 ms; then 10 timeouts a step and no success. Hand-computed: over the
// last 2 minutes the error ratio of within-40ms is 10/10 = 1 and its
// errors 10 / 15 s = 2/3 a second; over the 2 minutes up to minute 5 it
// is 0. A probe q with no instance at all: 0 errors a second.
func TestExponentialSLIWithoutSuccesses(t *testing.T) {
	plan, err := New([]Probe{
		{Name: "p", Exponential: true, QTA: qta(0.05, pt(40*time.Millisecond, 0.9))},
		{Name: "q", Exponential: true, QTA: qta(0.05, pt(40*time.Millisecond, 0.9))},
	}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	objective := func(probe string) *Objective {
		for i := range plan.Objectives {
			if o := &plan.Objectives[i]; o.Probe == probe && o.Kind == Latency {
				return o
			}
		}
		t.Fatalf("no latency objective of %s", probe)
		return nil
	}
	base := nativePrometheus(t)
	const step = 15_000
	t0 := (time.Now().Add(-10*time.Minute).UnixMilli() / step) * step
	lab := func(probe, name string, extra ...string) map[string]string {
		m := map[string]string{"__name__": name, "job": "j", "instance": "c1", "deltaq_probe": probe}
		for i := 0; i+1 < len(extra); i += 2 {
			m[extra[i]] = extra[i+1]
		}
		return m
	}
	hist := rwSeries{labels: lab("p", metricNative)}
	success := rwSeries{labels: lab("p", metricOutcomes, "deltaq_outcome", "success")}
	timeout := rwSeries{labels: lab("p", metricOutcomes, "deltaq_outcome", "timeout")}
	idleHist := rwSeries{labels: lab("q", metricNative)}
	idle := rwSeries{labels: lab("q", metricOutcomes, "deltaq_outcome", "success")}
	var n, timeouts uint64
	for i := range 41 {
		ts := t0 + int64(i)*step
		if i > 0 && i <= 20 {
			n += 10
		} else if i > 20 {
			timeouts += 10
		}
		hist.hists = append(hist.hists, rwHist{t: ts, count: n, sum: 0.02 * float64(n), index: -5})
		success.floats = append(success.floats, rwFloat{ts, float64(n)})
		timeout.floats = append(timeout.floats, rwFloat{ts, float64(timeouts)})
		idleHist.hists = append(idleHist.hists, rwHist{t: ts})
		idle.floats = append(idle.floats, rwFloat{ts, 0})
	}
	promWrite(t, base, []rwSeries{hist, success, timeout, idleHist, idle})

	end, mid := t0+40*step, t0+20*step
	o := objective("p")
	for _, c := range []struct {
		what string
		q    string
		at   int64
		want float64
	}{
		{"error ratio, only timeouts", o.errorRatio("2m"), end, 1},
		{"errors a second, only timeouts", o.errorRate("2m"), end, 10.0 / 15},
		{"error ratio, only successes within 40ms", o.errorRatio("2m"), mid, 0},
		{"errors a second, no instance", objective("q").errorRate("2m"), end, 0},
	} {
		got := promQuery(t, base, c.q, c.at)
		if len(got) != 1 || !(math.Abs(got[0]-c.want) <= 1e-9) { // NaN fails too
			t.Errorf("%s: %v, want [%g]\n%s", c.what, got, c.want, c.q)
		}
	}
}
