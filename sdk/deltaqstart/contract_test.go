// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaqstart

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	sdklog "go.opentelemetry.io/otel/sdk/log"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// TestLightImports checks that the package, which applications import,
// pulls in none of the collector's modules (pdata among them) or gRPC: its
// only dependencies outside the standard library are the OpenTelemetry Go
// API and SDK (go list -deps); its module requires nothing else.
func TestLightImports(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command in PATH")
	}
	out, err := exec.Command(goTool, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	allowed := []string{"go.opentelemetry.io/otel", "go.opentelemetry.io/auto/sdk", "github.com/go-logr/",
		"github.com/cespare/xxhash/", "github.com/google/uuid", "golang.org/x/sys/",
		"github.com/deltaq-otel/deltaq/sdk/deltaqstart"}
	for _, pkg := range strings.Fields(string(out)) {
		first, _, _ := strings.Cut(pkg, "/")
		if !strings.Contains(first, ".") {
			continue // the standard library
		}
		ok := false
		for _, a := range allowed {
			ok = ok || strings.HasPrefix(pkg, a)
		}
		if !ok || strings.HasPrefix(pkg, "go.opentelemetry.io/otel/exporters") {
			t.Errorf("deltaqstart depends on %s", pkg)
		}
	}
}

// TestReadmeContract checks that README.md, which tells other languages what
// a start event holds, names the contract's strings as this package defines
// them (TestStartEventContract checks them against the shared contract).
func TestReadmeContract(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{startEventName, attrProbe, attrSpanName, attrTraceState, startsEventName, attrStarts,
		attrStartsThresholds} {
		if !strings.Contains(string(b), "`"+s+"`") {
			t.Errorf("README.md does not name `%s`", s)
		}
	}
}

// TestReadmeExamplesExportPromptly checks that every Go example of the
// package in README.md and in the project's README.md sets both exporters'
// batch delays: the connector judges a deadline when a span reaches it, and
// with the SDKs' defaults (sdklog.WithExportInterval 1 s,
// sdktrace.WithBatchTimeout 5 s) a span that ended in time, but after its
// start was drained, arrives past a dMax below that and counts as a timeout
// (README.md, "Export promptly").
func TestReadmeExamplesExportPromptly(t *testing.T) {
	n := 0
	for _, path := range []string{"README.md", "../../README.md"} {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		blocks := strings.Split(string(b), "```")
		for i := 1; i < len(blocks); i += 2 {
			code := blocks[i]
			if !strings.HasPrefix(code, "go\n") || !strings.Contains(code, "deltaqstart.NewSpanProcessor(") {
				continue
			}
			n++
			for _, want := range []string{"sdklog.WithExportInterval(", "sdktrace.WithBatchTimeout("} {
				if !strings.Contains(code, want) {
					t.Errorf("%s: an example without %s…):\n%s", path, want, code)
				}
			}
		}
	}
	if n < 2 {
		t.Errorf("%d examples of NewSpanProcessor found in the READMEs, want one in each", n)
	}
}

