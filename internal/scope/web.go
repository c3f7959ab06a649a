// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package scope

// The scope's browser view (deltaq scope --http ADDR): the terminal scope's
// picture of every probe (the thesis, section 4.2: observed and calculated
// CDFs, the mean of recent windows with its 95 % band, the QTA), kept for the
// last K windows, with the triggers and their snapshots (section 3.5.1),
// served as one page whose assets are built into the binary and pushed live
// with Server-Sent Events. The page draws on a canvas itself and runs the
// design-time controls (display dMax and bins, an edited QTA, an intervention
// a·X + b) in the browser: the server only keeps and forwards what the
// connector sent.
//
// Every piece of state is bounded and counted (Limits): windows per probe
// and points in all, probes (silent ones give up their slot), series,
// points and names, triggers and their attributes, snapshots and their
// values, browsers, and every browser's queue of events. A browser that does
// not keep up loses its oldest events (it is then sent the whole state
// again) and, if its connection stalls, is disconnected; the OTLP handlers
// never wait for a browser, and nothing is encoded for a browser under the
// lock but the events of a batch. The state goes to a browser in frames of
// Limits.FrameBytes: a head (triggers, snapshots, stats), then the windows.
// Requests whose Host is not the listen address, localhost or a loopback
// address are refused, so that a web page cannot read the view through DNS
// rebinding.

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"maps"
	"math"
	"net"
	"net/http"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/deltaq-otel/deltaq/analysis"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/deltaq-otel/deltaq/internal/contract"
)

// webAssets is the page: index.html, app.js and style.css, no build step.
//
//go:embed web
var webAssets embed.FS

// Bounds of the browser view's state.
const (
	maxWebTriggers  = 200 // trigger records kept, newest
	maxWebSnapshots = 16  // snapshots kept, newest
	// maxSnapKeys bounds the snapshot keys numbered (snapKeys): those of
	// the snapshots kept and of the triggers kept, with room to spare.
	maxSnapKeys = 2 * (maxWebTriggers + maxWebSnapshots)
	// maxSnapshotRecords bounds one snapshot's records (probes × windows);
	// maxSnapshotCDF one record's CDF values per series.
	maxSnapshotRecords = 4096
	maxSnapshotCDF     = 10000
	// maxSnapshotValues bounds the CDF values of one snapshot, all its
	// records together: 16 snapshots of at most 2 MiB.
	maxSnapshotValues = 256 << 10
	// maxSummaryProbes bounds the probe names a snapshot's summary lists.
	maxSummaryProbes = 32
	// webClientQueue is each browser's queue of events; when it is full the
	// oldest event goes.
	webClientQueue = 64
	// webWriteTimeout bounds one write to a browser: a connection that
	// stalls longer is closed.
	webWriteTimeout = 10 * time.Second
	// webHeartbeat keeps idle connections (and proxies) open, and finds
	// closed ones.
	webHeartbeat = 15 * time.Second
)

// webWindow is one window of one probe as the page receives it. Delays are in
// seconds; a curve is a list of [delay, P(d ≤ delay)] points by delay, a
// quantile list [q, delay] by q. A reading absent from the window (and from
// every window before it) is null.
type webWindow struct {
	Probe     string                  `json:"probe"`
	End       int64                   `json:"end"` // newest data point, Unix milliseconds
	Curves    map[string][][2]float64 `json:"curves"`
	Quantiles map[string][][2]float64 `json:"quantiles"`
	// Outcomes are the window's own outcome counts, by kind: the rise of
	// the connector's cumulative counts since the window before it (those
	// known: none in the first window the scope received). Totals are the
	// cumulative counts, since TotalsSince (Unix milliseconds, 0 when the
	// connector did not send its stream's start).
	Outcomes    map[string]float64 `json:"outcomes"`
	Totals      map[string]float64 `json:"totals"`
	TotalsSince int64              `json:"totals_since"`
	Failure     *float64           `json:"failure"`
	Violation   *float64           `json:"violation"`
	Divergence  *float64           `json:"divergence"`
	// QTA is the probe's QTA as the connector sent it exactly; null from a
	// connector that sends only the sampled QTA curve (Curves["qta"]).
	QTA *webQTA `json:"qta"`
	// QoO is the Quality of Outcome of the window by series (observed,
	// calculated; qoo.go), absent while the probe has had no score.
	QoO map[string]*webQoO `json:"qoo,omitempty"`
	// counts are the outcome counts by kind the next window counts from.
	counts map[string]outcomeCount
	// ownCurves, ownQuantiles and ownQTA are set when the curves,
	// quantiles and QTA came in a batch of this window, not carried over
	// from an earlier one: a later batch of the window adds to them.
	ownCurves, ownQuantiles, ownQTA bool
}

