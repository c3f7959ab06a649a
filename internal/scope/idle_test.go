// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package scope

import (
	"bufio"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestIdleStreamsLoseTheirPlaces reproduces eight connections that open
// /events and never read: they held every place of --max-clients, and a
// browser got 503 for as long as they stayed. A stream whose page has not
// posted its id to /api/alive for --client-idle is closed and counted
// (clients_idle), so the places come back; a page that says it is alive
// keeps its stream for many times that.
func TestIdleStreamsLoseTheirPlaces(t *testing.T) {
	l := DefaultLimits()
	l.ClientIdle = 400 * time.Millisecond
	w := newScopeWeb(l)
	srv := httptest.NewServer(w.handler())
	defer srv.Close()
	defer w.close()

	addr := strings.TrimPrefix(srv.URL, "http://")
	for range l.Clients {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if _, err := conn.Write([]byte("GET /events HTTP/1.1\r\nHost: " + addr + "\r\n\r\n")); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "eight streams", func() bool { return w.snapshotStats().Clients == l.Clients })
	res, err := http.Get(srv.URL + "/events")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("a browser while the idle connections hold every place: %s, want 503", res.Status)
	}

	began := time.Now()
	waitFor(t, "the idle streams closed", func() bool {
		st := w.snapshotStats()
		return st.Clients == 0 && st.ClientsIdle == l.Clients
	})
	t.Logf("eight idle streams closed %v after the browser was refused (--client-idle %v)",
		time.Since(began).Round(10*time.Millisecond), l.ClientIdle)

	// A browser now gets a place, and keeps it while its page says it is
	// alive, here for five times --client-idle.
	_, _, done := openEvents(t, srv.URL)
	defer done()
	id := streamID(t, w)
	post := func(id string) int {
		res, err := http.Post(srv.URL+"/api/alive?client="+id, "text/plain", nil)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	for range 20 {
		if code := post(id); code != http.StatusNoContent {
			t.Fatalf("POST /api/alive of the stream: %d, want 204", code)
		}
		time.Sleep(l.ClientIdle / 4)
	}
	if st := w.snapshotStats(); st.Clients != 1 || st.ClientsIdle != l.Clients {
		t.Errorf("a page that says it is alive: %d streams, %d closed as idle; want 1 and %d", st.Clients, st.ClientsIdle, l.Clients)
	}
	if code := post("0123"); code != http.StatusNotFound {
		t.Errorf("POST /api/alive of no stream: %d, want 404", code)
	}
}

// streamID returns the id of the one stream of w.
func streamID(t *testing.T, w *scopeWeb) string {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.byID) != 1 {
		t.Fatalf("%d streams, want 1", len(w.byID))
	}
	for id := range w.byID {
		return id
	}
	return ""
}

// TestHelloNamesTheStream: the first event of a stream names it and says
// how often its page is to post to /api/alive: six times in --client-idle.
func TestHelloNamesTheStream(t *testing.T) {
	w := newScopeWeb(DefaultLimits())
	srv := httptest.NewServer(w.handler())
	defer srv.Close()
	defer w.close()
	res, err := http.Get(srv.URL + "/events")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	r := bufio.NewReader(res.Body)
	readSSE(t, r) // retry
	f := readSSE(t, r)
	var hello struct {
		Client  string `json:"client"`
		AliveMs int64  `json:"alive_ms"`
	}
	if err := json.Unmarshal([]byte(f.data), &hello); err != nil || f.event != "hello" {
		t.Fatalf("first event %+v (%v), want hello", f, err)
	}
	if len(hello.Client) != 32 || hello.AliveMs != (2*time.Minute/6).Milliseconds() {
		t.Errorf("hello %+v: want a 32-digit id and alive_ms 20000", hello)
	}
	if id := streamID(t, w); id != hello.Client {
		t.Errorf("hello names %q, the stream is %q", hello.Client, id)
	}
}
