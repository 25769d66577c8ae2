"use strict";
// `corescope serve` additions to the report page: FlameScope's rewind over the live store.
// Event → its CPU's subsecond heatmap (columns: seconds, rows: 20 ms offsets); drag a range
// → that range's flame graph and its diff against a baseline. Answers come from /api/*.
window.CoreServe = (function(){
const {el, iso, dur} = CoreReport;

async function getJSON(url){
  const r = await fetch(url, {headers: {"Accept": "application/json"}});
  const body = await r.json().catch(() => ({error: `HTTP ${r.status}`}));
  if (!r.ok) throw new Error(body.error || `HTTP ${r.status}`);
  return body;
}

function attach(D, main, ctx){
  const s = el("section", {id: "flamescope"}, el("h2", {}, "Rewind (FlameScope): subsecond heatmap of one CPU"));
  const cpuIn = el("input", {type: "number", min: "0", id: "fs-cpu", style: "width:5em"});
  const before = el("input", {type: "number", min: "5", max: "600", value: "120", id: "fs-before", style: "width:5em"});
  const status = el("span", {class: "muted", id: "fs-status"}, "Pick an event (in the list above or the markers) or a CPU.");
  const go = el("button", {id: "fs-go"}, "show");
  s.append(el("div", {class: "controls"}, el("label", {}, "CPU ", cpuIn), el("label", {}, "seconds before ", before), go, status));
  const wrap = el("div", {class: "canvas-wrap"});
  const canvas = el("canvas", {id: "subsecond-canvas"});
  const tip = el("div", {class: "hm-tip"});
  wrap.append(canvas, tip);
  const out = el("div", {id: "fs-flame"});
  const outDiff = el("div", {id: "fs-diff"});
  s.append(wrap, el("p", {class: "note"}, "Drag across the heatmap to select a time range (in time order, as FlameScope does); its flame graph and its diff against a baseline appear below."), out, outDiff);
  main.insertBefore(s, main.querySelector("#rewind").nextSibling);
  const st = {cpu: null, at: null, hm: null, drag: null, sel: null, layout: null};

  function cellAt(ev){
    const L = st.layout; if (!L) return null;
    const r = canvas.getBoundingClientRect();
    const col = Math.floor((ev.clientX - r.left - L.left) / L.cw), row = Math.floor((ev.clientY - r.top - L.top) / L.ch);
    if (col < 0 || row < 0 || col >= st.hm.columns || row >= st.hm.rows) return null;
    return {col, row, x: ev.clientX - r.left, y: ev.clientY - r.top};
  }
  function tOf(c){ return st.hm.start + c.col + c.row * st.hm.rows_ms / 1000; }
  function draw(){
    const hm = st.hm; if (!hm) return;
    const width = Math.max(300, wrap.clientWidth || 900);
    const left = 48, top = 4;
    const cw = Math.max(2, Math.min(16, Math.floor((width - left - 4) / Math.max(hm.columns, 1))));
    const ch = 6;
    const height = top + hm.rows * ch + 20;
    const dpr = window.devicePixelRatio || 1;
    canvas.width = width * dpr; canvas.height = height * dpr; canvas.style.width = width + "px"; canvas.style.height = height + "px";
    const g = canvas.getContext("2d"); g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.fillStyle = "#fff"; g.fillRect(0, 0, width, height);
    const max = Math.max(hm.max, 1);
    for (let c = 0; c < hm.columns; c++) for (let r = 0; r < hm.rows; r++) {
      const v = hm.values[c][r];
      const k = v / max;
      g.fillStyle = v ? `rgb(255,${Math.round(230 - 200 * k)},${Math.round(200 - 200 * k)})` : "#f7f7f7";
      g.fillRect(left + c * cw, top + r * ch, cw - (cw > 3 ? 1 : 0), ch - 1);
    }
    if (st.sel) {
      const [a, b] = st.sel;
      g.fillStyle = "rgba(37,99,235,0.35)";
      for (let c = a.col; c <= b.col; c++) {
        const r0 = c === a.col ? a.row : 0, r1 = c === b.col ? b.row : hm.rows - 1;
        g.fillRect(left + c * cw, top + r0 * ch, cw, (r1 - r0 + 1) * ch);
      }
    }
    if (st.at !== null) { const x = left + (st.at - hm.start) * cw; g.fillStyle = "#000"; g.fillRect(x, top, 1, hm.rows * ch); }
    g.fillStyle = "#333"; g.font = "10px sans-serif";
    g.fillText("0 ms", 2, top + 8); g.fillText(`${1000 - hm.rows_ms} ms`, 2, top + hm.rows * ch);
    const every = Math.max(1, Math.ceil(60 / cw));
    for (let c = 0; c < hm.columns; c += every * Math.ceil(10 / every)) g.fillText(CoreReport.hms(hm.start + c), left + c * cw, height - 4);
    st.layout = {left, top, cw, ch};
  }
  async function load(cpu, at){
    st.cpu = cpu; st.at = at; st.sel = null; cpuIn.value = cpu;
    const b = Math.max(5, Math.min(600, Number(before.value) || 120));
    const start = Math.floor(at - b), end = Math.ceil(at + 10);
    status.textContent = `loading CPU ${cpu}…`;
    try {
      st.hm = await getJSON(`/api/heatmap?cpu=${cpu}&start=${start}&end=${end}`);
      s.dataset.cpu = cpu;
      status.textContent = `CPU ${cpu}, ${iso(start)} → ${iso(end)}: ${st.hm.samples} samples (${st.hm.idle_samples} idle)`;
      draw();
    } catch (e) { status.textContent = `no heatmap: ${e.message}`; }
    s.scrollIntoView({block: "start"});
  }
  async function flame(a, b){
    const start = tOf(a), end = tOf(b) + st.hm.rows_ms / 1000;
    out.textContent = ""; outDiff.textContent = "";
    out.append(el("p", {class: "muted"}, "loading…"));
    try {
      const f = await getJSON(`/api/flame?cpu=${st.cpu}&start=${start.toFixed(3)}&end=${end.toFixed(3)}&diff=auto`);
      out.textContent = "";
      out.dataset.start = start; out.dataset.end = end;
      out.append(el("h3", {id: "fs-flame-title"}, `CPU ${f.cpu}, ${iso(start)} → ${iso(end)} (${(end - start).toFixed(2)} s): ${f.samples} samples, ${f.busy} busy`));
      const g = el("div"); out.append(g); CoreFlame.mount(g, f.data, {icicle: true});
      if (f.diff) {
        outDiff.append(el("h3", {}, `Against the baseline (${f.baseline.note}; red grew, blue shrank)`));
        const d = el("div"); outDiff.append(d); CoreFlame.mount(d, f.diff, {icicle: true});
      } else outDiff.append(el("p", {class: "muted"}, `no baseline: ${f.baseline_note || "nothing recorded before"}`));
    } catch (e) { out.textContent = ""; out.append(el("p", {class: "muted"}, `no flame graph: ${e.message}`)); }
  }
  canvas.addEventListener("mousedown", (ev) => { const c = cellAt(ev); if (c) { st.drag = c; st.sel = [c, c]; draw(); } });
  canvas.addEventListener("mousemove", (ev) => {
    const c = cellAt(ev);
    if (c) { tip.textContent = `${iso(Math.floor(tOf(c)))} +${c.row * st.hm.rows_ms} ms: ${st.hm.values[c.col][c.row]} samples`; tip.style.display = "block"; tip.style.left = (c.x + 12) + "px"; tip.style.top = (c.y + 12) + "px"; }
    else tip.style.display = "none";
    if (st.drag && c) { const a = st.drag; st.sel = (tOf(c) < tOf(a)) ? [c, a] : [a, c]; draw(); }
  });
  canvas.addEventListener("mouseleave", () => { tip.style.display = "none"; });
  window.addEventListener("mouseup", () => {
    if (!st.drag) return;
    st.drag = null;
    if (st.sel) flame(st.sel[0], st.sel[1]);
  });
  go.addEventListener("click", () => { const c = Number(cpuIn.value); if (Number.isInteger(c) && c >= 0) load(c, st.at !== null ? st.at : D.window.end - 10); });

  // events open the rewind for their CPU; cells ask the store for any CPU and minute
  const baseEvent = ctx.openEvent;
  ctx.openEvent = (e) => {
    const inc = D.incidents.find(i => i.event.id === e.id);
    let cpu = inc && inc.nearest_cpu !== null ? inc.nearest_cpu : null;
    if (cpu === null && inc) { const q = inc.interrupt_map.find(m => m.iface === e.iface && m.queue === e.queue); if (q && q.cpus.length) cpu = q.cpus[0]; }
    if (cpu === null) cpu = D.hot_core ? D.hot_core.cpu : (st.cpu !== null ? st.cpu : 0);
    baseEvent(e);
    load(cpu, e.t);
  };
  ctx.openCell = async (cpu, t) => {
    try {
      const f = await getJSON(`/api/flame?cpu=${cpu}&start=${Math.floor(t) - 60}&end=${Math.floor(t) + 1}&diff=auto`);
      ctx.showFlame(f, `the minute before ${iso(Math.floor(t) + 1)} (live from the store)`);
    } catch (e) { ctx.showFlame(null, `no flame graph: ${e.message}`); }
  };
  window.addEventListener("resize", draw);
  // the heatmap's geometry, for tests that drag on it
  window.__fs = () => st.hm && st.layout ? {start: st.hm.start, rows: st.hm.rows, columns: st.hm.columns, ...st.layout} : {};
}
return {attach};
})();
