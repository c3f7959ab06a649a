// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package e2etest

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Series is one series of a collector's Prometheus telemetry endpoint: its
// metric name, without the _total suffix the exposition gives a counter, its
// labels and its value.
type Series struct {
	Name   string
	Labels map[string]string
	Value  float64
}

// Telemetry is one scrape of a collector's telemetry endpoint
// (service::telemetry::metrics with a pull reader), taken at At: the
// moment the response had been read, so that what it shows happened before
// At.
type Telemetry struct {
	Series []Series
	At     time.Time
}

// Scrape reads the telemetry endpoint at addr (host:port, path /metrics),
// failing the test when it cannot.
func Scrape(t testing.TB, addr string) Telemetry {
	t.Helper()
	tm, err := ScrapeErr(addr)
	if err != nil {
		t.Fatal(err)
	}
	return tm
}

// ScrapeErr is Scrape returning its error, for a poller that must not stop
// the test from another goroutine.
func ScrapeErr(addr string) (Telemetry, error) {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + addr + "/metrics")
	if err != nil {
		return Telemetry{}, fmt.Errorf("scraping %s: %w", addr, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Telemetry{}, fmt.Errorf("scraping %s: %s", addr, resp.Status)
	}
	series, err := parseExposition(resp.Body)
	if err != nil {
		return Telemetry{}, fmt.Errorf("scraping %s: %w", addr, err)
	}
	return Telemetry{Series: series, At: time.Now()}, nil
}

// Sum is the sum of the series of metric name (without _total) whose
// labels include every pair of match; 0 when there is none, as for a
// counter that has not been added to yet, which the endpoint does not show.
func (tm Telemetry) Sum(name string, match map[string]string) float64 {
	var sum float64
	for _, s := range tm.Series {
		if s.Name == name && hasLabels(s.Labels, match) {
			sum += s.Value
		}
	}
	return sum
}

func hasLabels(labels, match map[string]string) bool {
	for k, v := range match {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// parseExposition reads the Prometheus text format: a sample a line,
// `name{label="value",…} value [timestamp]`, comments skipped. Label values
// are unescaped (\\, \", \n).
func parseExposition(r io.Reader) ([]Series, error) {
	var out []Series
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		s, err := parseSample(line)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", line, err)
		}
		out = append(out, s)
	}
	return out, sc.Err()
}

func parseSample(line string) (Series, error) {
	s := Series{Labels: map[string]string{}}
	end := strings.IndexAny(line, "{ ")
	if end <= 0 {
		return s, fmt.Errorf("no metric name")
	}
	s.Name = strings.TrimSuffix(line[:end], "_total")
	rest := line[end:]
	if rest[0] == '{' {
		var err error
		if rest, err = parseLabels(rest[1:], s.Labels); err != nil {
			return s, err
		}
	}
	f := strings.Fields(rest)
	if len(f) == 0 {
		return s, fmt.Errorf("no value")
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return s, err
	}
	s.Value = v
	return s, nil
}

// parseLabels reads `name="value",…}` into labels and returns what follows
// the closing brace.
func parseLabels(s string, labels map[string]string) (string, error) {
	for {
		s = strings.TrimLeft(s, ", ")
		if strings.HasPrefix(s, "}") {
			return s[1:], nil
		}
		name, rest, ok := strings.Cut(s, `="`)
		if !ok {
			return "", fmt.Errorf("a label without a quoted value")
		}
		var v strings.Builder
		i := 0
		for ; i < len(rest) && rest[i] != '"'; i++ {
			c := rest[i]
			if c == '\\' && i+1 < len(rest) {
				i++
				switch rest[i] {
				case 'n':
					c = '\n'
				default:
					c = rest[i]
				}
			}
			v.WriteByte(c)
		}
		if i == len(rest) {
			return "", fmt.Errorf("label %s: no closing quote", name)
		}
		labels[name] = v.String()
		s = rest[i+1:]
	}
}

// Reading is one value a Watch read from a scrape begun at From and read
// at To: the value was true at some moment between the two.
type Reading struct {
	From, To time.Time
	Value    float64
	Err      error
}