// webQoO is the Quality of Outcome of one series in one window: the score,
// 0 to 100, and its components (null when not sent), the components that
// set it (qooReading.setBy), or withheld: the window has the series' ΔQ but
// no score, too few instances. Neither score nor withheld: the window had
// no ΔQ of the series to score.
type webQoO struct {
	Score    *float64 `json:"score"`
	Latency  *float64 `json:"latency"`
	Loss     *float64 `json:"loss"`
	Rate     *float64 `json:"rate"`
	SetBy    []string `json:"set_by"`
	Withheld bool     `json:"withheld"`
}

// webQoOOf returns the page's form of a probe's readings.
func webQoOOf(q map[string]qooReading) map[string]*webQoO {
	if len(q) == 0 {
		return nil
	}
	out := make(map[string]*webQoO, len(q))
	for series, r := range q {
		out[series] = &webQoO{
			Score: r.score.ptr(), Latency: r.latency.ptr(), Loss: r.loss.ptr(), Rate: r.rate.ptr(),
			SetBy: r.setBy(), Withheld: r.withheld,
		}
	}
	return out
}

// readings returns the readings of the page's form (webQoOOf's inverse).
func qooReadingsOf(q map[string]*webQoO) map[string]qooReading {
	if len(q) == 0 {
		return nil
	}
	out := make(map[string]qooReading, len(q))
	for series, w := range q {
		out[series] = qooReading{
			score: readingOf(w.Score), latency: readingOf(w.Latency), loss: readingOf(w.Loss), rate: readingOf(w.Rate),
			withheld: w.Withheld,
		}
	}
	return out
}

// ptr returns the reading's value, or nil when absent.
func (r scopeReading) ptr() *float64 {
	if !r.ok {
		return nil
	}
	v := r.v
	return &v
}

// readingOf is scopeReading.ptr's inverse.
func readingOf(v *float64) scopeReading {
	if v == nil {
		return scopeReading{}
	}
	return scopeReading{*v, true}
}

// webQTA is a QTA: its points [delay, P], by delay, and its failure bound
// (null when not sent).
type webQTA struct {
	Points     [][2]float64 `json:"points"`
	MaxFailure *float64     `json:"max_failure"`
}

// webTrigger is one deltaq.trigger record.
type webTrigger struct {
	// Attributes are the record's other attributes as it sent them, as
	// text (at most maxTriggerAttrs, each cut to Limits.AttrBytes): what
	// the page lists under the trigger, such as the traces behind it.
	Attributes map[string]string `json:"attributes"`
	// TraceLinks are the addresses of the traces the record names (its
	// own trace context and deltaq.trace_ids.*) in a tracing UI, trace id
	// → address, with --trace-url (Options.TraceURL); absent without.
	TraceLinks map[string]string `json:"trace_links,omitempty"`
	Time       int64             `json:"time"` // Unix milliseconds
	Severity   string            `json:"severity"`
	Probe      string            `json:"probe"`
	Kind       string            `json:"kind"`
	Observed   *float64          `json:"observed"`
	Required   *float64          `json:"required"`
	Delay      *float64          `json:"delay"` // seconds: qta and slack_trend triggers
	// Snapshot is the scope's number of the snapshot the trigger began
	// (webSnapshot.ID), SnapshotNumber the connector's (deltaq.snapshot.id);
	// 0 for none.
	Snapshot       int64  `json:"snapshot"`
	SnapshotNumber int64  `json:"snapshot_number"`
	Message        string `json:"message"`
}

// webSnapshot is a snapshot assembled from its deltaq.snapshot records: its
// windows, oldest first, each with the ΔQs of every probe. ID is the
// scope's number of it (snapKeys), by which the page asks for it; Number is
// the connector's (deltaq.snapshot.id, which its snapshot files carry) and
// Source the collector that recorded it (snapKey).
type webSnapshot struct {
	ID        int64               `json:"id"`
	Number    int64               `json:"number"`
	Source    string              `json:"source"`
	Windows   []webSnapshotWindow `json:"windows"`
	records   int
	values    int // CDF values kept, at most maxSnapshotValues
	Truncated int `json:"truncated"` // records or CDF values left out (bounds)
}

type webSnapshotWindow struct {
	Start  string             `json:"start"`
	End    string             `json:"end"`
	Probes []webSnapshotProbe `json:"probes"`
}

