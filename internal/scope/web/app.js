// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

// The ΔQ scope in a browser. The server (deltaq scope --http) pushes, with
// Server-Sent Events, the windows of every probe as the deltaq connector
// sends them, the triggers and the snapshots; this page keeps the last K
// windows, draws each probe's ΔQ plot on a canvas (the thesis, section 4.2)
// and runs the design-time controls itself: the displayed dMax and bins, a
// QTA checked against the curves, and an intervention a·X + b whose
// predicted ΔQ is drawn next to the observed one. Names from the data are
// written with textContent only, never as markup, and through printable.
"use strict";

const SERIES = ["observed", "calculated", "mean", "lower", "upper", "qta"];
const COLORS = {
  observed: "#0969da", calculated: "#1a7f37", mean: "#6e7781", band: "rgba(9,105,218,0.13)",
  qta: "#cf222e", edited: "#8250df", predicted: "#d4760a", grid: "#eaeef2", axis: "#8c959f", ink: "#1c2128",
};

const store = {
  k: 60,
  windows: new Map(), // probe → windows, oldest first
  triggers: [], // oldest first
  snapshots: new Map(), // id → summary
  stats: {},
  // Triggers of the state still to come in "trigger" events: they are
  // not news, so they are not marked fresh.
  syncTriggers: 0,
  // Windows of the state still to come in "window" events: until they
  // have, a probe without windows yet is not gone.
  syncWindows: 0,
};
const view = { at: null }; // null: live; else the window end (ms) shown
const cards = new Map(); // probe → card elements and design state
const $ = (id) => document.getElementById(id);

// ---- numbers ----------------------------------------------------------------

// fmtDur writes seconds with three significant digits in a fitting unit.
function fmtDur(s) {
  if (s === 0) return "0";
  const a = Math.abs(s);
  const [v, u] = a < 1e-3 ? [s * 1e6, " µs"] : a < 1 ? [s * 1e3, " ms"] : [s, " s"];
  return String(Number(v.toPrecision(3))) + u;
}

// percentText writes a ratio in [0, 1] as a percentage to two decimals,
// with more digits where two would round it to 0 or 100 and it is neither
// (draw.go's percentText alike): "failure 0.00 % > 0.00 %" said nothing.
function percentText(v) {
  const x = 100 * v;
  let s = x.toFixed(2);
  if (v > 0 && s === "0.00") return String(Number(x.toPrecision(2)));
  for (let d = 3; v < 1 && d <= 10 && Number(s) === 100; d++) s = x.toFixed(d);
  return s;
}

// parseDur reads "20ms", "1.5s", "250us", "0" or a bare number of ms; NaN if not.
function parseDur(text) {
  const m = /^\s*([0-9]*\.?[0-9]+(?:e[-+]?\d+)?)\s*(ns|us|µs|ms|s)?\s*$/i.exec(text);
  if (!m) return NaN;
  const scale = { ns: 1e-9, us: 1e-6, "µs": 1e-6, ms: 1e-3, s: 1 }[(m[2] || "ms").toLowerCase()];
  return Number(m[1]) * scale;
}

// DELAY_HINT says what a delay box takes.
const DELAY_HINT = "such as 5ms or 0.2s (ns, us, ms or s; a bare number is ms)";

// parseDelayInput reads a delay typed in a box: {value} in seconds, or
// {error} saying what is wrong and what is expected. what names the box;
// positive asks for a delay above 0, else 0 is allowed too.
function parseDelayInput(what, text, positive) {
  const t = String(text).trim();
  const want = `want a delay ${positive ? "above 0" : "of 0 or more"}, ${DELAY_HINT}`;
  if (t === "") return { error: `${what} is empty: ${want}` };
  const d = parseDur(t);
  if (/^-/.test(t) && parseDur(t.slice(1)) >= 0) return { error: `${what} "${t}" is negative: ${want}` };
  if (Number.isNaN(d)) return { error: `${what} "${t}" is not a delay: ${want}` };
  if (!Number.isFinite(d)) return { error: `${what} "${t}" is too large: ${want}` };
  if (positive && !(d > 0)) return { error: `${what} "${t}" is not above 0: ${want}` };
  return { value: d };
}

// parseIntervention reads the intervention a·X + b of a card: a, the factor,
// from its number box (badInput: the box holds text that is no number),
// and b, the delay added. It returns {a, b, errors}, errors naming each
// box that is wrong, what is wrong and what is expected (a and b are then
// NaN), with a = 1, b = 0 being no intervention.
function parseIntervention(aText, bText, badInput) {
  const errors = {};
  const wantA = "want a factor above 0, such as 0.5 or 1.5 (1: no change)";
  const ta = String(aText).trim();
  let a = Number(ta);
  if (badInput) errors.a = `a is not a number: ${wantA}`;
  else if (ta === "") errors.a = `a is empty: ${wantA}`;
  else if (Number.isNaN(a)) errors.a = `a "${ta}" is not a number: ${wantA}`;
  else if (!Number.isFinite(a)) errors.a = `a "${ta}" is too large: ${wantA}`;
  else if (!(a > 0)) errors.a = `a ${ta} is not above 0: ${wantA}`;
  if (errors.a) a = NaN;
  const pb = parseDelayInput("b", bText, false);
  if (pb.error) errors.b = pb.error;
  return { a, b: pb.error ? NaN : pb.value, errors };
}

// cdfAt evaluates a ΔQ's CDF from its points: linear between points (mass is
// uniform within a bin), from F(0) = 0, constant after the last point (the
// intangible mass never arrives).
function cdfAt(pts, t) {
  if (!pts || pts.length === 0 || t <= 0) return 0;
  let lo = 0, hi = pts.length;
  while (lo < hi) { const mid = (lo + hi) >> 1; if (pts[mid][0] < t) lo = mid + 1; else hi = mid; }
  if (lo === pts.length) return pts[pts.length - 1][1];
  const [x1, y1] = pts[lo];
  const [x0, y0] = lo > 0 ? pts[lo - 1] : [0, 0];
  if (x1 <= x0 || x1 === t) return y1;
  return y0 + (y1 - y0) * (t - x0) / (x1 - x0);
}

