// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package confcheck

import (
	"math"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/confmap"
)

// fuzzConfig has a field of each kind whose decoding Check guards.
type fuzzConfig struct {
	D   time.Duration `mapstructure:"d"`
	I8  int8          `mapstructure:"i8"`
	U16 uint16        `mapstructure:"u16"`
	I   int           `mapstructure:"i"`
	U64 uint64        `mapstructure:"u64"`
}

// FuzzCheckNumbers checks arbitrary values of duration and integer options
// and decodes those it lets through: a value Check accepts must decode to
// what was written (an integer to the same number, a duration string to
// what Go reads it as, a bare number of a duration only when zero), and a
// refusal must name the option.
func FuzzCheckNumbers(f *testing.F) {
	f.Add(uint8(0), "500ms", int64(0), 0.0)
	f.Add(uint8(0), " 2s ", int64(0), 0.0)
	f.Add(uint8(0), "1.5", int64(0), 0.0)
	f.Add(uint8(1), "", int64(500), 0.0)
	f.Add(uint8(2), "", int64(0), 0.0)
	f.Add(uint8(3), "", int64(128), 0.0)
	f.Add(uint8(4), "", int64(0), 1.5)
	f.Add(uint8(5), "", int64(-1), 0.0)
	f.Add(uint8(6), "", int64(0), 1.8446744073709552e19)
	f.Add(uint8(7), "", int64(0), -9.223372036854776e18)
	f.Fuzz(func(t *testing.T, kind uint8, s string, i int64, fl float64) {
		keys := []string{"d", "i8", "u16", "i", "u64"}
		key := keys[int(kind/3)%len(keys)]
		var raw any
		switch kind % 3 {
		case 0:
			raw = s
		case 1:
			raw = i
		case 2:
			raw = fl
		}
		if key != "d" && kind%3 == 0 {
			return // a string for an integer is the decoder's to refuse
		}
		m := map[string]any{key: raw}
		if err := CheckRaw(m, &fuzzConfig{}, nil); err != nil {
			if !strings.HasPrefix(err.Error(), key+":") {
				t.Fatalf("%s: %#v: error %q does not name it", key, raw, err)
			}
			return
		}
		var cfg fuzzConfig
		if err := confmap.NewFromStringMap(m).Unmarshal(&cfg); err != nil {
			return // refused by the decoder, with its own message
		}
		var got float64
		switch key {
		case "d":
			switch v := raw.(type) {
			case string:
				if want, err := time.ParseDuration(v); err != nil || cfg.D != want {
					t.Fatalf("%q accepted, decoded as %v", v, cfg.D)
				}
			default:
				if cfg.D != 0 {
					t.Fatalf("%v without a unit accepted, decoded as %v", raw, cfg.D)
				}
			}
			return
		case "i8":
			got = float64(cfg.I8)
		case "u16":
			got = float64(cfg.U16)
		case "i":
			got = float64(cfg.I)
			if v, ok := raw.(int64); ok && int64(cfg.I) != v {
				t.Fatalf("%d accepted, decoded as %d", v, cfg.I)
			}
		case "u64":
			got = float64(cfg.U64)
			if v, ok := raw.(int64); ok && (v < 0 || cfg.U64 != uint64(v)) {
				t.Fatalf("%d accepted, decoded as %d", v, cfg.U64)
			}
		}
		want := fl
		if v, ok := raw.(int64); ok {
			want = float64(v)
		}
		if got != want || math.IsNaN(want) {
			t.Fatalf("%s: %v accepted, decoded as %v", key, raw, got)
		}
	})
}