type webSnapshotProbe struct {
	Probe   string `json:"probe"`
	Success int64  `json:"success"`
	Timeout int64  `json:"timeout"`
	Failure int64  `json:"failure"`
	// Observed and Calculated are the ΔQs as a snapshot record holds them
	// (the snapshot files' form).
	Observed   *analysis.CDFJSON `json:"observed,omitempty"`
	Calculated *analysis.CDFJSON `json:"calculated,omitempty"`
}

// clone returns a copy of s whose lists a later record leaves alone (nil
// for nil): records insert windows and append and sort probes, but never
// change a ΔQ once read, so the ΔQs are shared.
func (s *webSnapshot) clone() *webSnapshot {
	if s == nil {
		return nil
	}
	c := *s
	c.Windows = slices.Clone(s.Windows)
	for i := range c.Windows {
		c.Windows[i].Probes = slices.Clone(c.Windows[i].Probes)
	}
	return &c
}

// webSnapshotSummary is what the trigger list needs of a snapshot.
type webSnapshotSummary struct {
	ID      int64    `json:"id"`
	Number  int64    `json:"number"`
	Source  string   `json:"source"`
	Windows int      `json:"windows"`
	Probes  []string `json:"probes"`
}

// webStats are the view's counters, shown on the page.
type webStats struct {
	Batches        int `json:"batches"`
	Malformed      int `json:"malformed"`
	TriggersSeen   int `json:"triggers_seen"`
	SnapshotsSeen  int `json:"snapshots_seen"`
	SnapshotsGone  int `json:"snapshots_evicted"`
	Clients        int `json:"clients"`
	EventsDropped  int `json:"events_dropped"`
	ClientsDropped int `json:"clients_disconnected"`
	// StatePoints is how many curve and quantile points are kept
	// (Limits.StatePoints); WindowsEvicted counts windows removed, oldest
	// first, to stay within it.
	StatePoints    int `json:"state_points"`
	WindowsEvicted int `json:"windows_evicted"`
	// ClientsRefused counts streams and /api/state requests refused beyond
	// Limits.Clients; HostsRefused requests with a foreign Host header.
	ClientsRefused int `json:"clients_refused"`
	HostsRefused   int `json:"hosts_refused"`
	// ClientsIdle counts streams closed because their page did not say it
	// was alive for Limits.ClientIdle.
	ClientsIdle int `json:"clients_idle"`
	// SnapshotValuesCut counts snapshot records and CDF values left out
	// (maxSnapshotRecords, maxSnapshotCDF, maxSnapshotValues).
	SnapshotValuesCut int `json:"snapshot_values_cut"`
	cuts
}

// webState is the whole state: the first event a browser receives, and
// /api/state.
type webState struct {
	K int `json:"k"`
	// Pending is how many windows follow the state, in "window" events,
	// when it is sent as a stream's first event (its Windows are then
	// empty); 0 in /api/state.
	Pending int `json:"pending"`
	// PendingTriggers is how many triggers follow it the same way, before
	// the windows.
	PendingTriggers int `json:"pending_triggers"`
	// IdleMS is how long ago, in milliseconds by the scope's clock, the
	// last metrics batch came when the state was taken (0 before the
	// first): a page loaded while the source is silent says so at once.
	IdleMS    int64                `json:"idle_ms"`
	Triggers  []webTrigger         `json:"triggers"`
	Snapshots []webSnapshotSummary `json:"snapshots"`
	Stats     webStats             `json:"stats"`
	// Windows, per probe, oldest first, is the last field: /api/state
	// streams it probe by probe.
	Windows map[string][]*webWindow `json:"windows"`
}

// scopeWeb is the browser view: the state, the browsers connected, and the
// HTTP server.
type scopeWeb struct {
	limits       Limits
	writeTimeout time.Duration
	heartbeat    time.Duration
	now          func() time.Time // the clock of probe slots
	lastBatch    time.Time        // when the last metrics batch came (webState.IdleMS)
	// encoding, when set, is called before each probe's windows are
	// encoded for a reader (tests: to hold a reader mid-way).
	encoding func()
	// readers bounds the /api/state requests running at once.
	readers chan struct{}

	mu        sync.Mutex
	slots     *slots
	windows   map[string][]*webWindow
	points    int // of every window kept (webWindow.points)
	triggers  []webTrigger
	snapshots map[int64]*webSnapshot // by the scope's number (snapKeys)
	snapOrder []int64                // their numbers, oldest first
	snapKeys  *snapKeys
	stats     webStats
	clients   map[*webClient]struct{}
	quit      chan struct{} // closed by close: every browser's handler returns

	// byID holds the streams by the id their page posts to /api/alive.
	byID map[string]*webClient

	listenHost string // the host of the listen address (hostAllowed)
	ln         net.Listener
	srv        *http.Server

	// traceURL links the triggers' trace ids (Options.TraceURL); set
	// before the first batch.
	traceURL TraceURL
}

