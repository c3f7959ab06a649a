// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package confcheck

import (
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/config/configopaque"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/confmap"

	"github.com/deltaq-otel/deltaq/internal/confpath"
)

// The test configuration has every shape Check follows.
type inner struct {
	Timeout time.Duration `mapstructure:"timeout"`
	Count   int32         `mapstructure:"count"`
}

type embedded struct {
	Grace time.Duration `mapstructure:"grace"`
}

type textValue int

func (v *textValue) UnmarshalText(b []byte) error {
	n, err := strconv.Atoi(string(b))
	*v = textValue(n)
	return err
}

type probe struct {
	Name     string        `mapstructure:"name"`
	DMax     time.Duration `mapstructure:"dmax"`
	Bins     int           `mapstructure:"bins"`
	Exponent *int          `mapstructure:"exponent"`
	Inner    *inner        `mapstructure:"inner"`
}

type testConfig struct {
	Embedded   embedded                         `mapstructure:",squash"`
	Probes     []probe                          `mapstructure:"probes"`
	ByName     map[string]probe                 `mapstructure:"by_name"`
	Delays     []time.Duration                  `mapstructure:"delays"`
	History    int                              `mapstructure:"history"`
	Small      uint8                            `mapstructure:"small"`
	Bytes      int64                            `mapstructure:"bytes"`
	Ratio      float64                          `mapstructure:"ratio"`
	Opt        configoptional.Optional[inner]   `mapstructure:"opt"`
	Text       textValue                        `mapstructure:"text"`
	Anything   any                              `mapstructure:"anything"`
	Attributes map[string]any                   `mapstructure:"attributes"`
	Ignored    time.Duration                    `mapstructure:"-"`
	NoTag      time.Duration                    //nolint:tagliatelle // keyed by its Go name
	Nested     struct{ Interval time.Duration } `mapstructure:"nested"`
}

// load reads YAML the way the collector does, so that the raw values have
// the types its YAML decoder gives them (int, uint64, float64, string).
func load(t *testing.T, yaml string) *confmap.Conf {
	t.Helper()
	r, err := confmap.NewRetrievedFromYAML([]byte(yaml))
	require.NoError(t, err)
	conf, err := r.AsConf()
	require.NoError(t, err)
	return conf
}

func TestCheckAcceptsWhatDecodesFaithfully(t *testing.T) {
	conf := load(t, `
grace: 0
probes:
  - {name: a, dmax: 500ms, bins: 100, exponent: -3}
  - {name: b, dmax: "2s", bins: 1e3, inner: {timeout: 0, count: 2147483647}}
by_name:
  c: {dmax: 1h, bins: 0}
delays: [1s, 0]
history: 9223372036854775807
small: 255
bytes: -9223372036854775808
ratio: 2.5
opt: {timeout: 3s}
text: "12"
anything: 500
attributes: {x: 1e300, y: 500}
nested: {Interval: 5s}
NoTag: 1m
`)
	cfg := &testConfig{}
	require.NoError(t, Check(conf, cfg, nil))
	// The decoder agrees: every value arrives as written.
	require.NoError(t, conf.Unmarshal(cfg))
	assert.Equal(t, 1000, cfg.Probes[1].Bins)
	assert.Equal(t, int64(-1<<63), cfg.Bytes)
}

