// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package confcheck

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestUnknownKeys: a misspelled option is reported where it is, with the
// closest valid key, at the top, in a list, in a map keyed by name and in a
// squashed struct's keys. A key differing from an option only in case is
// unknown too, as the collector's decoder matches keys case-sensitively:
// let through, it would be refused as "invalid keys: Probes", with neither
// its path nor the option meant.
func TestUnknownKeys(t *testing.T) {
	conf := load(t, `
histroy: 5
gracee: 1s
probes:
  - {name: a, bin: 100}
by_name:
  c: {dmax: 1s, binz: 3, zzzzzzzz: 1}
Probes: []
`)
	err := Check(conf, &testConfig{}, nil)
	require.Error(t, err)
	assert.Equal(t, ""+
		"Probes: unknown option; did you mean probes?\n"+
		"gracee: unknown option; did you mean grace?\n"+
		"histroy: unknown option; did you mean history?\n"+
		"probes[0].bin: unknown option; did you mean bins?\n"+
		`by_name["c"].binz: unknown option; did you mean bins?`+"\n"+
		`by_name["c"].zzzzzzzz: unknown option; the options here are bins, dmax, exponent, inner, name`,
		err.Error())
	var cfg testConfig
	assert.ErrorContains(t, load(t, "Probes: []").Unmarshal(&cfg), "invalid keys: Probes", "the decoder refuses the key too")
}

// TestBadDurationUnits: a duration with a unit Go does not know is quoted,
// with the units there are and, for a common spelling, the value rewritten.
func TestBadDurationUnits(t *testing.T) {
	for _, c := range []struct{ written, want string }{
		{"2min", `"2min" is not a duration: the units are ns, us (or µs), ms, s, m and h; write 2m`},
		{"2sec", `"2sec" is not a duration: the units are ns, us (or µs), ms, s, m and h; write 2s`},
		{"1.5 hours", `"1.5 hours" is not a duration: the units are ns, us (or µs), ms, s, m and h; write 1.5h`},
		{"250msec", `"250msec" is not a duration: the units are ns, us (or µs), ms, s, m and h; write 250ms`},
		{"1d", `"1d" is not a duration: the units are ns, us (or µs), ms, s, m and h; write 24h0m0s`},
		{"2 fortnights", `"2 fortnights" is not a duration: the units are ns, us (or µs), ms, s, m and h, for example 500ms or 2s`},
		{"soon", `"soon" is not a duration: the units are ns, us (or µs), ms, s, m and h, for example 500ms or 2s`},
	} {
		err := Check(load(t, "grace: "+c.written), &testConfig{}, nil)
		if assert.Error(t, err, c.written) {
			assert.Equal(t, "grace: "+c.want, err.Error())
		}
	}
}
