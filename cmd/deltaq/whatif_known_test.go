// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// knownSpan is one span of writeKnown's corpus, times in ms from the
// trace's start.
type knownSpan struct {
	service, name string
	id, parent    byte
	start, end    float64
}

// writeKnown writes traces as the file exporter does (JSON lines), each
// line 50 traces with their spans grouped by service, as exporters send
// them, and returns the file's path.
func writeKnown(t *testing.T, traces [][]knownSpan) string {
	t.Helper()
	epoch := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	var buf bytes.Buffer
	var m ptrace.JSONMarshaler
	for first := 0; first < len(traces); first += 50 {
		td := ptrace.NewTraces()
		scopes := map[string]ptrace.SpanSlice{}
		for k := first; k < min(first+50, len(traces)); k++ {
			var tid pcommon.TraceID
			binary.BigEndian.PutUint64(tid[8:], uint64(k+1))
			t0 := epoch.Add(time.Duration(k) * 20 * time.Millisecond)
			for _, s := range traces[k] {
				ss, ok := scopes[s.service]
				if !ok {
					rs := td.ResourceSpans().AppendEmpty()
					rs.Resource().Attributes().PutStr("service.name", s.service)
					ss = rs.ScopeSpans().AppendEmpty().Spans()
					scopes[s.service] = ss
				}
				sp := ss.AppendEmpty()
				sp.SetTraceID(tid)
				sp.SetSpanID(pcommon.SpanID{byte(k >> 16), byte(k >> 8), byte(k), 0, 0, 0, 0, s.id})
				if s.parent != 0 {
					sp.SetParentSpanID(pcommon.SpanID{byte(k >> 16), byte(k >> 8), byte(k), 0, 0, 0, 0, s.parent})
				}
				sp.SetName(s.name)
				sp.SetStartTimestamp(pcommon.NewTimestampFromTime(t0.Add(time.Duration(s.start * 1e6))))
				sp.SetEndTimestamp(pcommon.NewTimestampFromTime(t0.Add(time.Duration(s.end * 1e6))))
			}
		}
		b, err := m.MarshalTraces(td)
		if err != nil {
			t.Fatal(err)
		}
		buf.Write(append(b, '\n'))
	}
	path := filepath.Join(t.TempDir(), "known.json")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// hypoexponential is the CDF of the sum of independent exponential
// delays of means m1 ≠ m2 (ms): 1 − (m1·e^(−t/m1) − m2·e^(−t/m2))/(m1 − m2)
// (Ross, "Introduction to Probability Models", section 5.2.4).
func hypoexponential(m1, m2, t float64) float64 {
	if t <= 0 {
		return 0
	}
	return 1 - (m1*math.Exp(-t/m1)-m2*math.Exp(-t/m2))/(m1-m2)
}

// TestWhatifKnownAnswers: deltaq model and deltaq whatif on a file of a
// system whose answers are known in closed form: front.req calls a.A
// (Exp(2 ms)) then b.B (Exp(3 ms)), and in 1 % of the traces a batch job
// of U(9 s, 11 s) runs on its own. The request's predicted ΔQ is the
// hypoexponential of means 2 and 3 ms; A twice as fast makes it that of
// means 1 and 3 ms; B cut at 3 ms fails with probability e^(−1). Each
// quantile printed is checked by the closed form's CDF there, within the
// Dvoretzky–Kiefer–Wolfowitz bound at 99.9 % for the 2970 requests,
// sqrt(ln(2000)/5940) = 0.036.
func TestWhatifKnownAnswers(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 21))
	var traces [][]knownSpan
	for k := range 3000 {
		if k%100 == 7 {
			traces = append(traces, []knownSpan{{"batch", "job", 1, 0, 0, 9000 + 2000*rng.Float64()}})
			continue
		}
		a, b := 2*rng.ExpFloat64(), 3*rng.ExpFloat64()
		traces = append(traces, []knownSpan{
			{"front", "req", 1, 0, 0, a + b}, {"a", "A", 2, 1, 0, a}, {"b", "B", 3, 1, a, a + b},
		})
	}
	dir := t.TempDir()
	if status, out, stderr := runCmd("model", writeKnown(t, traces), "-o", dir, "--strict"); status != exitOK {
		t.Fatalf("deltaq model: status %d\n%s%s", status, out, stderr)
	}
	const dkw = 0.036
	check := func(label string, s struct {
		Quantiles []*float64 `json:"quantiles"`
		Failure   float64    `json:"failure"`
	}, cdf func(ms float64) float64, failure float64) { // cdf of the completed ones
		t.Helper()
		if math.Abs(s.Failure-failure) > dkw {
			t.Errorf("%s: failure %v, want %v", label, s.Failure, failure)
		}
		for k, q := range []float64{0.5, 0.9, 0.95, 0.99} {
			v := s.Quantiles[k]
			switch {
			case q > 1-s.Failure:
				continue // unreachable, rightly
			case v == nil:
				t.Errorf("%s: quantile %v unreachable", label, q)
			case math.Abs((1-failure)*cdf(*v*1e3)-q) > dkw:
				t.Errorf("%s: quantile %v = %v ms, where the closed form's CDF is %.4f", label, q, *v*1e3, (1-failure)*cdf(*v*1e3))
			}
		}
	}
	type summary = struct {
		Quantiles []*float64 `json:"quantiles"`
		Failure   float64    `json:"failure"`
	}
	var rep struct {
		Validation []struct {
			Root      string  `json:"root"`
			Predicted summary `json:"predicted"`
		} `json:"validation"`
	}
	rj, _ := os.ReadFile(filepath.Join(dir, "report.json"))
	if err := json.Unmarshal(rj, &rep); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, v := range rep.Validation {
		if v.Root == "front_req" {
			found = true
			check("model", v.Predicted, func(ms float64) float64 { return hypoexponential(2, 3, ms) }, 0)
		}
	}
	if !found {
		t.Fatalf("report.json: no front_req in %s", rj)
	}
	whatif := func(set string) summary {
		t.Helper()
		status, stdout, stderr := runCmd("whatif", dir, "--json", "--root", "front_req", "--set", set)
		if status != exitOK {
			t.Fatalf("whatif --set %s: status %d\n%s", set, status, stderr)
		}
		var out struct {
			Roots map[string]struct {
				After summary `json:"after"`
			} `json:"roots"`
		}
		if err := json.Unmarshal([]byte(stdout), &out); err != nil {
			t.Fatal(err)
		}
		return out.Roots["front_req"].After
	}
	check("a.A=0.5*X", whatif("a.A=0.5*X"), func(ms float64) float64 { return hypoexponential(1, 3, ms) }, 0)
	// Cut at 3 ms, B completes with probability 1 − e^(−1), within 3 ms
	// as Exp(3 ms) conditioned on it: the sum's CDF is that of A + B
	// over the completed ones, H(t) − P(A + B ≤ t, B > 3), times
	// 1/(1 − e^(−1)) of the tangible mass.
	pFail := math.Exp(-1)
	cut := func(ms float64) float64 {
		// P(A + B ≤ t, B ≤ 3) by the density of B over [0, min(t, 3)].
		const steps = 2000
		hi := min(ms, 3)
		s := 0.0
		for k := range steps {
			b := (float64(k) + 0.5) * hi / steps
			s += (1 - math.Exp(-(ms-b)/2)) * math.Exp(-b/3) / 3 * hi / steps
		}
		return s / (1 - pFail)
	}
	check("b.B=timeout(3ms)", whatif("b.B=timeout(3ms)"), cut, pFail)
}
