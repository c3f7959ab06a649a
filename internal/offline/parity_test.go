// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package offline_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/connector/connectortest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/processor/processortest"
	yaml "go.yaml.in/yaml/v3"

	"github.com/deltaq-otel/deltaq/connector/deltaqconnector"
	"github.com/deltaq-otel/deltaq/exporter/deltaqexporter"
	"github.com/deltaq-otel/deltaq/internal/confpath"
	"github.com/deltaq-otel/deltaq/internal/offline"
	"github.com/deltaq-otel/deltaq/processor/deltaqprocessor"
)

// parityBases are the repository's collector configurations whose deltaq
// components the mutations change, from the repository's root.
var parityBases = []string{
	"examples/collector.yaml", "examples/exporter.yaml", "examples/processor.yaml",
	"examples/demo/collector.yaml", "examples/demo/collector-throughput-processor.yaml",
	"examples/demo/collector-throughput-starts.yaml", "examples/scaling/gateway.yaml",
	"examples/scaling/agent.yaml", "examples/erlang/collector.yaml",
}

// checkOnly are the refusals deltaq check --config adds to the
// collector's, each documented in its help: a probe named that nothing of
// the configuration counts (the collector warns of it, for its instances
// may come from another collector), and a QTA point off the bin edges
// (deltaq slo needs one on an edge for an exact SLI), and a connector that
// matches spans that no traces pipeline sends it.
var checkOnly = regexp.MustCompile(`is not a probe any deltaq processor or the connector counts|` +
	`it matches spans to probes \(.*\), but no traces pipeline sends it any|` +
	`no deltaq processor, connector probe or diagram defines probe|is not a bucket bound of deltaq.observed|` +
	`^\(no deltaq processor feeds the connector|^\(a gateway counts the probes`)

// TestConfigParity: seeded mutations of the example configurations' deltaq
// sections — options removed, misspelled or written with another case,
// values of the wrong type, out of range, percentages, durations in odd
// units, probes renamed (in another case, with a letter more, in Unicode),
// diagrams naming unknown probes or a cycle, QTA points between bins or
// beyond dMax, qoo and gateway options — are each accepted or refused
// alike by the collector (every section decoded and validated, the
// components made, in either order, and started, with one shared state),
// by deltaq check --config (which may refuse more, each time for a reason
// its help gives) and by the reading of analyze and slo; a refusal by the
// collector is one check repeats; and an option misspelled is named, with
// the option meant. The components are made from their public factories:
// every one it makes is shut down before the next configuration.
func TestConfigParity(t *testing.T) {
	t.Chdir("../..") // the examples' diagram files are relative to the root
	bases := make([]map[string]any, len(parityBases))
	for i, path := range parityBases {
		conf, err := offline.Resolve([]string{path})
		if err != nil {
			t.Fatal(err)
		}
		bases[i] = conf.ToStringMap()
	}
	r := rand.New(rand.NewPCG(1, 2))
	dir := t.TempDir()
	refused := 0
	for i := range parityCases {
		b := r.IntN(len(bases))
		raw := deepCopy(bases[b]).(map[string]any)
		var notes []string
		for range 1 + r.IntN(2) {
			notes = append(notes, mutate(r, raw))
		}
		name := fmt.Sprintf("case %d (%s: %s)", i, parityBases[b], strings.Join(notes, "; "))
		conf := confmap.NewFromStringMap(raw)
		collector, atStart := collectorVerdict(conf, r.IntN(2) == 0)
		if collector != nil {
			refused++
		}
		if atStart {
			t.Errorf("%s: validate accepts it, the start refuses it:\n%v", name, collector)
		}
		compareCheck(t, name, collector, offline.Check(io.Discard, conf))
		compareLoad(t, name, collector, loadVerdict(t, dir, raw))
		if m := renamed.FindStringSubmatch(notes[0]); len(notes) == 1 && m != nil {
			if collector == nil || !strings.Contains(collector.Error(), m[1]+": unknown option; did you mean ") {
				t.Errorf("%s: the refusal does not name %s with the option meant: %v", name, m[1], collector)
			}
		}
	}
	if refused < parityCases/4 || refused > parityCases*9/10 {
		t.Errorf("the collector refused %d of %d configurations: the mutations no longer exercise both verdicts", refused, parityCases)
	}
}