// TestCheckDurationWithoutUnit checks that a bare number for a duration is
// refused wherever the duration is: at the top, squashed, in a list, in a
// map keyed by name, behind a pointer, in an optional section, in a list of
// durations, and keyed by a Go field name.
func TestCheckDurationWithoutUnit(t *testing.T) {
	conf := load(t, `
grace: 200
probes:
  - {name: a, dmax: 500}
  - {name: b, dmax: 1.5, inner: {timeout: -5}}
by_name:
  c: {dmax: "30"}
delays: [1s, 100]
opt: {timeout: 7}
Ignored: 5
NoTag: 60
nested: {Interval: 1e9}
`)
	err := Check(conf, &testConfig{}, nil)
	require.Error(t, err)
	const hint = " has no unit; write a duration such as 500ms or 2s"
	assert.Equal(t, ""+
		// A field tagged "-" is not an option: the decoder refuses the key too.
		"Ignored: unknown option; the options here are NoTag, anything, attributes, by_name, bytes, delays, grace, history, nested, opt, probes, ratio, small, text\n"+
		"grace: 200"+hint+"\n"+
		"probes[0].dmax: 500"+hint+"\n"+
		"probes[1].dmax: 1.5"+hint+"\n"+
		"probes[1].inner.timeout: -5"+hint+"\n"+
		`by_name["c"].dmax: 30`+hint+"\n"+
		"delays[1]: 100"+hint+"\n"+
		"opt.timeout: 7"+hint+"\n"+
		"NoTag: 60"+hint+"\n"+
		"nested.Interval: 1000000000"+hint,
		err.Error())
}

// TestCheckIntegers checks integers as YAML delivers them: 1e20 and
// -9223372036854775809 arrive as float64, 18446744073709551615 as uint64.
// Without the check the decoder turns 1e20 into -9223372036854775808 (Go's
// float-to-int conversion on amd64), 2.5 into 2 and 256 into 0 for a uint8.
func TestCheckIntegers(t *testing.T) {
	conf := load(t, `
history: 100000000000000000000
bytes: -9223372036854775809
small: 256
probes:
  - {bins: 2.5}
  - {bins: 18446744073709551615, exponent: .inf}
  - {inner: {count: 2147483648}}
by_name:
  x: {bins: 1e19}
`)
	err := Check(conf, &testConfig{}, nil)
	require.Error(t, err)
	assert.Equal(t, ""+
		"probes[0].bins: 2.5 is not an integer\n"+
		"probes[1].bins: 18446744073709551615 is out of the integer range [-9223372036854775808, 9223372036854775807]\n"+
		"probes[1].exponent: +Inf is not an integer\n"+
		"probes[2].inner.count: 2147483648 is out of the integer range [-2147483648, 2147483647]\n"+
		`by_name["x"].bins: 10000000000000000000 is out of the integer range [-9223372036854775808, 9223372036854775807]`+"\n"+
		"history: 100000000000000000000 is out of the integer range [-9223372036854775808, 9223372036854775807]\n"+
		"small: 256 is out of the integer range [0, 255]\n"+
		"bytes: -9223372036854776000 is out of the integer range [-9223372036854775808, 9223372036854775807]",
		err.Error())
	// -9223372036854775809 became the float −2⁶³ in the YAML decoder, whose
	// shortest decimal form is -9223372036854776000: as close to what was
	// written as the decoder left it, and below the range as printed.
}

// TestCheckIntegerEdges checks the ends of the integer ranges in float form.
func TestCheckIntegerEdges(t *testing.T) {
	// 2⁶³ is the float64 nearest 9223372036854775807 and out of range; its
	// shortest decimal form is 9223372036854776000.
	conf := confmap.NewFromStringMap(map[string]any{"bytes": float64(1 << 63)})
	assert.EqualError(t, Check(conf, &testConfig{}, nil),
		"bytes: 9223372036854776000 is out of the integer range [-9223372036854775808, 9223372036854775807]")
	// The largest float64 below 2⁶³ is 2⁶³ − 1024, in range.
	conf = confmap.NewFromStringMap(map[string]any{"bytes": float64(1<<63 - 1024)})
	assert.NoError(t, Check(conf, &testConfig{}, nil))
	// For narrower fields both float ends are exact.
	conf = confmap.NewFromStringMap(map[string]any{"probes": []any{map[string]any{"inner": map[string]any{"count": float64(-1 << 31)}}}})
	assert.NoError(t, Check(conf, &testConfig{}, nil))
	conf = confmap.NewFromStringMap(map[string]any{"small": -1})
	assert.EqualError(t, Check(conf, &testConfig{}, nil), "small: -1 is out of the integer range [0, 255]")
}

