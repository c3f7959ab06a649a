// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package scope

// How the browser view serves: the page and its assets, the event stream,
// the state and the snapshots, behind a check of the Host header.

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// handler routes the page, its assets, the event stream and the JSON API,
// for requests addressed to the view (hostAllowed).
func (w *scopeWeb) handler() http.Handler {
	mux := http.NewServeMux()
	assets, _ := fs.Sub(webAssets, "web")
	files := http.FileServerFS(assets)
	mux.Handle("GET /{$}", files) // index.html
	mux.Handle("GET /static/", http.StripPrefix("/static/", files))
	mux.HandleFunc("GET /events", w.serveEvents)
	mux.HandleFunc("GET /api/state", w.serveState)
	mux.HandleFunc("GET /api/snapshot/{id}", w.serveSnapshot)
	mux.HandleFunc("POST /api/alive", w.serveAlive)
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if !w.hostAllowed(r.Host) {
			w.mu.Lock()
			w.stats.HostsRefused++
			w.mu.Unlock()
			http.Error(rw, "Host "+strconv.Quote(r.Host)+" is not this view's address, localhost or a loopback address",
				http.StatusMisdirectedRequest)
			return
		}
		// Everything the page loads is its own; nothing it receives is
		// markup (the page writes names with textContent).
		h := rw.Header()
		h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		mux.ServeHTTP(rw, r)
	})
}

// hostAllowed reports whether a request's Host header (name or address,
// with or without a port) names this view: localhost, a loopback address,
// the host of the listen address, or, when that is unspecified (0.0.0.0,
// ::, or none), any address. A name other than these is what a page served by
// another site would send after rebinding its name to this address (DNS
// rebinding), and is refused.
func (w *scopeWeb) hostAllowed(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") || strings.EqualFold(host, w.listenHost) && host != "" {
		return true
	}
	ip := net.ParseIP(host)
	if ip == nil {
		return false
	}
	// ":8327" listens on every address, as 0.0.0.0 and :: do.
	listen := net.ParseIP(w.listenHost)
	return ip.IsLoopback() || w.listenHost == "" || listen != nil && listen.IsUnspecified()
}

func serveJSON(rw http.ResponseWriter, b []byte) {
	rw.Header().Set("Content-Type", "application/json")
	rw.Header().Set("Cache-Control", "no-store")
	_, _ = rw.Write(b)
}

func (w *scopeWeb) serveSnapshot(rw http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil {
		http.Error(rw, "snapshot id: not a number", http.StatusBadRequest)
		return
	}
	// Its records may still be arriving: the snapshot's lists are copied
	// under the lock (a few hundred records at most) and encoded after it
	// is released, so that a reader does not hold up the windows.
	w.mu.Lock()
	s := w.snapshots[id].clone()
	w.mu.Unlock()
	var b []byte
	if s != nil {
		b, err = json.Marshal(s)
	}
	switch {
	case s == nil:
		http.Error(rw, "no snapshot "+strconv.FormatInt(id, 10)+" (not yet recorded, or evicted)", http.StatusNotFound)
	case err != nil:
		http.Error(rw, err.Error(), http.StatusInternalServerError)
	default:
		serveJSON(rw, b)
	}
}

// stateView is what a reader of the state needs, taken under the lock
// without copying a window: windows are never changed once made (a batch
// makes new ones), so they are encoded after the lock is released.
type stateView struct {
	head    webState // without its windows
	probes  []string // by name
	windows map[string][]*webWindow
}

// view takes the state's view.
func (w *scopeWeb) view() stateView {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.viewLocked()
}

// viewLocked takes the state's view; w.mu is held.
func (w *scopeWeb) viewLocked() stateView {
	v := stateView{
		head: webState{K: w.limits.Windows, Windows: map[string][]*webWindow{}, Triggers: slices.Clone(w.triggers),
			Snapshots: make([]webSnapshotSummary, 0, len(w.snapOrder)), Stats: w.stats},
		probes:  make([]string, 0, len(w.windows)),
		windows: make(map[string][]*webWindow, len(w.windows)),
	}
	if v.head.Triggers == nil {
		v.head.Triggers = []webTrigger{}
	}
	if !w.lastBatch.IsZero() {
		v.head.IdleMS = w.now().Sub(w.lastBatch).Milliseconds()
	}
	for _, id := range w.snapOrder {
		v.head.Snapshots = append(v.head.Snapshots, w.snapshots[id].summary())
	}
	for name, hist := range w.windows {
		v.probes = append(v.probes, name)
		v.windows[name] = slices.Clone(hist)
		v.head.Pending += len(hist)
	}
	slices.Sort(v.probes)
	return v
}