// parityCases is the number of configurations TestConfigParity makes.
const parityCases = 160

// renamed matches the note of an option renamed to an unknown one, with
// one slip.
var renamed = regexp.MustCompile(`^option \S+ renamed (\S+)$`)

// compareCheck compares the verdicts of the collector and of deltaq check.
func compareCheck(t *testing.T, name string, collector, check error) {
	t.Helper()
	switch {
	case collector != nil && check == nil:
		t.Errorf("%s: the collector refuses it, deltaq check accepts it:\n%v", name, collector)
	case collector != nil:
		for _, line := range problems(collector) {
			if !strings.Contains(check.Error(), line) {
				t.Errorf("%s: deltaq check does not repeat the collector's %q:\n%v", name, line, check)
			}
		}
	case check != nil:
		for _, line := range strings.Split(check.Error(), "\n") {
			if !checkOnly.MatchString(line) {
				t.Errorf("%s: the collector accepts it, deltaq check refuses %q", name, line)
			}
		}
	}
}

// problems returns the lines of the collector's err that say what is
// wrong, without the decoder's framing: its "decoding failed due to the
// following error(s):" and the quoted empty path of the section it is
// given.
func problems(err error) []string {
	var out []string
	for _, line := range strings.Split(err.Error(), "\n") {
		line = strings.TrimPrefix(strings.TrimSpace(line), "'' ")
		if !strings.HasSuffix(line, "decoding failed due to the following error(s):") {
			out = append(out, line)
		}
	}
	return out
}

// compareLoad compares the verdicts of the collector and of the reading of
// analyze and slo, which do not need the exporter's endpoint.
func compareLoad(t *testing.T, name string, collector, load error) {
	t.Helper()
	endpointOnly := collector != nil && strings.Count(collector.Error(), "\n") == 0 && strings.Contains(collector.Error(), `requires a non-empty "endpoint"`)
	switch {
	case collector != nil && load == nil && !endpointOnly:
		t.Errorf("%s: the collector refuses it, analyze and slo accept it:\n%v", name, collector)
	case collector == nil && load != nil:
		t.Errorf("%s: the collector accepts it, analyze and slo refuse it:\n%v", name, load)
	}
}

// loadVerdict reads raw as analyze does: offline.Source.Load, then the
// analysis with its processor.
func loadVerdict(t *testing.T, dir string, raw map[string]any) error {
	text, err := yaml.Marshal(raw)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(path, text, 0o600); err != nil {
		t.Fatal(err)
	}
	src := offline.Source{Paths: []string{path}, Processor: "deltaq", Exporter: "deltaq"}
	l, err := src.Load()
	if err != nil {
		return err
	}
	_, proc, err := offline.NewAnalysis(l, l.Analysis)
	if err == nil {
		_ = proc.Shutdown(context.Background())
	}
	return err
}

// collectorVerdict does with the deltaq components of conf what the
// collector does with them: it decodes and validates every section, makes
// the components from their public factories, which share the state of
// the process as a collector's do — the connectors and exporters
// before the processors or after them, both orders occurring in a
// collector — which is what validate does, and starts them. The errors are
// joined; atStart says that only the start refused.
func collectorVerdict(conf *confmap.Conf, readersFirst bool) (err error, atStart bool) {
	var errs []error
	var makers []func() (component.Component, error)
	for _, kind := range []string{"connectors", "exporters", "processors"} {
		sections, _ := conf.Get(kind).(map[string]any)
		for _, id := range slices.Sorted(maps.Keys(sections)) {
			if id != "deltaq" && !strings.HasPrefix(id, "deltaq/") {
				continue
			}
			make, err := decodeComponent(conf, kind, id)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			makers = append(makers, make)
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...), false
	}
	if !readersFirst {
		slices.Reverse(makers)
	}
	var made []component.Component
	defer func() {
		for _, c := range made {
			_ = c.Shutdown(context.Background())
		}
	}()
	for _, make := range makers {
		c, err := make()
		if err != nil {
			return err, false
		}
		made = append(made, c)
	}
	for _, c := range made {
		if err := c.Start(context.Background(), componenttest.NewNopHost()); err != nil {
			return err, true
		}
	}
	return nil, false
}