// TestCheckShapes: a value of a shape the decoder refuses is reported at
// its path with what the option takes; a nil or empty section is fine.
func TestCheckShapes(t *testing.T) {
	conf := load(t, `
probes: {a: 1}
by_name: [1, 2]
history: "many"
grace: true
text: 5
nested: 3s
`)
	assert.EqualError(t, Check(conf, &testConfig{}, nil), ""+
		"grace: must be a duration such as 500ms or 2s, got true\n"+
		"probes: must be a list, got a map\n"+
		"by_name: must be a map from each name to its options, got a list\n"+
		`history: must be an integer, got the string "many"`+"\n"+
		`nested: must be a map of its options (Interval), got the string "3s"`)
	conf = load(t, "probes: [{name: 404, inner: fast, bins: [1]}]")
	assert.EqualError(t, Check(conf, &testConfig{}, nil), ""+
		`probes[0].name: must be a string (quote it: "404"), got the number 404`+"\n"+
		"probes[0].bins: must be an integer, got a list\n"+
		`probes[0].inner: must be a map of its options (count, timeout), got the string "fast"`)
	// A map keyed by name written as a list of named items.
	conf = load(t, "by_name: [{name: pay, dmax: 1s}]\nattributes: [a]")
	assert.EqualError(t, Check(conf, &testConfig{}, nil), ""+
		"by_name: must be a map from each name to its options, got a list; write each item under its name (pay: {…})\n"+
		"attributes: must be a map, got a list")
	assert.NoError(t, Check(confmap.NewFromStringMap(nil), &testConfig{}, nil))
	assert.NoError(t, Check(nil, &testConfig{}, nil))
}

// TestCheckShapesAgreeWithDecoder decodes every value of a set into every
// kind of field with the collector's decoder: whatever the decoder refuses,
// Check refuses too (in this package's notation), and a shape Check
// refuses ("must be …") the decoder refuses as well. Check also refuses
// some values the decoder takes, which it decodes to what nobody wrote (a
// duration without a unit, a fraction into an integer); those are not
// shape messages.
func TestCheckShapesAgreeWithDecoder(t *testing.T) {
	type shapes struct {
		S   string               `mapstructure:"s"`
		PS  *string              `mapstructure:"ps"`
		B   bool                 `mapstructure:"b"`
		I   int                  `mapstructure:"i"`
		U   uint8                `mapstructure:"u"`
		F   float64              `mapstructure:"f"`
		D   time.Duration        `mapstructure:"d"`
		L   []string             `mapstructure:"l"`
		LI  []int                `mapstructure:"li"`
		LD  []time.Duration      `mapstructure:"ld"`
		LS  []inner              `mapstructure:"ls"`
		Arr [2]int               `mapstructure:"arr"`
		M   map[string]int       `mapstructure:"m"`
		MS  map[string]inner     `mapstructure:"ms"`
		St  inner                `mapstructure:"st"`
		PSt *inner               `mapstructure:"pst"`
		T   textValue            `mapstructure:"t"`
		H   configopaque.MapList `mapstructure:"h"`
		A   any                  `mapstructure:"a"`
		MA  map[string]any       `mapstructure:"ma"`
		MD  map[string]string    `mapstructure:"md"`
	}
	keys, _ := structKeys(reflect.TypeFor[shapes]())
	require.Len(t, keys, reflect.TypeFor[shapes]().NumField(), "every field is a key")
	values := []string{`"x"`, `""`, "404", "2.5", "-1", "true", "[1, 2]", "[]", "{a: 1}", "{a: x}", "{}", `"1,2"`, "null", "1%", "3s", "[3s]", "{count: 1}"}
	// Both kinds of case occur, so that neither direction holds vacuously.
	refused, taken := 0, 0
	for _, k := range keys {
		for _, v := range values {
			yaml := k + ": " + v
			var cfg shapes
			decodeErr := load(t, yaml).Unmarshal(&cfg)
			checkErr := Check(load(t, yaml), &shapes{}, nil)
			// A type that decodes itself (from text, or from a map) judges
			// what it is given itself.
			if decodeErr != nil && k != "t" && k != "h" {
				assert.Error(t, checkErr, "%s: the decoder refuses it (%v)", yaml, decodeErr)
			}
			if checkErr != nil && strings.Contains(checkErr.Error(), ": must be ") {
				assert.Error(t, decodeErr, "%s: Check refuses its shape (%v)", yaml, checkErr)
			}
			if decodeErr != nil {
				refused++
			} else {
				taken++
			}
		}
	}
	assert.Greater(t, refused, 100, "values the decoder refuses")
	assert.Greater(t, taken, 50, "values the decoder takes")
	// A header list written as a map, as the collector's exporters take it.
	var headers shapes
	require.NoError(t, load(t, "h: {authorization: x}").Unmarshal(&headers))
	assert.NoError(t, Check(load(t, "h: {authorization: x}"), &shapes{}, nil))
}

