// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/deltaq-otel/deltaq/internal/globtest"
)

// newcomerConfig is testdata/newcomer-collector.yaml: the probe-naming
// mistakes of a first configuration (a misspelled outcome in the diagram, a
// QTA for a misspelled probe), which the collector's validate is tested
// with too.
var newcomerConfig = func() string {
	b, err := os.ReadFile("../../testdata/newcomer-collector.yaml")
	if err != nil {
		panic(err)
	}
	return string(b)
}()

func TestCheckConfigNamesUnknownProbes(t *testing.T) {
	path := writeTemp(t, "collector.yaml", newcomerConfig)
	status, stdout, stderr := runCmd("check", "--config", path)
	want := "deltaq check: connectors::deltaq: diagram: outcome paymnet is not a probe any deltaq processor or the connector counts (did you mean payment?)\n" +
		`probes["chekout"]: no deltaq processor, connector probe or diagram defines probe chekout (did you mean checkout?)` + "\n"
	if status != exitFail || stderr != want {
		t.Errorf("status %d (want %d)\nstderr:\n%s\nwant:\n%s", status, exitFail, stderr, want)
	}
	if !strings.Contains(stdout, "processors::deltaq: ok, 3 probes") {
		t.Errorf("stdout %q lacks the processor's line", stdout)
	}
}

// TestCheckConfigConnectorOnlyProbeWithoutMatch: in a connector-only
// configuration, a probe with a QTA but no match is counted by nothing;
// the message says what makes the connector count it.
func TestCheckConfigConnectorOnlyProbeWithoutMatch(t *testing.T) {
	checkVerdict(t, "qta without match", `
receivers: {otlp: {protocols: {grpc: {}}}}
connectors: {deltaq: {probes: {checkout: {qta: {points: [{delay: 100ms, p: 0.9}]}}}}}
exporters: {debug: {}}
service:
  pipelines:
    traces: {receivers: [otlp], exporters: [deltaq]}
    metrics: {receivers: [deltaq], exporters: [debug]}
`, `probes["checkout"]: no deltaq processor, connector probe or diagram defines probe checkout`+"\n"+
		`(no deltaq processor feeds the connector: a probe it counts itself needs match, with dmax and bins)`)
}

// TestCheckConfigExamples: every shipped collector configuration with a
// deltaq component passes — the examples, the demo's (the throughput
// measurements' among them), the image's default and those the examples'
// tests run (checkTestdataConfigs) — and a second
// --config is merged over the first as the collector merges them (here,
// fixing the mistakes).
func TestCheckConfigExamples(t *testing.T) {
	bad := writeTemp(t, "collector.yaml", strings.Replace(newcomerConfig, "chekout:", "checkout:", 1))
	fix := writeTemp(t, "fix.yaml", "connectors:\n  deltaq:\n    diagram: \"checkout = inventory -> payment;\"\n")
	t.Chdir("../..") // the examples name their diagram files from the repository's root
	var shipped []string
	for _, pattern := range []string{"examples/*.yaml", "examples/*/*.yaml", "deploy/config.yaml"} {
		for _, path := range globtest.Glob(t, pattern) {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			// A configuration of its own (not an overlay of another) with a
			// deltaq component.
			if strings.Contains(string(b), "\nservice:") && strings.Contains(string(b), "\n  deltaq:") {
				shipped = append(shipped, path)
			}
		}
	}
	if len(shipped) < 11 { // the 11 of today
		t.Fatalf("%d shipped configurations found (%v): the globs no longer find them", len(shipped), shipped)
	}
	for _, path := range shipped {
		status, stdout, stderr := runCmd("check", "--config", path)
		if status != exitOK || !strings.Contains(stdout, "deltaq: ok") {
			t.Errorf("%s: status %d\nstdout %s\nstderr %s", path, status, stdout, stderr)
		}
	}
	checkTestdataConfigs(t)
	status, stdout, stderr := runCmd("check", "--config", bad, "--config", fix)
	if status != exitOK || !strings.Contains(stdout, "connectors::deltaq: ok, fed by processors deltaq") {
		t.Errorf("merged: status %d\nstdout %s\nstderr %s", status, stdout, stderr)
	}
	if status, _, stderr := runCmd("check", "--config", bad, "x.dq"); status != exitUsage || !strings.Contains(stderr, "give either FILE.dq or --config") {
		t.Errorf("both: status %d, %s", status, stderr)
	}
}