// decodeComponent decodes and validates the section kind::id of conf, as
// the collector does, and returns what makes its component.
func decodeComponent(conf *confmap.Conf, kind, id string) (func() (component.Component, error), error) {
	ctx := context.Background()
	_, name, _ := strings.Cut(id, "/")
	var cfg component.Config
	var make func() (component.Component, error)
	switch kind {
	case "connectors":
		f := deltaqconnector.NewFactory()
		cfg = f.CreateDefaultConfig()
		set := connectortest.NewNopSettings(f.Type())
		set.ID = component.NewIDWithName(f.Type(), name)
		make = func() (component.Component, error) {
			return f.CreateTracesToMetrics(ctx, set, cfg, consumertest.NewNop())
		}
	case "exporters":
		f := deltaqexporter.NewFactory()
		cfg = f.CreateDefaultConfig()
		set := exportertest.NewNopSettings(f.Type())
		set.ID = component.NewIDWithName(f.Type(), name)
		make = func() (component.Component, error) { return f.CreateTraces(ctx, set, cfg) }
	default:
		f := deltaqprocessor.NewFactory()
		cfg = f.CreateDefaultConfig()
		set := processortest.NewNopSettings(f.Type())
		set.ID = component.NewIDWithName(f.Type(), name)
		make = func() (component.Component, error) { return f.CreateTraces(ctx, set, cfg, consumertest.NewNop()) }
	}
	key := confpath.Section(kind, id)
	sub, err := conf.Sub(key)
	if err == nil {
		err = sub.Unmarshal(cfg)
	}
	if err == nil {
		err = confmap.Validate(cfg)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	return make, nil
}

func deepCopy(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = deepCopy(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = deepCopy(e)
		}
		return out
	}
	return v
}

// mutate changes one thing of a deltaq section of raw, and says what.
func mutate(r *rand.Rand, raw map[string]any) string {
	var secs [][2]string
	for _, kind := range []string{"processors", "connectors", "exporters"} {
		m, _ := raw[kind].(map[string]any)
		for _, id := range slices.Sorted(maps.Keys(m)) {
			if id == "deltaq" || strings.HasPrefix(id, "deltaq/") {
				secs = append(secs, [2]string{kind, id})
			}
		}
	}
	s := secs[r.IntN(len(secs))]
	sections := raw[s[0]].(map[string]any)
	sec, ok := sections[s[1]].(map[string]any)
	if !ok {
		sec = map[string]any{}
		sections[s[1]] = sec
	}
	probes, _ := sec["probes"].(map[string]any)
	switch op := r.IntN(8); {
	case op == 0:
		return renameOption(r, sec)
	case op == 1:
		return removeOption(r, sec)
	case op <= 4 && len(probes) > 0:
		return mutateProbe(r, probes)
	case s[0] == "processors":
		k := pick(r, slices.Sorted(maps.Keys(processorValues)))
		v := pick(r, processorValues[k])
		sec[k] = v
		return fmt.Sprintf("%s = %v", k, v)
	}
	k := pick(r, slices.Sorted(maps.Keys(sectionValues)))
	v := pick(r, sectionValues[k])
	sec[k] = deepCopy(v)
	return fmt.Sprintf("%s = %v", k, v)
}

func pick[T any](r *rand.Rand, l []T) T { return l[r.IntN(len(l))] }

// misspell returns s with one slip: two letters swapped, one dropped, the
// first capitalized, or one added.
func misspell(r *rand.Rand, s string) string {
	switch i := r.IntN(len(s)); r.IntN(4) {
	case 0:
		if i == len(s)-1 {
			i--
		}
		b := []byte(s)
		b[i], b[i+1] = b[i+1], b[i]
		return string(b)
	case 1:
		return s[:i] + s[i+1:]
	case 2:
		return strings.ToUpper(s[:1]) + s[1:]
	}
	return s + "s"
}