// TestCheckPaths: each problem is a *confpath.Error at its value's path,
// which the caller's rewrite changes before the message is written.
func TestCheckPaths(t *testing.T) {
	conf := load(t, "by_name: {c: {dmax: 5}}\nprobes: [{inner: {count: 2.5}}]")
	err := Check(conf, &testConfig{}, nil)
	var pe *confpath.Error
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, confpath.Fields("probes").Index(0).Field("inner").Field("count"), pe.Path)

	rename := func(p confpath.Path) confpath.Path {
		if len(p) > 1 && p[1].IsIndex {
			return confpath.Fields("probes").Key("first").Field("inner").Field("count")
		}
		return p
	}
	assert.EqualError(t, Check(conf, &testConfig{}, rename), ""+
		`probes["first"].inner.count: 2.5 is not an integer`+"\n"+
		`by_name["c"].dmax: 5 has no unit; write a duration such as 500ms or 2s`)
}

// TestCheckPercentage: a ratio written as a percentage is refused with the
// fraction to write, wherever the float is; a number is taken, and a
// string that is no percentage of a number is no number.
func TestCheckPercentage(t *testing.T) {
	conf := load(t, `
ratio: 1%
by_name:
  a: {inner: {count: 1}}
anything: 5%
`)
	assert.EqualError(t, Check(conf, &testConfig{}, nil), "ratio: 1% is a percentage; write the fraction 0.01")
	type ratios struct {
		Points []struct {
			P float32 `mapstructure:"p"`
		} `mapstructure:"points"`
		MaxFailure float64 `mapstructure:"max_failure"`
	}
	conf = load(t, `
points: [{p: 99.9 %}, {p: 0.5}, {p: "95%"}]
max_failure: "0.1%"
`)
	assert.EqualError(t, Check(conf, &ratios{}, nil), ""+
		"points[0].p: 99.9 % is a percentage; write the fraction 0.999\n"+
		"points[2].p: 95% is a percentage; write the fraction 0.95\n"+
		"max_failure: 0.1% is a percentage; write the fraction 0.001")
	assert.NoError(t, Check(load(t, "max_failure: 0.01"), &ratios{}, nil))
	// Not a percentage of a plain number: no number at all.
	for _, v := range []string{"much%", `"%"`, "1e400%", "0x1p-2%"} {
		err := Check(load(t, "max_failure: "+v), &ratios{}, nil)
		require.Error(t, err, v)
		assert.Contains(t, err.Error(), "max_failure: must be a number, got the string", v)
	}
}

