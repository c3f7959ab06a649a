// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package e2etest

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// exposition is what a collector's telemetry endpoint serves (as
// otelcol-deltaq names its series), with a counter in the _total form of
// other exporters and a label value with every escape of the format.
const exposition = `# HELP otelcol_connector_deltaq_start_events Start events read. [Alpha]
# TYPE otelcol_connector_deltaq_start_events counter
otelcol_connector_deltaq_start_events{result="tracked"} 35
otelcol_connector_deltaq_start_events{result="after_end"} 2
otelcol_connector_deltaq_start_timeouts{probe="op"} 5
otelcol_connector_deltaq_start_timeouts{probe="job"} 1.5e+01
otelcol_connector_deltaq_late_spans_total{probe="op",note="a \"late\" one\\\n"} 2 1700000000000
otelcol_connector_deltaq_probes 1
`

// TestScrape: the series of the endpoint, their labels unescaped and a
// counter's _total suffix removed; Sum adds the series that carry the
// labels asked for, and is 0 for a metric the endpoint does not show; a
// scrape is timed after its response.
func TestScrape(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte(exposition))
	}))
	defer srv.Close()
	before := time.Now()
	tm := Scrape(t, strings.TrimPrefix(srv.URL, "http://"))
	if tm.At.Before(before) || tm.At.After(time.Now()) {
		t.Errorf("At %v, want the time the response was read", tm.At)
	}
	for _, c := range []struct {
		name  string
		match map[string]string
		want  float64
	}{
		{"otelcol_connector_deltaq_start_events", nil, 37},
		{"otelcol_connector_deltaq_start_events", map[string]string{"result": "tracked"}, 35},
		{"otelcol_connector_deltaq_start_events", map[string]string{"result": "duplicate"}, 0},
		{"otelcol_connector_deltaq_start_timeouts", map[string]string{"probe": "job"}, 15},
		{"otelcol_connector_deltaq_late_spans", map[string]string{"probe": "op", "note": "a \"late\" one\\\n"}, 2},
		{"otelcol_connector_deltaq_probes", nil, 1},
		{"otelcol_connector_deltaq_contributions", nil, 0},
	} {
		if got := tm.Sum(c.name, c.match); got != c.want {
			t.Errorf("Sum(%s, %v) = %v, want %v", c.name, c.match, got, c.want)
		}
	}
}

// TestScrapeRefusesWhatItCannotRead: a line that is no sample, an error
// status and no listener are errors, not an empty scrape.
func TestScrapeRefusesWhatItCannotRead(t *testing.T) {
	for _, body := range []string{"otelcol_x{a=\"1\" 3\n", "otelcol_x{a=1} 3\n", "otelcol_x\n", "otelcol_x{} three\n"} {
		if _, err := parseExposition(strings.NewReader(body)); err == nil {
			t.Errorf("%q: no error", body)
		}
	}
	srv := httptest.NewServer(http.NotFoundHandler())
	addr := strings.TrimPrefix(srv.URL, "http://")
	if _, err := ScrapeErr(addr); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("a 404: err %v", err)
	}
	srv.Close()
	if _, err := ScrapeErr(addr); err == nil {
		t.Errorf("no listener: no error")
	}
}

// TestOnTime: readings of a counter against the deadlines of its events,
// two due at 100 ms and 300 ms past t0, counted within 50 ms: readings that
// count each event between its deadline and 50 ms after pass; one that
// counts an event before its deadline, one that has not counted it 50 ms
// after, and a count that ends short or over fail, each named once.
func TestOnTime(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	read := func(from, to int, v float64) Reading { return Reading{From: at(from), To: at(to), Value: v} }
	deadlines := []time.Time{at(300), at(100)} // in any order
	for _, c := range []struct {
		name     string
		readings []Reading
		problems []string
		latest   time.Duration
	}{
		{"on time", []Reading{read(0, 2, 0), read(99, 101, 0), read(120, 122, 1), read(340, 342, 2), read(400, 402, 2)}, nil, 42 * time.Millisecond},
		{"a failed scrape", []Reading{read(0, 2, 0), {From: at(50), Err: errors.New("refused")}, read(110, 111, 1), read(320, 321, 2)},
			[]string{"refused"}, 21 * time.Millisecond},
		{"early", []Reading{read(0, 2, 0), read(90, 95, 1), read(96, 98, 1), read(320, 321, 2)}, []string{"only 0 deadlines had passed"}, 21 * time.Millisecond},
		{"late", []Reading{read(0, 2, 0), read(160, 162, 0), read(170, 172, 1), read(320, 321, 2)}, []string{"1 deadlines had passed 50ms before"}, 72 * time.Millisecond},
		{"short", []Reading{read(0, 2, 0), read(110, 112, 1), read(320, 321, 1)}, []string{"ends at 1, want 2"}, 12 * time.Millisecond},
		{"over", []Reading{read(0, 2, 0), read(110, 112, 1), read(320, 321, 2), read(500, 501, 3)}, []string{"only 2 deadlines", "ends at 3, want 2"}, 21 * time.Millisecond},
		{"none", nil, []string{"no reading"}, 0},
	} {
		problems, latest := onTime(c.readings, deadlines, 50*time.Millisecond)
		if len(problems) != len(c.problems) {
			t.Errorf("%s: problems %q, want %d", c.name, problems, len(c.problems))
			continue
		}
		for i, p := range problems {
			if !strings.Contains(p, c.problems[i]) {
				t.Errorf("%s: problem %q, want it to contain %q", c.name, p, c.problems[i])
			}
		}
		if latest != c.latest {
			t.Errorf("%s: latest %v, want %v", c.name, latest, c.latest)
		}
	}
}

// TestWatchTelemetry: a Watch keeps one reading a scrape, in order, each
// read after it began, with the value of that scrape; Last is the latest.
func TestWatchTelemetry(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "otelcol_connector_deltaq_start_timeouts{probe=\"op\"} %d\n", n.Add(1))
	}))
	defer srv.Close()
	w := WatchTelemetry(strings.TrimPrefix(srv.URL, "http://"), time.Millisecond, func(tm Telemetry) float64 {
		return tm.Sum("otelcol_connector_deltaq_start_timeouts", map[string]string{"probe": "op"})
	})
	for w.Last() < 5 {
		time.Sleep(time.Millisecond)
	}
	readings := w.Stop()
	if len(readings) < 5 {
		t.Fatalf("%d readings, want at least 5", len(readings))
	}
	for i, r := range readings {
		if r.Err != nil || r.Value != float64(i+1) || r.To.Before(r.From) {
			t.Errorf("reading %d: %+v, want value %d read after it began", i, r, i+1)
		}
	}
	if got := len(w.Stop()); got != len(readings) {
		t.Errorf("a second Stop: %d readings, want %d", got, len(readings))
	}
}
