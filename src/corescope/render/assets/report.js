"use strict";
// corescope's incident page: draws the page data of render/report_model.py. Every name
// from the data reaches the page through textContent (el() below), never as markup.
window.CoreReport = (function(){

function el(tag, attrs, ...kids){
  const n = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") n.className = v; else if (k === "style") n.style.cssText = v;
    else if (k.startsWith("on")) n.addEventListener(k.slice(2), v); else n.setAttribute(k, v);
  }
  for (const k of kids.flat()) {
    if (k === null || k === undefined || k === false) continue;
    n.append(k instanceof Node ? k : document.createTextNode(CoreFlame.clean(String(k))));
  }
  return n;
}
function iso(t){ return t === null || t === undefined ? "?" : new Date(t * 1000).toISOString().replace(".000Z", "Z"); }
function hms(t){ return new Date(t * 1000).toISOString().slice(11, 19); }
function num(x, d){ return x === null || x === undefined ? "–" : Number(x).toFixed(d === undefined ? 1 : d); }
function dur(s){
  if (s === null || s === undefined) return "?";
  s = Math.round(s); const h = Math.floor(s / 3600), m = Math.floor(s % 3600 / 60), r = s % 60;
  return (h ? h + "h" : "") + (m ? m + "m" : "") + ((r || (!h && !m)) ? r + "s" : "");
}
// one evidence entry: a fact {value, unit, source} or a plain value
function fact(k, v){
  if (v && typeof v === "object" && "value" in v) {
    const val = typeof v.value === "object" ? JSON.stringify(v.value) : v.value;
    return `${k}: ${val}${v.unit ? " " + v.unit : ""}${v.source ? " (" + v.source + ")" : ""}`;
  }
  return `${k}: ${typeof v === "object" ? JSON.stringify(v) : v}`;
}
function b64bytes(s){ const b = atob(s), out = new Uint8Array(b.length); for (let i = 0; i < b.length; i++) out[i] = b.charCodeAt(i); return out; }
function heat(p){
  // white → yellow → red → dark red over 0..100 %
  if (p <= 50) { const k = p / 50; return [255, 255 - 40 * k, 255 - 215 * k]; }
  const k = (p - 50) / 50; return [255 - 95 * k, 215 - 215 * k, 40 - 40 * k];
}

function table(headers, rows, opts){
  opts = opts || {};
  const t = el("table", {class: opts.class});
  t.append(el("tr", {}, headers.map(h => el("th", {}, h))));
  for (const r of rows) {
    const tr = el("tr", r.onclick ? {class: "clickable", onclick: r.onclick} : {},
      r.cells.map(c => (c instanceof Node ? el("td", {}, c) : el("td", typeof c === "number" ? {class: "num"} : {}, c))));
    if (r.attrs) for (const [k, v] of Object.entries(r.attrs)) tr.setAttribute(k, v);
    t.append(tr);
  }
  return t;
}

// ─── sections ──────────────────────────────────────────────────────────────────────────
function verdictSection(D){
  const s = el("section", {id: "verdict"}, el("h2", {}, "Verdict"));
  const dx = D.diagnosis;
  const hot = D.hot_core ? D.hot_core.cpu : D.summary.top_cpu;
  if (dx && dx.verdict) {
    const v = dx.verdict, bad = v.root_cause !== "healthy";
    const parts = [v.root_cause.replace(/_/g, " ")];
    if (v.hot_cpu !== null && v.hot_cpu !== undefined) parts.push(`on CPU ${v.hot_cpu}`);
    if (v.culprit) parts.push(`culprit ${v.culprit}`);
    if (v.walker) parts.push(`walker ${v.walker.comm} in ${v.walker.function}`);
    s.append(el("div", {class: "verdict " + (bad ? "bad" : "ok"), id: "verdict-text"}, parts.join(" · ")),
      el("div", {class: "muted"}, `confidence ${num(v.confidence * 100, 0)}%`));
    if (dx.chain && dx.chain.length) {
      s.append(el("ol", {class: "chain", id: "chain"}, dx.chain.map(c => el("li", {}, el("b", {}, c.step.replace(/_/g, " ")), ": ", c.summary,
        c.evidence && Object.keys(c.evidence).length ? el("span", {class: "note"}, "  (" + Object.entries(c.evidence).map(([k, v]) => fact(k, v)).join("; ") + ")") : null))));
    }
  } else {
    const sm = D.summary, n = sm.events || 0;
    let text;
    if (!n) text = D.episodes.length ? `no incidents; ${D.episodes.length} hot-core episode(s)` + (hot !== null && hot !== undefined ? "" : "") : "no incidents in this window";
    else text = `${n} incident(s), ${sm.preceded} preceded by a hot core` + (hot !== null && hot !== undefined ? ` — most often CPU ${hot}` : "");
    if (!n && D.episodes.length) text += ` (longest on CPU ${D.episodes.slice().sort((a, b) => b.duration_s - a.duration_s)[0].cpu})`;
    s.append(el("div", {class: "verdict " + (n ? "bad" : "ok"), id: "verdict-text"}, text));
    if (n && sm.base_rate !== null) s.append(el("div", {class: "muted"},
      `base rate ${num(sm.base_rate * 100)}% of random instants, lift ${num(sm.lift)}, p ${num(sm.p_value, 4)}, median lead ${num(sm.median_lead_s)} s`));
    s.append(el("div", {class: "note", id: "diagnosis-missing"}, "diagnosis not available: the verdict, chain and hypotheses come from `corescope diagnose`, which did not run for this page."));
  }
  return s;
}

function heatmapSection(D, ctx){
  const H = D.heatmap, cells = b64bytes(H.cells), machine = b64bytes(H.machine);
  const ncpu = H.cpus.length, ncol = H.columns, NO = H.no_data;
  const s = el("section", {id: "heatmap"}, el("h2", {}, `Cores × time (${H.mode} %)`));
  const agg = el("input", {type: "checkbox", id: "aggregate-only"});
  s.append(el("div", {class: "controls"},
    el("label", {}, agg, " only the machine average (what your dashboard saw)"),
    el("span", {class: "legend"}, el("span", {style: "background:rgb(255,255,255)"}), "0%", el("span", {style: "background:rgb(255,215,40)"}), "50%", el("span", {style: "background:rgb(160,0,0)"}), "100%", el("span", {style: "background:#d9dde2"}), "no data"),
    el("span", {class: "note"}, "each pixel shows the highest second it covers; click a cell or a marker for that CPU's flame graph")));
  const wrap = el("div", {class: "canvas-wrap"});
  const canvas = el("canvas", {id: "heatmap-canvas"});
  const tip = el("div", {class: "hm-tip"});
  wrap.append(canvas, tip); s.append(wrap);
  const LABEL = 46, MARK = 16, GAP = 6, MROW = 16;
  const rowH = Math.max(2, Math.min(12, Math.floor(520 / Math.max(ncpu, 1))));
  const state = {aggregate: false, layout: null};
  const events = D.events;

  function draw(){
    const width = Math.max(300, wrap.clientWidth || 1000), plotW = width - LABEL;
    const rows = state.aggregate ? 0 : ncpu;
    const mh = state.aggregate ? 40 : MROW;
    const height = MARK + rows * rowH + GAP + mh + 18;
    const dpr = window.devicePixelRatio || 1;
    canvas.width = Math.round(width * dpr); canvas.height = Math.round(height * dpr);
    canvas.style.width = width + "px"; canvas.style.height = height + "px";
    const g = canvas.getContext("2d"); g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.fillStyle = "#fff"; g.fillRect(0, 0, width, height);
    const per = ncol / plotW;  // cells per pixel column
    const img = g.createImageData(plotW, rows + 1);
    function put(row, x, v){
      const o = (row * plotW + x) * 4;
      const c = v === NO ? [217, 221, 226] : heat(v);
      img.data[o] = c[0]; img.data[o + 1] = c[1]; img.data[o + 2] = c[2]; img.data[o + 3] = 255;
    }
    for (let x = 0; x < plotW; x++) {
      const a = Math.floor(x * per), b = Math.max(a + 1, Math.floor((x + 1) * per));
      for (let r = 0; r < rows; r++) {
        let m = -1, base = r * ncol;
        for (let c = a; c < b && c < ncol; c++) { const v = cells[base + c]; if (v !== NO && v > m) m = v; }
        put(r, x, m < 0 ? NO : m);
      }
      let sum = 0, n = 0;
      for (let c = a; c < b && c < ncol; c++) { const v = machine[c]; if (v !== NO) { sum += v; n++; } }
      put(rows, x, n ? Math.round(sum / n) : NO);
    }
    // scale the 1-px-high image rows up to their row heights
    const tmp = document.createElement("canvas"); tmp.width = plotW; tmp.height = rows + 1;
    tmp.getContext("2d").putImageData(img, 0, 0);
    g.imageSmoothingEnabled = false;
    if (rows) g.drawImage(tmp, 0, 0, plotW, rows, LABEL, MARK, plotW, rows * rowH);
    const my = MARK + rows * rowH + GAP;
    g.drawImage(tmp, 0, rows, plotW, 1, LABEL, my, plotW, mh);
    g.fillStyle = "#333"; g.font = "10px sans-serif"; g.textBaseline = "middle";
    if (rows) {
      const every = Math.ceil(11 / rowH);
      for (let r = 0; r < rows; r += every) g.fillText("cpu " + H.cpus[r], 2, MARK + r * rowH + rowH / 2);
    }
    g.fillText("machine", 2, my + mh / 2);
    if (rows) {
      // episodes: outlined, at least 3 px wide, so a few seconds show in an hour; their
      // CPUs labelled in red whatever the label spacing
      const rowOf = new Map(H.cpus.map((c, i) => [c, i]));
      g.strokeStyle = "#7a0000"; g.lineWidth = 1;
      const labelled = new Set();
      for (const ep of D.episodes) {
        const r = rowOf.get(ep.cpu); if (r === undefined) continue;
        const x0 = LABEL + (ep.start - H.start) / (ncol * H.step_s) * plotW;
        const x1 = LABEL + (ep.end - H.start) / (ncol * H.step_s) * plotW;
        const w = Math.max(3, x1 - x0), y = MARK + r * rowH;
        g.fillStyle = "rgb(160,0,0)"; g.fillRect(x0, y, w, rowH);
        g.strokeRect(x0 - 1.5, y - 1.5, w + 3, rowH + 3);
        if (!labelled.has(ep.cpu)) {
          labelled.add(ep.cpu);
          g.fillStyle = "#fff"; g.fillRect(0, y + rowH / 2 - 6, LABEL - 2, 12);
          g.fillStyle = "#b42318"; g.font = "bold 10px sans-serif";
          g.fillText("cpu " + ep.cpu, 2, y + rowH / 2);
          g.font = "10px sans-serif";
        }
      }
    }
    // time axis
    const t0 = H.start, span = ncol * H.step_s;
    g.textBaseline = "top"; g.fillStyle = "#333";
    const ticks = 8;
    for (let i = 0; i <= ticks; i++) {
      const x = LABEL + plotW * i / ticks;
      g.fillText(hms(t0 + span * i / ticks), Math.min(x, width - 48), my + mh + 4);
    }
    // event markers: a strip on top, faint lines through the cores
    const marks = [];
    for (const e of events) {
      const x = LABEL + (e.t - t0) / span * plotW;
      if (x < LABEL || x > width) continue;
      const inc = e.incident;
      if (inc) {
        g.fillStyle = "#c81e1e";
        g.beginPath(); g.moveTo(x - 5, 2); g.lineTo(x + 5, 2); g.lineTo(x, MARK - 2); g.closePath(); g.fill();
      } else { g.fillStyle = "rgba(123,135,148,0.6)"; g.fillRect(x, MARK - 5, 1, 4); }  // other lines: a tick
      if (inc) { g.strokeStyle = "rgba(200,30,30,0.35)"; g.beginPath(); g.moveTo(x + 0.5, MARK); g.lineTo(x + 0.5, MARK + rows * rowH); g.stroke(); }
      marks.push([x, e]);
    }
    state.layout = {LABEL, MARK, rowH, rows, plotW, my, mh, t0, span, marks, width};
  }
  function hit(ev){
    const L = state.layout, r = canvas.getBoundingClientRect();
    const x = ev.clientX - r.left, y = ev.clientY - r.top;
    if (y < L.MARK) {
      let best = null, bd = 7;
      for (const [mx, e] of L.marks) {
        const d = Math.abs(mx - x) + (e.incident ? 0 : 3);  // stalls and resets win
        if (d < bd) { bd = d; best = e; }
      }
      return best ? {event: best, x, y} : null;
    }
    if (x < L.LABEL) return null;
    const t = L.t0 + (x - L.LABEL) / L.plotW * L.span;
    if (y >= L.MARK && y < L.MARK + L.rows * L.rowH) {
      const row = Math.floor((y - L.MARK) / L.rowH);
      const col = Math.floor((t - L.t0) / H.step_s);
      return {cpu: H.cpus[row], t, value: cells[row * ncol + col], x, y};
    }
    if (y >= L.my && y < L.my + L.mh) {
      const col = Math.floor((t - L.t0) / H.step_s);
      return {machine: true, t, value: machine[col], x, y};
    }
    return null;
  }
  canvas.addEventListener("mousemove", (ev) => {
    const h = hit(ev);
    if (!h) { tip.style.display = "none"; return; }
    let text;
    if (h.event) text = `#${h.event.id} ${h.event.kind} ${iso(h.event.t)}\n${h.event.raw}`;
    else text = `${h.machine ? "machine average" : "cpu " + h.cpu} at ${iso(Math.floor(h.t))}\n${h.value === NO ? "no sample" : h.value + "% " + H.mode}`;
    tip.textContent = CoreFlame.clean(text); tip.style.display = "block";
    tip.style.left = Math.min(h.x + 12, state.layout.width - 260) + "px"; tip.style.top = (h.y + 14) + "px";
  });
  canvas.addEventListener("mouseleave", () => { tip.style.display = "none"; });
  canvas.addEventListener("click", (ev) => {
    const h = hit(ev); if (!h) return;
    if (h.event) ctx.openEvent(h.event);
    else if (!h.machine) ctx.openCell(h.cpu, h.t);
  });
  agg.addEventListener("change", () => { state.aggregate = agg.checked; draw(); });
  let timer = null;
  window.addEventListener("resize", () => { clearTimeout(timer); timer = setTimeout(draw, 100); });
  ctx.after(draw);
  ctx.heatmap = {state, draw, canvas};
  return s;
}

function rewindSection(ctx){
  const s = el("section", {id: "rewind", class: "rewind"}, el("h2", {}, "Rewind: a CPU's flame graph"));
  const head = el("div", {id: "rewind-title", class: "muted"}, "Click an event marker, an event below, or a heatmap cell.");
  const graph = el("div", {id: "rewind-graph"});
  const diff = el("div", {id: "rewind-diff"});
  s.append(head, graph, diff);
  ctx.showFlame = function(f, why){
    head.textContent = "";
    graph.textContent = ""; diff.textContent = "";
    if (!f) { head.append(el("span", {}, why)); s.removeAttribute("data-cpu"); return; }
    s.dataset.cpu = f.cpu; s.dataset.flame = f.id;
    head.append(el("h3", {}, `CPU ${f.cpu}, ${iso(f.start)} → ${iso(f.end)} (${dur(f.end - f.start)})`),
      el("div", {class: "muted"}, `${why} · ${f.samples} samples, ${f.busy} busy`));
    CoreFlame.mount(graph, f.data, {icicle: true});
    if (f.diff) {
      diff.append(el("h3", {}, `Against the baseline (${f.baseline.note}; red grew, blue shrank)`));
      const d = el("div"); diff.append(d); CoreFlame.mount(d, f.diff, {icicle: true});
    }
    s.scrollIntoView({block: "start"});
  };
  return s;
}

function eventsSection(D, ctx){
  const s = el("section", {id: "events"}, el("h2", {}, `Kernel events (${D.events_total})`));
  if (!D.events.length) { s.append(el("p", {class: "muted"}, "no kernel events in this window")); return s; }
  const incidentsOnly = el("input", {type: "checkbox", id: "events-incidents-only"});
  const nInc = D.events.filter(e => e.incident).length;
  incidentsOnly.checked = nInc > 0;
  const box = el("div", {style: "max-height:420px;overflow:auto"});
  const note = el("p", {class: "note"});
  s.append(el("div", {class: "controls"}, el("label", {}, incidentsOnly, ` only incident kinds (stalls, resets, timeouts, lockups, OOM kills, hardware errors, link down) (${nInc})`)), box, note);
  function fill(){
    box.textContent = "";
    const list = D.events.filter(e => !incidentsOnly.checked || e.incident);
    const rows = list.slice(0, 500).map(e => ({
      cells: [String(e.id), iso(e.t), e.kind, [e.driver, e.device, e.iface].filter(Boolean).join(" "), e.queue === null ? "" : String(e.queue), el("span", {class: "raw"}, e.raw)],
      onclick: () => ctx.openEvent(e), attrs: {"data-event": e.id}}));
    const t = table(["#", "time", "kind", "device", "queue", "line"], rows, {class: "events"});
    t.querySelectorAll("td:nth-child(2)").forEach(td => { td.style.whiteSpace = "nowrap"; });
    box.append(t);
    note.textContent = list.length > 500 ? `first 500 of ${list.length}` : (D.events_total > D.events.length ? `the page holds the first ${D.events.length} of ${D.events_total}` : "");
  }
  incidentsOnly.addEventListener("change", fill);
  fill();
  return s;
}

function lineChart(canvas, series, opts){
  // series: [{points: [[t, v]...], color, step, dash, width}]
  const width = Math.max(300, canvas.parentNode.clientWidth || 800), height = opts.height || 220;
  const dpr = window.devicePixelRatio || 1;
  canvas.width = width * dpr; canvas.height = height * dpr; canvas.style.width = width + "px"; canvas.style.height = height + "px";
  const g = canvas.getContext("2d"); g.setTransform(dpr, 0, 0, dpr, 0, 0);
  const L = 48, R = 10, T = 8, B = 22, pw = width - L - R, ph = height - T - B;
  const t0 = opts.t0, t1 = opts.t1, y0 = opts.y0 || 0, y1 = opts.y1;
  const X = t => L + (t - t0) / Math.max(t1 - t0, 1e-9) * pw, Y = v => T + ph - (v - y0) / Math.max(y1 - y0, 1e-9) * ph;
  g.fillStyle = "#fff"; g.fillRect(0, 0, width, height);
  g.strokeStyle = "#e4e7eb"; g.fillStyle = "#52606d"; g.font = "10px sans-serif";
  for (let i = 0; i <= 4; i++) { const v = y0 + (y1 - y0) * i / 4, y = Y(v); g.beginPath(); g.moveTo(L, y); g.lineTo(L + pw, y); g.stroke(); g.fillText(opts.fmtY ? opts.fmtY(v) : Math.round(v), 2, y + 3); }
  for (let i = 0; i <= 5; i++) { const t = t0 + (t1 - t0) * i / 5; g.fillText(hms(t), Math.min(X(t) - 20, width - 50), height - 6); }
  for (const s of series) {
    if (!s.points.length) continue;
    g.strokeStyle = s.color; g.lineWidth = s.width || 1.5; g.setLineDash(s.dash || []);
    g.beginPath();
    s.points.forEach(([t, v], i) => {
      const x = X(t), y = Y(v);
      if (s.step) { const xe = X(Math.min(t + s.step, t1)); if (i === 0) g.moveTo(x, y); else g.lineTo(x, y); g.lineTo(xe, y); }
      else if (i === 0) g.moveTo(x, y); else g.lineTo(x, y);
    });
    g.stroke(); g.setLineDash([]);
  }
  if (opts.marks) for (const [t, color] of opts.marks) { g.strokeStyle = color; g.lineWidth = 1; g.beginPath(); g.moveTo(X(t), T); g.lineTo(X(t), T + ph); g.stroke(); }
}

function hotCoreSection(D, ctx){
  const s = el("section", {id: "hotcore"}, el("h2", {}, "The hot core at 1 s, and what 30 s and 60 s sampling showed"));
  const h = D.hot_core;
  if (!h) { s.append(el("p", {class: "muted"}, "no incident was preceded by a hot core in this window")); return s; }
  s.append(el("p", {id: "hotcore-text"}, `CPU ${h.cpu} before event #${h.event_id} (${iso(h.event_t)}): peak ${num(h.peak_1s_pct)}% at 1 s; a 30 s sampler showed ${num(h.at_30s_pct)}%, a 60 s sampler ${num(h.at_60s_pct)}%; the machine average peaked at ${num(h.machine_peak_1s_pct)}% (${num(h.machine_at_60s_pct)}% at 60 s).`));
  s.append(el("div", {class: "legend"}, el("span", {style: "background:#c81e1e"}), "1 s", el("span", {style: "background:#2563eb"}), "30 s", el("span", {style: "background:#16a34a"}), "60 s", el("span", {style: "background:#9aa5b1"}), "machine (1 s)"));
  const c = el("canvas", {id: "hotcore-canvas"}), wrap = el("div", {class: "canvas-wrap"}, c);
  s.append(wrap);
  ctx.after(() => lineChart(c, [
    {points: h.machine_1s, color: "#9aa5b1"},
    {points: h.series_60s, color: "#16a34a", step: 60, width: 2},
    {points: h.series_30s, color: "#2563eb", step: 30, width: 2},
    {points: h.series_1s, color: "#c81e1e"}], {t0: h.start, t1: h.end, y1: 100, marks: [[h.event_t, "#000"]], fmtY: v => v + "%"}));
  s.append(el("p", {class: "note"}, "30 s and 60 s: one counter delta per epoch-aligned window, as a monitor scraping at that interval records it; black line: the event."));
  return s;
}

function zombiesSection(D){
  const s = el("section", {id: "zombies"}, el("h2", {}, "Zombie memory cgroups"));
  const z = D.zombies;
  if (!z) { s.append(el("p", {class: "muted"}, "not investigated")); return s; }
  const m = z.memory || {}, g = z.growth || {};
  s.append(el("p", {id: "zombies-text"}, `${m.dying === null || m.dying === undefined ? "dying count not measured" : m.dying + " dying"} against ${m.live === null || m.live === undefined ? "?" : m.live} live (${z.layout || "?"}); growth ${g.per_hour === null || g.per_hour === undefined ? "unknown" : num(g.per_hour, 0) + " per hour"} (${g.method || "none"}); ` +
    (g.crossed ? "the threshold is crossed." : g.projected_threshold_epoch ? `crosses ${g.threshold} around ${iso(g.projected_threshold_epoch)}.` : "no crossing projected.")));
  if (z.trend.length) {
    const c = el("canvas", {id: "zombies-canvas"}), wrap = el("div", {class: "canvas-wrap"}, c);
    s.append(wrap);
    const last = z.trend[z.trend.length - 1];
    let t1 = last[0] + 1, ymax = Math.max(...z.trend.map(p => p[1]), 1);
    const proj = [];
    if (g.per_hour && g.projected_threshold_epoch && !g.crossed) {
      const tEnd = Math.min(g.projected_threshold_epoch, last[0] + 4 * Math.max(last[0] - z.trend[0][0], 3600));
      proj.push([last[0], last[1]], [tEnd, last[1] + g.per_hour * (tEnd - last[0]) / 3600]);
      t1 = tEnd; ymax = Math.max(ymax, proj[1][1], g.threshold || 0);
    }
    const thr = g.threshold ? [[z.trend[0][0], g.threshold], [t1, g.threshold]] : [];
    setTimeout(() => lineChart(c, [
      {points: thr, color: "#9aa5b1", dash: [3, 3]},
      {points: proj, color: "#b42318", dash: [6, 4]},
      {points: z.trend, color: "#1f2933", width: 2}], {t0: z.trend[0][0], t1, y1: ymax * 1.05, height: 180}), 0);
    s.append(el("div", {class: "legend"}, el("span", {style: "background:#1f2933"}), "dying", el("span", {style: "background:#b42318"}), "projection", el("span", {style: "background:#9aa5b1"}), "threshold"));
  }
  s.append(el("h3", {}, "Where they sit"));
  if (z.locations.length) s.append(table(["cgroup", "dying", "subtree dying"], z.locations.map(l => ({cells: [l.path, l.dying, l.subtree_dying === undefined ? "" : l.subtree_dying]}))));
  else s.append(el("p", {class: "muted"}, "no location measured"));
  if (z.location_basis) s.append(el("p", {class: "note"}, z.location_basis));
  s.append(el("h3", {}, "Suspects"));
  if (z.suspects.length) s.append(table(["source", "kind", "score", "explains"], z.suspects.map(x => ({cells: [x.name, x.kind, num(x.score, 3), x.evidence && x.evidence.explains_pct_of_growth !== undefined ? num(x.evidence.explains_pct_of_growth) + "% of growth" : ""]}))));
  else s.append(el("p", {class: "muted"}, "no suspect found"));
  return s;
}

function hotStacks(D, f){
  // the hot core's top stacks and memcg walker (analyze --json's profiles) for flame `f`
  const h = (D.hot_core_stacks || []).find(x => x.cpu === f.cpu && (f.kind === "incident" ? x.event_id === f.event_id : x.basis !== "incident" && Math.abs(x.start - f.start) < 1));
  const out = [];
  if (!h) return out;
  if (h.walker) out.push(el("p", {id: "profile-walker"}, `memcg walker: ${h.walker.comm} in ${h.walker.function} (${num(100 * h.walker.share, 0)}% of the kernel-mode samples)`));
  if (h.top_stacks.length) out.push(el("div", {id: "profile-stacks"}, table(["process", "share", "stack (leaf first)"], h.top_stacks.map(t => ({cells: [t.comm, num(t.pct) + "%", el("span", {class: "raw"}, t.frames.map(x => x.name).join(" ← "))]})), {class: "stacks"})));
  return out;
}

function profileSection(D, ctx){
  const f = D.flames.find(x => x.kind === "incident") || D.flames.find(x => x.kind === "episode");
  const s = el("section", {id: "profile"}, el("h2", {}, f && f.kind === "episode" ? "The hot core's stacks while it was saturated (no incident followed)" : "The hot core's stacks before the first incident"));
  if (!f) { s.append(el("p", {class: "muted"}, "no profile of a hot core before an incident (the perf ring may be off: see sensors)")); return s; }
  s.append(el("p", {}, f.kind === "episode" ? `CPU ${f.cpu}, ${f.basis === "stacks" ? "busiest in the kernel (no per-core record)" : "saturated"} ${iso(f.start)} → ${iso(f.end)}: ${f.samples} samples, ${f.busy} busy.` : `CPU ${f.cpu}, ${iso(f.start)} → ${iso(f.end)}, before event #${f.event_id}: ${f.samples} samples, ${f.busy} busy.`));
  s.append(...hotStacks(D, f));
  const g = el("div", {id: "profile-graph"}); s.append(g);
  const d = el("div", {id: "profile-diff"});
  if (f.diff) s.append(el("h3", {}, `Against the baseline (${f.baseline.note}; red grew, blue shrank)`), d);
  else s.append(el("p", {class: "muted"}, `no baseline: ${f.baseline_note || "no profile earlier in the record"}`));
  ctx.after(() => { CoreFlame.mount(g, f.data, {icicle: true}); if (f.diff) CoreFlame.mount(d, f.diff, {icicle: true}); });
  return s;
}

function hypothesesSection(D){
  const s = el("section", {id: "hypotheses"}, el("h2", {}, "Hypotheses"));
  const dx = D.diagnosis;
  if (!dx || !dx.hypotheses) { s.append(el("p", {class: "muted"}, "diagnosis not available")); return s; }
  s.append(table(["hypothesis", "verdict", "score", "evidence", "would change it"], dx.hypotheses.map(h => ({cells: [
    h.name.replace(/_/g, " "), el("span", {class: "tag " + h.verdict}, h.verdict.replace("_", " ")), num(h.score, 2),
    el("span", {}, h.summary ? el("div", {}, h.summary) : null, el("span", {class: "raw"}, Object.entries(h.evidence || {}).map(([k, v]) => el("div", {}, fact(k, v))))),
    h.would_change || ""]}))));
  return s;
}

function sensorsSection(D){
  const s = el("section", {id: "sensors"}, el("h2", {}, "Sensors that were off"));
  const off = D.sensors.filter(x => !x.ok);
  if (!off.length) s.append(el("p", {class: "muted"}, `all ${D.sensors.length} sensors measured`));
  else s.append(table(["sensor", "what was not measured, and why"], off.map(x => ({cells: [x.name, x.detail]}))));
  if (D.lost_records) s.append(el("p", {}, `${D.lost_records} kernel log records were lost before corescope read them.`));
  return s;
}

// ─── flame lookup for clicks ──────────────────────────────────────────────────────────
function flameForEvent(D, e){
  const inc = D.flames.filter(f => f.kind === "incident");
  let f = inc.find(x => x.event_id === e.id);
  if (f) return [f, `the ${dur(f.end - f.start)} before event #${e.id} (${e.kind})`];
  const incident = D.incidents.find(i => i.event.id === e.id);
  const cpu = incident && incident.nearest_cpu !== null ? incident.nearest_cpu : null;
  f = inc.filter(x => (cpu === null || x.cpu === cpu) && x.end >= e.t - 30 && x.start <= e.t).sort((a, b) => Math.abs(a.end - e.t) - Math.abs(b.end - e.t))[0];
  if (f) return [f, `the incident window nearest event #${e.id}`];
  if (cpu !== null) { const c = flameForCell(D, cpu, e.t - 1); if (c[0]) return c; }
  return [null, `event #${e.id} (${e.kind}) was not preceded by a hot core with a profile`];
}
function flameForCell(D, cpu, t){
  const mine = D.flames.filter(f => f.cpu === cpu);
  let f = mine.find(x => x.kind === "column" && x.start <= t && t < x.end);
  if (f) return [f, `the minute around ${iso(Math.floor(t))}`];
  f = mine.filter(x => x.kind === "incident" && x.start <= t && t <= x.end)[0];
  if (f) return [f, `the incident window holding ${iso(Math.floor(t))}`];
  f = mine.filter(x => x.kind === "episode" && x.start <= t && t <= x.end)[0];
  if (f) return [f, `the saturation holding ${iso(Math.floor(t))}`];
  return [null, `no profile of CPU ${cpu} at ${iso(Math.floor(t))} is in this page (it holds the hot CPUs only); ` +
    `run: corescope flame --at ${Math.floor(t)} --before 60s --cpu ${cpu} --format html`];
}

function render(D, root, extra){
  const ctx = {afters: [], after(fn){ this.afters.push(fn); }};
  ctx.openEvent = (e) => { const [f, why] = flameForEvent(D, e); ctx.showFlame(f, why); };
  ctx.openCell = (cpu, t) => { const [f, why] = flameForCell(D, cpu, t); ctx.showFlame(f, why); };
  const hdr = el("header", {}, el("h1", {}, D.title),
    el("div", {class: "sub"}, `${iso(D.window.start)} → ${iso(D.window.end)} (${dur(D.window.end - D.window.start)}) · ${D.heatmap.cpus.length} CPUs · evidence: ${D.source}` + (D.generated ? ` · generated ${iso(D.generated)}` : "")));
  const main = el("main");
  main.append(verdictSection(D), heatmapSection(D, ctx), rewindSection(ctx), eventsSection(D, ctx),
    hotCoreSection(D, ctx), zombiesSection(D), profileSection(D, ctx), hypothesesSection(D), sensorsSection(D));
  if (extra) extra(main, ctx);
  root.append(hdr, main);
  for (const fn of ctx.afters) fn();
  api.last = ctx;
  performance.mark("corescope-drawn");  // every section drawn (the bench reads it)
  return ctx;
}
const api = {render, el, iso, hms, dur, num, lineChart, table, last: null};
return api;
})();