// renameOption misspells an option of sec.
func renameOption(r *rand.Rand, sec map[string]any) string {
	if len(sec) == 0 {
		return "nothing to rename"
	}
	k := pick(r, slices.Sorted(maps.Keys(sec)))
	nk := misspell(r, k)
	if _, taken := sec[nk]; taken || len(k) < 4 || nk == k {
		return "option " + k + " kept"
	}
	sec[nk] = sec[k]
	delete(sec, k)
	return fmt.Sprintf("option %s renamed %s", k, nk)
}

func removeOption(r *rand.Rand, sec map[string]any) string {
	if len(sec) == 0 {
		return "nothing to remove"
	}
	k := pick(r, slices.Sorted(maps.Keys(sec)))
	delete(sec, k)
	return "option " + k + " removed"
}

// mutateProbe changes an option of a probe, or its name.
func mutateProbe(r *rand.Rand, probes map[string]any) string {
	name := pick(r, slices.Sorted(maps.Keys(probes)))
	p, ok := probes[name].(map[string]any)
	if !ok {
		p = map[string]any{}
		probes[name] = p
	}
	switch r.IntN(4) {
	case 0:
		return "probe " + name + ": " + renameOption(r, p)
	case 1:
		return "probe " + name + ": " + removeOption(r, p)
	case 2:
		nn := pick(r, []string{strings.ToUpper(name[:1]) + name[1:], name + "ü", misspell(r, name)})
		if _, taken := probes[nn]; !taken {
			probes[nn] = deepCopy(p)
			if r.IntN(2) == 0 {
				delete(probes, name)
				return "probe " + name + " renamed " + nn
			}
		}
		return "probe " + name + " copied as " + nn
	}
	k := pick(r, slices.Sorted(maps.Keys(probeValues)))
	v := pick(r, probeValues[k])
	p[k] = deepCopy(v)
	return fmt.Sprintf("probe %s: %s = %v", name, k, v)
}

// points is a list of QTA or Quality of Outcome points.
func points(pairs ...any) []any {
	var out []any
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, map[string]any{"delay": pairs[i], "p": pairs[i+1]})
	}
	return out
}

// sectionValues are values of the analysis options of the connector and
// the exporter (their READMEs' tables), within their ranges and beyond,
// and of other shapes.
var sectionValues = map[string][]any{
	"interval":           {"5s", "100ms", "50ms", "2h", "1", "0", "-1s", "1e3ms", "500µs", " 2s ", 3},
	"lag":                {"0", "2s", "17s", "-1s", "1d", 5},
	"history":            {0, -1, 1, 1000, 1001, "30", 1.5},
	"max_probes":         {0, -1, 1, 100001, "x"},
	"probe_idle_timeout": {"500ms", "1s", "168h", "169h", "1d", 10},
	"max_request_bytes":  {0, 1, 1024, 1 << 40, "3MiB", -5},
	"quantiles":          {[]any{}, []any{0.5, 0.5}, []any{"50%"}, []any{0, 1}, []any{1.5}, []any{"0.9"}, map[string]any{}, 0.5},
	"histogram":          {map[string]any{}, map[string]any{"exponential": map[string]any{}}, map[string]any{"exponential": map[string]any{"max_size": 1}}, map[string]any{"exponential": nil}, "exponential", map[string]any{"exponentail": map[string]any{}}},
	"emit_windows":       {true, "yes", 1},
	"windows_only":       {true, "yes"},
	"cdf_points":         {0, -1, 1, 1001, "32"},
	"diagram":            {"", "x = y;", "checkout = inventory -> paymnet;", "a = b; b = a;", "checkout = Inventory -> payment;", "checkout = inventory ->", "ünïcode = inventory;", 42},
	"whatif":             {map[string]any{}, map[string]any{"s": map[string]any{"nosuch": "uniform(0, 1ms)"}}, map[string]any{"s": map[string]any{}}, map[string]any{"s": "x"}},
	"services":           {map[string]any{"max_per_probe": 0}, map[string]any{"max_per_probe": -1}, map[string]any{"idle_timeout": "1ms"}, map[string]any{"idle_timout": "1m"}, map[string]any{}},
	"rearm_windows":      {0, -1, 10001, "1"},
	"exemplars":          {map[string]any{"enabled": "no"}, map[string]any{"max_per_probe": 0}, map[string]any{"max_per_probe": 100000}, map[string]any{}},
	"worst_instances":    {0, -1, 100000},
	"max_adjusted_count": {0, -1, 1, 1 << 62, "1024"},
	"snapshot":           {map[string]any{"before": -1}, map[string]any{"after": "2h"}, map[string]any{"directory": "/nonexistent"}, map[string]any{"enabled": "maybe"}, map[string]any{"after": 5}},
	"gateway":            {map[string]any{"layout_quorum": 0}, map[string]any{"max_agents": 0}, map[string]any{"max_agents": 1000000}, map[string]any{"expected_agents": -1}, map[string]any{"max_unconfigured_probes": 2000000}, map[string]any{"max_agent": 5}, map[string]any{}},
	"start_events":       {map[string]any{"max_in_flight": 0}, map[string]any{"timer_resolution": "2s"}, map[string]any{"timeout_grace": "-1s"}, map[string]any{"late_window": "1h", "ended_window": "1s"}, map[string]any{"timer_resolution": 10}, map[string]any{}},
}