// stepAt evaluates a step CDF (a QTA): the value of the last point at or before t.
function stepAt(pts, t) {
  let v = 0;
  for (const [x, y] of pts || []) { if (x <= t + 1e-15) v = y; else break; }
  return v;
}

// qtaFromCurve recovers the points of a QTA from its sampled step curve.
function qtaFromCurve(pts) {
  const out = [];
  let prev = 0;
  for (const [x, y] of pts || []) {
    if (y > prev + 1e-12) out.push([x, y]);
    prev = y;
  }
  return out;
}

// parseQTA reads "20ms:0.5 70ms:0.9 fail:0.01" into {points, maxFailure}, or
// {error}.
function parseQTA(text) {
  const q = { points: [], maxFailure: null };
  for (const tok of text.split(/[\s,;]+/).filter(Boolean)) {
    const [k, v] = tok.split(":");
    const p = Number(v);
    if (v === undefined || !(p >= 0 && p <= 1)) return { error: `"${tok}": want DELAY:P or fail:R, P and R in [0, 1]` };
    if (/^(fail|failure|max_failure)$/i.test(k)) { q.maxFailure = p; continue; }
    const d = parseDur(k);
    if (!(d >= 0)) return { error: `"${tok}": ${k} is not a delay` };
    q.points.push([d, p]);
  }
  q.points.sort((a, b) => a[0] - b[0]);
  return q;
}

// qtaFromSampled reads the QTA from the curve the connector sampled at its
// bin edges, as older connectors send it only: its last step, at the curve's
// last point (dMax), is the failure bound 1 − max_failure when it is above
// the points' (deltaq.QTA.RequiredSteps). A point's delay comes out as the
// first delay the curve is reported at, at or after it: 72 ms for 70 ms when
// the curve has a point every 4 ms.
function qtaFromSampled(pts) {
  const points = qtaFromCurve(pts);
  let maxFailure = null;
  const n = points.length;
  if (n > 0 && points[n - 1][0] === pts[pts.length - 1][0]) {
    maxFailure = Number((1 - points[n - 1][1]).toPrecision(6));
    points.pop();
  }
  return { points, maxFailure };
}

// receivedQTA is the window's QTA as {points, maxFailure}: exact when the
// connector sent deltaq.qta.point and deltaq.qta.max_failure, else read from
// the sampled curve; null when the probe has none.
function receivedQTA(w) {
  if (w.qta) return { points: w.qta.points, maxFailure: w.qta.max_failure };
  if (w.curves.qta) return qtaFromSampled(w.curves.qta);
  return null;
}

// requiredSteps is the step curve of a QTA on a ΔQ of dMax dmax: its points
// up to dmax, then at dmax a last step to 1 − maxFailure when that is above
// them (deltaq.QTA.RequiredSteps).
function requiredSteps(qta, dmax) {
  const steps = qta.points.filter(([d]) => d <= dmax).map(([d, p]) => [d, p]);
  if (qta.maxFailure == null) return steps;
  const n = steps.length, level = n ? steps[n - 1][1] : 0, last = 1 - qta.maxFailure;
  if (last <= level) return steps;
  if (n && steps[n - 1][0] === dmax) steps[n - 1][1] = last;
  else steps.push([dmax, last]);
  return steps;
}

function qtaText(points, maxFailure) {
  const parts = points.map(([d, p]) => `${fmtDur(d).replace(" ", "")}:${Number(p.toPrecision(4))}`);
  if (maxFailure != null) parts.push(`fail:${maxFailure}`);
  return parts.join(" ");
}

// checkQTA checks a CDF (and failure ratio) against a QTA: the first point it
// breaks, or null when it meets it.
function checkQTA(qta, F, failure) {
  for (const [d, p] of qta.points) {
    const got = F(d);
    if (got + 1e-9 < p) return `F(${fmtDur(d)}) = ${got.toFixed(3)} < ${p}`;
  }
  if (qta.maxFailure != null && failure != null && failure > qta.maxFailure + 1e-12) {
    return `failure ${percentText(failure)} % > ${percentText(qta.maxFailure)} %`;
  }
  return null;
}

// predicted returns the CDF of a·X + b given X's CDF: F((t − b)/a), exact for
// one probe's delay; the intangible mass (failures) is unchanged.
function predicted(F, a, b) {
  return (t) => (t < b ? 0 : F((t - b) / a));
}

// ---- state --------------------------------------------------------------------

function addWindow(w) {
  let hist = store.windows.get(w.probe);
  if (!hist) { hist = []; store.windows.set(w.probe, hist); }
  if (hist.length > 0 && hist[hist.length - 1].end === w.end) hist[hist.length - 1] = w;
  else hist.push(w);
  while (hist.length > store.k) hist.shift();
}

// windowEnds is the sorted union of the ends of every probe's windows, the
// positions of the time slider.
function windowEnds() {
  const ends = new Set();
  for (const hist of store.windows.values()) for (const w of hist) ends.add(w.end);
  return [...ends].sort((a, b) => a - b).slice(-store.k);
}

// shownWindow is a probe's window at the slider: its newest one at or before
// view.at (live: its newest).
function shownWindow(hist) {
  if (view.at == null) return hist[hist.length - 1];
  let shown = null;
  for (const w of hist) if (w.end <= view.at) shown = w;
  return shown;
}

// ---- rendering ---------------------------------------------------------------

// printable shows text from the data as the terminal scope does: control
// characters, bidirectional embeddings, overrides, isolates and marks, line
// and paragraph separators and the invisible characters (zero-width space,
// word joiner, byte order mark; not the joiners that scripts and emoji
// need) are written as
// escapes (\u202e), so that a name can neither reorder what follows it nor
// pass for another one.
const UNPRINTABLE = /[\u0000-\u001f\u007f-\u009f\u200b\u200e\u200f\u2028-\u202e\u2060-\u2064\u2066-\u2069\ufeff]/g;
function printable(text) {
  return String(text).replace(UNPRINTABLE, (c) => {
    const n = c.charCodeAt(0);
    return n < 0x80 ? "\\x" + n.toString(16).padStart(2, "0") : "\\u" + n.toString(16).padStart(4, "0");
  });
}

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text != null) e.textContent = printable(text);
  return e;
}

