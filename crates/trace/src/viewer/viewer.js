// mmTracer: draws an mmtrace NDJSON trace as swimlanes on one time axis.
//
// Plain JavaScript and one canvas. Lane labels, the percentile table and the selection are
// DOM so they are readable by assistive tools and by tests. Drawing is virtualised: every
// lane keeps its items sorted by start time, each frame binary-searches the visible window
// and draws only that, and items narrower than a pixel are merged per pixel column.
//
// Time bases: "drift-corrected" uses ts_ns (the device timeline); "raw" shows each record at
// the time its own clock stamped it: ts_ns − sync_offset_ms · 1e6.
(function () {
  "use strict";

  const MODALITY_COLORS = {
    image: "#4e79a7", audio: "#59a14f", text: "#f28e2b", imu: "#b07aa1", log: "#9c755f",
  };
  const MODALITY_ORDER = ["image", "audio", "text", "imu", "log"];
  const COUNTER_INFO = {
    ldti: { label: "LDTI", unit: "", height: 64, color: "#2f6fdf", fixed: [0, 1] },
    queue_depth: { label: "queue depth", unit: " jobs", height: 40, color: "#4f6d8a" },
    psi_cpu: { label: "CPU pressure (PSI)", unit: " %", height: 40, color: "#8a5a44" },
    slot_occupancy: { label: "slot occupancy", unit: "", height: 40, color: "#3c8d7a", fixed: [0, 1] },
  };
  const AXIS_H = 30;
  const GROUP_H = 22;
  const ROW_H = 12;
  const ROW_GAP = 2;
  const MARK_H = 10;
  const MAX_ROWS = 4;
  const TRACK_H = 34;
  const MISS = "#d62f3a";
  const POLICY = "#7b4fd6";
  const STAGE_ON_TRACK = new Set(["pre", "exec", "post", "prefill", "decode"]);

  const $ = (id) => document.getElementById(id);
  const canvas = $("canvas");
  const ctx = canvas.getContext("2d");
  const state = {
    header: null, records: [], jobs: [], jobByTrace: new Map(), lanes: [], policies: [],
    t0: 0, t1: 1, minTs: 0, maxTs: 1, raw: false, selected: null, hoverItem: null,
    width: 0, height: 0, dpr: 1, pending: false,
  };

  // ---------- loading ----------

  function setStatus(text, isError) {
    const s = $("status");
    s.textContent = text;
    s.classList.toggle("error", !!isError);
  }

  function parseTrace(text) {
    const lines = text.split("\n");
    let header = null;
    const records = [];
    const errors = [];
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i].trim();
      if (!line) continue;
      let obj;
      try {
        obj = JSON.parse(line);
      } catch (e) {
        if (errors.length < 5) errors.push("line " + (i + 1) + ": " + e.message);
        continue;
      }
      if (!header) {
        if (typeof obj.mmtrace !== "number") {
          throw new Error("line " + (i + 1) + ": not an mmtrace header (expected {\"mmtrace\":1,…})");
        }
        header = obj;
        continue;
      }
      if (typeof obj.ts_ns !== "number" || typeof obj.name !== "string") {
        if (errors.length < 5) errors.push("line " + (i + 1) + ": record without ts_ns/name");
        continue;
      }
      records.push(obj);
    }
    if (!header) throw new Error("empty trace: no header line");
    return { header, records, errors };
  }

  function lowerBound(arr, key, t) {
    let lo = 0, hi = arr.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (arr[mid][key] < t) lo = mid + 1; else hi = mid;
    }
    return lo;
  }

  function percentile(sorted, p) {
    if (!sorted.length) return NaN;
    const idx = Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1));
    return sorted[idx];
  }

  // Builds jobs and lanes from records. Runs once per load.
  function build(parsed) {
    const recs = parsed.records;
    for (const r of recs) {
      r.dur_ns = r.dur_ns || 0;
      r.off = (r.sync_offset_ms || 0) * 1e6;
      r.end = r.ts_ns + r.dur_ns;
    }
    recs.sort((a, b) => a.ts_ns - b.ts_ns);
    let minTs = Infinity, maxTs = -Infinity;
    const jobsById = new Map();
    const counters = new Map();
    const tracks = new Map();
    const policies = [];
    const marks = new Map(); // modality -> skip/shed/drop instants
    for (const r of recs) {
      minTs = Math.min(minTs, r.ts_ns - Math.max(0, r.off));
      maxTs = Math.max(maxTs, r.end - Math.min(0, r.off));
      if (r.kind === "counter") {
        if (!counters.has(r.name)) counters.set(r.name, []);
        counters.get(r.name).push(r);
        continue;
      }
      if (r.name === "policy_change") {
        policies.push(r);
        continue;
      }
      if (r.kind === "span" && STAGE_ON_TRACK.has(r.name)) {
        if (!tracks.has(r.track)) tracks.set(r.track, []);
        tracks.get(r.track).push(r);
      }
      if (r.kind === "instant" && (r.name === "skip" || r.name === "shed" || r.name === "drop")) {
        const m = r.modality || "log";
        if (!marks.has(m)) marks.set(m, []);
        marks.get(m).push(r);
      }
      if (r.job === undefined || r.job === null) continue;
      let j = jobsById.get(r.job);
      if (!j) {
        j = {
          job: r.job, modality: r.modality || "log", model: r.model, trace_id: r.trace_id,
          track: r.track, start: Infinity, end: -Infinity, off: r.off, stages: [],
          root: null, deadline: null, missed: false, skipped: false, shed: false, row: 0,
        };
        jobsById.set(r.job, j);
      }
      if (r.kind === "span") {
        j.start = Math.min(j.start, r.ts_ns);
        j.end = Math.max(j.end, r.end);
        if (r.name === "job") j.root = r; else j.stages.push(r);
      } else if (r.name === "deadline") {
        j.deadline = r.ts_ns;
      } else if (r.name === "miss") {
        j.missed = true;
      } else if (r.name === "skip") {
        j.skipped = true;
      } else if (r.name === "shed") {
        j.shed = true;
      }
    }
    if (!isFinite(minTs)) { minTs = 0; maxTs = 1; }
    const jobs = [...jobsById.values()].filter((j) => isFinite(j.start));
    jobs.sort((a, b) => a.start - b.start);

    // Lanes, top to bottom: health counters, modalities (job lifecycles), compute tracks.
    const lanes = [];
    let y = AXIS_H;
    const group = (label) => { lanes.push({ kind: "group", label, y, h: GROUP_H }); y += GROUP_H; };
    if (counters.size) {
      group("Health");
      const names = [...counters.keys()].sort((a, b) => {
        const order = Object.keys(COUNTER_INFO);
        const ia = order.indexOf(a), ib = order.indexOf(b);
        return (ia < 0 ? 99 : ia) - (ib < 0 ? 99 : ib) || a.localeCompare(b);
      });
      for (const name of names) {
        const items = counters.get(name);
        const info = COUNTER_INFO[name] || { label: name, unit: "", height: 38, color: "#56687a" };
        let lo = Infinity, hi = -Infinity;
        for (const c of items) { lo = Math.min(lo, c.value); hi = Math.max(hi, c.value); }
        const range = info.fixed ? [Math.min(info.fixed[0], lo), Math.max(info.fixed[1], hi)] : [Math.min(0, lo), hi > 0 ? hi * 1.1 : 1];
        const last = items[items.length - 1].value;
        lanes.push({ kind: "counter", id: name, label: info.label, info, items, range, y, h: info.height, maxOff: 0, maxDur: 0,
          sub: "last " + fmtNum(last) + info.unit + " · max " + fmtNum(hi) + info.unit });
        y += info.height;
      }
    }
    const byModality = new Map();
    for (const j of jobs) {
      if (!byModality.has(j.modality)) byModality.set(j.modality, []);
      byModality.get(j.modality).push(j);
    }
    const modalities = [...new Set([...byModality.keys(), ...marks.keys()])]
      .sort((a, b) => MODALITY_ORDER.indexOf(a) - MODALITY_ORDER.indexOf(b));
    if (modalities.length) group("Modalities · jobs");
    for (const m of modalities) {
      const list = (byModality.get(m) || []).filter((j) => j.stages.length || j.root);
      // Greedy row packing so overlapping jobs sit on separate rows.
      const rowEnds = [];
      let maxDur = 0, maxOff = 0;
      for (const j of list) {
        let row = rowEnds.findIndex((e) => e <= j.start);
        if (row < 0) row = rowEnds.length < MAX_ROWS ? rowEnds.length : indexOfMin(rowEnds);
        rowEnds[row] = Math.max(rowEnds[row] || 0, j.end);
        j.row = row;
        maxDur = Math.max(maxDur, j.end - j.start);
        maxOff = Math.max(maxOff, Math.abs(j.off));
      }
      const rows = Math.max(1, rowEnds.length);
      const mk = marks.get(m) || [];
      const missed = list.filter((j) => j.missed).length;
      const h = Math.max(40, MARK_H + rows * (ROW_H + ROW_GAP) + 6);
      lanes.push({ kind: "modality", id: m, label: m, items: list, marks: mk, rows, y, h, maxDur, maxOff,
        sub: list.length + " jobs · " + missed + " missed" + (mk.length ? " · " + mk.length + " skip/shed" : "") });
      y += h;
    }
    if (tracks.size) group("Compute tracks");
    for (const name of [...tracks.keys()].sort()) {
      const items = tracks.get(name);
      let maxDur = 0, maxOff = 0;
      for (const r of items) { maxDur = Math.max(maxDur, r.dur_ns); maxOff = Math.max(maxOff, Math.abs(r.off)); }
      let busy = 0;
      for (const r of items) busy += r.dur_ns;
      const span = Math.max(1, maxTs - minTs);
      lanes.push({ kind: "track", id: name, label: name, items, y, h: TRACK_H, maxDur, maxOff,
        sub: (100 * busy / span).toFixed(0) + "% busy · " + items.length + " slices" });
      y += TRACK_H;
    }

    state.header = parsed.header;
    state.records = recs;
    state.jobs = jobs;
    state.jobByTrace = new Map(jobs.map((j) => [j.trace_id, j]));
    state.lanes = lanes;
    state.policies = policies;
    state.minTs = minTs;
    state.maxTs = maxTs;
    state.contentH = y + 8;
    state.selected = null;
    fit();
    renderLabels();
    renderStats(byModality, marks);
    renderPolicies();
    resize();
  }

  function indexOfMin(a) {
    let k = 0;
    for (let i = 1; i < a.length; i++) if (a[i] < a[k]) k = i;
    return k;
  }

  // ---------- DOM panels ----------

  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "style") e.style.cssText = v;
      else if (k.startsWith("data-")) e.setAttribute(k, v);
      else e[k] = v;
    }
    for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
    return e;
  }

  function renderLabels() {
    const lanesEl = $("lanes");
    lanesEl.replaceChildren();
    lanesEl.style.height = state.contentH + "px";
    lanesEl.append(el("div", { className: "lane-group axis", id: "axis-label", style: "top:0;height:" + AXIS_H + "px" },
      state.raw ? "raw sensor time" : "drift-corrected"));
    for (const lane of state.lanes) {
      if (lane.kind === "group") {
        lanesEl.append(el("div", { className: "lane-group", style: "top:" + lane.y + "px;height:" + lane.h + "px" }, lane.label));
        continue;
      }
      const color = lane.kind === "counter" ? lane.info.color : lane.kind === "modality" ? MODALITY_COLORS[lane.id] || "#888" : "#56687a";
      const name = el("span", { className: "name" }, el("span", { className: "swatch", style: "background:" + color }),
        lane.kind === "modality" ? lane.label + " jobs" : lane.label);
      lanesEl.append(el("div", {
        className: "lane-label lane-" + lane.kind, "data-lane": lane.id, "data-kind": lane.kind,
        style: "top:" + lane.y + "px;height:" + lane.h + "px",
      }, name, el("small", {}, lane.sub)));
    }
  }

  function renderStats(byModality, marks) {
    const body = $("stats").querySelector("tbody");
    body.replaceChildren();
    const mods = [...new Set([...byModality.keys(), ...marks.keys()])]
      .sort((a, b) => MODALITY_ORDER.indexOf(a) - MODALITY_ORDER.indexOf(b));
    for (const m of mods) {
      const js = (byModality.get(m) || []).filter((j) => j.stages.length || j.root);
      const lat = js.map((j) => (j.root ? j.root.dur_ns : j.end - j.start) / 1e6).sort((a, b) => a - b);
      const missed = js.filter((j) => j.missed).length;
      const mk = marks.get(m) || [];
      const skips = mk.filter((r) => r.name === "skip").length;
      const sheds = mk.filter((r) => r.name === "shed").length;
      const drops = mk.filter((r) => r.name === "drop").length;
      const pct = (p) => (lat.length ? percentile(lat, p).toFixed(lat.length && percentile(lat, p) < 10 ? 2 : 1) : "–");
      body.append(el("tr", { "data-modality": m },
        el("td", {}, el("span", { className: "swatch", style: "background:" + (MODALITY_COLORS[m] || "#888") }), m),
        el("td", {}, js.length), el("td", {}, pct(0.5)), el("td", {}, pct(0.95)), el("td", {}, pct(0.99)),
        el("td", { className: missed ? "bad" : "" }, missed), el("td", {}, skips), el("td", {}, sheds), el("td", {}, drops)));
    }
  }

  function renderPolicies() {
    const ol = $("policies");
    ol.replaceChildren();
    if (!state.policies.length) {
      ol.append(el("li", {}, "none in this trace"));
      return;
    }
    for (const p of state.policies) {
      const etag = (p.attrs && p.attrs.etag) || "?";
      const li = el("li", { title: (p.attrs && p.attrs.changed) || "" }, fmtTime(p.ts_ns - state.minTs), " · ETag ", el("code", {}, etag));
      li.addEventListener("click", () => zoomTo(p.ts_ns - 250e6, p.ts_ns + 250e6));
      ol.append(li);
    }
  }

  function showDetails(item) {
    const d = $("details");
    if (!item) { d.textContent = "Click a slice or search a trace_id."; return; }
    const rows = [];
    const add = (k, v, cls) => rows.push(el("tr", {}, el("td", {}, k), el("td", { className: cls || "" }, v)));
    if (item.isJob) {
      const j = item.job;
      add("job", "#" + j.job + " (" + j.modality + ")");
      if (j.model) add("model", j.model);
      add("trace_id", el("code", {}, j.trace_id));
      add("latency", fmtDur(j.root ? j.root.dur_ns : j.end - j.start));
      add("start", fmtTime(j.start - state.minTs));
      if (j.deadline !== null) add("deadline", fmtTime(j.deadline - state.minTs));
      if (j.missed) add("outcome", "deadline missed by " + fmtDur(j.end - j.deadline), "miss");
      add("sync offset", (j.off / 1e6).toFixed(0) + " ms");
      const counts = {};
      for (const s of j.stages) counts[s.name] = (counts[s.name] || 0) + 1;
      add("stages", Object.entries(counts).map(([k, v]) => (v > 1 ? k + "×" + v : k)).join(" → "));
      const cause = (j.root && j.root.attrs && j.root.attrs.caused_by) || null;
      if (cause) add("caused by", el("code", {}, cause));
      for (const s of j.stages) {
        if (s.attrs && s.attrs.transcript) add("transcript", "“" + s.attrs.transcript + "”");
      }
    } else {
      const r = item.rec;
      add("name", r.name + " (" + r.kind + ")");
      if (r.job !== undefined) add("job", "#" + r.job + (r.modality ? " (" + r.modality + ")" : ""));
      if (r.model) add("model", r.model);
      add("track", r.track);
      add("trace_id", el("code", {}, r.trace_id));
      add("span_id", el("code", {}, r.span_id));
      add("start", fmtTime(r.ts_ns - state.minTs));
      if (r.kind === "span") add("duration", fmtDur(r.dur_ns));
      if (r.kind === "counter") add("value", fmtNum(r.value));
      add("clock", r.clock + " (offset " + (r.sync_offset_ms || 0) + " ms)");
      for (const [k, v] of Object.entries(r.attrs || {})) add(k, typeof v === "string" ? v : JSON.stringify(v));
    }
    d.replaceChildren(el("table", {}, ...rows));
  }

  // ---------- formatting ----------

  function fmtNum(v) {
    if (!isFinite(v)) return "–";
    const a = Math.abs(v);
    return a >= 100 ? v.toFixed(0) : a >= 10 ? v.toFixed(1) : v.toFixed(2).replace(/\.?0+$/, "") || "0";
  }
  function fmtDur(ns) {
    const a = Math.abs(ns);
    if (a >= 1e9) return (ns / 1e9).toFixed(a >= 1e10 ? 1 : 2) + " s";
    if (a >= 1e6) return (ns / 1e6).toFixed(a >= 1e8 ? 0 : a >= 1e7 ? 1 : 2) + " ms";
    if (a >= 1e3) return (ns / 1e3).toFixed(1) + " µs";
    return ns.toFixed(0) + " ns";
  }
  function fmtTime(ns) {
    return (ns / 1e9).toFixed(ns < 1e10 ? 3 : 2) + " s";
  }

  // ---------- view ----------

  function fit() {
    const pad = (state.maxTs - state.minTs) * 0.01;
    state.t0 = state.minTs - pad;
    state.t1 = state.maxTs + pad;
  }

  function zoomTo(a, b) {
    state.t0 = a;
    state.t1 = Math.max(a + 1000, b);
    requestDraw();
  }

  function resize() {
    const wrap = $("canvas-wrap");
    state.dpr = window.devicePixelRatio || 1;
    state.width = Math.max(100, wrap.clientWidth);
    state.height = Math.max(state.contentH || 200, 100);
    canvas.width = Math.round(state.width * state.dpr);
    canvas.height = Math.round(state.height * state.dpr);
    canvas.style.height = state.height + "px";
    requestDraw();
  }

  function requestDraw() {
    if (state.pending) return;
    state.pending = true;
    requestAnimationFrame(() => { state.pending = false; draw(); });
  }

  const xOf = (t) => (t - state.t0) * state.width / (state.t1 - state.t0);
  const tOf = (x) => state.t0 + x * (state.t1 - state.t0) / state.width;
  // The time a record is drawn at in the current time base.
  const tb = (ts, off) => (state.raw ? ts - off : ts);

  // Visible index range of a lane: items sorted by ts (or start for jobs).
  function visibleRange(lane, key) {
    const slack = lane.maxDur + lane.maxOff + 1;
    const lo = lowerBound(lane.items, key, state.t0 - slack);
    const hi = lowerBound(lane.items, key, state.t1 + lane.maxOff + 1);
    return [lo, hi];
  }

  function niceStep(spanNs, px) {
    const target = spanNs * 110 / Math.max(1, px);
    const p = Math.pow(10, Math.floor(Math.log10(target)));
    for (const m of [1, 2, 5, 10]) if (m * p >= target) return m * p;
    return 10 * p;
  }

  function draw() {
    const W = state.width, H = state.height;
    ctx.setTransform(state.dpr, 0, 0, state.dpr, 0, 0);
    ctx.clearRect(0, 0, W, H);
    ctx.fillStyle = "#fff";
    ctx.fillRect(0, 0, W, H);
    if (!state.lanes.length) return;
    drawGrid(W, H);
    for (const lane of state.lanes) {
      if (lane.y > H || lane.y + lane.h < 0) continue;
      if (lane.kind === "group") {
        ctx.fillStyle = "#fbfcfd";
        ctx.fillRect(0, lane.y, W, lane.h);
        ctx.fillStyle = "#dde2e8";
        ctx.fillRect(0, lane.y + lane.h - 1, W, 1);
      } else if (lane.kind === "counter") drawCounter(lane, W);
      else if (lane.kind === "modality") drawModality(lane, W);
      else drawTrack(lane, W);
      ctx.fillStyle = "#eef1f4";
      ctx.fillRect(0, lane.y + lane.h - 1, W, 1);
    }
    drawPolicies(H);
    drawAxis(W);
  }

  function drawGrid(W, H) {
    const step = niceStep(state.t1 - state.t0, W);
    const first = Math.ceil((state.t0 - state.minTs) / step) * step + state.minTs;
    ctx.fillStyle = "#f1f3f6";
    for (let t = first; t <= state.t1; t += step) ctx.fillRect(Math.round(xOf(t)), AXIS_H, 1, H - AXIS_H);
  }

  function drawAxis(W) {
    ctx.fillStyle = "#17202b";
    ctx.fillRect(0, 0, W, AXIS_H);
    const step = niceStep(state.t1 - state.t0, W);
    const first = Math.ceil((state.t0 - state.minTs) / step) * step + state.minTs;
    ctx.fillStyle = "#c6d2df";
    ctx.font = "11px system-ui, sans-serif";
    ctx.textBaseline = "middle";
    for (let t = first; t <= state.t1; t += step) {
      const x = Math.round(xOf(t));
      ctx.fillRect(x, AXIS_H - 7, 1, 7);
      const rel = t - state.minTs;
      const label = step >= 1e9 ? (rel / 1e9).toFixed(0) + " s" : step >= 1e6 ? (rel / 1e9).toFixed(step >= 1e8 ? 1 : step >= 1e7 ? 2 : 3) + " s" : (rel / 1e6).toFixed(3) + " ms";
      ctx.fillText(label, x + 4, 11);
    }
    // Policy flags sit on the axis.
    for (const p of state.policies) {
      const x = xOf(p.ts_ns);
      if (x < -80 || x > W) continue;
      ctx.fillStyle = POLICY;
      ctx.beginPath();
      ctx.moveTo(x, AXIS_H - 12); ctx.lineTo(x + 7, AXIS_H - 8); ctx.lineTo(x, AXIS_H - 4);
      ctx.fill();
      ctx.fillStyle = "#d9c8ff";
      ctx.fillText("ETag " + ((p.attrs && p.attrs.etag) || "?"), x + 9, AXIS_H - 8);
    }
    const head = $("axis-label");
    if (head) head.textContent = (state.raw ? "raw sensor time" : "drift-corrected") + " · " + fmtDur(state.t1 - state.t0) + " in view";
  }

  function drawPolicies(H) {
    ctx.strokeStyle = POLICY;
    ctx.setLineDash([4, 3]);
    ctx.lineWidth = 1;
    for (const p of state.policies) {
      const x = Math.round(xOf(p.ts_ns)) + 0.5;
      if (x < 0 || x > state.width) continue;
      ctx.beginPath(); ctx.moveTo(x, AXIS_H); ctx.lineTo(x, H); ctx.stroke();
    }
    ctx.setLineDash([]);
  }

  function drawCounter(lane, W) {
    const top = lane.y + 4, h = lane.h - 8;
    const [lo, hi] = lane.range;
    const yOf = (v) => top + h - (v - lo) / (hi - lo || 1) * h;
    if (lane.id === "ldti") {
      // Level bands: stable, degraded (0.25), critical (0.6).
      const bands = [[0, 0.25, "#e9f6ec"], [0.25, 0.6, "#fff4dc"], [0.6, 1, "#fde4e5"]];
      for (const [a, b, c] of bands) {
        ctx.fillStyle = c;
        ctx.fillRect(0, yOf(b), W, yOf(a) - yOf(b));
      }
      ctx.fillStyle = "#b8c1cc";
      ctx.font = "10px system-ui, sans-serif";
      for (const v of [0.25, 0.6]) {
        ctx.fillRect(0, Math.round(yOf(v)), W, 1);
        ctx.fillText(String(v), 3, yOf(v) - 3);
      }
    }
    const items = lane.items;
    const [i0, i1] = visibleRange(lane, "ts_ns");
    const a = Math.max(0, i0 - 1), b = Math.min(items.length, i1 + 1);
    // Min/max per pixel column: constant cost per pixel however many samples there are.
    ctx.strokeStyle = lane.info.color;
    ctx.lineWidth = 1.5;
    ctx.beginPath();
    let col = null, cmin = 0, cmax = 0, clast = 0, started = false;
    const flush = () => {
      if (col === null) return;
      if (!started) { ctx.moveTo(col, yOf(cmin)); started = true; }
      ctx.lineTo(col, yOf(cmin)); ctx.lineTo(col, yOf(cmax)); ctx.lineTo(col, yOf(clast));
    };
    for (let i = a; i < b; i++) {
      const c = items[i];
      const x = Math.round(xOf(c.ts_ns));
      if (x !== col) { flush(); col = x; cmin = cmax = clast = c.value; }
      else { cmin = Math.min(cmin, c.value); cmax = Math.max(cmax, c.value); clast = c.value; }
    }
    flush();
    ctx.stroke();
    if (lane.id === "ldti") {
      // Red dots where LDTI is critical make the bad stretches pop out when zoomed out.
      ctx.fillStyle = MISS;
      let lastX = -2;
      for (let i = a; i < b; i++) {
        const c = items[i];
        if (c.value < 0.6) continue;
        const x = Math.round(xOf(c.ts_ns));
        if (x - lastX < 2) continue;
        lastX = x;
        ctx.fillRect(x - 1, yOf(c.value) - 1, 2, 2);
      }
    }
  }

  function stageStyle(name, color, i) {
    switch (name) {
      case "queued": return null;
      case "pre": case "post": return shade(color, 0.55);
      case "decode": return i % 2 ? shade(color, -0.18) : color;
      default: return color;
    }
  }

  // Mixes a hex colour with white (f > 0) or black (f < 0).
  const shadeCache = new Map();
  function shade(hex, f) {
    const key = hex + f;
    let v = shadeCache.get(key);
    if (v) return v;
    const n = parseInt(hex.slice(1), 16);
    const ch = [(n >> 16) & 255, (n >> 8) & 255, n & 255].map((c) => Math.round(f > 0 ? c + (255 - c) * f : c * (1 + f)));
    v = "rgb(" + ch.join(",") + ")";
    shadeCache.set(key, v);
    return v;
  }

  let hatch = null;
  function queuedPattern() {
    if (hatch) return hatch;
    const c = document.createElement("canvas");
    c.width = c.height = 6;
    const g = c.getContext("2d");
    g.fillStyle = "#eef2f7"; g.fillRect(0, 0, 6, 6);
    g.strokeStyle = "#b9c6d6"; g.lineWidth = 1.5;
    g.beginPath(); g.moveTo(0, 6); g.lineTo(6, 0); g.stroke();
    hatch = ctx.createPattern(c, "repeat");
    return hatch;
  }

  function drawModality(lane, W) {
    const color = MODALITY_COLORS[lane.id] || "#888";
    const base = lane.y + MARK_H + 2;
    const pxPerNs = W / (state.t1 - state.t0);
    const sel = state.selected;
    const [i0, i1] = visibleRange(lane, "start");
    const lastPx = new Array(lane.rows).fill(-1);
    for (let i = i0; i < i1; i++) {
      const j = lane.items[i];
      const y = base + j.row * (ROW_H + ROW_GAP);
      const x0 = xOf(tb(j.start, j.off)), x1 = xOf(tb(j.end, j.off));
      if (x1 < 0 || x0 > W) continue;
      const highlighted = sel && sel.trace_id === j.trace_id;
      if (x1 - x0 < 1.5 && !highlighted) {
        // Decimation: one mark per pixel column per row when zoomed far out.
        const px = Math.floor(x0);
        if (px === lastPx[j.row]) continue;
        lastPx[j.row] = px;
        ctx.fillStyle = j.missed ? MISS : color;
        ctx.fillRect(px, y, 1, ROW_H);
        continue;
      }
      if (x1 - x0 < 4) {
        ctx.fillStyle = j.missed ? MISS : color;
        ctx.fillRect(x0, y, Math.max(1, x1 - x0), ROW_H);
      } else {
        let k = 0;
        for (const s of j.stages) {
          const sx0 = xOf(tb(s.ts_ns, s.off));
          const sw = s.dur_ns * pxPerNs;
          if (sx0 + sw < 0 || sx0 > W) { if (s.name === "decode") k++; continue; }
          if (s.kind !== "span") continue;
          const st = stageStyle(s.name, color, k);
          if (s.name === "decode") k++;
          ctx.fillStyle = st || queuedPattern();
          // Leave a hairline between tokens once they are wide enough to tell apart.
          const gap = s.name === "decode" && sw > 4 ? 1 : 0;
          ctx.fillRect(sx0, y, Math.max(0.7, sw - gap), ROW_H);
        }
        if (j.missed && j.deadline !== null) {
          // The late part of a missed job is overlaid in red.
          const dx = xOf(tb(j.deadline, j.off));
          ctx.fillStyle = "rgba(214,47,58,0.55)";
          ctx.fillRect(Math.max(dx, x0), y + ROW_H - 4, Math.max(1, x1 - Math.max(dx, x0)), 4);
          ctx.strokeStyle = MISS;
          ctx.lineWidth = 1;
          ctx.strokeRect(Math.round(x0) + 0.5, y + 0.5, Math.max(1, Math.round(x1 - x0) - 1), ROW_H - 1);
        }
        if (x1 - x0 > 60 && j.model) {
          ctx.fillStyle = "rgba(255,255,255,0.92)";
          ctx.font = "10px system-ui, sans-serif";
          ctx.textBaseline = "middle";
          const label = "#" + j.job + " " + j.model;
          ctx.save();
          ctx.beginPath(); ctx.rect(x0, y, x1 - x0, ROW_H); ctx.clip();
          ctx.fillText(label, Math.max(x0, 0) + 3, y + ROW_H / 2 + 0.5);
          ctx.restore();
        }
      }
      if (j.deadline !== null) {
        const dx = xOf(tb(j.deadline, j.off));
        if (dx >= 0 && dx <= W && (dx - x0 > 3 || j.missed)) {
          ctx.fillStyle = j.missed ? MISS : "#1f2933";
          ctx.fillRect(Math.round(dx), y - 1, j.missed ? 2 : 1, ROW_H + 2);
        }
      }
      if (highlighted) {
        ctx.strokeStyle = "#111";
        ctx.lineWidth = 2;
        ctx.strokeRect(x0 - 2, y - 2, Math.max(3, x1 - x0) + 4, ROW_H + 4);
      }
    }
    // Skip / shed markers along the top strip of the lane.
    const mk = lane.marks;
    if (mk.length) {
      const lo = lowerBound(mk, "ts_ns", state.t0 - lane.maxOff - 1);
      const hi = lowerBound(mk, "ts_ns", state.t1 + lane.maxOff + 1);
      let lastX = -10;
      const my = lane.y + MARK_H / 2 + 1;
      for (let i = lo; i < hi; i++) {
        const r = mk[i];
        const x = xOf(tb(r.ts_ns, r.off));
        if (x - lastX < 3) continue;
        lastX = x;
        if (r.name === "skip") {
          ctx.strokeStyle = "#8a96a3"; ctx.lineWidth = 1.5;
          ctx.beginPath(); ctx.arc(x, my, 3, 0, 2 * Math.PI); ctx.stroke();
        } else {
          ctx.fillStyle = "#ef8a17";
          ctx.beginPath(); ctx.moveTo(x, my - 4); ctx.lineTo(x + 4, my); ctx.lineTo(x, my + 4); ctx.lineTo(x - 4, my); ctx.fill();
        }
      }
    }
  }

  function drawTrack(lane, W) {
    const y = lane.y + 5, h = lane.h - 10;
    const [i0, i1] = visibleRange(lane, "ts_ns");
    let lastPx = -1;
    const sel = state.selected;
    for (let i = i0; i < i1; i++) {
      const r = lane.items[i];
      const x0 = xOf(tb(r.ts_ns, r.off));
      const w = r.dur_ns * W / (state.t1 - state.t0);
      if (x0 + w < 0 || x0 > W) continue;
      const color = MODALITY_COLORS[r.modality] || "#888";
      if (w < 1) {
        const px = Math.floor(x0);
        if (px === lastPx) continue;
        lastPx = px;
        ctx.fillStyle = color;
        ctx.fillRect(px, y, 1, h);
        continue;
      }
      ctx.fillStyle = r.name === "pre" || r.name === "post" ? shade(color, 0.55) : r.name === "decode" && (r.attrs && r.attrs.token_index) % 2 ? shade(color, -0.18) : color;
      ctx.fillRect(x0, y, Math.max(1, w - (w > 4 ? 1 : 0)), h);
      if (w > 40) {
        ctx.save();
        ctx.beginPath(); ctx.rect(x0, y, w, h); ctx.clip();
        ctx.fillStyle = "#fff";
        ctx.font = "10px system-ui, sans-serif";
        ctx.textBaseline = "middle";
        ctx.fillText(r.name + (r.job !== undefined ? " #" + r.job : ""), Math.max(x0, 0) + 3, y + h / 2 + 0.5);
        ctx.restore();
      }
      if (sel && sel.trace_id === r.trace_id) {
        ctx.strokeStyle = "#111"; ctx.lineWidth = 2;
        ctx.strokeRect(x0 - 1, y - 2, Math.max(2, w) + 2, h + 4);
      }
    }
  }

  // ---------- interaction ----------

  function laneAt(y) {
    for (const l of state.lanes) if (y >= l.y && y < l.y + l.h) return l;
    return null;
  }

  function hitTest(x, y) {
    const lane = laneAt(y);
    if (!lane) return null;
    const t = tOf(x);
    const tol = 3 * (state.t1 - state.t0) / state.width;
    if (lane.kind === "modality") {
      if (y < lane.y + MARK_H + 1) {
        let best = null, bd = Infinity;
        for (const r of lane.marks) {
          const d = Math.abs(tb(r.ts_ns, r.off) - t);
          if (d < bd) { bd = d; best = r; }
        }
        return best && bd <= 2 * tol ? { rec: best } : null;
      }
      const row = Math.floor((y - lane.y - MARK_H - 2) / (ROW_H + ROW_GAP));
      const [i0, i1] = visibleRange(lane, "start");
      for (let i = i1 - 1; i >= i0; i--) {
        const j = lane.items[i];
        if (j.row === row && tb(j.start, j.off) - tol <= t && t <= tb(j.end, j.off) + tol) return { isJob: true, job: j };
      }
      return null;
    }
    if (lane.kind === "track") {
      const [i0, i1] = visibleRange(lane, "ts_ns");
      for (let i = i1 - 1; i >= i0; i--) {
        const r = lane.items[i];
        if (tb(r.ts_ns, r.off) - tol <= t && t <= tb(r.end, r.off) + tol) return { rec: r };
      }
      return null;
    }
    if (lane.kind === "counter") {
      const i = Math.min(lane.items.length - 1, lowerBound(lane.items, "ts_ns", t));
      return i >= 0 ? { rec: lane.items[i] } : null;
    }
    return null;
  }

  function tooltipFor(hit) {
    if (hit.isJob) {
      const j = hit.job;
      return "<b>job #" + j.job + "</b> " + esc(j.modality) + (j.model ? " · " + esc(j.model) : "") +
        "<br>latency " + fmtDur(j.end - j.start) + (j.missed ? " · <span style='color:#ff9aa0'>missed deadline</span>" : "") +
        "<br><span class='m'>" + esc(j.trace_id) + "</span>";
    }
    const r = hit.rec;
    if (r.kind === "counter") return "<b>" + esc(r.name) + "</b> = " + fmtNum(r.value) + "<br><span class='m'>at " + fmtTime(r.ts_ns - state.minTs) + "</span>";
    let s = "<b>" + esc(r.name) + "</b>" + (r.job !== undefined ? " · job #" + r.job : "") + (r.kind === "span" ? " · " + fmtDur(r.dur_ns) : "");
    if (r.attrs && r.attrs.reason) s += "<br>" + esc(r.attrs.reason);
    if (r.attrs && r.attrs.transcript) s += "<br>“" + esc(r.attrs.transcript) + "”";
    return s + "<br><span class='m'>" + esc(r.track) + " · " + fmtTime(r.ts_ns - state.minTs) + "</span>";
  }

  function esc(s) {
    return String(s).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
  }

  function canvasPos(ev) {
    const r = canvas.getBoundingClientRect();
    return [ev.clientX - r.left, ev.clientY - r.top];
  }

  function zoomAround(x, factor) {
    const t = tOf(x);
    const span = Math.min(Math.max((state.t1 - state.t0) * factor, 2000), (state.maxTs - state.minTs) * 4 + 1e9);
    state.t0 = t - (x / state.width) * span;
    state.t1 = state.t0 + span;
    requestDraw();
  }

  function pan(dxPx) {
    const dt = dxPx * (state.t1 - state.t0) / state.width;
    state.t0 += dt; state.t1 += dt;
    requestDraw();
  }

  canvas.addEventListener("wheel", (ev) => {
    ev.preventDefault();
    const [x] = canvasPos(ev);
    if (ev.shiftKey || Math.abs(ev.deltaX) > Math.abs(ev.deltaY)) pan(ev.deltaX || ev.deltaY);
    else zoomAround(x, Math.exp(ev.deltaY * 0.0015));
  }, { passive: false });

  let drag = null;
  canvas.addEventListener("mousedown", (ev) => {
    drag = { x: ev.clientX, moved: false };
    canvas.classList.add("dragging");
  });
  window.addEventListener("mouseup", (ev) => {
    canvas.classList.remove("dragging");
    if (drag && !drag.moved && ev.target === canvas) {
      const [x, y] = canvasPos(ev);
      const hit = hitTest(x, y);
      state.selected = hit ? { trace_id: hit.isJob ? hit.job.trace_id : hit.rec.trace_id } : null;
      showDetails(hit);
      requestDraw();
    }
    drag = null;
  });
  window.addEventListener("mousemove", (ev) => {
    const tip = $("tooltip");
    if (drag) {
      const dx = ev.clientX - drag.x;
      if (Math.abs(dx) > 2) drag.moved = true;
      drag.x = ev.clientX;
      pan(-dx);
      tip.hidden = true;
      return;
    }
    if (ev.target !== canvas) { tip.hidden = true; return; }
    const [x, y] = canvasPos(ev);
    const hit = hitTest(x, y);
    if (!hit) { tip.hidden = true; return; }
    tip.innerHTML = tooltipFor(hit);
    tip.hidden = false;
    tip.style.left = Math.min(ev.clientX + 14, window.innerWidth - tip.offsetWidth - 8) + "px";
    tip.style.top = ev.clientY + 14 + "px";
  });

  window.addEventListener("keydown", (ev) => {
    if (ev.target instanceof HTMLInputElement) return;
    const k = ev.key.toLowerCase();
    if (k === "w") zoomAround(state.width / 2, 0.8);
    else if (k === "s") zoomAround(state.width / 2, 1.25);
    else if (k === "a") pan(-state.width * 0.15);
    else if (k === "d") pan(state.width * 0.15);
    else if (k === "0") { fit(); requestDraw(); }
  });

  $("fit").addEventListener("click", () => { fit(); requestDraw(); });

  for (const b of $("timemode").querySelectorAll("button")) {
    b.addEventListener("click", () => {
      state.raw = b.dataset.mode === "raw";
      for (const o of $("timemode").querySelectorAll("button")) o.classList.toggle("on", o === b);
      renderLabels();
      requestDraw();
    });
  }

  function search(q) {
    q = q.trim().toLowerCase();
    if (!q) return;
    let job = state.jobByTrace.get(q);
    if (!job) job = state.jobs.find((j) => j.trace_id && j.trace_id.startsWith(q));
    if (!job) {
      const r = state.records.find((r) => r.trace_id && r.trace_id.startsWith(q));
      if (r) {
        state.selected = { trace_id: r.trace_id };
        showDetails({ rec: r });
        zoomTo(r.ts_ns - 50e6, r.end + 50e6);
        setStatus("found " + r.name + " at " + fmtTime(r.ts_ns - state.minTs));
        return;
      }
      setStatus("no trace_id starting with " + q, true);
      return;
    }
    state.selected = { trace_id: job.trace_id };
    showDetails({ isJob: true, job });
    const span = Math.max(job.end - job.start, 1e6);
    zoomTo(job.start - span, job.end + span);
    setStatus("found job #" + job.job + " (" + job.modality + ")");
  }
  $("search").addEventListener("keydown", (ev) => { if (ev.key === "Enter") search(ev.target.value); });

  function loadText(text, source) {
    const started = performance.now();
    let parsed;
    try {
      parsed = parseTrace(text);
    } catch (e) {
      setStatus("cannot read " + source + ": " + e.message, true);
      return;
    }
    build(parsed);
    const ms = Math.round(performance.now() - started);
    const demo = parsed.header.metadata && parsed.header.metadata.demo ? " · DEMO (synthetic)" : "";
    setStatus(parsed.records.length.toLocaleString("en") + " records · " + state.jobs.length.toLocaleString("en") +
      " jobs · " + fmtDur(state.maxTs - state.minTs) + " from " + source + demo + " · parsed in " + ms + " ms" +
      (parsed.errors.length ? " · " + parsed.errors.length + "+ bad lines skipped (" + parsed.errors[0] + ")" : ""), parsed.errors.length > 0);
    document.body.dataset.loaded = "true";
    document.body.dataset.records = String(parsed.records.length);
    const hash = new URLSearchParams(location.hash.slice(1));
    // #view=START_S,END_S opens a window of the trace (seconds from its start).
    const view = (hash.get("view") || "").split(",").map(Number);
    if (view.length === 2 && view.every(isFinite) && view[1] > view[0]) {
      zoomTo(state.minTs + view[0] * 1e9, state.minTs + view[1] * 1e9);
    }
    if (hash.get("raw") === "1") $("timemode").querySelector("[data-mode=raw]").click();
    if (hash.get("trace")) {
      $("search").value = hash.get("trace");
      search(hash.get("trace"));
    }
  }

  $("file").addEventListener("change", (ev) => {
    const f = ev.target.files[0];
    if (f) f.text().then((t) => loadText(t, f.name));
  });
  window.addEventListener("dragover", (ev) => { ev.preventDefault(); $("drop").hidden = false; });
  window.addEventListener("dragleave", (ev) => { if (!ev.relatedTarget) $("drop").hidden = true; });
  window.addEventListener("drop", (ev) => {
    ev.preventDefault();
    $("drop").hidden = true;
    const f = ev.dataTransfer.files[0];
    if (f) f.text().then((t) => loadText(t, f.name));
  });
  window.addEventListener("resize", resize);

  showDetails(null);
  fetch("api/v1/trace").then((res) => {
    if (!res.ok) throw new Error("HTTP " + res.status);
    return res.text();
  }).then((t) => loadText(t, "/api/v1/trace")).catch((e) => {
    setStatus("no trace at /api/v1/trace (" + e.message + "): open a file or drop one on the page");
    document.body.dataset.loaded = "false";
  });
})();