// serveState writes the whole state as one JSON document, probe by probe
// as it encodes them, outside the lock: a reader costs one probe's windows
// of memory and never holds up a batch. At most Limits.Clients run at once.
func (w *scopeWeb) serveState(rw http.ResponseWriter, _ *http.Request) {
	select {
	case w.readers <- struct{}{}:
		defer func() { <-w.readers }()
	default:
		w.refuseClient(rw)
		return
	}
	// Each probe's windows are written within the write timeout of their
	// own, so that a reader that stops reading gives its place back.
	rc := http.NewResponseController(rw)
	rw = deadlineWriter{rw, rc, w.writeTimeout}
	v := w.view()
	head, err := json.Marshal(v.head)
	if err != nil { // only finite numbers are kept: cannot happen
		http.Error(rw, err.Error(), http.StatusInternalServerError)
		return
	}
	rw.Header().Set("Content-Type", "application/json")
	rw.Header().Set("Cache-Control", "no-store")
	// The head ends with "windows":{} (its last field): open it instead.
	head = bytes.TrimSuffix(head, []byte("}}"))
	if _, err := rw.Write(head); err != nil {
		return
	}
	for i, name := range v.probes {
		if w.encoding != nil {
			w.encoding()
		}
		key, _ := json.Marshal(name)
		hist, err := json.Marshal(v.windows[name])
		if err != nil {
			return
		}
		sep := []byte(",")
		if i == 0 {
			sep = nil
		}
		if _, err := rw.Write(slices.Concat(sep, key, []byte(":"), hist)); err != nil {
			return
		}
	}
	_, _ = rw.Write([]byte("}}"))
}

// deadlineWriter sets a write deadline before each write.
type deadlineWriter struct {
	http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
}

func (d deadlineWriter) Write(b []byte) (int, error) {
	_ = d.rc.SetWriteDeadline(time.Now().Add(d.timeout))
	return d.ResponseWriter.Write(b)
}

// serveAlive is the page saying that its stream (?client=, the id of the
// stream's "hello" event) is read by someone: the stream stays open for
// Limits.ClientIdle more. 204, or 404 for no such stream.
func (w *scopeWeb) serveAlive(rw http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("client")
	w.mu.Lock()
	c := w.byID[id]
	if c != nil {
		c.alive = time.Now()
	}
	w.mu.Unlock()
	if c == nil {
		http.Error(rw, "no such stream", http.StatusNotFound)
		return
	}
	rw.WriteHeader(http.StatusNoContent)
}

// refuseClient answers a stream or state request beyond Limits.Clients.
func (w *scopeWeb) refuseClient(rw http.ResponseWriter) {
	w.mu.Lock()
	w.stats.ClientsRefused++
	w.mu.Unlock()
	rw.Header().Set("Retry-After", "5")
	http.Error(rw, "too many browsers (--max-clients)", http.StatusServiceUnavailable)
}

// stateFrames sends the state as events of at most Limits.FrameBytes each
// (a window or trigger larger than that alone): "state" with the
// snapshots, the stats and the number of windows that follow (pending),
// then "trigger" events with the triggers kept and "window" events with the
// windows, probe by probe, oldest first. It runs outside
// the lock, one probe's windows encoded at a time.
func (w *scopeWeb) stateFrames(v stateView, send func([]byte) bool) bool {
	head := v.head
	head.Triggers, head.PendingTriggers = []webTrigger{}, len(v.head.Triggers)
	b, err := json.Marshal(head)
	if err != nil || !send(sseEvent("state", b)) {
		return false
	}
	if !sendFrames("trigger", "triggers", v.head.Triggers, v.head.Stats, w.limits.FrameBytes, send) {
		return false
	}
	for _, name := range v.probes {
		if w.encoding != nil {
			w.encoding()
		}
		if !sendFrames("window", "windows", v.windows[name], v.head.Stats, w.limits.FrameBytes, send) {
			return false
		}
	}
	return true
}