function clock(ms) {
  const d = new Date(ms);
  return d.toISOString().slice(11, 23) + "Z";
}

// stamp writes a time as the terminal does: its time of day (UTC) when it
// is on today's date (UTC, by this browser's clock), else with its date
// too, so that a window or trigger of another day does not pass for one of
// today.
function stamp(ms) {
  const iso = new Date(ms).toISOString();
  const day = iso.slice(0, 10) === new Date().toISOString().slice(0, 10) ? "" : iso.slice(0, 10) + " ";
  return day + iso.slice(11, 23) + "Z";
}

function renderHeader() {
  const s = store.stats;
  const parts = [`${store.windows.size} probes`, `${s.batches || 0} batches`, `${s.triggers_seen || 0} triggers`,
    `${s.snapshots_seen || 0} snapshots`];
  if (s.malformed) parts.push(`${s.malformed} malformed points and records ignored`);
  // What the scope's bounds cut (deltaq help scope).
  // probes_refused, series_refused and names_refused count data points.
  for (const [key, what] of [["probes_refused", "data points of probes without a slot"], ["probes_expired", "silent probes expired"],
    ["series_refused", "data points of series refused"], ["points_cut", "points cut"], ["names_refused", "data points with names too long"],
    ["attrs_cut", "trigger attributes cut"], ["windows_evicted", "old windows evicted"],
    ["clients_refused", "browsers refused"], ["clients_idle", "idle streams closed"],
    ["hosts_refused", "foreign hosts refused"]]) {
    if (s[key]) parts.push(`${s[key]} ${what}`);
  }
  if (s.events_dropped) parts.push(`${s.events_dropped} events dropped for slow browsers`);
  $("stats").textContent = parts.join(" · ");
  displayControls();
  const ends = windowEnds();
  const slider = $("slider");
  slider.max = String(Math.max(0, ends.length - 1));
  if (view.at == null) {
    slider.value = slider.max;
    $("slider-label").textContent = ends.length ? "live" : "—";
  } else {
    const i = ends.findIndex((e) => e >= view.at);
    slider.value = String(i < 0 ? ends.length - 1 : i);
    $("slider-label").textContent = `${clock(view.at).slice(0, 8)} (−${ends.length - 1 - Number(slider.value)})`;
  }
  const hold = $("hold");
  hold.textContent = view.at == null ? "Hold" : "Resume";
  hold.classList.toggle("on", view.at != null);
  connPill();
}

// lastWindow is when (by this browser's clock) the last window came.
let lastWindow = Date.now();

// connPill says whether the page is live, held, or, once no window came
// for three of the connector's intervals (at least 5 s), that the source
// is silent, as the terminal's header does: the stream stays open when
// the collector stops. Until the state's windows have all come (the
// stream is "syncing") it says nothing new: it said "live" on the page
// of a silent source until they had.
function connPill() {
  const conn = $("conn");
  if (conn.dataset.state !== "open") return;
  // The shortest of the probes' last steps of window end: a collector
  // restarted with a longer interval was said silent between its windows
  // while the shorter steps before it were kept.
  let interval = Infinity;
  for (const hist of store.windows.values()) {
    const n = hist.length;
    if (n > 1 && hist[n - 1].end > hist[n - 2].end) interval = Math.min(interval, hist[n - 1].end - hist[n - 2].end);
  }
  const gap = Date.now() - lastWindow;
  if (interval < Infinity && gap >= Math.max(3 * interval, 5000)) {
    conn.textContent = `no metrics for ${Math.round(gap / 1000)} s`;
    conn.title = `a window came every ${interval / 1000} s: has the collector stopped, or stopped sending here?`;
    conn.className = "pill down";
    return;
  }
  conn.textContent = view.at == null ? "live" : "held";
  conn.title = "";
  conn.className = "pill " + (view.at == null ? "live" : "held");
}

function renderAll() {
  renderHeader();
  const names = [...store.windows.keys()].sort();
  $("waiting").hidden = names.length > 0;
  // A probe the state no longer has (it gave up its slot, or the scope
  // restarted) leaves the page, once the state's windows have all come.
  for (const [name, c] of cards) {
    if (store.syncWindows === 0 && !store.windows.has(name)) { c.root.remove(); cards.delete(name); }
  }
  for (const name of names) renderProbe(name);
}

function card(name) {
  let c = cards.get(name);
  if (c) return c;
  const root = $("probe-card").content.firstElementChild.cloneNode(true);
  root.dataset.probe = name;
  root.querySelector(".probe-name").textContent = printable(name);
  c = {
    root, qtaInput: root.querySelector(".qta-input"), ivA: root.querySelector(".iv-a"), ivB: root.querySelector(".iv-b"),
    ivCheck: root.querySelector(".iv-check"), qtaPrefill: null, qtaEdited: false,
  };
  c.qtaInput.addEventListener("input", () => { c.qtaEdited = c.qtaInput.value !== c.qtaPrefill; renderProbe(name); });
  c.ivA.addEventListener("input", () => renderProbe(name));
  c.ivB.addEventListener("input", () => renderProbe(name));
  cards.set(name, c);
  // Keep the cards in name order.
  const section = $("probes");
  const after = [...section.querySelectorAll("section.probe")].find((s) => s.dataset.probe > name);
  section.insertBefore(root, after || null);
  return c;
}

// design reads a card's intervention; a = 1, b = 0 is none. A box whose
// value is wrong is marked, and the card says next to the boxes what is
// wrong and what is expected, until it is right again; meanwhile no
// prediction is drawn.
function design(c) {
  const { a, b, errors } = parseIntervention(c.ivA.value, c.ivB.value, c.ivA.validity.badInput);
  for (const [box, err] of [[c.ivA, errors.a], [c.ivB, errors.b]]) {
    box.classList.toggle("invalid", !!err);
    box.setAttribute("aria-invalid", err ? "true" : "false");
  }
  const msg = [errors.a, errors.b].filter(Boolean).join("; ");
  if (c.ivCheck.textContent !== msg) c.ivCheck.textContent = msg;
  const active = !errors.a && !errors.b && (a !== 1 || b !== 0);
  return { a, b, active };
}

