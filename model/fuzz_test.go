// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package model

import (
	"bytes"
	"testing"
)

// FuzzDecode reads arbitrary model.json files (deltaq whatif's input). A
// model read must encode to a file that reads back to a model encoding to
// the same bytes (Encode and Decode round-trip), and a model read whose
// own diagram parses must predict without failing.
func FuzzDecode(f *testing.F) {
	var spans []Span
	for tr := uint64(1); tr <= 10; tr++ {
		spans = append(spans, sp(tr, 1, 0, "R", 0, 10), sp(tr, 2, 1, "C", 1, 3+float64(tr%3)), sp(tr, 3, 1, "D", 4, 6))
	}
	m, _ := build(f, Config{}, spans, 20)
	js, err := m.Encode()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(js)
	f.Add(bytes.Replace(js, []byte(`"call_probability": 1`), []byte(`"call_probability": 2`), 1))
	f.Add(bytes.Replace(js, []byte(`"svc.C"`), []byte(`"svc.R"`), 1))
	f.Add([]byte(`{"version":1,"bin_width":0.001,"nodes":[{"probe":"a","parent":"a"}],"roots":["a"]}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 64<<10 {
			return
		}
		m, err := Decode(data)
		if err != nil {
			return
		}
		out, err := m.Encode()
		if err != nil {
			t.Fatalf("a model read does not encode: %v", err)
		}
		again, err := Decode(out)
		if err != nil {
			t.Fatalf("a model read encodes to a file that does not read: %v\n%s", err, out)
		}
		if out2, err := again.Encode(); err != nil || !bytes.Equal(out, out2) {
			t.Fatalf("encode(decode(encode(m))) differs: %v\n%s\n%s", err, out, out2)
		}
		if d, err := m.ParseDiagram(); err == nil {
			_, _ = m.Predict(d, nil)
		}
	})
}
