// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package e2e

// Collector D: the window timing of the gateway of deploy/kubernetes, and
// the alert rules Prometheus evaluates on its windows.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/deltaq-otel/deltaq/internal/e2etest"
)

const (
	// instD is collector D's service.instance.id, gatewayJob its service.name
	// (testdata/gateway.yaml), which Prometheus sees as instance and job.
	instD      = "D"
	gatewayJob = "deltaq-gateway"
	// gatewayManifest holds the gateway's configuration, in its ConfigMap.
	gatewayManifest = "../../deploy/kubernetes/gateway.yaml"
)

// The alert rules on the ΔQ metrics: those for a collector whose windows
// reach Prometheus as they close, and those for the gateway.
var (
	shippedRules = filepath.Join("..", "prometheus", "rules", "deltaq-alerts.yml")
	gatewayRules = filepath.Join("..", "..", "deploy", "kubernetes", "prometheus", "deltaq-alerts.yml")
)

// gatewayTiming returns the interval and lag of the deltaq connector of the
// gateway's ConfigMap, as written there.
func gatewayTiming(t *testing.T) (interval, lag string) {
	t.Helper()
	raw, err := os.ReadFile(gatewayManifest)
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	for {
		var doc struct {
			Kind     string                `yaml:"kind"`
			Metadata struct{ Name string } `yaml:"metadata"`
			Data     map[string]string     `yaml:"data"`
		}
		if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("%s: %v", gatewayManifest, err)
		}
		if doc.Kind != "ConfigMap" || doc.Metadata.Name != gatewayJob {
			continue
		}
		var cfg struct {
			Connectors struct {
				Deltaq struct {
					Interval string `yaml:"interval"`
					Lag      string `yaml:"lag"`
				} `yaml:"deltaq"`
			} `yaml:"connectors"`
		}
		if err := yaml.Unmarshal([]byte(doc.Data["config.yaml"]), &cfg); err != nil {
			t.Fatalf("%s: ConfigMap %s: config.yaml: %v", gatewayManifest, gatewayJob, err)
		}
		c := cfg.Connectors.Deltaq
		if c.Interval == "" || c.Lag == "" {
			t.Fatalf("%s: the deltaq connector sets no interval or no lag (%q, %q)", gatewayManifest, c.Interval, c.Lag)
		}
		return c.Interval, c.Lag
	}
	t.Fatalf("%s: no ConfigMap %s", gatewayManifest, gatewayJob)
	return "", ""
}

// breachWatch polls Prometheus's rules for the alerts DeltaQQTABreach holds
// for collector D's job, in each rules file, from its start until stopped: a
// rule without `for` holds an alert for at least the group's 5 s, so polls
// every 250 ms see every one it ever holds.
type breachWatch struct {
	mu      sync.Mutex
	first   map[string]alert     // the first alert seen, by rules file
	evalAt  map[string]time.Time // the rule's last evaluation, by rules file
	polls   int
	maxGap  time.Duration // the longest time between two answered polls
	lastErr error
	stop    chan struct{}
	done    chan struct{}
}

// watchBreach starts a breachWatch.
func watchBreach(prom *prometheus) *breachWatch {
	w := &breachWatch{first: map[string]alert{}, evalAt: map[string]time.Time{}, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		last := time.Now()
		for {
			if err := w.poll(prom); err != nil {
				w.mu.Lock()
				w.lastErr = err
				w.mu.Unlock()
			} else {
				w.mu.Lock()
				w.polls++
				w.maxGap = max(w.maxGap, time.Since(last))
				w.mu.Unlock()
				last = time.Now()
			}
			select {
			case <-w.stop:
				return
			case <-time.After(250 * time.Millisecond):
			}
		}
	}()
	return w
}