// testdataOverlays are the collector configurations of the examples' tests
// that are applied over others (later --config files), with the ones they
// are applied over, in order, as their tests apply them.
var testdataOverlays = map[string][]string{
	"examples/e2e/testdata/exponential.yaml":   {"examples/e2e/testdata/collector.yaml"},
	"examples/e2e/testdata/unreachable.yaml":   {"examples/e2e/testdata/collector.yaml"},
	"examples/e2e/testdata/gateway.yaml":       {"examples/e2e/testdata/collector.yaml"},
	"examples/scaling/e2e/testdata/agent.yaml": {"examples/scaling/agent.yaml"},
	"examples/scaling/e2e/testdata/agent_auto.yaml": {"examples/scaling/agent.yaml",
		"examples/scaling/e2e/testdata/agent.yaml"},
	"examples/scaling/e2e/testdata/sink.yaml": {"examples/scaling/gateway.yaml"},
	"examples/scaling/e2e/testdata/gateway_auto.yaml": {"examples/scaling/gateway.yaml",
		"examples/scaling/e2e/testdata/sink.yaml"},
	"examples/scaling/e2e/testdata/control.yaml": {"examples/scaling/gateway.yaml", "examples/scaling/agent.yaml",
		"examples/scaling/e2e/testdata/sink.yaml"},
	// fast.yaml goes over the agents' configuration and the gateway's
	// alike; checked over the agents' (gateway_fast.yaml checks the other).
	"examples/scaling/e2e/testdata/fast.yaml": {"examples/scaling/agent.yaml", "examples/scaling/e2e/testdata/agent.yaml"},
	"examples/scaling/e2e/testdata/gateway_fast.yaml": {"examples/scaling/gateway.yaml",
		"examples/scaling/e2e/testdata/sink.yaml", "examples/scaling/e2e/testdata/fast.yaml"},
}

// checkTestdataConfigs: the collector configurations the examples' tests
// run (their testdata) pass too, each alone or, for an overlay, over the
// configurations its test applies it to; every one of them is checked,
// and every overlay listed exists. Run from the repository's root.
func checkTestdataConfigs(t *testing.T) {
	t.Helper()
	found := map[string]bool{}
	for _, pattern := range []string{"examples/*/testdata/*.yaml", "examples/*/*/testdata/*.yaml"} {
		for _, path := range globtest.Glob(t, pattern) {
			found[path] = true
		}
	}
	for path := range testdataOverlays {
		if !found[path] {
			t.Errorf("testdataOverlays lists %s, which is not there: remove it", path)
		}
	}
	checked := 0
	for path := range found {
		configs := append(slices.Clone(testdataOverlays[path]), path)
		if len(configs) == 1 {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(b), "\nservice:") || !strings.Contains(string(b), "\n  deltaq:") {
				t.Errorf("%s: neither a configuration with a deltaq component nor an overlay of testdataOverlays", path)
				continue
			}
		}
		var args []string
		for _, c := range configs {
			args = append(args, "--config", c)
		}
		status, stdout, stderr := runCmd(append([]string{"check"}, args...)...)
		if status != exitOK || !strings.Contains(stdout, "deltaq: ok") {
			t.Errorf("%s: status %d\nstdout %s\nstderr %s", strings.Join(configs, "+"), status, stdout, stderr)
		}
		checked++
	}
	if checked < 10 { // the 10 of today
		t.Errorf("%d testdata configurations checked: the globs no longer find them", checked)
	}
}