function renderProbe(name) {
  const hist = store.windows.get(name);
  const c = card(name);
  const w = hist && shownWindow(hist);
  const root = c.root;
  const dz = design(c);
  if (!w) {
    root.querySelector(".readings").textContent = "no window at this time";
    root.querySelector(".totals").replaceChildren();
    root.querySelector(".qoo").replaceChildren();
    return;
  }
  root.querySelector(".probe-time").textContent = "window ending " + stamp(w.end);
  root.dataset.end = String(w.end);
  const state = root.querySelector(".qta-state");
  // A window without instances has no verdict on the QTA it still has.
  const noVerdict = w.qta || w.curves.qta ? "QTA –" : "no QTA";
  state.textContent = w.violation == null ? noVerdict : w.violation > 0 ? "QTA broken" : "QTA met";
  state.className = "qta-state pill " + (w.violation == null ? "" : w.violation > 0 ? "bad" : "ok");

  const readings = root.querySelector(".readings");
  readings.replaceChildren();
  const reading = (label, value) => {
    const span = el("span", null, label + " ");
    span.append(el("b", null, value));
    if (readings.childNodes.length) readings.append(" · ");
    readings.append(span);
  };
  if (w.failure != null) reading("failure", percentText(w.failure) + " %");
  if (w.divergence != null) reading("divergence", w.divergence.toFixed(3));
  renderOutcomes(readings, root.querySelector(".totals"), w);
  renderQoO(root.querySelector(".qoo"), w.qoo);

  // Prefill the page's QTA from the one received, until the user edits it.
  const received = receivedQTA(w);
  if (!c.qtaEdited && received) {
    const prefill = qtaText(received.points, received.maxFailure);
    if (c.qtaPrefill !== prefill) { c.qtaPrefill = prefill; c.qtaInput.value = prefill; }
  }
  const qta = parseQTA(c.qtaInput.value);
  c.qtaInput.classList.toggle("invalid", !!qta.error);
  const Fobs = (t) => cdfAt(w.curves.observed, t);
  const Fpred = dz.active ? predicted(Fobs, dz.a, dz.b) : null;

  const check = root.querySelector(".qta-check");
  check.replaceChildren();
  if (qta.error) check.append(el("span", "bad", qta.error));
  else if (qta.points.length || qta.maxFailure != null) {
    const line = (what, F) => {
      const broken = checkQTA(qta, F, w.failure);
      const s = el("span", broken ? "bad" : "ok", `${what}: ${broken ? "breaks, " + broken : "meets"}`);
      s.dataset.check = what;
      if (check.childNodes.length) check.append(" · ");
      check.append(s);
    };
    if (w.curves.observed) line("observed", Fobs);
    if (Fpred) line("predicted", Fpred);
  }

  drawCDF(root.querySelector("canvas.cdf"), w, qta, c.qtaEdited, dz, Fpred);
  drawLegend(root.querySelector(".legend"), w, c.qtaEdited && !qta.error, dz.active);
  renderQuantiles(root.querySelector("table.quantiles"), w, dz);
}

// renderOutcomes shows beside a window its own outcome counts (the rise of
// the connector's cumulative counts since the window before it: "–" when
// the page has no window before it to count from), and below them the
// totals, labelled as such, since the stream's start when it was sent.
function renderOutcomes(readings, totals, w) {
  totals.replaceChildren();
  const all = w.totals || {};
  if (Object.keys(all).length === 0) return;
  const list = (box, counts) => {
    const kinds = Object.keys(counts).sort((x, y) => rank(x) - rank(y) || (x < y ? -1 : 1));
    kinds.forEach((k, i) => {
      if (i) box.append(", ");
      box.append(printable(k) + " ");
      const b = el("b", null, String(counts[k]));
      b.dataset.outcome = k;
      box.append(b);
    });
  };
  const own = el("span", "window-outcomes", "in window: ");
  if (Object.keys(w.outcomes || {}).length) list(own, w.outcomes);
  else own.append(el("b", null, "–"), " (no window before it to count from)");
  if (readings.childNodes.length) readings.append(" · ");
  readings.append(own);
  totals.append(w.totals_since ? `total since ${sinceText(w.totals_since, w.end)}: ` : "total: ");
  list(totals, all);
}

// sinceText writes the start of the totals as the terminal does: its time
// of day (UTC) when it is on the window's day, else with its date.
function sinceText(ms, endMs) {
  const iso = new Date(ms).toISOString();
  const day = iso.slice(0, 10) === new Date(endMs).toISOString().slice(0, 10) ? "" : iso.slice(0, 10) + " ";
  return day + iso.slice(11, 19) + "Z";
}

// fmtScore writes a Quality of Outcome score rounded down to one decimal,
// so that 100 is shown only for 100 (as the terminal does).
function fmtScore(v) {
  return String(Math.floor(v * 10 + 1e-9) / 10);
}

// renderQoO shows the window's Quality of Outcome per series: the score,
// the components that set it and every component, "withheld" when the
// window had the series' ΔQ but too few instances for a score, "–" when it
// had no ΔQ of the series; nothing for a probe without scores.
function renderQoO(box, qoo) {
  box.replaceChildren();
  for (const series of ["observed", "calculated"]) {
    const q = qoo && qoo[series];
    if (!q) continue;
    const span = el("span", "qoo-series", `QoO ${series} `);
    span.dataset.qoo = series;
    if (q.withheld) {
      span.classList.add("withheld");
      span.append(el("b", null, "withheld"), " (too few instances)");
    } else if (q.score == null) {
      span.append(el("b", null, "–"));
    } else {
      span.append(el("b", "qoo-score", fmtScore(q.score)));
      if (q.set_by && q.set_by.length) span.append(" set by " + q.set_by.join(" and "));
      const comps = ["latency", "loss", "rate"].filter((c) => q[c] != null).map((c) => `${c} ${fmtScore(q[c])}`);
      if (comps.length) span.append(` (${comps.join(", ")})`);
    }
    if (box.childNodes.length) box.append(" · ");
    box.append(span);
  }
}