// serveEvents is the Server-Sent Events stream: a "hello" event naming
// the stream (its id, and how often the page is to post it to /api/alive),
// the state (and again after events were dropped, or a probe gave up its
// slot), in frames (stateFrames), then "window", "trigger" and "snapshot"
// events as batches arrive, and comments as heartbeats. Each write has a
// deadline, so a stalled connection ends the handler, and a stream whose
// page has not said it is alive for Limits.ClientIdle is closed, so that a
// connection nobody reads cannot keep its place. At most Limits.Clients
// stream at once.
func (w *scopeWeb) serveEvents(rw http.ResponseWriter, r *http.Request) {
	c := &webClient{events: make(chan []byte, webClientQueue), id: newClientID()}
	// The state is taken as the stream is listed, under the same lock: a
	// batch is then either in the state or queued as an event, never in
	// both (a trigger that came in between was listed twice on the page).
	var v stateView
	w.mu.Lock()
	full := len(w.clients) >= w.limits.Clients
	if !full {
		c.alive = time.Now()
		w.clients[c] = struct{}{}
		w.byID[c.id] = c
		w.stats.Clients = len(w.clients)
		v = w.viewLocked()
	}
	w.mu.Unlock()
	if full {
		w.refuseClient(rw)
		return
	}
	defer func() {
		w.mu.Lock()
		delete(w.clients, c)
		delete(w.byID, c.id)
		w.stats.Clients = len(w.clients)
		w.mu.Unlock()
	}()
	rc := http.NewResponseController(rw)
	h := rw.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	write := func(b []byte) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(w.writeTimeout))
		if _, err := rw.Write(b); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	hello := fmt.Appendf(nil, `{"client":%q,"alive_ms":%d}`, c.id, w.aliveEvery().Milliseconds())
	if !write([]byte("retry: 2000\n\n")) || !write(sseEvent("hello", hello)) || !w.stateFrames(v, write) {
		return
	}
	w.stream(r, c, write)
}

// aliveEvery is how often a page posts to /api/alive: six times in
// Limits.ClientIdle.
func (w *scopeWeb) aliveEvery() time.Duration { return w.limits.ClientIdle / 6 }

// newClientID returns a stream's id: 16 random bytes in hex, which a page
// of another stream cannot guess.
func newClientID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// stream sends a browser its events until it goes, the view closes, a
// write fails or its page has not said it is alive for Limits.ClientIdle.
func (w *scopeWeb) stream(r *http.Request, c *webClient, write func([]byte) bool) {
	beat := time.NewTicker(w.heartbeat)
	defer beat.Stop()
	check := time.NewTicker(max(w.limits.ClientIdle/4, time.Millisecond))
	defer check.Stop()
	for {
		var msg []byte
		select {
		case <-r.Context().Done():
			return
		case <-w.quit:
			return
		case <-check.C:
			if w.idle(c) {
				return
			}
			continue
		case <-beat.C:
			msg = []byte(": heartbeat\n\n")
		case msg = <-c.events:
		}
		w.mu.Lock()
		resync := c.resync
		var v stateView
		if resync {
			// Events were dropped: what is queued is partial, the state
			// is whole. It is taken with the queue emptied, under the
			// same lock, so that no batch is in both.
			c.resync = false
			for len(c.events) > 0 {
				<-c.events
			}
			v = w.viewLocked()
		}
		w.mu.Unlock()
		ok := false
		if resync {
			ok = w.stateFrames(v, write)
		} else {
			ok = write(msg)
		}
		if !ok {
			w.mu.Lock()
			w.stats.ClientsDropped++
			w.mu.Unlock()
			return
		}
	}
}

// idle reports whether c's page has not said it is alive for
// Limits.ClientIdle, and counts it.
func (w *scopeWeb) idle(c *webClient) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if time.Since(c.alive) < w.limits.ClientIdle {
		return false
	}
	w.stats.ClientsIdle++
	return true
}

// sseEvent frames one event. data is JSON, which holds no raw newline, so
// one data line carries it.
func sseEvent(name string, data []byte) []byte {
	b := make([]byte, 0, len(name)+len(data)+16)
	b = append(b, "event: "...)
	b = append(b, name...)
	b = append(b, "\ndata: "...)
	b = append(b, data...)
	return append(b, "\n\n"...)
}

// broadcastLocked queues an event (sseEvent) for every browser without
// waiting: a full queue loses its oldest event and its browser is sent the
// whole state next. The browsers share msg: a queue holds at most
// webClientQueue events of at most Limits.FrameBytes (one window larger).
// It reports true (sendFrames goes on).
func (w *scopeWeb) broadcastLocked(msg []byte) bool {
	for c := range w.clients {
		select {
		case c.events <- msg:
			continue
		default:
		}
		select {
		case <-c.events:
		default:
		}
		select {
		case c.events <- msg:
		default:
		}
		c.resync = true
		w.stats.EventsDropped++
	}
	return true
}

// resyncLocked has every browser sent the whole state next: a probe gave up
// its slot, which no event can say.
func (w *scopeWeb) resyncLocked() {
	for c := range w.clients {
		c.resync = true
		select {
		case c.events <- []byte(": resync\n\n"): // wakes the stream
		default:
		}
	}
}