// webClient is one browser's event queue. resync, set when an event was
// dropped, has the handler send the whole state instead of what is queued.
// id names the stream to its page, which posts it to /api/alive; alive is
// when it last did (or when the stream opened).
type webClient struct {
	events chan []byte
	resync bool      // guarded by scopeWeb.mu
	id     string    // set before the stream is listed, then read only
	alive  time.Time // guarded by scopeWeb.mu
}

// newScopeWeb returns the view's state and handler, without a server.
func newScopeWeb(l Limits) *scopeWeb {
	return &scopeWeb{
		limits:       l,
		writeTimeout: webWriteTimeout,
		heartbeat:    webHeartbeat,
		now:          time.Now,
		readers:      make(chan struct{}, l.Clients),
		slots:        newSlots(l.Probes, l.ProbeTTL),
		windows:      map[string][]*webWindow{},
		snapshots:    map[int64]*webSnapshot{},
		snapKeys:     newSnapKeys(maxSnapKeys),
		clients:      map[*webClient]struct{}{},
		byID:         map[string]*webClient{},
		quit:         make(chan struct{}),
	}
}

// startScopeWeb serves the browser view on addr.
func startScopeWeb(addr string, l Limits) (*scopeWeb, error) {
	w := newScopeWeb(l)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	w.ln = ln
	w.listenHost, _, _ = net.SplitHostPort(addr)
	w.srv = &http.Server{Handler: w.handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = w.srv.Serve(ln) }()
	return w, nil
}

// addr is the address the view listens on.
func (w *scopeWeb) addr() string { return w.ln.Addr().String() }

// close ends every browser's stream and stops the server.
func (w *scopeWeb) close() {
	w.mu.Lock()
	select {
	case <-w.quit:
	default:
		close(w.quit)
	}
	w.mu.Unlock()
	if w.srv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = w.srv.Shutdown(ctx)
	}
}

// summary is what the trigger list shows of a snapshot: its windows and
// the names of at most maxSummaryProbes of its probes.
func (s *webSnapshot) summary() webSnapshotSummary {
	sum := webSnapshotSummary{ID: s.ID, Number: s.Number, Source: s.Source, Windows: len(s.Windows), Probes: []string{}}
	for _, win := range s.Windows {
		for _, p := range win.Probes {
			if len(sum.Probes) < maxSummaryProbes && !slices.Contains(sum.Probes, p.Probe) {
				sum.Probes = append(sum.Probes, p.Probe)
			}
		}
	}
	sort.Strings(sum.Probes)
	return sum
}

// addMetrics decodes one batch with the terminal scope's decoder and records,
// for every probe in it, its window: a batch of the same window end as the
// probe's last window (a window sent in several requests) completes that
// window, a later one starts the next. The QTA a batch lacks is carried over
// from the probe's previous window, and the window's outcome counts are
// counted from the previous window's totals, as the terminal scope shows
// them (nextWindow, outcomes.go). A probe refused a slot adds its data
// points to probes_refused, as in the terminal.
func (w *scopeWeb) addMetrics(md pmetric.Metrics) {
	batch := newScopeState(w.limits)
	batch.now = w.now
	batch.addMetrics(md)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stats.Batches++
	w.lastBatch = w.now()
	w.stats.Malformed += batch.malformed
	w.stats.cuts.add(batch.cuts)
	names := make([]string, 0, len(batch.probes))
	for name := range batch.probes {
		names = append(names, name)
	}
	sort.Strings(names)
	var changed []*webWindow
	for _, name := range names {
		ok, expired := w.slots.admit(name, w.now())
		if expired != "" {
			w.removeProbeLocked(expired)
		}
		if !ok {
			// As the terminal counts them: the probe's data points.
			w.stats.ProbesRefused += batch.probes[name].points
			continue
		}
		if hist := w.windows[name]; len(hist) > 0 && batch.probes[name].updated.UnixMilli() < hist[len(hist)-1].End {
			// A window older than the probe's latest (a retry, an
			// exporter's queue): taken for the latest, its curves and
			// verdict were shown under the latest's end.
			continue
		}
		changed = append(changed, w.addWindowLocked(name, batch.probes[name]))
	}
	w.evictLocked()
	w.stats.StatePoints = w.points
	if len(w.clients) > 0 {
		sendFrames("window", "windows", changed, w.stats, w.limits.FrameBytes, w.broadcastLocked)
	}
}