function rank(kind) {
  const r = { success: 0, timeout: 1, failure: 2 }[kind];
  return r === undefined ? 3 : r;
}

// displayControls reads the display boxes: {dmax} in seconds (null: each
// probe's own) and {bins}. A box whose value is wrong is marked and left
// out (50 bins), and the header says next to the boxes what is wrong and
// what is expected, until it is right again.
function displayControls() {
  const dm = $("dmax"), bn = $("bins");
  const text = dm.value.trim();
  const d = text === "" ? { value: null } : parseDelayInput("dMax", text, true);
  if (d.error) d.error += ", or empty for each probe's own";
  const n = Math.round(Number(bn.value));
  let binsError = null;
  if (bn.validity.badInput || bn.value.trim() === "" || !(n >= 2 && n <= 1000)) {
    const shown = bn.validity.badInput ? " (not a number)" : bn.value.trim() === "" ? " (empty)" : ` ${bn.value.trim()}`;
    binsError = `bins${shown}: want a whole number from 2 to 1000`;
  }
  for (const [box, err] of [[dm, d.error], [bn, binsError]]) {
    box.classList.toggle("invalid", !!err);
    box.setAttribute("aria-invalid", err ? "true" : "false");
  }
  const msg = [d.error, binsError].filter(Boolean).join("; ");
  const check = $("display-check");
  if (check.textContent !== msg) check.textContent = msg;
  return { dmax: d.error ? null : d.value, bins: binsError ? 50 : n };
}

// displayMax is the plot's delay range: the dMax control, else the largest
// delay of the window's curves (its dMax), widened for a prediction.
function displayMax(w, dz) {
  const typed = displayControls().dmax;
  if (typed != null) return typed;
  let xmax = windowDMax(w);
  if (dz.active) xmax = Math.max(xmax, dz.a * xmax + dz.b);
  return xmax || 1e-3;
}

// windowDMax is the largest delay of a window's curves: the probe's dMax.
function windowDMax(w) {
  let xmax = 0;
  for (const s of SERIES) for (const [x] of w.curves[s] || []) xmax = Math.max(xmax, x);
  return xmax;
}

function displayBins() {
  return displayControls().bins;
}

// sizeCanvas matches a canvas's pixels to its displayed size.
function sizeCanvas(cv) {
  const dpr = window.devicePixelRatio || 1;
  const w = Math.max(200, cv.clientWidth), h = cv.clientHeight || Number(cv.getAttribute("height"));
  cv.width = Math.round(w * dpr);
  cv.height = Math.round(h * dpr);
  const g = cv.getContext("2d");
  g.setTransform(dpr, 0, 0, dpr, 0, 0);
  return { g, w, h };
}

// plotFrame draws the axes of a CDF plot and returns the mapping.
function plotFrame(g, w, h, xmax, opts = {}) {
  const m = { l: 42, r: 12, t: 8, b: opts.noXLabels ? 6 : 22 };
  const X = (t) => m.l + (t / xmax) * (w - m.l - m.r);
  const Y = (p) => m.t + (1 - p) * (h - m.t - m.b);
  g.clearRect(0, 0, w, h);
  g.font = "11px system-ui, sans-serif";
  g.lineWidth = 1;
  for (const p of [0, 0.25, 0.5, 0.75, 1]) {
    g.strokeStyle = COLORS.grid;
    g.beginPath(); g.moveTo(m.l, Y(p)); g.lineTo(w - m.r, Y(p)); g.stroke();
    g.fillStyle = COLORS.axis; g.textAlign = "right"; g.textBaseline = "middle";
    g.fillText(p.toFixed(2), m.l - 6, Y(p));
  }
  if (!opts.noXLabels) {
    g.textAlign = "center"; g.textBaseline = "top";
    const tick = niceStep(xmax / 5);
    for (let i = 0; i * tick <= xmax * (1 + 1e-9); i++) {
      const t = i * tick;
      g.strokeStyle = COLORS.grid;
      g.beginPath(); g.moveTo(X(t), m.t); g.lineTo(X(t), h - m.b); g.stroke();
      g.fillStyle = COLORS.axis;
      g.fillText(i === 0 ? "0" : fmtDur(t), Math.min(X(t), w - m.r - 16), h - m.b + 5);
    }
  }
  g.strokeStyle = COLORS.axis;
  g.beginPath(); g.moveTo(m.l, m.t); g.lineTo(m.l, h - m.b); g.lineTo(w - m.r, h - m.b); g.stroke();
  return { X, Y, m };
}

// niceStep rounds a tick spacing up to 1, 2 or 5 times a power of ten.
function niceStep(raw) {
  const p = Math.pow(10, Math.floor(Math.log10(raw)));
  for (const m of [1, 2, 5, 10]) if (m * p >= raw * (1 - 1e-9)) return m * p;
  return 10 * p;
}

// trace draws F over [0, xmax] sampled at bins + 1 points.
function trace(g, F, X, Y, xmax, bins, color, width, dash) {
  g.strokeStyle = color; g.lineWidth = width; g.setLineDash(dash || []);
  g.beginPath();
  for (let i = 0; i <= bins; i++) {
    const t = (xmax * i) / bins;
    const y = Y(Math.min(1, Math.max(0, F(t))));
    if (i === 0) g.moveTo(X(t), y); else g.lineTo(X(t), y);
  }
  g.stroke(); g.setLineDash([]);
}