// Watch scrapes a collector's telemetry endpoint in a loop, keeping one
// value of each scrape, until stopped: a counter's course in time.
type Watch struct {
	mu       sync.Mutex
	readings []Reading
	stop     sync.Once
	done     chan struct{}
	exited   chan struct{}
}

// WatchTelemetry starts scraping addr every period, keeping value of each
// scrape (0 for a scrape that failed, with its error).
func WatchTelemetry(addr string, period time.Duration, value func(Telemetry) float64) *Watch {
	w := &Watch{done: make(chan struct{}), exited: make(chan struct{})}
	go func() {
		defer close(w.exited)
		for {
			select {
			case <-w.done:
				return
			case <-time.After(period):
			}
			r := Reading{From: time.Now()}
			tm, err := ScrapeErr(addr)
			if r.Err = err; err == nil {
				r.To, r.Value = tm.At, value(tm)
			}
			w.mu.Lock()
			w.readings = append(w.readings, r)
			w.mu.Unlock()
		}
	}()
	return w
}

// Last is the value of the latest scrape that succeeded; 0 before one.
func (w *Watch) Last() float64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	for i := len(w.readings) - 1; i >= 0; i-- {
		if w.readings[i].Err == nil {
			return w.readings[i].Value
		}
	}
	return 0
}

// Stop stops the scraping and returns the readings, in order; it may be
// called again (a deferred Stop of a test that stopped it itself).
func (w *Watch) Stop() []Reading {
	w.stop.Do(func() { close(w.done) })
	<-w.exited
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.readings)
}

// CheckOnTime checks the readings of a counter of events, each due at its
// deadline, that it counts every event in real time: no reading counts
// more events than had their deadline by its To (none is counted early),
// none fewer than had it within before its From (none is counted later
// than within after its deadline), and the last counts every event. It
// fails t for the first reading of each kind that does not, and returns
// the longest an event took, from its deadline, to show in a reading.
func CheckOnTime(t testing.TB, what string, readings []Reading, deadlines []time.Time, within time.Duration) time.Duration {
	t.Helper()
	problems, latest := onTime(readings, deadlines, within)
	for _, p := range problems {
		t.Errorf("%s: %s", what, p)
	}
	return latest
}

// onTime is CheckOnTime's verdict: its problems, and the longest delay.
func onTime(readings []Reading, deadlines []time.Time, within time.Duration) ([]string, time.Duration) {
	due := func(at time.Time) float64 {
		n := 0
		for _, d := range deadlines {
			if !d.After(at) {
				n++
			}
		}
		return float64(n)
	}
	sorted := slices.SortedFunc(slices.Values(deadlines), time.Time.Compare)
	// seen[k] is when the first reading that counted k+1 events was read.
	seen := make([]time.Time, len(sorted))
	var problems []string
	var failed, early, late bool
	var last *Reading
	for i := range readings {
		r := &readings[i]
		if r.Err != nil {
			if !failed {
				failed = true
				problems = append(problems, fmt.Sprintf("scrape begun at %v: %v", r.From, r.Err))
			}
			continue
		}
		last = r
		if n := due(r.To); r.Value > n && !early {
			early = true
			problems = append(problems, fmt.Sprintf("read at %v: %.0f, but only %.0f deadlines had passed", r.To, r.Value, n))
		}
		if n := due(r.From.Add(-within)); r.Value < n && !late {
			late = true
			problems = append(problems, fmt.Sprintf("begun at %v: %.0f, but %.0f deadlines had passed %v before", r.From, r.Value, n, within))
		}
		for k := 0; k < int(r.Value) && k < len(seen); k++ {
			if seen[k].IsZero() {
				seen[k] = r.To
			}
		}
	}
	switch {
	case last == nil:
		problems = append(problems, "no reading")
	case last.Value != float64(len(deadlines)):
		problems = append(problems, fmt.Sprintf("ends at %.0f, want %d", last.Value, len(deadlines)))
	}
	var latest time.Duration
	for k, at := range seen {
		if !at.IsZero() {
			latest = max(latest, at.Sub(sorted[k]))
		}
	}
	return problems, latest
}