// addWindowLocked records probe name's window after a batch that decoded
// to p and returns it.
func (w *scopeWeb) addWindowLocked(name string, p *probeView) *webWindow {
	hist := w.windows[name]
	win := nextWindow(name, hist, p, w.limits, &w.stats.cuts)
	w.points += win.points()
	if n := len(hist); n > 0 && hist[n-1].End == win.End {
		w.points -= hist[n-1].points()
		hist[n-1] = win
	} else {
		hist = append(hist, win)
		if drop := len(hist) - w.limits.Windows; drop > 0 {
			for _, old := range hist[:drop] {
				w.points -= old.points()
			}
			hist = slices.Delete(hist, 0, drop)
		}
	}
	w.windows[name] = hist
	return win
}

// removeProbeLocked forgets a probe that gave up its slot, and has every
// browser sent the state without it.
func (w *scopeWeb) removeProbeLocked(name string) {
	for _, win := range w.windows[name] {
		w.points -= win.points()
	}
	delete(w.windows, name)
	w.stats.ProbesExpired++
	w.resyncLocked()
}

// evictLocked removes the oldest windows (by end, then probe name) while
// more than Limits.StatePoints points are kept, never a probe's latest
// window: the page shows every probe's present, and its history as far
// back as the budget allows.
func (w *scopeWeb) evictLocked() {
	for w.points > w.limits.StatePoints {
		var oldest string
		for name, hist := range w.windows {
			if len(hist) > 1 && (oldest == "" || hist[0].End < w.windows[oldest][0].End ||
				hist[0].End == w.windows[oldest][0].End && name < oldest) {
				oldest = name
			}
		}
		if oldest == "" {
			return
		}
		hist := w.windows[oldest]
		w.points -= hist[0].points()
		w.windows[oldest] = slices.Delete(hist, 0, 1)
		w.stats.WindowsEvicted++
	}
}

// points is how many points a window holds: of its curves, quantile rows
// and QTA (what Limits.StatePoints bounds).
func (win *webWindow) points() int {
	n := 0
	for _, c := range win.Curves {
		n += len(c)
	}
	for _, q := range win.Quantiles {
		n += len(q)
	}
	if win.QTA != nil {
		n += len(win.QTA.Points)
	}
	return n
}

// sendFrames encodes items as events of type event, {key: [items…],
// "stats": stats}, of at most frameBytes each (an item larger than that
// alone), and hands each to send as soon as it is full: one frame and one
// item are held at a time. It reports false as soon as send does.
func sendFrames[T any](event, key string, items []T, stats webStats, frameBytes int, send func([]byte) bool) bool {
	if len(items) == 0 {
		return true
	}
	st, _ := json.Marshal(stats)
	var frame bytes.Buffer
	flush := func() bool {
		if frame.Len() == 0 {
			return true
		}
		data := slices.Concat([]byte(`{"`+key+`":[`), frame.Bytes(), []byte(`],"stats":`), st, []byte("}"))
		frame.Reset()
		return send(sseEvent(event, data))
	}
	for _, item := range items {
		b, err := json.Marshal(item)
		if err != nil { // only finite numbers are kept: cannot happen
			continue
		}
		if frame.Len() > 0 && frame.Len()+1+len(b)+len(st)+len(key)+32 > frameBytes && !flush() {
			return false
		}
		if frame.Len() > 0 {
			frame.WriteByte(',')
		}
		frame.Write(b)
	}
	return flush()
}