// step draws a QTA's step function.
function step(g, pts, X, Y, xmax, color, dash) {
  g.strokeStyle = color; g.lineWidth = 2; g.setLineDash(dash || []);
  g.beginPath(); g.moveTo(X(0), Y(0));
  let y = 0;
  for (const [d, p] of pts) {
    if (d > xmax) break;
    g.lineTo(X(d), Y(y)); g.lineTo(X(d), Y(p)); y = p;
  }
  g.lineTo(X(xmax), Y(y)); g.stroke(); g.setLineDash([]);
}

function drawCDF(cv, w, qta, edited, dz, Fpred) {
  const { g, w: W, h: H } = sizeCanvas(cv);
  const xmax = displayMax(w, dz), bins = displayBins();
  const { X, Y } = plotFrame(g, W, H, xmax);
  const cu = w.curves;
  if (cu.lower && cu.upper) {
    g.fillStyle = COLORS.band; g.beginPath();
    for (let i = 0; i <= bins; i++) { const t = (xmax * i) / bins; g.lineTo(X(t), Y(cdfAt(cu.upper, t))); }
    for (let i = bins; i >= 0; i--) { const t = (xmax * i) / bins; g.lineTo(X(t), Y(cdfAt(cu.lower, t))); }
    g.closePath(); g.fill();
  }
  if (cu.mean) trace(g, (t) => cdfAt(cu.mean, t), X, Y, xmax, bins, COLORS.mean, 1.5, [5, 4]);
  if (w.qta) step(g, requiredSteps(receivedQTA(w), windowDMax(w)), X, Y, xmax, COLORS.qta);
  else if (cu.qta) step(g, qtaFromCurve(cu.qta), X, Y, xmax, COLORS.qta);
  if (edited && !qta.error) step(g, qta.points, X, Y, xmax, COLORS.edited, [6, 3]);
  if (cu.calculated) trace(g, (t) => cdfAt(cu.calculated, t), X, Y, xmax, bins, COLORS.calculated, 2);
  if (Fpred) trace(g, Fpred, X, Y, xmax, bins, COLORS.predicted, 2.5, [7, 4]);
  if (cu.observed) trace(g, (t) => cdfAt(cu.observed, t), X, Y, xmax, bins, COLORS.observed, 2.5);
  drawDensity(cv.nextElementSibling, w, xmax, bins, Fpred);
}

// drawDensity draws the observed ΔQ's mass per display bin (and the
// predicted one's, outlined): F(x_i) − F(x_{i−1}).
function drawDensity(cv, w, xmax, bins, Fpred) {
  const { g, w: W, h: H } = sizeCanvas(cv);
  const m = { l: 42, r: 12, t: 4, b: 4 };
  g.clearRect(0, 0, W, H);
  const Fobs = (t) => cdfAt(w.curves.observed, t);
  let top = 1e-9;
  const mass = (F) => Array.from({ length: bins }, (_, i) => F((xmax * (i + 1)) / bins) - F((xmax * i) / bins));
  const obs = w.curves.observed ? mass(Fobs) : [];
  const pred = Fpred ? mass(Fpred) : [];
  for (const v of obs.concat(pred)) top = Math.max(top, v);
  const bw = (W - m.l - m.r) / bins;
  const bar = (v) => ((H - m.t - m.b) * v) / top;
  g.fillStyle = "rgba(9,105,218,0.55)";
  obs.forEach((v, i) => { const hgt = bar(v); g.fillRect(m.l + i * bw + 0.5, H - m.b - hgt, Math.max(1, bw - 1), hgt); });
  g.strokeStyle = COLORS.predicted; g.lineWidth = 1.5;
  pred.forEach((v, i) => { const hgt = bar(v); if (hgt > 0.5) g.strokeRect(m.l + i * bw + 0.5, H - m.b - hgt, Math.max(1, bw - 1), hgt); });
  g.fillStyle = COLORS.axis; g.font = "11px system-ui, sans-serif"; g.textAlign = "right"; g.textBaseline = "top";
  g.fillText("mass", m.l - 6, m.t);
  g.strokeStyle = COLORS.axis; g.beginPath(); g.moveTo(m.l, H - m.b); g.lineTo(W - m.r, H - m.b); g.stroke();
}

function drawLegend(box, w, edited, pred) {
  box.replaceChildren();
  const item = (color, text, dashed) => {
    const s = el("span");
    const i = el("i");
    i.style.background = dashed ? `repeating-linear-gradient(90deg, ${color} 0 5px, transparent 5px 8px)` : color;
    s.append(i, printable(text));
    box.append(s);
  };
  if (w.curves.observed) item(COLORS.observed, "observed");
  if (w.curves.calculated) item(COLORS.calculated, "calculated");
  if (w.curves.mean) item(COLORS.mean, "mean", true);
  if (w.curves.lower) item("rgba(9,105,218,0.3)", "95 % band");
  if (w.qta || w.curves.qta) item(COLORS.qta, "QTA");
  if (edited) item(COLORS.edited, "edited QTA", true);
  if (pred) item(COLORS.predicted, "predicted a·X + b", true);
}

// renderQuantiles writes one row per series (observed, calculated, then the
// prediction a·Q(q) + b, exact for a·X + b with a > 0) and one column per q.
function renderQuantiles(table, w, dz) {
  const rows = Object.keys(w.quantiles || {}).sort((x, y) => order(x) - order(y) || (x < y ? -1 : 1));
  const qs = [...new Set(rows.flatMap((s) => w.quantiles[s].map(([q]) => q)))].sort((a, b) => a - b);
  const head = el("tr");
  head.append(el("th", null, "quantile"));
  for (const q of qs) head.append(el("th", null, String(q)));
  table.tHead.replaceChildren(head);
  const body = [];
  const row = (series, cell) => {
    const tr = el("tr");
    tr.append(el("th", null, series));
    for (const q of qs) {
      const v = cell(q);
      const td = el("td", null, v == null ? "–" : fmtDur(v));
      td.dataset.series = series;
      td.dataset.q = String(q);
      tr.append(td);
    }
    body.push(tr);
  };
  for (const s of rows) {
    const m = new Map(w.quantiles[s]);
    row(s, (q) => m.get(q));
  }
  if (dz.active && w.quantiles.observed) {
    const m = new Map(w.quantiles.observed);
    row("predicted", (q) => (m.has(q) ? dz.a * m.get(q) + dz.b : null));
  }
  table.tBodies[0].replaceChildren(...body);
  // No quantile reached (the terminal shows no table either).
  table.hidden = body.length === 0;
}