// processorValues are values of the processor's options.
var processorValues = map[string][]any{
	"max_in_flight": {0, -1, 1, 1 << 40}, "timer_resolution": {"0", "1ms", "2s", 5}, "timeout_grace": {"-1s", "1h", "x"},
	"late_window": {"1h", "0"}, "max_ended": {1, "1ms"}, "ended_window": {"1s", "2m"}, "failure": {map[string]any{}, 5, map[string]any{"status_eror": true}},
}

// probeValues are values of a probe's options.
var probeValues = map[string][]any{
	"dmax":     {"auto", "AUTO", "0", "500", 500, "25h", "1µs", "500us", "1.5s", "-1s"},
	"bins":     {0, -1, 1, 1000, 1001, "100", 100.5, 3},
	"exponent": {0, -11, 10},
	"binning":  {map[string]any{"kind": "log-linear", "factor": 10, "low": "1ms", "high": "10s", "steps": 10}, map[string]any{"kind": "linear"}, map[string]any{}},
	"qta": {
		map[string]any{"points": points("1ms", 0.5)}, map[string]any{"points": points("1h", 0.5)}, map[string]any{"points": points("150ms", "50%")},
		map[string]any{"points": points("7ms", 0.5)}, map[string]any{"points": points("100ms", 1.5)}, map[string]any{"points": points("100ms", 0.9, "50ms", 0.95)},
		map[string]any{"points": []any{}}, map[string]any{"points": points(100, 0.5)}, map[string]any{"max_failure": "1%"}, map[string]any{"max_failur": 0.1},
	},
	"triggers": {
		map[string]any{"qta": true}, map[string]any{"failure": true}, map[string]any{"confidence": 1.5}, map[string]any{"confidence": "99%"},
		map[string]any{"max_divergence": 2}, map[string]any{"divergence": map[string]any{"alpha": 0.01, "windows": 0, "pool": 61}},
		map[string]any{"slack_trend": map[string]any{"horizon": "10m", "windows": 2}}, map[string]any{"divergance": map[string]any{}},
	},
	"qoo": {
		map[string]any{}, map[string]any{"rop": map[string]any{"points": points("100ms", 0.5)}},
		map[string]any{"rop": map[string]any{"points": points("100ms", "50%")}, "cpup": map[string]any{"points": points("200ms", 0.5)}},
		map[string]any{"rop": map[string]any{"points": points("300ms", 0.5)}, "cpup": map[string]any{"points": points("200ms", 0.5)}},
		map[string]any{"min_rate": -1}, map[string]any{"rop": map[string]any{"max_failure": 0.1}, "cpup": map[string]any{"max_failure": 0.05}},
	},
	"match":    {map[string]any{}, nil, map[string]any{"span_name": ""}, map[string]any{"span_name_regexp": "("}, map[string]any{"span_kind": "sever"}, map[string]any{"spanname": "x"}, "x"},
	"failure":  {map[string]any{"status_error": "no"}, map[string]any{"conditions": []any{map[string]any{"attribute": "a", "op": "=~", "value": 1}}}, nil},
	"dmax_min": {"1ms", "0", "25h", 5}, "dmax_max": {"1m", "1ns"}, "dmax_sample": {99, 1000}, "dmax_changes_per_hour": {0, 3601},
}