// nextWindow is probe name's window after a batch that decoded to p, given
// its windows so far. Curves, quantiles and the QTA a batch sent replace
// the previous window's; a batch of the same window adds to those that came
// in the window's earlier batches, point by point (a window larger than
// the connector's max_request_bytes comes in several requests, cut between
// any two data points; mergePoints), within l (cut points counted in c). A
// window of a new end keeps the previous curves only when the batch sent
// none, and the previous quantiles only when it sent no curves either (a
// window whose quantiles are all unreachable sends curves and no
// quantile); the QTA is the previous window's when the batch sent none.
// The failure ratio, QTA verdict and divergence are the window's own (a
// window without instances has none), those of the same window kept when a
// batch lacks them; the outcome counts are the batch's totals, and the
// window's own counts their rise since the previous window
// (outcomeCount.next).
func nextWindow(name string, hist []*webWindow, p *probeView, l Limits, c *cuts) *webWindow {
	win := &webWindow{
		Probe: name, End: p.updated.UnixMilli(),
		Curves: map[string][][2]float64{}, Quantiles: map[string][][2]float64{}, counts: map[string]outcomeCount{},
	}
	var prev *webWindow
	if n := len(hist); n > 0 {
		prev = hist[n-1]
		win.End = max(win.End, prev.End)
	}
	sameWindow := prev != nil && prev.End == win.End
	quantiles := make(map[string][]curvePoint, len(p.quantiles))
	for series, qs := range p.quantiles {
		row := make([]curvePoint, 0, len(qs))
		for q, d := range qs {
			row = append(row, curvePoint{delay: q, p: d})
		}
		quantiles[series] = row
	}
	switch {
	case sameWindow && prev.ownCurves:
		maps.Copy(win.Curves, prev.Curves)
		mergeRows(win.Curves, p.curves, l, c)
		win.ownCurves = true
	case len(p.curves) > 0:
		mergeRows(win.Curves, p.curves, l, c)
		win.ownCurves = true
	case prev != nil:
		maps.Copy(win.Curves, prev.Curves)
	}
	switch {
	case sameWindow && prev.ownQuantiles:
		maps.Copy(win.Quantiles, prev.Quantiles)
		mergeRows(win.Quantiles, quantiles, l, c)
		win.ownQuantiles = true
	case len(p.quantiles) > 0 || len(p.curves) > 0:
		mergeRows(win.Quantiles, quantiles, l, c)
		win.ownQuantiles = true
	case prev != nil:
		maps.Copy(win.Quantiles, prev.Quantiles)
	}
	if prev != nil {
		maps.Copy(win.counts, prev.counts)
		win.QTA = prev.QTA
		win.ownQTA = sameWindow && prev.ownQTA
	}
	if sameWindow {
		win.Failure, win.Violation, win.Divergence = prev.Failure, prev.Violation, prev.Divergence
	}
	if p.qta.exact() {
		win.QTA, win.ownQTA = win.mergedQTA(p.qta, l, c), true
	}
	for kind, c := range p.outcomes {
		win.counts[kind] = win.counts[kind].next(c.total, c.start, c.at)
	}
	win.setOutcomes()
	win.Failure = reading(p.failure, win.Failure)
	win.Violation = reading(p.violation, win.Violation)
	win.Divergence = reading(p.divergence, win.Divergence)
	// The scores are not carried over like the readings: a later window
	// without a score had it withheld (nextQoO).
	var prevQoO map[string]qooReading
	if prev != nil {
		prevQoO = qooReadingsOf(prev.QoO)
	}
	win.QoO = webQoOOf(nextQoO(prevQoO, p.qooBatch, seriesWithCurves(p.curves), sameWindow))
	return win
}

// mergedQTA is the QTA of win after a batch that sent qta: its points added
// to those of the window's earlier batches when win has its own QTA
// already, within l (cut points counted in c).
func (win *webWindow) mergedQTA(qta qtaReading, l Limits, c *cuts) *webQTA {
	q := &webQTA{}
	var old []curvePoint
	if win.ownQTA {
		old, q.MaxFailure = curvePoints(win.QTA.Points), win.QTA.MaxFailure
	}
	merged, cut := mergePoints(old, qta.points, l.Points)
	c.PointsCut += cut
	q.Points = curvePairs(merged)
	if qta.maxFailure.ok {
		v := qta.maxFailure.v
		q.MaxFailure = &v
	}
	return q
}

// reading is r's value, or old when the batch lacked it.
func reading(r scopeReading, old *float64) *float64 {
	if !r.ok {
		return old
	}
	v := r.v
	return &v
}

// mergeRows adds a batch's rows to those of the window's earlier batches,
// within l: a series beyond l.Series is refused, points beyond l.Points
// cut (counted in c).
func mergeRows(dst map[string][][2]float64, add map[string][]curvePoint, l Limits, c *cuts) {
	for series, pts := range add {
		old, ok := dst[series]
		if !ok && len(dst) >= l.Series {
			c.SeriesRefused += len(pts)
			continue
		}
		merged, cut := mergePoints(curvePoints(old), pts, l.Points)
		c.PointsCut += cut
		dst[series] = curvePairs(merged)
	}
}

// curvePairs and curvePoints convert between a curve's points and the
// pairs the page is sent.
func curvePairs(pts []curvePoint) [][2]float64 {
	out := make([][2]float64, len(pts))
	for i, pt := range pts {
		out[i] = [2]float64{pt.delay, pt.p}
	}
	return out
}

func curvePoints(pairs [][2]float64) []curvePoint {
	out := make([]curvePoint, len(pairs))
	for i, pt := range pairs {
		out[i] = curvePoint{delay: pt[0], p: pt[1]}
	}
	return out
}

// setOutcomes sets the outcome counts the page shows from win.counts.
func (win *webWindow) setOutcomes() {
	var end time.Time
	for _, c := range win.counts {
		if c.at.UnixMilli() == win.End {
			end = c.at
		}
	}
	o := outcomesAt(win.counts, end)
	win.Outcomes, win.Totals = o.window, o.totals
	if !o.since.IsZero() {
		win.TotalsSince = o.since.UnixMilli()
	}
}