function order(series) {
  const i = SERIES.indexOf(series);
  return i < 0 ? SERIES.length : i;
}

// ---- triggers and snapshots ------------------------------------------------------

// triggerKey names a trigger across redraws of the list (the state sent
// again makes new objects of the same triggers).
function triggerKey(t) {
  return `${t.time} ${t.snapshot} ${t.kind} ${t.probe}`;
}

// The trigger whose snapshot was opened last: closing it gives it the
// focus back, also when the list was redrawn meanwhile.
let openedTrigger = null;

function renderTriggers(fresh) {
  const list = $("triggers");
  // Every trigger and snapshot redraws the list: the trigger that had the
  // keyboard's focus keeps it (it was dropped to the page's start).
  const focused = list.contains(document.activeElement) && document.activeElement.closest("li");
  const focusKey = focused ? focused.dataset.key : null;
  list.replaceChildren();
  for (const t of [...store.triggers].reverse()) {
    const li = el("li");
    li.dataset.probe = t.probe;
    li.dataset.kind = t.kind;
    li.dataset.time = String(t.time);
    li.dataset.key = triggerKey(t);
    // Opened by the keyboard too: Tab reaches it, Enter or Space opens it.
    li.tabIndex = 0;
    li.setAttribute("aria-haspopup", "dialog");
    if (fresh && fresh.has(t)) li.classList.add("fresh");
    const head = el("div", "t-head");
    head.append(el("span", "t-time", stamp(t.time)), el("span", "t-kind", t.kind), el("b", null, t.probe));
    if (t.snapshot > 0) head.append(el("span", "t-snap", `snapshot #${snapshotNumber(t)}` + (store.snapshots.has(t.snapshot) ? "" : " (recording)")));
    li.append(head, el("div", "t-msg", t.message || ""));
    // The record's other attributes as they arrived (such as the traces
    // behind it), as text.
    const keys = Object.keys(t.attributes || {}).sort();
    if (keys.length) {
      const attrs = el("div", "t-attrs");
      for (const k of keys) attrs.append(attrSpan(k, t.attributes[k], t.trace_links));
      li.append(attrs);
    }
    li.addEventListener("click", () => openSnapshot(t));
    li.addEventListener("keydown", (e) => {
      // A trace link inside it opens the trace, not the snapshot.
      if (e.target !== li || (e.key !== "Enter" && e.key !== " ")) return;
      e.preventDefault();
      openSnapshot(t);
    });
    list.append(li);
    if (focusKey !== null && li.dataset.key === focusKey) li.focus();
  }
  $("trigger-count").textContent = store.triggers.length ? `(${store.triggers.length})` : "";
}

// attrSpan shows one attribute of a trigger as key=value; with --trace-url
// each trace id the scope made a link for (trace_links, id → address) is a
// link to that trace in the tracing UI. Only addresses the scope made are
// used, and only for ids of 32 hex digits.
function attrSpan(key, value, links) {
  const span = el("span", "t-attr", `${key}=`);
  let rest = String(value);
  const re = /[0-9a-f]{32}/g;
  let m, from = 0;
  while (links && (m = re.exec(rest)) !== null) {
    const href = links[m[0]];
    if (!href) continue;
    span.append(printable(rest.slice(from, m.index)));
    const a = el("a", "t-trace", m[0]);
    a.href = href;
    a.target = "_blank";
    a.rel = "noopener noreferrer";
    a.addEventListener("click", (e) => e.stopPropagation()); // not the snapshot
    span.append(a);
    from = m.index + m[0].length;
  }
  span.append(printable(rest.slice(from)));
  return span;
}

// snapshotNumber is the number the connector gave a trigger's snapshot (its
// snapshot files carry it); t.snapshot is the scope's own, by which the page
// asks for it: two collectors, or one restarted, number theirs from 1.
function snapshotNumber(t) {
  return t.snapshot_number > 0 ? t.snapshot_number : t.snapshot;
}

async function openSnapshot(t) {
  const dlg = $("snapshot");
  openedTrigger = triggerKey(t);
  $("snapshot-title").textContent = t.snapshot > 0 ? `Snapshot #${snapshotNumber(t)}` : "Trigger";
  $("snapshot-note").textContent = printable(`${t.kind} trigger on ${t.probe} at ${stamp(t.time)}: ${t.message || ""}`);
  const body = $("snapshot-body");
  body.replaceChildren();
  if (!dlg.open) dlg.showModal();
  if (!(t.snapshot > 0)) {
    body.append(el("p", "muted", "This trigger has no snapshot (snapshots are off, or it fired while one was recorded)."));
    return;
  }
  const res = await fetch(`/api/snapshot/${t.snapshot}`);
  if (!res.ok) {
    body.append(el("p", "muted", "Not recorded yet: the snapshot arrives once the windows after the trigger have closed."));
    return;
  }
  renderSnapshot(await res.json(), t);
}

