// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package offline

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// writeTemp writes content to the file name in a new temporary directory
// and returns its path.
func writeTemp(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// scalarsYAML has every kind of value the plain reading converts itself.
const scalarsYAML = `a: 1
b: -2
c: 0x1f
d: 0o17
e: 1.5
f: .inf
g: -.Inf
h: 1_000
i: true
j: False
k: ~
l: null
m:
n: "12"
o: '0x10'
p: 12345678901234567890
q: 123456789012345678901234567890
s: |
  block
  text
t: [1, two, {x: y}]
u: {}
v: []
"quoted key": 1
x::y: 2
nested:
  deep:
    - {name: p, dmax: 1s, bins: 100}
    - name: q
`

// TestResolvePlainAsResolver: a plain file, or several merged, reads as the
// collector's resolver reads it.
func TestResolvePlainAsResolver(t *testing.T) {
	scalars := writeTemp(t, "scalars.yaml", scalarsYAML)
	over := writeTemp(t, "over.yaml", "a: 2\nt: [3]\nnested: {deep: [], more: 1}\nprocessors: {deltaq: {probes: []}}\n")
	cases := [][]string{
		{scalars}, {"file:" + scalars}, {scalars, over},
		{"../../examples/collector.yaml"}, {"../../examples/processor.yaml"}, {"../../examples/exporter.yaml"},
		{"../../testdata/newcomer-collector.yaml"},
		{"../../testdata/newcomer-collector.yaml", "../../examples/collector.yaml"},
	}
	for _, paths := range cases {
		name := strings.Join(paths, "+")
		got, ok, err := resolvePlain(paths)
		if !ok || err != nil {
			t.Errorf("%s: ok %v, err %v", name, ok, err)
			continue
		}
		want, err := resolveExpanding(paths)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !reflect.DeepEqual(got.ToStringMap(), want.ToStringMap()) {
			t.Errorf("%s:\n got %#v\nwant %#v", name, got.ToStringMap(), want.ToStringMap())
		}
	}
}

// TestResolvePlainLeavesToResolver: what the plain reading does not repeat
// goes to the collector's resolver, which reads it as before.
func TestResolvePlainLeavesToResolver(t *testing.T) {
	t.Setenv("DQ_TEST_BINS", "100")
	plain := writeTemp(t, "plain.yaml", "a: 1\n")
	for name, content := range map[string]string{
		"reference": "probes: [{name: p, dmax: 1s, bins: ${env:DQ_TEST_BINS}}]\n",
		"escape":    "a: $$HOME\n",
		"alias":     "a: &x {b: 1}\nc: *x\n",
		"merge key": "a: {b: 1}\nc: {<<: {b: 2}}\n",
		"int key":   "1: a\n",
		"timestamp": "a: 2001-12-14\n",
		"not a map": "- a\n",
		"bad YAML":  "a: [\n",
	} {
		path := writeTemp(t, "c.yaml", content)
		if _, ok, _ := resolvePlain([]string{path}); ok {
			t.Errorf("%s: read as plain", name)
		}
		if _, ok, _ := resolvePlain([]string{plain, path}); ok {
			t.Errorf("%s: read as plain after a plain file", name)
		}
	}
	for _, uri := range []string{"env:DQ_TEST_BINS", "yaml:a: 1", "missing.yaml"} {
		if _, ok, _ := resolvePlain([]string{uri}); ok {
			t.Errorf("%s: read as plain", uri)
		}
	}
	conf, err := Resolve([]string{writeTemp(t, "ref.yaml", "bins: ${env:DQ_TEST_BINS}\n")})
	if err != nil || fmt.Sprint(conf.ToStringMap()["bins"]) != "100" {
		t.Errorf("the resolver expands a reference: %v, %v", conf, err)
	}
}

// TestResolvePlainDuplicateKeys: a key given twice in a mapping is refused
// with both lines and where, as many as there are up to ten.
func TestResolvePlainDuplicateKeys(t *testing.T) {
	path := writeTemp(t, "dup.yaml", "processors:\n  deltaq:\n    probes:\n      - {name: a, dmax: 1s, bins: 10}\n"+
		"connectors:\n  deltaq:\n    probes:\n      a: {}\n      a: {}\nprocessors: {}\n")
	_, err := Resolve([]string{path})
	want := path + ": line 9: mapping key \"a\" already defined at line 8 (in connectors::deltaq::probes); a key may appear once in a mapping\n" +
		"line 10: mapping key \"processors\" already defined at line 1 (at the top level); a key may appear once in a mapping"
	if err == nil || err.Error() != want {
		t.Errorf("error %v\nwant  %s", err, want)
	}
	var b strings.Builder
	b.WriteString("probes:\n")
	for range 12 {
		b.WriteString("  a: 1\n")
	}
	_, ok, err := resolvePlain([]string{writeTemp(t, "dup12.yaml", b.String())})
	if !ok || err == nil || strings.Count(err.Error(), "\n") != 10 || !strings.HasSuffix(err.Error(), "\n… and 1 more duplicate keys") {
		t.Errorf("ok %v, err %v", ok, err)
	}
}

// The default configuration of the image and the archives read with its
// variables set but empty (a template's empty value, `podman run -e
// DELTAQ_MEMORY_LIMIT_MIB=`): each takes its default, as an unset one does.
// The collector's own env provider took the empty value, a memory limit of 0
// and a probe with bins but no dMax, both refused at start.
func TestResolveEmptyVariableTakesDefault(t *testing.T) {
	t.Setenv("DELTAQ_MEMORY_LIMIT_MIB", "")
	t.Setenv("DELTAQ_DMAX", "")
	conf, err := Resolve([]string{"../../deploy/config.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	if got := conf.Get("processors::memory_limiter::limit_mib"); got != 400 {
		t.Errorf("limit_mib %#v, want the default 400", got)
	}
	if got := conf.Get("connectors::deltaq::probes::server::dmax"); got != "10s" {
		t.Errorf("dmax %#v, want the default 10s", got)
	}
	t.Setenv("DELTAQ_MEMORY_LIMIT_MIB", "64")
	if conf, err = Resolve([]string{"../../deploy/config.yaml"}); err != nil || conf.Get("processors::memory_limiter::limit_mib") != 64 {
		t.Errorf("DELTAQ_MEMORY_LIMIT_MIB=64: %v, limit_mib %#v", err, conf.Get("processors::memory_limiter::limit_mib"))
	}
}
