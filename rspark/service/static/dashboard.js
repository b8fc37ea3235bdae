/* rspark serve: the dashboard. Plain JS + SVG, no dependency, nothing fetched but the service's own JSON.
 *
 * Every second it polls GET /streams and GET /queries (the two lists and the header's totals) and, for the selected
 * query, GET /queries/{name} (its counters, windows, their current and next bands and its interval variables, all
 * computed by the server: the page does no window arithmetic) and GET /streams/{name}/elements for each stream it
 * reads (the time line's marks). The selected query's records arrive as Server-Sent Events from
 * GET /queries/{name}/results?from=start: the latest one is the answers table, and its matched events (the values
 * of its interval variables) are drawn on the time line as intervals. Until the two lists first answer,
 * the page says it is loading (index.html's text), never that nothing is declared. */
(function () {
  "use strict";

  const POLL_MS = 1000;
  const RATE_WINDOW_MS = 60000;
  const ELEMENT_LIMIT = 500;
  const KEEP_RECORDS = 200;
  const SVG_NS = "http://www.w3.org/2000/svg";
  const XSD = "http://www.w3.org/2001/XMLSchema#";

  const state = {
    streams: [],
    queries: [],
    selected: null,       // the selected query's name
    detail: null,         // GET /queries/{name} of the selected query
    elements: {},         // stream IRI -> {kind, elements}
    records: [],          // the selected query's records, in arrival order
    seen: new Set(),      // their event ids (a reconnect may send some again)
    es: null,             // the EventSource of the selected query
    esInfo: "",
    samples: {},          // query name -> [[ms, records], ...] for the client-side record rate
    online: null,
    loaded: false,        // whether GET /streams and GET /queries have answered once: until then, "loading"
  };

  const $ = (sel) => document.querySelector(sel);
  const enc = encodeURIComponent;

  // ----------------------------------------------------------------------------------------------- fetching

  async function getJSON(path) {
    const resp = await fetch(path, { cache: "no-store", headers: { Accept: "application/json" } });
    if (!resp.ok) throw new Error(path + ": HTTP " + resp.status);
    return resp.json();
  }

  async function poll() {
    try {
      const [s, q] = await Promise.all([getJSON("streams"), getJSON("queries")]);
      state.streams = s.streams || [];
      state.queries = q.queries || [];
      state.loaded = true;
      sampleRates();
      chooseSelected();
      if (state.selected !== null) await pollSelected();
      setOnline(true);
    } catch (err) {
      setOnline(false, err);
    }
    renderAll();
    setTimeout(poll, POLL_MS);
  }

  async function pollSelected() {
    const name = state.selected;
    let detail;
    try {
      detail = await getJSON("queries/" + enc(name));
    } catch (err) {
      return; // removed meanwhile: the next poll of /queries tells
    }
    if (state.selected !== name) return;
    state.detail = detail;
    const reads = detail.reads || [];
    const fetched = {};
    await Promise.all(reads.map(async (iri) => {
      const stream = state.streams.find((st) => st.iri === iri);
      if (!stream || !stream.name) return; // a stream no PUT /streams declared (a query's output): no elements
      try {
        const data = await getJSON("streams/" + enc(stream.name) + "/elements?limit=" + ELEMENT_LIMIT);
        fetched[iri] = { kind: data.kind, elements: data.elements || [] };
      } catch (err) {
        /* keep what we had */
        if (state.elements[iri]) fetched[iri] = state.elements[iri];
      }
    }));
    if (state.selected === name) state.elements = fetched;
  }

  function setOnline(ok, err) {
    state.online = ok;
    const el = $("#conn");
    el.textContent = ok ? "live" : "offline";
    el.className = "conn " + (ok ? "ok" : "down");
    el.title = ok ? "polling the service every second" : "the service does not answer: " + (err && err.message);
  }

  function sampleRates() {
    const now = Date.now();
    for (const q of state.queries) {
      const list = state.samples[q.name] || (state.samples[q.name] = []);
      if (list.length && list[list.length - 1][1] > (q.records || 0)) list.length = 0; // re-registered
      list.push([now, q.records || 0]);
      while (list.length > 2 && now - list[0][0] > RATE_WINDOW_MS) list.shift();
    }
  }

  function queryRate(name) {
    const list = state.samples[name];
    if (!list || list.length < 2) return null;
    const [t0, r0] = list[0];
    const [t1, r1] = list[list.length - 1];
    return t1 > t0 ? ((r1 - r0) * 1000) / (t1 - t0) : null;
  }

  // ----------------------------------------------------------------------------------------------- selection

  function chooseSelected() {
    const names = state.queries.map((q) => q.name);
    if (state.selected !== null && names.includes(state.selected)) return;
    const fromHash = hashQuery();
    if (fromHash !== null && names.includes(fromHash)) select(fromHash, false);
    else if (names.length) select(names[0], false);
    else if (state.selected !== null) select(null, false);
  }

  function hashQuery() {
    const m = /^#q=(.*)$/.exec(location.hash);
    return m ? decodeURIComponent(m[1]) : null;
  }

  function select(name, updateHash = true) {
    if (name === state.selected) return;
    state.selected = name;
    state.detail = null;
    state.elements = {};
    state.records = [];
    state.seen = new Set();
    state.esInfo = "";
    if (state.es) { state.es.close(); state.es = null; }
    if (name !== null) {
      if (updateHash) history.replaceState(null, "", "#q=" + enc(name));
      openResults(name);
    }
  }

  function openResults(name) {
    const es = new EventSource("queries/" + enc(name) + "/results?from=start");
    state.es = es;
    es.addEventListener("result", (ev) => {
      if (state.es !== es) return;
      const key = ev.lastEventId || "";
      if (key && state.seen.has(key)) return;
      if (key) state.seen.add(key);
      let rec;
      try { rec = JSON.parse(ev.data); } catch (err) { return; }
      state.records.push(rec);
      if (state.records.length > KEEP_RECORDS) state.records.splice(0, state.records.length - KEEP_RECORDS);
      renderAnswers();
      renderTimeline();
    });
    es.addEventListener("gap", (ev) => {
      if (state.es !== es) return;
      let upto = ev.data;
      try { upto = JSON.parse(ev.data).dropped_upto; } catch (err) { /* the raw text */ }
      state.esInfo = "the records up to " + upto + " had already left the service's log";
      renderAnswers();
    });
    es.onerror = () => {
      if (state.es !== es) return;
      state.esInfo = es.readyState === EventSource.CLOSED ? "result stream closed" : "result stream reconnecting";
      renderAnswers();
    };
    es.onopen = () => {
      if (state.es !== es) return;
      state.esInfo = "";
      renderAnswers();
    };
  }

  // ----------------------------------------------------------------------------------------------- time values

  // A time as the API gives it (ISO 8601 text or a number) -> a position on the axis (epoch ms or the number).
  function toT(v) {
    if (v === null || v === undefined) return null;
    if (typeof v === "number") return v;
    const s = String(v).trim();
    if (s === "") return null;
    if (/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(s)) return Number(s);
    const d = Date.parse(/(Z|[+-]\d\d:?\d\d)$/i.test(s) ? s : s + "Z");
    return isNaN(d) ? null : d;
  }

  // An RDF term of a binding (getSTARTTIME() and the like) -> a position on the axis.
  function termT(term) {
    if (!term || term.type === "uri" || term.type === "bnode") return null;
    const dt = term.datatype || "";
    if (dt === XSD + "dateTime" || dt === XSD + "dateTimeStamp") {
      const s = term.value;
      const d = Date.parse(/(Z|[+-]\d\d:?\d\d)$/i.test(s) ? s : s + "Z");
      return isNaN(d) ? null : d;
    }
    const n = Number(term.value);
    return term.value !== "" && isFinite(n) ? n : null;
  }

  function pad(n, w = 2) { return String(n).padStart(w, "0"); }

  function clock(ms, withMs) {
    const d = new Date(ms);
    const s = pad(d.getUTCHours()) + ":" + pad(d.getUTCMinutes()) + ":" + pad(d.getUTCSeconds());
    return withMs ? s + "." + pad(d.getUTCMilliseconds(), 3) : s;
  }

  function day(ms) {
    const d = new Date(ms);
    return d.getUTCFullYear() + "-" + pad(d.getUTCMonth() + 1) + "-" + pad(d.getUTCDate());
  }

  function num(n) {
    if (n === null || n === undefined || !isFinite(n)) return "-";
    return String(Number(Number(n).toFixed(6)));
  }

  // A short form of an instant for the lists (the full value in the cell's title).
  function shortTime(v) {
    if (v === null || v === undefined) return "-";
    if (typeof v === "number") return num(v);
    const t = toT(v);
    if (t === null) return String(v);
    if (/^[-+]?[\d.]+$/.test(String(v).trim())) return num(t);
    return clock(t, t % 1000 !== 0);
  }

  // A duration in the stream's unit: milliseconds for date-time streams.
  function duration(v, kind) {
    if (v === null || v === undefined) return "-";
    if (kind !== "datetime") return num(v);
    let ms = Number(v);
    if (!isFinite(ms)) return String(v);
    if (ms === 0) return "0s";
    const neg = ms < 0;
    ms = Math.abs(ms);
    const parts = [];
    const units = [["d", 86400000], ["h", 3600000], ["m", 60000], ["s", 1000]];
    for (const [u, size] of units) {
      if (ms >= size) {
        const k = Math.floor(ms / size);
        parts.push(k + u);
        ms -= k * size;
      }
    }
    if (ms) parts.push(num(ms) + "ms");
    return (neg ? "-" : "") + parts.join("");
  }

  function seconds(v) {
    if (v === null || v === undefined || !isFinite(v)) return "-";
    const n = Number(v);
    return (n >= 10 ? n.toFixed(0) : n >= 1 ? n.toFixed(1) : n.toFixed(2)) + " s";
  }

  function rate(r) {
    if (r === null || r === undefined || !isFinite(r)) return "-";
    return (r >= 10 ? r.toFixed(0) : r.toFixed(1)) + "/s";
  }

  function localName(iri) {
    if (!iri) return "";
    const m = /[#/:]([^#/:]+)$/.exec(iri);
    return m ? m[1] : iri;
  }

  // ----------------------------------------------------------------------------------------------- DOM helpers

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "class") node.className = v;
      else if (k === "dataset") Object.assign(node.dataset, v);
      else node.setAttribute(k, v);
    }
    for (const c of children) {
      if (c === null || c === undefined) continue;
      node.append(c instanceof Node ? c : String(c));
    }
    return node;
  }

  function svg(tag, attrs, text) {
    const node = document.createElementNS(SVG_NS, tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined) continue;
      node.setAttribute(k, v);
    }
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function titled(node, text) {
    const t = document.createElementNS(SVG_NS, "title");
    t.textContent = text;
    node.appendChild(t);
    return node;
  }

  function setText(sel, text) {
    const node = typeof sel === "string" ? $(sel) : sel;
    if (node && node.textContent !== String(text)) node.textContent = String(text);
  }

  // ----------------------------------------------------------------------------------------------- lists

  function renderAll() {
    renderTotals();
    renderStreams();
    renderQueries();
    renderPanel();
  }

  function renderTotals() {
    if (!state.loaded) return; // "-" until the first answer
    const late = state.streams.reduce((a, s) => a + (s.late || 0), 0);
    // the problems of the streams' elements (rejected elements, quarantined files) and the queries that failed
    const errors = state.streams.reduce((a, s) => a + (s.rejected || 0) + (s.quarantined || 0), 0) +
      state.queries.filter((q) => q.error).length;
    setText("#total-streams", state.streams.length);
    setText("#total-queries", state.queries.length);
    setText("#total-late", late);
    setText("#total-errors", errors);
  }

  function numCell(v, cls) {
    const n = v || 0;
    return el("td", { class: "num" + (n && cls ? " " + cls : "") }, n);
  }

  function renderStreams() {
    const body = $("#streams tbody");
    body.replaceChildren(...state.streams.map((s) => el("tr", { dataset: { name: s.name || s.iri } },
      el("td", { title: s.iri }, s.name || s.iri),
      el("td", {}, s.kind || "-"),
      numCell(s.elements),
      el("td", { class: "num" }, rate(s.rate)),
      numCell(s.late, "warn-cell"),
      el("td", { class: "num" + ((s.rejected || s.quarantined) ? " bad-cell" : ""),
        title: (s.quarantined || 0) + " file(s) quarantined" }, s.rejected || 0),
      el("td", { title: s.last === null || s.last === undefined ? "" : String(s.last) }, shortTime(s.last)),
      el("td", { title: s.watermark === null || s.watermark === undefined ? "" : String(s.watermark) },
        shortTime(s.watermark)),
      sourceCell(s),
    )));
    showEmpty("#streams-empty", state.streams.length, "No stream declared yet (", "PUT /streams/{name}", ").");
  }

  // where a stream's elements come from: pushes (POST /streams/{name}), or its source's URL and whether it is
  // connected (a broker that went away is marked, its error in the cell's title); "records" when a mapping turns
  // its JSON or CSV records into elements
  function sourceCell(s) {
    const mapped = s.mapped ? " · records" : "";
    if (!s.source) return el("td", { class: "source", title: s.mapped ? "JSON or CSV records, mapped" : "" },
      "push" + mapped);
    const feed = (s.sources || [])[0] || {};
    const down = feed.connected === false;
    return el("td", { class: "source" + (down ? " warn-cell" : ""), title: feed.error || s.source },
      s.source + mapped + (down ? " (disconnected)" : ""));
  }

    // a list's line under its table: "Loading ..." (as the page comes) until the first answer, then whether it is empty
  function showEmpty(sel, count, before, code, after) {
    const node = $(sel);
    node.hidden = count > 0;
    if (state.loaded && !node.dataset.loaded) {
      node.replaceChildren(before, el("code", {}, code), after);
      node.dataset.loaded = "1";
    }
  }

  function streamName(iri) {
    const s = state.streams.find((st) => st.iri === iri);
    return s && s.name ? s.name : localName(iri);
  }

  function streamKind(iri) {
    const s = state.streams.find((st) => st.iri === iri);
    return s ? s.kind : null;
  }

  function queryKind(q) {
    for (const iri of (q && q.reads) || []) {
      const k = streamKind(iri) || (state.elements[iri] && state.elements[iri].kind);
      if (k) return k;
    }
    return null;
  }

  function renderQueries() {
    const body = $("#queries tbody");
    body.replaceChildren(...state.queries.map((q) => {
      const nameCell = el("td", { title: q.label || "" }, q.name);
      if (q.paused) nameCell.append(el("span", { class: "badge paused" }, "paused"));
      const row = el("tr", { dataset: { name: q.name }, class: q.name === state.selected ? "selected" : null },
        nameCell,
        el("td", { title: (q.reads || []).join("\n") }, (q.reads || []).map(streamName).join(", ") || "-"),
        numCell(q.records),
        el("td", { class: "num" }, rate(queryRate(q.name))),
        numCell(q.late, "warn-cell"),
        numCell(q.errors, "bad-cell"),
        el("td", { class: "num" }, duration(q.lag, queryKind(q))),
        el("td", { title: q.last === null || q.last === undefined ? "" : String(q.last) }, shortTime(q.last)),
      );
      row.addEventListener("click", () => { select(q.name); renderAll(); });
      return row;
    }));
    showEmpty("#queries-empty", state.queries.length, "No query registered yet (", "PUT /queries/{name}", ").");
  }

  // ----------------------------------------------------------------------------------------------- query panel

  function renderPanel() {
    const panel = $("#query-panel");
    const q = state.queries.find((x) => x.name === state.selected);
    if (!q) { panel.hidden = true; return; }
    panel.hidden = false;
    const d = state.detail && state.detail.name === q.name ? state.detail : null;
    const info = Object.assign({}, q, d || {});
    const kind = queryKind(info);
    setText("#q-name", q.name);
    const badges = $("#q-badges");
    badges.replaceChildren(
      info.profile ? el("span", { class: "badge" }, "profile " + info.profile) : "",
      info.paused ? el("span", { class: "badge paused" }, "paused") : "",
    );
    const label = [];
    if (info.label && info.label !== q.name) label.push("registers " + info.label);
    if (info.reads && info.reads.length) label.push("reads " + info.reads.join(", "));
    setText("#q-label", label.join(" · "));
    const errLine = $("#q-error");
    errLine.hidden = !info.error;
    setText(errLine, info.error ? "error: " + info.error : "");
    const counters = {
      evaluations: info.evaluations || 0,
      records: info.records || 0,
      last: info.last === null || info.last === undefined ? "-" : String(info.last),
      lag: duration(info.lag, kind),
      latency: seconds(info.latency_p50) + " / " + seconds(info.latency_p99),
      late: info.late || 0,
      errors: info.errors || 0,
      consumed: info.consumed === null || info.consumed === undefined ? "-" : String(info.consumed),
    };
    // a query that consumes events: the occurrences its state carries (the counter is hidden for the others)
    $("#q-consumed").hidden = info.consumed === null || info.consumed === undefined;
    for (const [k, v] of Object.entries(counters)) {
      const node = document.querySelector('#q-counters [data-counter="' + k + '"]');
      setText(node, v);
      if (k === "late" || k === "errors") node.classList.toggle("nonzero", v > 0);
    }
    if (d) {
      setText("#q-text", d.query || "");
      setText("#q-algebra", d.algebra || "");
    }
    renderTimeline();
    renderAnswers();
  }

  // ----------------------------------------------------------------------------------------------- answers

  function prefixes() {
    const text = (state.detail && state.detail.query) || "";
    const out = [];
    const re = /PREFIX\s+([A-Za-z][\w.-]*)?:\s*<([^>]*)>/gi;
    let m;
    while ((m = re.exec(text)) !== null) out.push([m[1] || "", m[2]]);
    out.sort((a, b) => b[1].length - a[1].length);
    return out;
  }

  function compact(iri, prefs) {
    for (const [p, ns] of prefs) {
      if (ns && iri.startsWith(ns)) {
        const local = iri.slice(ns.length);
        if (/^[\w.-]*$/.test(local) && !local.endsWith(".")) return p + ":" + local;
      }
    }
    return "<" + iri + ">";
  }

  function termText(term, prefs) {
    if (!term) return "";
    switch (term.type) {
      case "uri": return compact(term.value, prefs);
      case "bnode": return "_:" + term.value;
      case "triple": {
        const t = term.value || {};
        return "<< " + termText(t.subject, prefs) + " " + termText(t.predicate, prefs) + " " +
          termText(t.object, prefs) + " >>";
      }
      default: {
        const lang = term["xml:lang"];
        return lang ? '"' + term.value + '"@' + lang : term.value;
      }
    }
  }

  function termTitle(term) {
    if (!term) return "unbound";
    if (term.type === "uri") return term.value;
    if (term.datatype) return term.value + " (" + compact(term.datatype, [["xsd", XSD]]) + ")";
    return term.type;
  }

  function renderAnswers() {
    const table = $("#answers");
    const thead = table.querySelector("thead");
    const tbody = table.querySelector("tbody");
    const rec = state.records.length ? state.records[state.records.length - 1] : null;
    const info = [];
    if (state.records.length) info.push(state.records.length + " record(s) received");
    if (state.esInfo) info.push(state.esInfo);
    setText("#answers-info", info.join(" · "));
    if (!rec) {
      setText("#answer-time", "-");
      thead.replaceChildren();
      tbody.replaceChildren();
      $("#answers-empty").hidden = false;
      setText("#answers-empty", "No answer yet: a record comes when its instant is due.");
      return;
    }
    setText("#answer-time", rec.time === null || rec.time === undefined ? "-" : String(rec.time));
    const prefs = prefixes();
    let cols;
    let rows;
    if (typeof rec.boolean === "boolean") {
      cols = ["boolean"];
      rows = [[{ text: String(rec.boolean), title: "ASK" }]];
    } else if (Array.isArray(rec.triples) || Array.isArray(rec.quads)) {
      const lines = rec.triples || rec.quads;
      cols = [rec.triples ? "triple" : "quad"];
      rows = lines.map((line) => [{ text: line, title: "" }]);
    } else {
      cols = (rec.head && rec.head.vars) || [];
      const bindings = (rec.results && rec.results.bindings) || [];
      rows = bindings.map((b) => cols.map((v) => ({
        text: termText(b[v], prefs),
        title: termTitle(b[v]),
        numeric: b[v] && b[v].type !== "uri" && b[v].type !== "bnode" && b[v].datatype &&
          b[v].datatype.startsWith(XSD) && termT(b[v]) !== null && !/dateTime/.test(b[v].datatype),
      })));
    }
    thead.replaceChildren(el("tr", {}, ...cols.map((c) => el("th", {}, cols.length === 1 &&
      (c === "boolean" || c === "triple" || c === "quad") ? c : "?" + c))));
    tbody.replaceChildren(...rows.map((r) => el("tr", {},
      ...r.map((c) => el("td", { title: c.title, class: c.numeric ? "lit-num" : null }, c.text)))));
    const empty = $("#answers-empty");
    empty.hidden = rows.length > 0;
    if (!rows.length) setText(empty, "No solution at this instant.");
  }

  // ----------------------------------------------------------------------------------------------- time line

  // The matched events of the latest record: the bindings of the query's interval variables (the variables its
  // algebra binds to getSTARTTIME() and getENDTIME(), as GET /queries/{name} names them).
  function matchedEvents() {
    const vars = state.detail && state.detail.interval_variables;
    if (!vars) return null;
    const rec = state.records.length ? state.records[state.records.length - 1] : null;
    const bindings = (rec && rec.results && rec.results.bindings) || [];
    const prefs = prefixes();
    const seen = new Set();
    const out = [];
    for (const b of bindings) {
      const a = termT(b[vars.start]);
      const z = termT(b[vars.end]);
      if (a === null || z === null) continue;
      const others = Object.keys(b).filter((k) => k !== vars.start && k !== vars.end)
        .map((k) => "?" + k + " = " + termText(b[k], prefs)).join(", ");
      const key = a + "|" + z + "|" + others;
      if (seen.has(key)) continue;
      seen.add(key);
      out.push({ start: Math.min(a, z), end: Math.max(a, z), text: others,
        startText: b[vars.start].value, endText: b[vars.end].value });
    }
    return out;
  }

  // A band as the server computes it (a window's content: start, end, each bound open or closed) -> positions on
  // the axis, or null. A landmark or interval band with no start yet is drawn from the axis' start.
  function bandOf(band) {
    if (!band) return null;
    const lo = toT(band.start);
    const hi = toT(band.end);
    if (hi === null) return null;
    return { lo: lo === null ? -Infinity : lo, hi, startOpen: !!band.start_open, endOpen: !!band.end_open,
      at: band.at };
  }

  function describeWindow(w, kind) {
    if (w.kind === "time") {
      const parts = ["range " + duration(w.range, kind)];
      if (w.slide !== null && w.slide !== undefined) parts.push("step " + duration(w.slide, kind));
      if (w.partition) parts.push("of each " + localName(w.partition));
      return parts.join(" · ");
    }
    if (w.kind === "count") {
      const n = w.size === null || w.size === undefined ? "?" : w.size;
      const unit = { triples: " triples", bgp: " BGP matches", elements: " elements" }[w.unit] || "";
      return "last " + n + unit + (w.partition ? " of each " + localName(w.partition) : "");
    }
    if (w.kind === "element") return "no window (each element)";
    return w.kind || "window";
  }

  function ticks(lo, hi, kind, px) {
    const target = Math.max(2, Math.floor(px / 90));
    const span = hi - lo;
    let step;
    if (kind === "datetime") {
      const steps = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1e3, 2e3, 5e3, 1e4, 15e3, 3e4, 6e4, 12e4, 3e5, 6e5, 9e5,
        18e5, 36e5, 72e5, 108e5, 216e5, 432e5, 864e5, 1728e5, 6048e5, 2592e6, 31536e6];
      step = steps.find((s) => span / s <= target) || steps[steps.length - 1];
    } else {
      const raw = span / target;
      const mag = Math.pow(10, Math.floor(Math.log10(raw)));
      const norm = raw / mag;
      step = (norm <= 1 ? 1 : norm <= 2 ? 2 : norm <= 5 ? 5 : 10) * mag;
    }
    const out = [];
    for (let t = Math.ceil(lo / step) * step; t <= hi + 1e-9 && out.length < 200; t += step) out.push(t);
    return { values: out, step };
  }

  function tickLabel(t, kind, step) {
    if (kind !== "datetime") return num(t);
    if (step >= 864e5) return day(t);
    if (step < 1000) return clock(t, true);
    if (step >= 6e4) return clock(t).slice(0, 5);
    return clock(t);
  }

  // The rows of the time line: each stream read (its elements), each window on it (as declared, with its current
  // and next bands as the server computes them: the i-th band is the i-th window's), then the matched events of
  // the latest record.
  function layoutRows(reads, windows, bands, events) {
    const rows = [];
    const windowRows = windows.map((w, i) => ({ type: "window", w, iri: w.stream, wkind: w.kind,
      cur: bandOf(bands[i] && bands[i].current), open: bandOf(bands[i] && bands[i].next), height: 30 }));
    for (const iri of reads) {
      const els = ((state.elements[iri] && state.elements[iri].elements) || []).slice()
        .filter((x) => x.t !== null && x.t !== undefined).sort((a, b) => a.t - b.t);
      rows.push({ type: "stream", iri, elements: els, height: 40 });
      for (const r of windowRows.filter((x) => x.iri === iri)) rows.push(r);
    }
    // windows on streams this query reads but that no row shows (should not happen): a row each
    for (const r of windowRows.filter((x) => !reads.includes(x.iri))) rows.push(r);
    if (events) {
      const sorted = events.slice().sort((a, b) => a.start - b.start || a.end - b.end);
      const laneEnds = [];
      const lanes = sorted.map((e) => {
        let i = laneEnds.findIndex((end) => end < e.start);
        if (i < 0) { i = laneEnds.length; laneEnds.push(e.end); } else laneEnds[i] = e.end;
        return Object.assign({ lane: i }, e);
      });
      const nLanes = Math.max(1, Math.min(12, laneEnds.length));
      rows.push({ type: "events", events: lanes, height: 14 + nLanes * 10 });
    }
    return rows;
  }

  // The times the axis must show: the elements, the instant last reported, the bands and the events.
  function domainOf(rows, lastT) {
    const ts = [];
    for (const r of rows) {
      if (r.type === "stream") for (const e of r.elements) ts.push(e.t);
    }
    if (lastT !== null) ts.push(lastT);
    for (const r of rows) {
      if (r.type === "window") {
        for (const b of [r.cur, r.open]) if (b) for (const v of [b.lo, b.hi]) if (isFinite(v)) ts.push(v);
      } else if (r.type === "events") {
        for (const e of r.events) ts.push(e.start, e.end);
      }
    }
    return ts;
  }

  function drawAxis(parts, scale, kind) {
    const { x, x0, x1, lo, hi, top, bottom } = scale;
    const tk = ticks(lo, hi, kind, x1 - x0);
    const axis = svg("g", { class: "axis" });
    axis.appendChild(svg("line", { x1: x0, x2: x1, y1: bottom + 0.5, y2: bottom + 0.5 }));
    for (const t of tk.values) {
      const xt = Math.round(x(t)) + 0.5;
      parts.push(svg("line", { class: "grid-line", x1: xt, x2: xt, y1: top, y2: bottom }));
      axis.appendChild(svg("line", { x1: xt, x2: xt, y1: bottom, y2: bottom + 5 }));
      axis.appendChild(svg("text", { x: xt, y: bottom + 17, "text-anchor": "middle" }, tickLabel(t, kind, tk.step)));
    }
    if (kind === "datetime") {
      axis.appendChild(svg("text", { x: 8, y: bottom + 17 }, day(lo) + " UTC"));
    }
    parts.push(axis);
  }

  function drawStreamRow(parts, scale, r, y, rows) {
    const { x, x0, x1 } = scale;
    const mid = y + r.height / 2;
    // the current windows' content, shaded under the marks
    for (const wr of rows.filter((o) => o.type === "window" && o.iri === r.iri && o.cur)) {
      const a = x(wr.cur.lo);
      const b = x(wr.cur.hi);
      parts.push(svg("rect", { class: "band-shade", x: a, y: y + 4, width: Math.max(2, b - a),
        height: r.height - 8 }));
    }
    parts.push(svg("line", { class: "row-line", x1: x0, x2: x1, y1: mid, y2: mid }));
    const g = svg("g", { class: "marks", "data-stream": r.iri });
    let prevT = null;
    let dup = 0;
    for (const e of r.elements) {
      dup = e.t === prevT ? dup + 1 : 0;
      prevT = e.t;
      const off = dup === 0 ? 0 : (dup % 2 ? -1 : 1) * Math.min(12, Math.ceil(dup / 2) * 5);
      const c = svg("circle", { class: "element-mark" + (e.late ? " late" : ""), cx: x(e.t), cy: mid + off, r: 5,
        "data-t": e.t, "data-time": e.time });
      titled(c, (e.graph ? localName(e.graph) + " at " : "") + String(e.time) + " · " + e.triples + " triple" +
        (e.triples === 1 ? "" : "s") + (e.late ? " · late" : ""));
      g.appendChild(c);
    }
    parts.push(g);
  }

  function drawWindowRow(parts, scale, r, y, kind) {
    const { x, x1 } = scale;
    const mid = y + r.height / 2;
    if (r.open) {
      const a = x(r.open.lo);
      const b = x(r.open.hi);
      parts.push(titled(svg("rect", { class: "band-open", x: a, y: y + 6, width: Math.max(2, b - a),
        height: r.height - 12, rx: 3 }), "the next window (still open): " + bandText(r.open, kind, r.wkind)));
    }
    if (r.cur) {
      const a = x(r.cur.lo);
      const b = x(r.cur.hi);
      parts.push(titled(svg("rect", { class: "band", x: a, y: y + 6, width: Math.max(2, b - a),
        height: r.height - 12, rx: 3, "data-window": r.w.name }),
      localName(r.w.name) + " at " + String(r.cur.at) + ": " + bandText(r.cur, kind, r.wkind)));
      parts.push(svg("text", { class: "band-label", x: Math.min(b, x1) - 4, y: mid + 3.5, "text-anchor": "end" },
        b - a > 60 ? bandText(r.cur, kind, r.wkind) : ""));
    }
  }

  function drawEvents(parts, scale, r, y) {
    const { x } = scale;
    const g = svg("g", { class: "events" });
    for (const e of r.events) {
      const ly = y + 10 + Math.min(e.lane, 11) * 10;
      const a = x(e.start);
      const b = x(e.end);
      const item = svg("g", { class: "event-interval" });
      item.appendChild(svg("line", { class: "event", x1: a, x2: b, y1: ly, y2: ly }));
      item.appendChild(svg("circle", { class: "event-end", cx: a, cy: ly, r: 3 }));
      item.appendChild(svg("circle", { class: "event-end", cx: b, cy: ly, r: 3 }));
      titled(item, "[" + e.startText + ", " + e.endText + "]" + (e.text ? " " + e.text : ""));
      g.appendChild(item);
    }
    parts.push(g);
  }

  function renderTimeline() {
    const node = $("#timeline");
    const wrap = $("#timeline-wrap");
    const d = state.detail && state.detail.name === state.selected ? state.detail : null;
    const q = state.queries.find((x) => x.name === state.selected);
    if (!q) { node.replaceChildren(); return; }
    const info = Object.assign({}, q, d || {});
    const kind = queryKind(info);
    const W = Math.max(480, wrap.clientWidth || 900);
    const gutter = 150;
    const top = 22;
    const lastT = toT(info.last);
    const rows = layoutRows(info.reads || [], (d && d.windows) || [], (d && d.bands) || [], matchedEvents());
    const ts = domainOf(rows, lastT);
    const H = top + rows.reduce((a, r) => a + r.height, 0) + 34;
    node.setAttribute("viewBox", "0 0 " + W + " " + H);
    node.setAttribute("width", W);
    node.setAttribute("height", H);
    if (!ts.length) {
      node.replaceChildren(svg("text", { x: W / 2, y: H / 2, "text-anchor": "middle", class: "nothing" },
        "No element pushed yet."));
      drawLabels(node, rows, top, kind, gutter);
      return;
    }
    let lo = Math.min(...ts);
    let hi = Math.max(...ts);
    const padT = hi > lo ? (hi - lo) * 0.04 : (kind === "datetime" ? 5000 : 5);
    lo -= padT;
    hi += padT;
    const x0 = gutter;
    const x1 = W - 24;
    const x = (t) => x0 + ((Math.max(lo, Math.min(hi, t)) - lo) / (hi - lo)) * (x1 - x0);
    const scale = { x, x0, x1, lo, hi, top, bottom: H - 34 };
    const parts = [];
    drawAxis(parts, scale, kind);
    let y = top;
    for (const r of rows) {
      parts.push(svg("line", { class: "row-line", x1: x0, x2: x1, y1: Math.round(y + r.height) + 0.5,
        y2: Math.round(y + r.height) + 0.5 }));
      if (r.type === "stream") drawStreamRow(parts, scale, r, y, rows);
      else if (r.type === "window") drawWindowRow(parts, scale, r, y, kind);
      else drawEvents(parts, scale, r, y);
      y += r.height;
    }
    // the instant last reported
    if (lastT !== null) {
      const xl = x(lastT);
      parts.push(svg("line", { class: "now-line", x1: xl, x2: xl, y1: top - 4, y2: scale.bottom }));
      const anchor = xl > x1 - 80 ? "end" : "middle";
      parts.push(svg("text", { class: "now-label", x: xl, y: top - 8, "text-anchor": anchor },
        "last " + shortTime(info.last)));
    }
    node.replaceChildren(...parts);
    drawLabels(node, rows, top, kind, gutter);
  }

  // A window's content bounds as text, each bound open or closed as the window defines it: (a, b] for RSP-QL's
  // time windows, [a, b] for the others, [b] for NOW and for a stream read with no window.
  function bandText(b, kind, wkind) {
    const f = (t) => (isFinite(t) ? (kind === "datetime" ? clock(t, t % 1000 !== 0) : num(t)) : "start");
    if (wkind === "now" || wkind === "element") return "[" + f(b.hi) + "]";
    return (b.startOpen ? "(" : "[") + f(b.lo) + ", " + f(b.hi) + (b.endOpen ? ")" : "]");
  }

  function drawLabels(node, rows, top, kind, gutter) {
    let y = top;
    for (const r of rows) {
      const mid = y + r.height / 2;
      let label;
      let sub;
      if (r.type === "stream") {
        label = streamName(r.iri);
        sub = "stream · " + r.elements.length + " element" + (r.elements.length === 1 ? "" : "s");
      } else if (r.type === "window") {
        label = "window " + localName(r.w.name);
        sub = describeWindow(r.w, kind);
      } else {
        label = "matched events";
        sub = r.events.length + " at the last instant";
      }
      node.appendChild(titled(svg("text", { class: "row-label", x: 10, y: mid - 2 }, clip(label, 20)),
        r.type === "stream" ? r.iri : r.type === "window" ? r.w.name : label));
      node.appendChild(svg("text", { class: "row-sub", x: 10, y: mid + 11 }, clip(sub, 26)));
      y += r.height;
    }
    void gutter;
  }

  function clip(s, n) { return s.length > n ? s.slice(0, n - 1) + "…" : s; }

  // ----------------------------------------------------------------------------------------------- start

  window.addEventListener("resize", () => renderTimeline());
  window.addEventListener("hashchange", () => {
    const name = hashQuery();
    if (name !== null && state.queries.some((q) => q.name === name)) { select(name, false); renderAll(); }
  });
  poll();
})();