// TestCheckNonEmpty: an empty string in a field tagged confcheck:"nonempty"
// is refused at its path (it would read as the option unset: what an unset
// ${env:…} gives); a missing or null value, a non-empty one and an empty
// one in an untagged field are not.
func TestCheckNonEmpty(t *testing.T) {
	type match struct {
		Name  string `mapstructure:"name" confcheck:"nonempty"`
		Other string `mapstructure:"other"`
	}
	type cfg struct {
		Match map[string]match `mapstructure:"match"`
	}
	err := CheckRaw(map[string]any{"match": map[string]any{
		"a": map[string]any{"name": ""},
		"b": map[string]any{"name": nil, "other": ""},
		"c": map[string]any{"name": "x"},
	}}, &cfg{}, nil)
	require.Error(t, err)
	assert.Equal(t, `match["a"].name: must not be empty (is an environment variable it names unset?); leave the option out to have its default`, err.Error())
}

// TestCheckRequired: a field tagged confcheck:"required" left out of a
// map that is written is refused at its path (it would read as its zero
// value); one written, even as 0, and one of a map not written are not.
func TestCheckRequired(t *testing.T) {
	type point struct {
		P     float64 `mapstructure:"p" confcheck:"required"`
		Other float64 `mapstructure:"other"`
	}
	type cfg struct {
		Points []point `mapstructure:"points"`
		One    *point  `mapstructure:"one"`
	}
	err := CheckRaw(map[string]any{"points": []any{
		map[string]any{"p": 0.5},
		map[string]any{"other": 1},
		map[string]any{"p": 0},
	}}, &cfg{}, nil)
	require.Error(t, err)
	assert.Equal(t, `points[1].p: is missing: it has no default (write 0 for zero)`, err.Error())
}

// TestCheckEmptySection: a struct field tagged nonempty written with
// nothing in it (an empty map, or the key alone) is refused, as it reads
// as no requirement at all; left out, or written with an option, it passes,
// and an untagged section may be empty.
func TestCheckEmptySection(t *testing.T) {
	type req struct {
		Max float64 `mapstructure:"max"`
	}
	type cfg struct {
		Req   req `mapstructure:"req" confcheck:"nonempty"`
		Other req `mapstructure:"other"`
	}
	for _, c := range []struct {
		raw  map[string]any
		want string
	}{
		{map[string]any{"req": map[string]any{}}, "req: is empty, which is no requirement: write its options, or leave it out"},
		{map[string]any{"req": nil}, "req: is empty, which is no requirement: write its options, or leave it out"},
		{map[string]any{"req": map[string]any{"max": 0}}, ""},
		{map[string]any{"other": map[string]any{}}, ""},
		{map[string]any{}, ""},
	} {
		err := CheckRaw(c.raw, &cfg{}, nil)
		if c.want == "" {
			assert.NoError(t, err, "%v", c.raw)
		} else if assert.Error(t, err, "%v", c.raw) {
			assert.Equal(t, c.want, err.Error())
		}
	}
}

// TestCheckMisplacedOption: an option of a nested section written beside
// it (span_name beside match) is named with the section it belongs to, not
// with the list of this level's options, where it is not.
func TestCheckMisplacedOption(t *testing.T) {
	type match struct {
		SpanName string `mapstructure:"span_name"`
	}
	type divergence struct {
		Alpha float64 `mapstructure:"alpha"`
	}
	type triggers struct {
		Divergence divergence `mapstructure:"divergence"`
	}
	type probe struct {
		Match    match    `mapstructure:"match"`
		Triggers triggers `mapstructure:"triggers"`
		DMax     int      `mapstructure:"dmax"`
	}
	err := CheckRaw(map[string]any{"span_name": "x", "bogus": 1, "alpha": 0.01}, &probe{}, nil)
	require.Error(t, err)
	assert.Equal(t, "alpha: an option of triggers.divergence, not of this level: write it under triggers.divergence (triggers: {divergence: {alpha: …}})\n"+
		"bogus: unknown option; the options here are dmax, match, triggers\n"+
		"span_name: an option of match, not of this level: write it under match (match: {span_name: …})", err.Error())
}