// TestCheckConfigEmptyVariables: the default configuration (deploy/config.yaml)
// with its variables set but empty is checked with their defaults, as the
// collector reads it: DELTAQ_DMAX= left the probe bins without a dMax.
func TestCheckConfigEmptyVariables(t *testing.T) {
	t.Setenv("DELTAQ_DMAX", "")
	t.Setenv("DELTAQ_MEMORY_LIMIT_MIB", "")
	status, stdout, stderr := runCmd("check", "--config", "../../deploy/config.yaml")
	if status != exitOK || !strings.Contains(stdout, "deltaq: ok") {
		t.Errorf("status %d\nstdout %s\nstderr %s", status, stdout, stderr)
	}
}

// TestCheckConfigLayoutsAgree: a connector probe whose layout differs from
// the processor's that feeds it is refused, naming both layouts.
func TestCheckConfigLayoutsAgree(t *testing.T) {
	cfg := strings.Replace(newcomerConfig, "chekout: {qta:", "payment: {dmax: 2s, bins: 200}\n      checkout: {qta:", 1)
	cfg = strings.ReplaceAll(cfg, "paymnet", "payment")
	status, _, stderr := runCmd("check", "--config", writeTemp(t, "collector.yaml", cfg))
	want := `deltaq check: connectors::deltaq: probes["payment"]: dmax 2s, bins 200 differ from processors::deltaq's dmax 1s, bins 100; set the layout in one place (the processor's), or the same in both` + "\n"
	if status != exitFail || stderr != want {
		t.Errorf("status %d\nstderr %s\nwant   %s", status, stderr, want)
	}
}

// TestCheckConfigProbeMatchedTwice: a probe both a processor and a
// connector match in the spans is refused, as the collector's start and
// validate refuse it, in whichever pipelines they are; a connector that
// matches other probes than the processor's passes.
func TestCheckConfigProbeMatchedTwice(t *testing.T) {
	cfg := func(connProbe string) string {
		return `
receivers: {otlp: {protocols: {grpc: {}}}}
processors: {deltaq/p: {probes: [{name: a, dmax: 50ms, bins: 50}]}}
connectors: {deltaq: {probes: {` + connProbe + `: {match: {}, dmax: 50ms, bins: 50}}}}
exporters: {debug: {}}
service:
  pipelines:
    traces/p: {receivers: [otlp], processors: [deltaq/p], exporters: [debug]}
    traces: {receivers: [otlp], exporters: [deltaq]}
    metrics: {receivers: [deltaq], exporters: [debug]}
`
	}
	checkVerdict(t, "both match a", cfg("a"),
		`connectors::deltaq: probe "a" is matched in the spans by both the deltaq processor "deltaq/p" and the deltaq connector "deltaq"`)
	checkVerdict(t, "each its own", cfg("b"), "")
}

// TestCheckConfigAmbiguousID: a deltaq connector and a deltaq exporter (or
// receiver) of one ID leave the pipelines' lists ambiguous; the collector
// refuses them, and so does check, naming the rename.
func TestCheckConfigAmbiguousID(t *testing.T) {
	cfg := func(exporter string) string {
		return `
receivers: {otlp: {protocols: {grpc: {}}}}
connectors: {deltaq: {probes: {a: {match: {}, dmax: 50ms, bins: 50}}}}
exporters: {debug: {}, ` + exporter + `: {endpoint: 127.0.0.1:4317}}
service:
  pipelines:
    traces: {receivers: [otlp], exporters: [deltaq]}
    metrics: {receivers: [deltaq], exporters: [debug]}
`
	}
	checkVerdict(t, "one ID", cfg("deltaq"),
		`connectors::deltaq: ambiguous ID: exporters::deltaq has it too, and the collector refuses it; rename one of them (the connector deltaq/connector, say)`)
	checkVerdict(t, "two IDs", cfg("deltaq/out"), "")
}