// poll reads /api/v1/rules once.
func (w *breachWatch) poll(prom *prometheus) error {
	var out struct {
		Data struct {
			Groups []struct {
				File  string `json:"file"`
				Rules []struct {
					Name           string  `json:"name"`
					LastEvaluation string  `json:"lastEvaluation"`
					Alerts         []alert `json:"alerts"`
				} `json:"rules"`
			} `json:"groups"`
		} `json:"data"`
	}
	if err := prom.get("/api/v1/rules?type=alert", &out); err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, g := range out.Data.Groups {
		for _, r := range g.Rules {
			if r.Name != "DeltaQQTABreach" {
				continue
			}
			if at, err := time.Parse(time.RFC3339Nano, r.LastEvaluation); err == nil {
				w.evalAt[g.File] = at
			}
			for _, a := range r.Alerts {
				if _, seen := w.first[g.File]; !seen && a.Labels["job"] == gatewayJob {
					w.first[g.File] = a
				}
			}
		}
	}
	return nil
}

// firstAlert returns the first alert seen in file, and whether there was one.
func (w *breachWatch) firstAlert(file string) (alert, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	a, ok := w.first[file]
	return a, ok
}

// sendBreach sends D spans that break the probe's QTA (50 ms, p 0.9): 50
// successes of 80 ms. It returns the end of the first window they can fall in.
func sendBreach(t *testing.T, d *e2etest.Collector, interval time.Duration) time.Time {
	t.Helper()
	p := make(phase, 50)
	for k := range p {
		p[k] = span{delay: 80 * time.Millisecond}
	}
	first := time.Now().Truncate(interval).Add(interval)
	send(t, []*e2etest.Collector{d}, p, 3)
	return first
}

// checkGatewayBreach waits for the gateway's rules to fire DeltaQQTABreach
// for D's broken window, and checks that the shipped rules never did: D's
// windows reach Prometheus lag after their end, when the shipped 10s range
// no longer holds them.
func checkGatewayBreach(t *testing.T, prom *prometheus, w *breachWatch, firstEnd time.Time, lag time.Duration, procs []*e2etest.Proc) {
	gateway, shipped := ruleFile(t, gatewayRules), ruleFile(t, shippedRules)
	e2etest.Until(t, "DeltaQQTABreach of "+gatewayRules+" firing for job "+gatewayJob, time.Until(firstEnd.Add(lag+20*time.Second)),
		func() bool { a, ok := w.firstAlert(gateway); return ok && a.State == "firing" }, procs...)
	a, _ := w.firstAlert(gateway)
	active, err := time.Parse(time.RFC3339Nano, a.ActiveAt)
	if err != nil {
		t.Fatalf("DeltaQQTABreach activeAt %q: %v", a.ActiveAt, err)
	}
	t.Logf("the gateway's rules: DeltaQQTABreach active %v after the end of the first window the spans could fall in: %v",
		active.Sub(firstEnd).Round(100*time.Millisecond), a.Labels)
	if active.Before(firstEnd.Add(lag)) {
		t.Errorf("DeltaQQTABreach active at %s, before the broken window can have closed (%s, lag %s after its end)",
			active.Format(time.RFC3339Nano), firstEnd.Add(lag).Format(time.RFC3339Nano), lag)
	}
	if a.Labels["deltaq_probe"] != probe || a.Labels["severity"] != "info" {
		t.Errorf("DeltaQQTABreach labels %v, want probe %s, severity info", a.Labels, probe)
	}
	// The shipped rule, evaluated since, never held an alert for D.
	e2etest.Until(t, "an evaluation of "+shippedRules+" after "+a.ActiveAt, 15*time.Second, func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.evalAt[shipped].After(active)
	}, procs...)
	close(w.stop)
	<-w.done
	if a, ok := w.firstAlert(shipped); ok {
		t.Errorf("DeltaQQTABreach of %s held an alert for job %s (%s since %s): its 10s range saw a window of the gateway",
			shippedRules, gatewayJob, a.State, a.ActiveAt)
	}
	if w.polls == 0 || w.maxGap >= 5*time.Second {
		t.Errorf("Prometheus's rules polled %d times, at most %v apart (last error %v): want every 5 s evaluation seen",
			w.polls, w.maxGap, w.lastErr)
	}
}

// ruleFile is the absolute path of a rules file, as Prometheus names it.
func ruleFile(t *testing.T, rel string) string {
	t.Helper()
	abs, err := filepath.Abs(rel)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// mustDuration parses a duration of a configuration.
func mustDuration(t *testing.T, what, s string) time.Duration {
	t.Helper()
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatal(fmt.Errorf("%s: %w", what, err))
	}
	return d
}
