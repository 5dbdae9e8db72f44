// Building the page: elements, bars, figures and times, the view's frame.

const view = document.getElementById("view");

export function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name === "text") node.textContent = value;
    else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? "" : value);
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

export function svg(tag, attrs) {
  const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [name, value] of Object.entries(attrs || {})) node.setAttribute(name, value);
  return node;
}

export const number = (n) => Number(n || 0).toLocaleString("en-US");
export const short = (name) => String(name || "").replace(/^(ITEM_STATE|CATEGORY|CONTRIBUTOR_TYPE|RETRIEVAL_MODE|CONVERSATION_STATE)_/, "").toLowerCase();

export function when(seconds) {
  if (!seconds) return "";
  const d = new Date(seconds * 1000);
  return d.toISOString().replace("T", " ").slice(0, 19);
}

export function ago(seconds) {
  if (!seconds) return "never";
  const s = Date.now() / 1000 - seconds;
  if (s < 90) return `${Math.max(0, Math.round(s))} s ago`;
  if (s < 5400) return `${Math.round(s / 60)} min ago`;
  if (s < 129600) return `${Math.round(s / 3600)} h ago`;
  return `${Math.round(s / 86400)} days ago`;
}

export const q = (params) => new URLSearchParams(Object.entries(params).filter(([, v]) => v !== undefined && v !== null && v !== "")).toString();
export const enc = encodeURIComponent;

export function bar(value, limit, { threshold, id, hot } = {}) {
  const track = el("div", { class: "bar", id, role: "meter", "aria-valuenow": value, "aria-valuemax": limit });
  const fill = el("div", { class: "fill" + (hot ? " hot" : "") });
  fill.style.width = `${limit > 0 ? Math.min(100, (100 * value) / limit) : 0}%`;
  track.append(fill);
  if (threshold) {
    const mark = el("div", { class: "mark", title: `compaction threshold ${Math.round(threshold * 100)}%` });
    mark.style.left = `${Math.min(100, threshold * 100)}%`;
    track.append(mark);
  }
  return track;
}

export const STATES = ["window", "archived", "compacted", "reverted"];

export function stateStack(stats) {
  const total = STATES.reduce((sum, s) => sum + Number(stats?.[s]?.items || 0), 0);
  const stack = el("div", { class: "stack", title: STATES.map((s) => `${s} ${number(stats?.[s]?.items)}`).join(", ") });
  for (const s of STATES) {
    const n = Number(stats?.[s]?.items || 0);
    if (!n) continue;
    const part = el("span", { class: `s-${s}` });
    part.style.width = `${(100 * n) / total}%`;
    stack.append(part);
  }
  return stack;
}

export const legend = () => el("div", { class: "legend" }, STATES.map((s) => el("span", {}, el("i", { class: `s-${s}` }), s)));

export function show(...nodes) {
  view.replaceChildren(...nodes);
}

export function crumbs(parts) {
  const nav = document.getElementById("crumbs");
  nav.replaceChildren(...parts.map(([label, href], i) => (i < parts.length - 1 && href ? el("a", { href, text: label }) : el("span", { text: label }))));
}

// The words of a query worth finding in a text: two letters or digits or more.
export function words(query) {
  return [...new Set(String(query || "").toLowerCase().match(/[\p{L}\p{N}_]{2,}/gu) || [])];
}

// About `width` characters of text around the first of the words found (the start when
// none is), each word found marked: a snippet that shows why it matched.
export function around(text, found, width = 300) {
  const content = String(text || "");
  const pattern = found.length ? new RegExp(found.map((w) => w.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join("|"), "giu") : null;
  const hit = pattern ? pattern.exec(content) : null;
  const start = hit ? Math.max(0, hit.index - Math.floor(width / 3)) : 0;
  const end = Math.min(content.length, start + width);
  const shown = content.slice(start, end);
  const nodes = [start > 0 ? "…" : ""];
  let from = 0;
  if (pattern) {
    pattern.lastIndex = 0;
    for (const match of shown.matchAll(pattern)) {
      nodes.push(shown.slice(from, match.index), el("mark", { text: match[0] }));
      from = match.index + match[0].length;
    }
  }
  nodes.push(shown.slice(from), end < content.length ? "…" : "");
  return nodes.filter((n) => n !== "");
}