// TestCheckConfigTwoProcessorsOneProbe: two processors that feed one
// connector and both define a probe are refused when their layouts differ
// (the windows would mix them) and when one receiver feeds both their
// pipelines (each span would count twice: 10 spans gave a count of 20);
// the same layout from two receivers is two sources of one probe.
func TestCheckConfigTwoProcessorsOneProbe(t *testing.T) {
	cfg := func(layoutB, receiverB string) string {
		return `
receivers: {otlp: {protocols: {grpc: {}}}, otlp/b: {protocols: {grpc: {endpoint: 127.0.0.1:4319}}}}
processors:
  deltaq/a: {probes: {checkout: {dmax: 2s, bins: 100}}}
  deltaq/b: {probes: {checkout: ` + layoutB + `}}
connectors: {deltaq: {}}
exporters: {debug: {}}
service:
  pipelines:
    traces/a: {receivers: [otlp], processors: [deltaq/a], exporters: [deltaq]}
    traces/b: {receivers: [` + receiverB + `], processors: [deltaq/b], exporters: [deltaq]}
    metrics: {receivers: [deltaq], exporters: [debug]}
`
	}
	for _, c := range []struct {
		name, layoutB, receiverB, want string
	}{
		{"two layouts", "{dmax: 500ms, bins: 50}", "otlp/b",
			`probes["checkout"]: processors::deltaq/a (dmax 2s, bins 100) and processors::deltaq/b (dmax 500ms, bins 50) both count it here, in two layouts`},
		{"one receiver", "{dmax: 2s, bins: 100}", "otlp",
			`probes["checkout"]: processors::deltaq/a and processors::deltaq/b both count it here, and receivers::otlp feeds both their pipelines: each of its spans would count twice`},
		{"two sources", "{dmax: 2s, bins: 100}", "otlp/b", ""},
	} {
		checkVerdict(t, c.name, cfg(c.layoutB, c.receiverB), c.want)
	}
}

// checkVerdict runs deltaq check --config on cfg: it must pass when want
// is empty, else fail with want in its message.
func checkVerdict(t *testing.T, name, cfg, want string) {
	t.Helper()
	status, _, stderr := runCmd("check", "--config", writeTemp(t, "c.yaml", cfg))
	switch {
	case want == "" && status != exitOK:
		t.Errorf("%s: status %d, %s", name, status, stderr)
	case want != "" && (status != exitFail || !strings.Contains(stderr, want)):
		t.Errorf("%s: status %d\nstderr %s\nwant   %s", name, status, stderr, want)
	}
}

