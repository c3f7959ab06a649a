// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package offline

// Reading plain configuration files, those with no ${…} reference to
// expand, in one pass. The collector's resolver reads them the same way but
// copies the whole configuration several times over, and its YAML decoder
// looks for a duplicate key by comparing each key of a mapping with every
// later one: a connector with 20,000 probes made 200 million comparisons.
// Here a mapping's keys go into a set, and a duplicate is still refused,
// with the lines of both.

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.opentelemetry.io/collector/confmap"
	"go.yaml.in/yaml/v3"
)

// maxDuplicateKeys is how many duplicate keys an error lists; the rest are
// counted.
const maxDuplicateKeys = 10

// resolvePlain reads the locations when each is a file (a path, or
// file:PATH) without a $ in it, so that the resolver would expand nothing
// and only parse and merge the files. ok is false when a location is of
// another kind, holds a $, cannot be read, or uses what the parser below
// leaves to the resolver (aliases, merge keys, keys that are not strings,
// tags other than the core schema's string, integer, float, boolean and
// null); the resolver then reads them all, and says what is wrong with
// them in its own words. A duplicate key is an error here, as it is there.
func resolvePlain(paths []string) (conf *confmap.Conf, ok bool, err error) {
	var confs []*confmap.Conf
	for _, uri := range paths {
		path, isFile := strings.CutPrefix(uri, "file:")
		if !isFile && strings.Contains(uri, ":") {
			return nil, false, nil
		}
		data, err := os.ReadFile(filepath.Clean(path))
		if err != nil || bytes.IndexByte(data, '$') >= 0 {
			return nil, false, nil
		}
		m, ok, err := parsePlainYAML(data)
		if err != nil {
			return nil, true, fmt.Errorf("%s: %w", uri, err)
		}
		if !ok {
			return nil, false, nil
		}
		confs = append(confs, confmap.NewFromStringMap(m))
	}
	if len(confs) == 1 {
		return confs[0], true, nil
	}
	// Merged in order, as the resolver merges them.
	conf = confmap.New()
	for _, c := range confs {
		if err := conf.Merge(c); err != nil {
			return nil, true, fmt.Errorf("%s: %w", strings.Join(paths, "+"), err)
		}
	}
	return conf, true, nil
}

// parsePlainYAML parses a YAML document into the maps, lists and scalars
// the collector's YAML decoder would give (an empty document is an empty
// map). ok is false when the document is not a mapping or holds what
// plainNode leaves to that decoder; err lists duplicate keys.
func parsePlainYAML(data []byte) (m map[string]any, ok bool, err error) {
	var doc yaml.Node
	if yaml.Unmarshal(data, &doc) != nil {
		return nil, false, nil
	}
	if len(doc.Content) == 0 {
		return map[string]any{}, true, nil
	}
	p := plainParser{}
	v, ok := p.node(doc.Content[0], nil)
	if !ok {
		return nil, false, nil
	}
	if len(p.duplicates) > 0 {
		return nil, true, p.duplicateError()
	}
	m, ok = v.(map[string]any)
	return m, ok, nil
}

// plainParser converts a YAML node tree and collects its duplicate keys.
type plainParser struct {
	duplicates []duplicateKey
}

// duplicateKey is a key given twice in one mapping.
type duplicateKey struct {
	key, path   string
	line, first int
}

// node converts n, at the path of keys path. ok is false for what the
// collector's YAML decoder reads in ways this does not repeat.
func (p *plainParser) node(n *yaml.Node, path []string) (any, bool) {
	switch n.Kind {
	case yaml.MappingNode:
		if n.ShortTag() != "!!map" {
			return nil, false
		}
		return p.mapping(n, path)
	case yaml.SequenceNode:
		if n.ShortTag() != "!!seq" {
			return nil, false
		}
		list := make([]any, 0, len(n.Content))
		for _, e := range n.Content {
			v, ok := p.node(e, path)
			if !ok {
				return nil, false
			}
			list = append(list, v)
		}
		return list, true
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!str":
			return n.Value, true
		case "!!int", "!!float", "!!bool", "!!null":
			// The decoder's own reading of the scalar: int, int64,
			// uint64, float64, bool or nil, as it would give it.
			var v any
			if n.Decode(&v) != nil {
				return nil, false
			}
			return v, true
		}
	}
	return nil, false
}

// mapping converts a mapping whose keys are all strings, noting each key
// that appears twice.
func (p *plainParser) mapping(n *yaml.Node, path []string) (any, bool) {
	m := make(map[string]any, len(n.Content)/2)
	lines := make(map[string]int, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if k.Kind != yaml.ScalarNode || k.ShortTag() != "!!str" {
			return nil, false // merge keys (<<), numbers, null, complex keys
		}
		if first, dup := lines[k.Value]; dup {
			p.duplicates = append(p.duplicates, duplicateKey{key: k.Value, path: strings.Join(path, confmap.KeyDelimiter), line: k.Line, first: first})
			continue
		}
		lines[k.Value] = k.Line
		v, ok := p.node(n.Content[i+1], append(slices.Clip(path), k.Value))
		if !ok {
			return nil, false
		}
		m[k.Value] = v
	}
	return m, true
}

// duplicateError lists the duplicate keys by line, at most
// maxDuplicateKeys of them.
func (p *plainParser) duplicateError() error {
	slices.SortFunc(p.duplicates, func(a, b duplicateKey) int { return a.line - b.line })
	var b strings.Builder
	for i, d := range p.duplicates {
		if i == maxDuplicateKeys {
			fmt.Fprintf(&b, "\n… and %d more duplicate keys", len(p.duplicates)-i)
			break
		}
		if i > 0 {
			b.WriteByte('\n')
		}
		where := "at the top level"
		if d.path != "" {
			where = "in " + d.path
		}
		fmt.Fprintf(&b, "line %d: mapping key %q already defined at line %d (%s); a key may appear once in a mapping", d.line, d.key, d.first, where)
	}
	return fmt.Errorf("%s", b.String())
}