// seriesWithCurves are the series of which curves holds a ΔQ.
func seriesWithCurves(curves map[string][]curvePoint) map[string]bool {
	out := make(map[string]bool, len(curves))
	for series, pts := range curves {
		out[series] = len(pts) > 0
	}
	return out
}

// addLogs records trigger and snapshot records and pushes them. A trigger
// record stamped more than Limits.Ahead ahead of the scope's clock is
// malformed, as in the terminal (scopeState.addTrigger): the triggers are
// kept newest last, and it would stay among them for ever.
func (w *scopeWeb) addLogs(ld plog.Logs) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var fired []webTrigger
	touched := map[int64]bool{}
	now := w.now()
	for source, lr := range logsBySource(ld, w.limits.NameBytes) {
		switch lr.EventName() {
		case eventTrigger:
			if w.limits.tooFarAhead(triggerTime(lr), now) {
				w.stats.Malformed++
				continue
			}
			fired = append(fired, w.decodeTrigger(lr, source))
		case eventSnapshot:
			if id := w.addSnapshotRecord(lr, source); id > 0 {
				touched[id] = true
			}
		}
	}
	if len(fired) > 0 {
		sort.SliceStable(fired, func(i, j int) bool { return fired[i].Time < fired[j].Time })
		w.stats.TriggersSeen += len(fired)
		if len(fired) > maxWebTriggers { // only these could be kept
			fired = fired[len(fired)-maxWebTriggers:]
		}
		w.triggers = append(w.triggers, fired...)
		sort.SliceStable(w.triggers, func(i, j int) bool { return w.triggers[i].Time < w.triggers[j].Time })
		if len(w.triggers) > maxWebTriggers {
			w.triggers = slices.Delete(w.triggers, 0, len(w.triggers)-maxWebTriggers)
		}
		if len(w.clients) > 0 {
			sendFrames("trigger", "triggers", fired, w.stats, w.limits.FrameBytes, w.broadcastLocked)
		}
	}
	ids := make([]int64, 0, len(touched))
	for id := range touched {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		if s := w.snapshots[id]; s != nil {
			if b, err := json.Marshal(s.summary()); err == nil {
				w.broadcastLocked(sseEvent("snapshot", b))
			}
		}
	}
}

// decodeTrigger reads a deltaq.trigger record of a resource of the given
// source: its names cut to Limits.NameBytes, its message and other
// attributes to Limits.AttrBytes, at most maxTriggerAttrs of these (counted
// in attrs_cut); the snapshot it began numbered as its records will be.
func (w *scopeWeb) decodeTrigger(lr plog.LogRecord, source string) webTrigger {
	a := lr.Attributes()
	t := webTrigger{
		Time:     triggerTime(lr).UnixMilli(),
		Severity: lr.SeverityText(),
		Probe:    stringAttr(a, attrProbe),
		Kind:     stringAttr(a, attrTrigger),
		Message:  lr.Body().AsString(),
	}
	if t.Severity == "" {
		t.Severity = lr.SeverityNumber().String()
	}
	c := &w.stats.cuts
	t.Severity, t.Probe, t.Kind = c.cutTo(t.Severity, w.limits.NameBytes), c.cutTo(t.Probe, w.limits.NameBytes), c.cutTo(t.Kind, w.limits.NameBytes)
	t.Message = c.cutTo(t.Message, w.limits.AttrBytes)
	t.Attributes = map[string]string{}
	for k, v := range a.All() {
		switch {
		case k == attrProbe || k == attrTrigger || k == contract.AttrAgentStart:
		case len(t.Attributes) >= maxTriggerAttrs:
			c.AttrsCut++
		default:
			t.Attributes[c.cutTo(k, w.limits.NameBytes)] = c.cutTo(v.AsString(), w.limits.AttrBytes)
		}
	}
	num := func(key string) *float64 {
		if v, ok := floatAttr(a, key); ok {
			return &v
		}
		return nil
	}
	t.Observed, t.Required, t.Delay = num(contract.AttrObserved), num(contract.AttrRequired), num(contract.AttrDelay)
	if k, ok := snapKeyOf(source, a); ok {
		t.Snapshot, t.SnapshotNumber = w.snapshotNumber(k), k.id
	}
	t.TraceLinks = w.traceURL.traceLinks(lr)
	return t
}