// TestCheckConfigSpansReachTheProbes: a processor in no traces pipeline,
// or a connector that matches spans but is fed by logs alone, counts
// nothing; both passed (every start event became a timeout). So does a
// connector whose output no metrics or logs pipeline receives, or that no
// pipeline sends anything to: the collector refuses both. A connector
// that two traces pipelines of one receiver send spans to would count each
// twice. A part of a configuration without pipelines is not judged on
// them.
func TestCheckConfigSpansReachTheProbes(t *testing.T) {
	for _, c := range []struct{ name, cfg, want string }{
		{"processor in logs alone", `
receivers: {otlp: {protocols: {grpc: {}}}}
processors: {deltaq: {probes: [{name: job, dmax: 1s, bins: 10}]}}
exporters: {debug: {}}
service: {pipelines: {logs: {receivers: [otlp], processors: [deltaq], exporters: [debug]}}}
`, "processors::deltaq: in no traces pipeline: its probes see no spans"},
		{"connector fed by logs", `
receivers: {otlp: {protocols: {grpc: {}}}}
connectors: {deltaq: {probes: {job: {match: {}, dmax: 1s, bins: 10}}}}
exporters: {debug: {}}
service:
  pipelines:
    logs: {receivers: [otlp], exporters: [deltaq]}
    metrics: {receivers: [deltaq], exporters: [debug]}
`, "connectors::deltaq: it matches spans to probes (job), but no traces pipeline sends it any"},
		{"connector whose output no pipeline receives", `
receivers: {otlp: {protocols: {grpc: {}}}}
connectors: {deltaq: {probes: {job: {match: {}, dmax: 1s, bins: 10}}}}
exporters: {debug: {}}
service: {pipelines: {traces: {receivers: [otlp], exporters: [debug, deltaq]}}}
`, "connectors::deltaq: no metrics or logs pipeline receives from it"},
		{"connector into a traces pipeline", `
receivers: {otlp: {protocols: {grpc: {}}}}
connectors: {deltaq: {probes: {job: {match: {}, dmax: 1s, bins: 10}}}}
exporters: {debug: {}}
service:
  pipelines:
    traces: {receivers: [otlp], exporters: [debug, deltaq]}
    traces/out: {receivers: [deltaq], exporters: [debug]}
`, "connectors::deltaq: no metrics or logs pipeline receives from it"},
		{"gateway connector fed by no pipeline", `
receivers: {otlp: {protocols: {grpc: {}}}}
connectors: {deltaq: {probes: {job: {dmax: 1s, bins: 10}}}}
exporters: {debug: {}}
service:
  pipelines:
    metrics: {receivers: [deltaq], exporters: [debug]}
    traces: {receivers: [otlp], exporters: [debug]}
`, "connectors::deltaq: no pipeline sends it anything"},
		{"connector out to logs alone", `
receivers: {otlp: {protocols: {grpc: {}}}}
connectors: {deltaq: {probes: {job: {match: {}, dmax: 1s, bins: 10}}}}
exporters: {debug: {}}
service:
  pipelines:
    traces: {receivers: [otlp], exporters: [deltaq]}
    logs/deltaq: {receivers: [deltaq], exporters: [debug]}
`, ""},
		{"connector in two traces pipelines of one receiver", `
receivers: {otlp: {protocols: {grpc: {}}}, otlp/b: {protocols: {grpc: {endpoint: 127.0.0.1:4319}}}}
processors: {batch: {}}
connectors: {deltaq: {probes: {job: {match: {}, dmax: 1s, bins: 10}}}}
exporters: {debug: {}}
service:
  pipelines:
    traces: {receivers: [otlp], exporters: [debug, deltaq]}
    traces/batched: {receivers: [otlp/b, otlp], processors: [batch], exporters: [deltaq]}
    metrics: {receivers: [deltaq], exporters: [debug]}
`, "connectors::deltaq: receivers::otlp feeds traces pipelines that each send to it (traces, traces/batched): each span of its probes (job) would count twice; keep it in one of them"},
		{"connector in two traces pipelines of two receivers", `
receivers: {otlp: {protocols: {grpc: {}}}, otlp/b: {protocols: {grpc: {endpoint: 127.0.0.1:4319}}}}
connectors: {deltaq: {probes: {job: {match: {}, dmax: 1s, bins: 10}}}}
exporters: {debug: {}}
service:
  pipelines:
    traces: {receivers: [otlp], exporters: [debug, deltaq]}
    traces/b: {receivers: [otlp/b], exporters: [deltaq]}
    metrics: {receivers: [deltaq], exporters: [debug]}
`, ""},
		{"no pipelines", `
connectors: {deltaq: {probes: {job: {match: {}, dmax: 1s, bins: 10}}}}
`, ""},
	} {
		checkVerdict(t, c.name, c.cfg, c.want)
	}
}

// TestCheckConfigQTAPointsOnEdges: a QTA point between two bin edges of
// its probe's layout, the connector's own or the processor's that feeds
// it, is refused with the nearest edges, as deltaq slo refuses it; at an
// edge, beyond dMax, or with an exponential histogram it passes.
func TestCheckConfigQTAPointsOnEdges(t *testing.T) {
	const cfg = `
processors:
  deltaq:
    probes: [{name: b, dmax: 1s, bins: 100}]
connectors:
  deltaq:
    probes:
      a:
        match: {}
        dmax: 100ms
        bins: 50
        qta: {points: [{delay: 40ms, p: 0.5}, {delay: 41ms, p: 0.9}, {delay: 1s, p: 0.99}]}
      b:
        qta: {points: [{delay: 15ms, p: 0.5}]}
service:
  pipelines:
    traces: {receivers: [otlp], processors: [deltaq], exporters: [deltaq]}
    metrics: {receivers: [deltaq], exporters: [debug]}
`
	status, _, stderr := runCmd("check", "--config", writeTemp(t, "c.yaml", cfg))
	want := "deltaq check: connectors::deltaq: " +
		`probes["a"].qta.points[1]: 41ms is not a bucket bound of deltaq.observed (50 bins of 2ms up to 100ms): the nearest bin edges are 40ms and 42ms; move the QTA point to one of them for an exact SLI (deltaq slo refuses it; the collector's own QTA verdict reads it at the analysis resolution, off by at most the instances of a bucket under 1/64 of the delay wide)` + "\n" +
		`probes["b"].qta.points[0]: 15ms is not a bucket bound of deltaq.observed (100 bins of 10ms up to 1s): the nearest bin edges are 10ms and 20ms; move the QTA point to one of them for an exact SLI (deltaq slo refuses it; the collector's own QTA verdict reads it at the analysis resolution, off by at most the instances of a bucket under 1/64 of the delay wide)` + "\n"
	if status != exitFail || stderr != want {
		t.Errorf("status %d\nstderr %s\nwant   %s", status, stderr, want)
	}
	exp := strings.Replace(cfg, "connectors:\n  deltaq:\n", "connectors:\n  deltaq:\n    histogram: {exponential: {}}\n", 1)
	if status, _, stderr := runCmd("check", "--config", writeTemp(t, "e.yaml", exp)); status != exitOK {
		t.Errorf("exponential histogram: status %d, %s", status, stderr)
	}
}