// renderSnapshot draws, per probe, the observed ΔQ of every window of the
// snapshot (oldest grey, the trigger's window red, later ones orange) with the
// calculated ΔQ of the trigger's window dashed, and the counts per window.
function renderSnapshot(snap, t) {
  const body = $("snapshot-body");
  body.replaceChildren();
  const probes = [...new Set(snap.windows.flatMap((w) => w.probes.map((p) => p.probe)))].sort();
  const ends = snap.windows.map((w) => Date.parse(w.end));
  let tw = ends.findIndex((e) => e >= t.time);
  if (tw < 0) tw = ends.length - 1;
  for (const name of probes) {
    const box = el("div");
    box.dataset.probe = name;
    box.append(el("h3", null, name));
    const cv = el("canvas");
    box.append(cv);
    const table = el("table");
    const head = el("tr");
    for (const h of ["window end", "success", "timeout", "failure"]) head.append(el("th", null, h));
    table.append(head);
    box.append(table);
    body.append(box);
    const curves = [];
    snap.windows.forEach((w, i) => {
      const p = w.probes.find((x) => x.probe === name);
      if (!p) return;
      const tr = el("tr", i === tw ? "trigger-window" : null);
      for (const v of [w.end.slice(11, 23), p.success, p.timeout, p.failure]) tr.append(el("td", null, String(v)));
      table.append(tr);
      const pts = (dq) => dq && dq.cdf.map((v, j) => [(j + 1) * dq.width, v]);
      curves.push({ i, obs: pts(p.observed), calc: pts(p.calculated) });
    });
    let xmax = 0;
    for (const c of curves) for (const pts of [c.obs, c.calc]) if (pts && pts.length) xmax = Math.max(xmax, pts[pts.length - 1][0]);
    const { g, w: W, h: H } = sizeCanvas(cv);
    const { X, Y } = plotFrame(g, W, H, xmax || 1e-3);
    const bins = Math.min(400, displayBins() * 4);
    const drawOrder = [...curves].sort((x, y) => (x.i === tw) - (y.i === tw) || (y.i > tw) - (x.i > tw) || x.i - y.i);
    for (const c of drawOrder) {
      if (!c.obs) continue;
      const color = c.i === tw ? COLORS.qta : c.i > tw ? COLORS.predicted : `rgba(101,109,118,${0.35 + 0.5 * (c.i + 1) / (tw + 1)})`;
      trace(g, (x) => cdfAt(c.obs, x), X, Y, xmax, bins, color, c.i === tw ? 2.5 : 1.5);
    }
    const trig = curves.find((c) => c.i === tw);
    if (trig && trig.calc) trace(g, (x) => cdfAt(trig.calc, x), X, Y, xmax, bins, COLORS.calculated, 2, [5, 4]);
  }
  if (snap.truncated) body.append(el("p", "muted", `${snap.truncated} records or values left out (bounds).`));
  $("snapshot-note").textContent += ` — ${snap.windows.length} windows: grey before, red the trigger's window (calculated ΔQ dashed green), orange after.`;
  if (snap.source) $("snapshot-note").textContent += printable(` Recorded by ${snap.source}.`);
}

// ---- events -----------------------------------------------------------------------

function applyState(st) {
  store.k = st.k;
  store.windows = new Map(Object.entries(st.windows || {}));
  store.triggers = st.triggers || [];
  store.syncTriggers = st.pending_triggers || 0;
  store.syncWindows = st.pending || 0;
  $("conn").dataset.state = store.syncWindows > 0 ? "syncing" : "open";
  lastWindow = Date.now() - (st.idle_ms || 0);
  store.snapshots = new Map((st.snapshots || []).map((s) => [s.id, s]));
  store.stats = st.stats || {};
  renderAll();
  renderTriggers();
}

// The stream's id, from its "hello" event, is posted to /api/alive every
// alive_ms: the scope closes a stream whose page stops saying it is alive.
let alive = null;

function connect() {
  const es = new EventSource("/events");
  const conn = $("conn");
  es.addEventListener("hello", (e) => {
    const h = JSON.parse(e.data);
    clearInterval(alive);
    const ping = () => fetch(`/api/alive?client=${encodeURIComponent(h.client)}`, { method: "POST" }).catch(() => {});
    alive = setInterval(ping, h.alive_ms);
  });
  // Open, the stream first sends the state (applyState).
  es.onopen = () => { conn.dataset.state = "syncing"; };
  es.onerror = () => { conn.dataset.state = "down"; conn.textContent = "reconnecting…"; conn.className = "pill down"; };
  es.addEventListener("state", (e) => applyState(JSON.parse(e.data)));
  es.addEventListener("window", (e) => {
    const m = JSON.parse(e.data);
    for (const w of m.windows) addWindow(w);
    // The state's windows are not news: the last came idle_ms before it.
    if (store.syncWindows === 0) lastWindow = Date.now();
    store.syncWindows = Math.max(0, store.syncWindows - m.windows.length);
    if (store.syncWindows === 0 && conn.dataset.state === "syncing") conn.dataset.state = "open";
    store.stats = m.stats;
    // Held, the page is drawn again when a window at or before the one
    // held comes: the rest of a window sent in several requests, or the
    // state sent again.
    if (view.at == null || m.windows.some((w) => w.end <= view.at)) renderAll(); else renderHeader();
  });
  es.addEventListener("trigger", (e) => {
    const m = JSON.parse(e.data);
    store.triggers.push(...m.triggers);
    store.triggers.sort((a, b) => a.time - b.time);
    while (store.triggers.length > 200) store.triggers.shift();
    store.stats = m.stats;
    renderTriggers(store.syncTriggers > 0 ? null : new Set(m.triggers));
    store.syncTriggers = Math.max(0, store.syncTriggers - m.triggers.length);
    renderHeader();
  });
  es.addEventListener("snapshot", (e) => {
    const s = JSON.parse(e.data);
    store.snapshots.set(s.id, s);
    renderTriggers();
  });
}

function init() {
  $("hold").addEventListener("click", () => {
    const ends = windowEnds();
    view.at = view.at == null && ends.length ? ends[ends.length - 1] : null;
    renderAll();
  });
  $("slider").addEventListener("input", () => {
    const ends = windowEnds();
    const i = Number($("slider").value);
    view.at = i >= ends.length - 1 ? null : ends[i];
    renderAll();
  });
  for (const id of ["dmax", "bins"]) $(id).addEventListener("input", renderAll);
  $("snapshot-close").addEventListener("click", () => $("snapshot").close());
  $("snapshot").addEventListener("close", () => {
    // The dialog gives the focus back to what had it, unless the list
    // was redrawn meanwhile: then to the same trigger.
    const li = [...$("triggers").children].find((e) => e.dataset.key === openedTrigger);
    if (li && !$("triggers").contains(document.activeElement)) li.focus();
  });
  window.addEventListener("resize", renderAll);
  setInterval(connPill, 1000);
  connect();
}

init();