// snapshotNumber returns the scope's number of a snapshot key; a snapshot
// whose key is forgotten to make room goes with it.
func (w *scopeWeb) snapshotNumber(k snapKey) int64 {
	n, forgotten := w.snapKeys.number(k)
	if forgotten > 0 && w.snapshots[forgotten] != nil {
		delete(w.snapshots, forgotten)
		w.snapOrder = slices.DeleteFunc(w.snapOrder, func(id int64) bool { return id == forgotten })
		w.stats.SnapshotsGone++
	}
	return n
}

// addSnapshotRecord files one deltaq.snapshot record of a resource of the
// given source under its snapshot and window, and returns the snapshot's
// number (0 for a record without an id, or of a snapshot older than every
// one kept).
func (w *scopeWeb) addSnapshotRecord(lr plog.LogRecord, source string) int64 {
	a := lr.Attributes()
	k, ok := snapKeyOf(source, a)
	if !ok {
		w.stats.Malformed++
		return 0
	}
	id := w.snapshotNumber(k)
	s := w.snapshots[id]
	if s == nil {
		if len(w.snapOrder) >= maxWebSnapshots && id < w.snapOrder[0] {
			return 0 // older than every snapshot kept
		}
		w.stats.SnapshotsSeen++
		s = &webSnapshot{ID: id, Number: k.id, Source: k.source, Windows: []webSnapshotWindow{}}
		w.snapshots[id] = s
		w.snapOrder = append(w.snapOrder, id)
		slices.Sort(w.snapOrder)
		for len(w.snapOrder) > maxWebSnapshots {
			delete(w.snapshots, w.snapOrder[0])
			w.snapOrder = w.snapOrder[1:]
			w.stats.SnapshotsGone++
		}
	}
	if s.records >= maxSnapshotRecords {
		s.Truncated++
		w.stats.SnapshotValuesCut++
		return id
	}
	s.records++
	// RFC 3339 times are 35 bytes at most; a longer one is no time.
	start, _ := cutString(stringAttr(a, contract.AttrWindowStart), 64)
	end, _ := cutString(stringAttr(a, contract.AttrWindowEnd), 64)
	i := slices.IndexFunc(s.Windows, func(win webSnapshotWindow) bool { return win.End == end })
	if i < 0 {
		// RFC 3339 with nanoseconds of one zone sorts as text, oldest first.
		i = sort.Search(len(s.Windows), func(i int) bool { return s.Windows[i].End > end })
		s.Windows = slices.Insert(s.Windows, i, webSnapshotWindow{Start: start, End: end, Probes: []webSnapshotProbe{}})
	}
	count := func(key string) int64 {
		if v, ok := a.Get(key); ok && v.Type() == pcommon.ValueTypeInt {
			return v.Int()
		}
		return 0
	}
	p := webSnapshotProbe{
		Probe: w.stats.cutTo(stringAttr(a, attrProbe), w.limits.NameBytes), Success: count(contract.AttrSuccess),
		Timeout: count(contract.AttrTimeout), Failure: count(contract.AttrFailure),
	}
	if lr.Body().Type() == pcommon.ValueTypeMap {
		body := lr.Body().Map()
		cut := s.Truncated
		p.Observed = s.snapshotDQ(body, contract.SeriesObserved)
		p.Calculated = s.snapshotDQ(body, contract.SeriesCalculated)
		w.stats.SnapshotValuesCut += s.Truncated - cut
	}
	win := &s.Windows[i]
	win.Probes = append(win.Probes, p)
	sort.SliceStable(win.Probes, func(a, b int) bool { return win.Probes[a].Probe < win.Probes[b].Probe })
	return id
}

// snapshotDQ reads {"width": w, "cdf": [...]} under key of a snapshot
// record's body; nil when absent or malformed.
func (s *webSnapshot) snapshotDQ(body pcommon.Map, key string) *analysis.CDFJSON {
	v, ok := body.Get(key)
	if !ok || v.Type() != pcommon.ValueTypeMap {
		return nil
	}
	m := v.Map()
	wv, ok := m.Get("width")
	cv, ok2 := m.Get("cdf")
	if !ok || !ok2 || wv.Type() != pcommon.ValueTypeDouble || cv.Type() != pcommon.ValueTypeSlice {
		return nil
	}
	d := &analysis.CDFJSON{Width: wv.Double(), CDF: []float64{}}
	if !(d.Width > 0) || math.IsInf(d.Width, 0) {
		return nil
	}
	for i, e := range cv.Slice().All() {
		if i >= maxSnapshotCDF || s.values >= maxSnapshotValues {
			s.Truncated++
			break
		}
		s.values++
		f := e.Double()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			f = 0
		}
		d.CDF = append(d.CDF, f)
	}
	return d
}