// TestCheckConfigAutoProbes: a probe the connector matches with dmax: auto
// is one the connector counts, as the collector counts it: the diagram may
// name it, and an outcome one slip away from it is refused with its name.
func TestCheckConfigAutoProbes(t *testing.T) {
	const cfg = `
connectors:
  deltaq:
    diagram: "checkout = auth -> pay;"
    probes:
      checkout: {match: {span_name: checkout}, dmax: 2s, bins: 200}
      auth: {match: {span_name: auth}, dmax: auto, bins: 100}
      pay: {match: {span_name: pay}, dmax: 800ms, bins: 80}
service:
  pipelines:
    traces: {receivers: [otlp], exporters: [deltaq]}
    metrics: {receivers: [deltaq], exporters: [debug]}
`
	status, stdout, stderr := runCmd("check", "--config", writeTemp(t, "c.yaml", cfg))
	if status != exitOK || !strings.Contains(stdout, "connectors::deltaq: ok") {
		t.Errorf("status %d\nstdout %s\nstderr %s", status, stdout, stderr)
	}
	typo := strings.Replace(cfg, "auth -> pay", "auht -> pay", 1)
	status, _, stderr = runCmd("check", "--config", writeTemp(t, "t.yaml", typo))
	want := "deltaq check: connectors::deltaq: diagram: outcome auht is not a probe any deltaq processor or the connector counts (did you mean auth?)\n"
	if status != exitFail || stderr != want {
		t.Errorf("status %d\nstderr %s\nwant   %s", status, stderr, want)
	}
}

// TestCheckConfigComponentIDs: a deltaq component whose ID the collector
// refuses (component.ID, whose words the message repeats) and a component
// whose type is one slip away from deltaq, which the collector refuses as
// of an unknown type, are refused; both passed, the section left unread
// without a word. A configuration with no deltaq component says so.
func TestCheckConfigComponentIDs(t *testing.T) {
	const section = `
  %q:
    probes: {checkout: {dmax: 50ms, bins: 50}}
`
	for _, c := range []struct{ id, want string }{
		{"deltaq/", `processors::deltaq/: in "deltaq/" id: the part after / should not be empty`},
		{"deltaq/a b", `processors::deltaq/a b: in "a b" id: invalid character(s) in name "a b"`},
		{"Deltaq", `processors::Deltaq: unknown component type "Deltaq"; did you mean deltaq?`},
		{"detlaq/x", `processors::detlaq/x: unknown component type "detlaq"; did you mean deltaq?`},
		{"deltaq/x", ""},
	} {
		checkVerdict(t, c.id, "processors:"+fmt.Sprintf(section, c.id), c.want)
	}
	status, stdout, _ := runCmd("check", "--config", writeTemp(t, "c.yaml", "processors: {batch: {}}\n"))
	if status != exitOK || stdout != "no deltaq processor, connector or exporter: nothing to check\n" {
		t.Errorf("no deltaq component: status %d, stdout %q", status, stdout)
	}
}
