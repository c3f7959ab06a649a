// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package gencmd

import (
	"bytes"
	"errors"
	"flag"
	"strings"
	"testing"
	"time"
)

// TestFlags: the shared flags have their defaults, take values, refuse
// positional arguments and answer -h with flag.ErrHelp after the help.
func TestFlags(t *testing.T) {
	var c Client
	var stderr bytes.Buffer
	fs := NewFlagSet("gen", &stderr, &c, 3*time.Second)
	if err := Parse(fs, nil); err != nil || c.Endpoint != "127.0.0.1:4317" || c.Timeout != 3*time.Second {
		t.Errorf("defaults: %+v, %v", c, err)
	}
	fs = NewFlagSet("gen", &stderr, &c, 3*time.Second)
	if err := Parse(fs, []string{"-endpoint", "collector:4317", "-timeout", "250ms"}); err != nil ||
		c != (Client{Endpoint: "collector:4317", Timeout: 250 * time.Millisecond}) {
		t.Errorf("set: %+v, %v", c, err)
	}
	fs = NewFlagSet("gen", &stderr, &c, 3*time.Second)
	if err := Parse(fs, []string{"-timeout", "1s", "extra"}); err == nil || err.Error() != `unexpected argument "extra"` {
		t.Errorf("positional argument: %v", err)
	}
	stderr.Reset()
	fs = NewFlagSet("gen", &stderr, &c, 3*time.Second)
	if err := Parse(fs, []string{"-h"}); !errors.Is(err, flag.ErrHelp) || !strings.Contains(stderr.String(), "-endpoint host:port") {
		t.Errorf("-h: %v, help %q", err, stderr.String())
	}
}

func TestDial(t *testing.T) {
	conn, err := Client{Endpoint: "127.0.0.1:1"}.Dial() // connects lazily: no server needed
	if err != nil {
		t.Fatal(err)
	}
	conn.Close()
	if _, err := (Client{Endpoint: "unix:///a b\x00"}).Dial(); err == nil || !strings.HasPrefix(err.Error(), `endpoint "unix:///a b\x00": `) {
		t.Errorf("bad endpoint: %v", err)
	}
}

func TestTicker(t *testing.T) {
	tick, stop := Ticker(0)
	stop()
	if tick != nil {
		t.Error("Ticker(0) returned a channel")
	}
	tick, stop = Ticker(time.Millisecond)
	defer stop()
	select {
	case <-tick:
	case <-time.After(10 * time.Second):
		t.Error("Ticker(1ms) did not tick")
	}
}
