"use strict";
// corescope's flame graph: draws the flat data of render/flamedata.py into an <svg>.
// Names only ever reach the page through textContent, never as markup.
window.CoreFlame = (function(){
const NS = "http://www.w3.org/2000/svg", H = 16;

// Control characters (terminal escapes in a process name) shown visibly, not interpreted.
function clean(s){
  return s.replace(/[\u0000-\u001f\u007f]/g, c => "\\x" + c.charCodeAt(0).toString(16).padStart(2, "0"));
}
function hash(s){ let h = 0; for (let i = 0; i < s.length; i++) h = (h * 31 + s.charCodeAt(i)) >>> 0; return h; }
function pct(v, of){ return of ? (100 * v / of).toFixed(2) + "%" : "0%"; }

// Parallel arrays → parent links and subtree ends (all iterative: no recursion limit).
function prepare(data){
  const n = data.name.length, parent = new Int32Array(n), end = new Int32Array(n);
  const stack = [];
  let maxDepth = 0;
  for (let i = 0; i < n; i++) {
    const d = data.depth[i];
    while (stack.length > d) end[stack.pop()] = i;
    parent[i] = stack.length ? stack[stack.length - 1] : -1;
    stack.push(i);
    if (d > maxDepth) maxDepth = d;
  }
  while (stack.length) end[stack.pop()] = n;
  const label = data.names.map(clean);
  return {n, parent, end, maxDepth, label};
}

function mount(root, data, opts){
  opts = opts || {};
  while (root.firstChild) root.removeChild(root.firstChild);
  const bar = document.createElement("div"); bar.className = "cf-bar";
  const search = document.createElement("input");
  search.placeholder = "search (regex)"; search.setAttribute("aria-label", "search");
  search.className = "cf-search";
  const reset = document.createElement("button"); reset.textContent = "reset zoom"; reset.className = "cf-reset";
  const flip = document.createElement("button"); flip.className = "cf-flip";
  const matched = document.createElement("span"); matched.className = "cf-matched";
  bar.append(search, reset, flip, matched);
  const tip = document.createElement("div"); tip.className = "cf-tip";
  tip.style.cssText = "position:fixed;pointer-events:none;background:#ffffe0;border:1px solid #888;padding:3px 6px;display:none;white-space:pre;z-index:5;font:12px sans-serif";
  const svg = document.createElementNS(NS, "svg"); svg.setAttribute("width", "100%");
  svg.setAttribute("class", "cf-svg"); svg.style.display = "block";
  root.append(bar, svg, tip);

  const empty = !data || !data.name || data.name.length === 0 || data.v[0] === 0;
  if (empty) {
    const p = document.createElement("p"); p.className = "cf-empty";
    p.textContent = opts.emptyText || "no samples in this window";
    root.append(p);
  }
  const T = empty ? null : prepare(data);
  const DIFF = !!(data && data.diff);
  const total = empty ? 1 : Math.max(data.v[0], 1);
  let zoom = 0, query = null, drawn = [];
  // Tall stacks open as an icicle (root on top, where the eye lands); short ones as a
  // classic flame graph. The button flips it.
  let icicle = opts.icicle !== undefined ? opts.icicle
    : !empty && (T.maxDepth + 1) * H > Math.max(window.innerHeight - 120, 200);

  function color(i){
    const name = data.names[data.name[i]];
    if (DIFF) {
      const d = (data.v[i] - (data.b[i] || 0)) / total;
      if (Math.abs(d) < 1e-9) return "rgb(235,235,235)";
      const c = Math.round(255 * (1 - Math.min(1, Math.abs(d) * 20)));
      return d > 0 ? `rgb(255,${c},${c})` : `rgb(${c},${c},255)`;
    }
    if (/\[\d+ more frames cut\]$/.test(name)) return "rgb(160,160,160)";
    const h = hash(name);
    if (name.endsWith("_[k]")) return `rgb(${200 + h % 55},${120 + h % 60},${30 + h % 40})`;
    return `rgb(${205 + h % 50},${(h >> 8) % 180},${(h >> 16) % 55})`;
  }
  function describe(i){
    let s = `${T.label[data.name[i]]}\n${data.v[i]} samples, ${pct(data.v[i], total)} of all`;
    if (zoom !== 0) s += `, ${pct(data.v[i], data.v[zoom])} of zoom`;
    if (DIFF) s += `\nbaseline ${(data.b[i] || 0).toFixed(1)} (normalised), change ${pct(data.v[i] - (data.b[i] || 0), total)}`;
    return s;
  }
  function fill(rect, i, greyed){
    rect.setAttribute("fill", query && query.test(data.names[data.name[i]]) ? "rgb(230,0,230)" : color(i));
    if (greyed) rect.setAttribute("fill-opacity", "0.5");
  }
  function y(row, rows){ return icicle ? row * H : (rows - row) * H; }

  function render(){
    flip.textContent = icicle ? "show as flame (root at bottom)" : "show as icicle (root on top)";
    if (empty) { svg.setAttribute("height", 0); return; }
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    drawn = [];
    const width = svg.getBoundingClientRect().width || 1200;
    const anc = [];
    for (let a = T.parent[zoom]; a >= 0; a = T.parent[a]) anc.unshift(a);
    const base = data.depth[zoom];
    const rows = anc.length + (function(){ let m = 0; for (let i = zoom; i < T.end[zoom]; i++) m = Math.max(m, data.depth[i] - base); return m; })();
    svg.setAttribute("height", (rows + 1) * H);
    const scale = width / Math.max(data.v[zoom], 1);
    const frag = document.createDocumentFragment();
    function box(i, x, w, row, greyed){
      const g = document.createElementNS(NS, "g"); g.dataset.i = i;
      const r = document.createElementNS(NS, "rect");
      r.setAttribute("x", x); r.setAttribute("y", y(row, rows)); r.setAttribute("width", Math.max(w - 0.5, 0.1));
      r.setAttribute("height", H - 1); r.setAttribute("stroke", "#fff"); r.setAttribute("stroke-width", ".5");
      r.style.cursor = "pointer";
      fill(r, i, greyed); g.appendChild(r);
      if (w > 35) {
        const t = document.createElementNS(NS, "text");
        t.setAttribute("x", x + 3); t.setAttribute("y", y(row, rows) + H - 4);
        t.setAttribute("font-size", "11"); t.setAttribute("font-family", "Verdana,sans-serif");
        t.style.pointerEvents = "none";
        const name = T.label[data.name[i]], chars = Math.floor((w - 6) / 6.5);
        t.textContent = name.length > chars ? name.slice(0, Math.max(chars - 2, 0)) + ".." : name;
        g.appendChild(t);
      }
      frag.appendChild(g); drawn.push([r, i, greyed]);
    }
    // ancestors of the zoomed frame span the full width, greyed
    anc.forEach((a, row) => box(a, 0, width, row, true));
    const cursor = [];
    cursor[base] = 0;
    for (let i = zoom; i < T.end[zoom]; ) {
      const d = data.depth[i], x = cursor[d], w = data.v[i] * scale;
      cursor[d] = x + w;
      if (w < 0.3) { i = T.end[i]; continue; }  // too thin to see: skip its subtree
      cursor[d + 1] = x;
      box(i, x, w, anc.length + d - base, false);
      i++;
    }
    svg.appendChild(frag);
    recount();
  }
  function recount(){
    if (!query) { matched.textContent = ""; return; }
    let m = 0;
    for (let i = zoom; i < T.end[zoom]; ) {
      if (query.test(data.names[data.name[i]])) { m += data.v[i]; i = T.end[i]; } else i++;
    }
    matched.textContent = `matched ${pct(m, data.v[zoom])}`;
  }
  function zoomTo(i){ zoom = i; render(); }

  svg.addEventListener("click", (e) => {
    const g = e.target.closest("g"); if (g) zoomTo(+g.dataset.i);
  });
  svg.addEventListener("mousemove", (e) => {
    const g = e.target.closest("g");
    if (!g) { tip.style.display = "none"; return; }
    tip.textContent = describe(+g.dataset.i); tip.style.display = "block";
    tip.style.left = (e.clientX + 12) + "px"; tip.style.top = (e.clientY + 12) + "px";
  });
  svg.addEventListener("mouseleave", () => { tip.style.display = "none"; });
  // Search recolours what is drawn (no rebuild), at most once per pause in typing.
  let timer = null;
  search.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      const v = search.value;
      try { query = v ? new RegExp(v) : null; } catch (err) { query = null; }
      for (const [r, i, greyed] of drawn) fill(r, i, greyed);
      recount();
      root.dispatchEvent(new CustomEvent("cf-searched"));
    }, 150);
  });
  reset.addEventListener("click", () => zoomTo(0));
  flip.addEventListener("click", () => {
    icicle = !icicle; render();
    if (!icicle) svg.scrollIntoView({block: "end"});
  });
  let resizeTimer = null;
  window.addEventListener("resize", () => {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(() => { if (svg.isConnected) render(); }, 100);
  });
  render();
  return {render, zoomTo, get icicle(){ return icicle; }, drawnCount: () => drawn.length};
}
return {mount, clean};
})();