// TestStartEventContract checks the package's strings and sizes against
// the shared contract, docs/contract/start-event.json, which
// internal/contract's tests check the collector's constants against: the
// module imports nothing of the collector's, and the two meet in that file.
func TestStartEventContract(t *testing.T) {
	b, err := os.ReadFile("../../docs/contract/start-event.json")
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		EventName  string            `json:"event_name"`
		Attributes map[string]string `json:"attributes"`
		ProbeBytes struct {
			Min int `json:"min"`
			Max int `json:"max"`
		} `json:"probe_bytes"`
		Batch struct {
			EventName  string            `json:"event_name"`
			Attributes map[string]string `json:"attributes"`
			Entry      []struct {
				Field    string `json:"field"`
				Bytes    int    `json:"bytes"`
				Encoding string `json:"encoding"`
			} `json:"entry"`
			EntryBytes        int    `json:"entry_bytes"`
			ThresholdBytes    int    `json:"threshold_bytes"`
			ThresholdEncoding string `json:"threshold_encoding"`
			MaxEntries        int    `json:"max_entries"`
		} `json:"batch"`
	}
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	for _, p := range []struct{ name, got, want string }{
		{"startEventName", startEventName, c.EventName},
		{"attrProbe", attrProbe, c.Attributes["probe"]},
		{"attrSpanName", attrSpanName, c.Attributes["span_name"]},
		{"attrTraceState", attrTraceState, c.Attributes["tracestate"]},
		{"startsEventName", startsEventName, c.Batch.EventName},
		{"attrProbe (batch)", attrProbe, c.Batch.Attributes["probe"]},
		{"attrStarts", attrStarts, c.Batch.Attributes["starts"]},
		{"attrStartsThresholds", attrStartsThresholds, c.Batch.Attributes["thresholds"]},
	} {
		if p.want == "" || p.got != p.want {
			t.Errorf("%s = %q, the contract says %q", p.name, p.got, p.want)
		}
	}
	for _, p := range []struct {
		name      string
		got, want int
	}{
		{"entryBytes", entryBytes, c.Batch.EntryBytes},
		{"thresholdBytes", thresholdBytes, c.Batch.ThresholdBytes},
		{"maxEntries", maxEntries, c.Batch.MaxEntries},
		{"maxProbeLength", maxProbeLength, c.ProbeBytes.Max},
	} {
		if p.got != p.want {
			t.Errorf("%s = %d, the contract says %d", p.name, p.got, p.want)
		}
	}
	// The layout emitBatches writes: trace id, span id, start time (uint64
	// little-endian), and the thresholds uint64 little-endian.
	var layout []string
	for _, f := range c.Batch.Entry {
		layout = append(layout, fmt.Sprintf("%s:%d:%s", f.Field, f.Bytes, f.Encoding))
	}
	want := []string{"trace_id:16:", "span_id:8:", "start_time_unix_nano:8:uint64 little-endian"}
	if !slices.Equal(layout, want) {
		t.Errorf("the contract's entry is %v, the package writes %v", layout, want)
	}
	if !strings.HasPrefix(c.Batch.ThresholdEncoding, "uint64 little-endian") {
		t.Errorf("the contract's thresholds are %q, the package writes uint64 little-endian", c.Batch.ThresholdEncoding)
	}
}

// TestProbeBytesContract: the package announces the spans whose probe is
// as short and as long as the contract's probe_bytes allow, and no span
// whose probe is shorter or longer, in either form.
func TestProbeBytesContract(t *testing.T) {
	b, err := os.ReadFile("../../docs/contract/start-event.json")
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		ProbeBytes struct {
			Min int `json:"min"`
			Max int `json:"max"`
		} `json:"probe_bytes"`
	}
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	if c.ProbeBytes.Min < 1 || c.ProbeBytes.Max < c.ProbeBytes.Min {
		t.Fatalf("the contract's probe_bytes: %+v", c.ProbeBytes)
	}
	for _, f := range forms {
		t.Run(f.name, func(t *testing.T) {
			// The selector names a span's probe by its name, "n:" then
			// the probe's length.
			sel := func(s sdktrace.ReadOnlySpan) (string, bool) {
				var n int
				if _, err := fmt.Sscanf(s.Name(), "n:%d", &n); err != nil {
					return "", false
				}
				return strings.Repeat("p", n), true
			}
			tr, p, rec := setup(t, sdktrace.AlwaysSample(), append(f.opts, WithSelector(sel))...)
			var want []wantEvent
			for _, n := range []int{c.ProbeBytes.Min - 1, c.ProbeBytes.Min, c.ProbeBytes.Max, c.ProbeBytes.Max + 1} {
				name := fmt.Sprintf("n:%d", n)
				_, s := tr.Start(context.Background(), name)
				if n >= c.ProbeBytes.Min && n <= c.ProbeBytes.Max {
					want = append(want, wantEvent{s, s.(sdktrace.ReadOnlySpan).StartTime(), strings.Repeat("p", n), name})
				}
			}
			if err := p.ForceFlush(context.Background()); err != nil {
				t.Fatal(err)
			}
			checkEvents(t, rec.all(), want)
		})
	}
}

// TestStartEventExample encodes the spans of the contract's example batch
// record (docs/contract/start-event.json, batch.example) as a drain does,
// and checks that the record holds exactly the example's bytes: the known
// answer internal/contract's tests decode, and dqsd_otel's encode too.
func TestStartEventExample(t *testing.T) {
	b, err := os.ReadFile("../../docs/contract/start-event.json")
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Batch struct {
			Example struct {
				Probe   string `json:"probe"`
				Entries []struct {
					TraceID    string `json:"trace_id"`
					SpanID     string `json:"span_id"`
					Start      int64  `json:"start_time_unix_nano,string"`
					TraceState string `json:"tracestate"`
				} `json:"entries"`
				StartsHex     string `json:"starts_hex"`
				ThresholdsHex string `json:"thresholds_hex"`
			} `json:"example"`
		} `json:"batch"`
	}
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	ex := c.Batch.Example
	rec := &recorder{}
	lp := sdklog.NewLoggerProvider(sdklog.WithProcessor(rec))
	defer lp.Shutdown(context.Background())
	p := newSpanProcessor(lp, defaultConfig()) // no draining goroutine: the test drains
	for i, e := range ex.Entries {
		traceID, err1 := trace.TraceIDFromHex(e.TraceID)
		spanID, err2 := trace.SpanIDFromHex(e.SpanID)
		ts, err3 := trace.ParseTraceState(e.TraceState)
		if err := errors.Join(err1, err2, err3); err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
		p.queue = append(p.queue, event{traceID: traceID, spanID: spanID, start: time.Unix(0, e.Start),
			probe: ex.Probe, ot: ts.Get("ot")})
	}
	p.drain()
	recs := rec.all()
	if len(recs) != 1 || len(ex.Entries) == 0 {
		t.Fatalf("%d records of the example's %d entries, want 1", len(recs), len(ex.Entries))
	}
	a := attrs(&recs[0])
	if got := a[attrProbe].AsString(); got != ex.Probe {
		t.Errorf("%s %q, want %q", attrProbe, got, ex.Probe)
	}
	if got := hex.EncodeToString(a[attrStarts].AsByteSlice()); got != ex.StartsHex {
		t.Errorf("%s\n%s, the contract's example is\n%s", attrStarts, got, ex.StartsHex)
	}
	if got := hex.EncodeToString(a[attrStartsThresholds].AsByteSlice()); got != ex.ThresholdsHex {
		t.Errorf("%s\n%s, the contract's example is\n%s", attrStartsThresholds, got, ex.ThresholdsHex)
	}
}

// probeRepairExample is one of the contract's probe_repair examples: a name
// given as runs of bytes, the bytes a sender sends for it (when given), how
// many, and whether its span is announced.
type probeRepairExample struct {
	Name []struct {
		Hex   string `json:"hex"`
		Times int    `json:"times"`
	} `json:"name"`
	SentHex   string `json:"sent_hex"`
	SentBytes int    `json:"sent_bytes"`
	Announced bool   `json:"announced"`
}

// TestProbeRepairContract: the contract's probe_repair examples, which
// dqsd_otel's tests take too. Each invalid byte of a probe name becomes
// U+FFFD, and the 256-byte bound is on the name so repaired; a run of
// invalid bytes became one U+FFFD (strings.ToValidUTF8), so that 200
// bytes of text and 19 stray bytes were announced as a 203-byte probe
// where dqsd_otel sends 257 bytes and announces nothing, and "bad\xff\xfe"
// was another probe than dqsd_otel's.
func TestProbeRepairContract(t *testing.T) {
	b, err := os.ReadFile("../../docs/contract/start-event.json")
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		ProbeRepair struct {
			Examples []probeRepairExample `json:"examples"`
		} `json:"probe_repair"`
	}
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	if len(c.ProbeRepair.Examples) == 0 {
		t.Fatal("the contract has no probe_repair examples")
	}
	var names []string
	for i, ex := range c.ProbeRepair.Examples {
		var name []byte
		for _, part := range ex.Name {
			run, err := hex.DecodeString(part.Hex)
			if err != nil {
				t.Fatalf("example %d: %v", i, err)
			}
			name = append(name, bytes.Repeat(run, part.Times)...)
		}
		names = append(names, string(name))
		sent := validUTF8(string(name))
		if len(sent) != ex.SentBytes || ex.SentHex != "" && hex.EncodeToString([]byte(sent)) != ex.SentHex {
			t.Errorf("example %d: %x sent as %x (%d bytes), the contract says %s (%d bytes)", i, name, sent, len(sent), ex.SentHex, ex.SentBytes)
		}
	}
	for _, f := range forms {
		t.Run(f.name, func(t *testing.T) {
			// Each span is named by its example's index: the selector
			// gives it the example's name as its probe.
			sel := func(s sdktrace.ReadOnlySpan) (string, bool) {
				var i int
				if _, err := fmt.Sscanf(s.Name(), "example %d", &i); err != nil {
					return "", false
				}
				return names[i], true
			}
			tr, p, rec := setup(t, sdktrace.AlwaysSample(), append(f.opts, WithSelector(sel))...)
			var want []wantEvent
			for i, ex := range c.ProbeRepair.Examples {
				name := fmt.Sprintf("example %d", i)
				_, s := tr.Start(context.Background(), name)
				if ex.Announced {
					want = append(want, wantEvent{s, s.(sdktrace.ReadOnlySpan).StartTime(), validUTF8(names[i]), name})
				}
			}
			if err := p.ForceFlush(context.Background()); err != nil {
				t.Fatal(err)
			}
			checkEvents(t, rec.all(), want)
		})
	}
}
