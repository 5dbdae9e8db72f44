// The contextwm inspector: one page, a view per route (#/...), every figure read from the
// server's JSON reads. Text from conversations is only ever set as textContent.
"use strict";

const view = document.getElementById("view");
const timings = (window.inspectorTimings = {});
let live = null; // the open event stream of the conversation shown, if any

// ---------------------------------------------------------------- helpers

function el(tag, attrs, ...children) {
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

function svg(tag, attrs) {
  const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [name, value] of Object.entries(attrs || {})) node.setAttribute(name, value);
  return node;
}

const number = (n) => Number(n || 0).toLocaleString("en-US");
const short = (name) => String(name || "").replace(/^(ITEM_STATE|CATEGORY|CONTRIBUTOR_TYPE|RETRIEVAL_MODE|CONVERSATION_STATE)_/, "").toLowerCase();

function when(seconds) {
  if (!seconds) return "";
  const d = new Date(seconds * 1000);
  return d.toISOString().replace("T", " ").slice(0, 19);
}

function ago(seconds) {
  if (!seconds) return "never";
  const s = Date.now() / 1000 - seconds;
  if (s < 90) return `${Math.max(0, Math.round(s))} s ago`;
  if (s < 5400) return `${Math.round(s / 60)} min ago`;
  if (s < 129600) return `${Math.round(s / 3600)} h ago`;
  return `${Math.round(s / 86400)} days ago`;
}

class Failed extends Error {
  constructor(status, body) {
    super(body.error || `HTTP ${status}`);
    this.status = status;
    this.code = body.code || "";
  }
}

async function api(path, body) {
  const init = body === undefined
    ? { credentials: "same-origin" }
    : { method: "POST", credentials: "same-origin", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) };
  const response = await fetch(path, init);
  const data = await response.json().catch(() => ({ error: `HTTP ${response.status}` }));
  if (!response.ok) throw new Failed(response.status, data);
  return data;
}

const q = (params) => new URLSearchParams(Object.entries(params).filter(([, v]) => v !== undefined && v !== null && v !== "")).toString();
const enc = encodeURIComponent;

function bar(value, limit, { threshold, id, hot } = {}) {
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

const STATES = ["window", "archived", "compacted", "reverted"];

function stateStack(stats) {
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

const legend = () => el("div", { class: "legend" }, STATES.map((s) => el("span", {}, el("i", { class: `s-${s}` }), s)));

function show(...nodes) {
  view.replaceChildren(...nodes);
}

function failure(error) {
  if (error instanceof Failed && error.status === 401) return signIn(error.message);
  show(el("p", { class: "error", id: "error", text: error.message }));
}

function crumbs(parts) {
  const nav = document.getElementById("crumbs");
  nav.replaceChildren(...parts.map(([label, href], i) => (i < parts.length - 1 && href ? el("a", { href, text: label }) : el("span", { text: label }))));
}

// ---------------------------------------------------------------- who is signed in

let session = null;

async function who() {
  session = await api("/api/session");
  const box = document.getElementById("who");
  box.replaceChildren();
  if (session.key) {
    box.append(`key ${session.key.name || session.key.key_id} (${session.key.role}: ${session.key.namespaces.join(", ")})`);
    box.append(el("button", { class: "plain", id: "sign-out", onclick: async () => { await api("/api/sign-out", {}); route(); } }, "Sign out"));
  } else if (!session.keys_required) {
    box.append("no API key needed on loopback");
  }
}

function signIn(message) {
  crumbs([["Sign in"]]);
  const input = el("input", { type: "password", id: "key-input", placeholder: "cwm_…", size: 60, autocomplete: "off" });
  const note = el("p", { class: "error", id: "sign-in-error", text: message && message !== "sign in with an API key" ? message : "" });
  if (!note.textContent) note.hidden = true;
  const form = el("form", {
    class: "card",
    onsubmit: async (event) => {
      event.preventDefault();
      try {
        await api("/api/sign-in", { key: input.value });
        route();
      } catch (error) {
        note.hidden = false;
        note.textContent = error.message;
      }
    },
  },
  el("h1", { text: "Sign in with an API key" }),
  el("p", { class: "quiet", text: "This server requires API keys. You will see the namespaces your key may read, and nothing else." }),
  el("div", { class: "row" }, input, el("button", { type: "submit", id: "sign-in" }, "Sign in")),
  note);
  show(form);
  input.focus();
}

// ---------------------------------------------------------------- namespaces

async function namespacesView() {
  crumbs([["Namespaces"]]);
  const { namespaces } = await api("/api/namespaces");
  if (namespaces.length === 1 && !location.hash.startsWith("#/n")) {
    location.replace(`#/n/${enc(namespaces[0].namespace)}`);
    return;
  }
  show(
    el("h1", { text: "Namespaces" }),
    namespaces.length === 0
      ? el("p", { class: "quiet", text: "No conversations yet that this key may read." })
      : el("table", { id: "namespaces" },
        el("tr", {}, el("th", { text: "namespace" }), el("th", { text: "conversations" }), el("th", { text: "last activity" })),
        namespaces.map((n) => el("tr", {},
          el("td", {}, el("a", { href: `#/n/${enc(n.namespace)}`, text: n.namespace })),
          el("td", { text: number(n.conversations) }),
          el("td", { text: ago(n.last_active), title: when(n.last_active) })))),
  );
}

// ---------------------------------------------------------------- conversations

async function conversationsView(ns, params) {
  crumbs([["Namespaces", "#/"], [ns]]);
  const filter = params.get("filter") || "";
  const page = Number(params.get("page") || 1);
  const data = await api(`/api/conversations?${q({ namespace: ns, filter, page })}`);
  const input = el("input", { type: "text", id: "conversation-filter", placeholder: "filter by id", value: filter });
  let pending = null;
  input.addEventListener("input", () => {
    clearTimeout(pending);
    pending = setTimeout(() => { location.hash = `#/n/${enc(ns)}?${q({ filter: input.value })}`; }, 300);
  });
  const rows = data.conversations.map((c) => {
    const w = c.window || {};
    const u = c.usage || {};
    const limit = Number(u.usable_tokens || 0);
    return el("tr", { class: "conversation", "data-id": c.conversation_id },
      el("td", {}, el("a", { href: `#/n/${enc(ns)}/c/${enc(c.conversation_id)}`, text: c.conversation_id })),
      el("td", {}, stateStack(c.stats), el("div", { class: "quiet", text: STATES.map((s) => `${number(c.stats?.[s]?.items)} ${s}`).join(" · ") })),
      el("td", {}, bar(w.token_count, w.token_limit), el("div", { class: "quiet", text: `${number(w.token_count)} / ${number(w.token_limit)} tokens · ${number(w.item_count)} / ${number(w.item_limit)} items` })),
      el("td", {}, limit ? bar(u.used_tokens, limit, { threshold: u.threshold, hot: u.should_compact }) : null,
        el("div", { class: "quiet", text: limit ? `${number(u.used_tokens)} / ${number(limit)} (${Math.round(100 * u.fill_ratio)}%)` : `${number(u.used_tokens)} tokens, no model limit` })),
      el("td", { text: ago(c.last_activity), title: when(c.last_activity) }));
  });
  const pager = el("div", { class: "pager" },
    page > 1 ? el("a", { href: `#/n/${enc(ns)}?${q({ filter, page: page - 1 })}`, text: "← newer" }) : null,
    el("span", { class: "quiet", text: `page ${data.page} of ${data.pages} · ${number(data.total)} conversations` }),
    page < data.pages ? el("a", { href: `#/n/${enc(ns)}?${q({ filter, page: page + 1 })}`, text: "older →" }) : null);
  show(
    el("h1", { text: `Conversations in ${ns}` }),
    el("div", { class: "row" }, input, el("a", { href: `#/n/${enc(ns)}/search`, text: "Search this namespace" }), legend()),
    el("table", { id: "conversations" },
      el("tr", {}, ["conversation", "items by state", "window fill", "usage against the model's limit", "last activity"].map((h) => el("th", { text: h }))),
      rows),
    pager,
  );
  if (document.activeElement !== input && filter) { input.focus(); input.setSelectionRange(filter.length, filter.length); }
}

// ---------------------------------------------------------------- one conversation

function usageLine(usage) {
  const limit = Number(usage.usable_tokens || 0);
  const text = limit
    ? `${number(usage.used_tokens)} of ${number(limit)} usable tokens (${Math.round(100 * usage.fill_ratio)}%), compaction at ${Math.round(100 * usage.threshold)}% · ${number(usage.active_items)} items active · ${usage.compactions} compactions`
    : `${number(usage.used_tokens)} tokens active, no model limit set · ${number(usage.active_items)} items · ${usage.compactions} compactions`;
  return { limit, text };
}

function usageHead(usage) {
  const { limit, text } = usageLine(usage);
  const track = bar(usage.used_tokens, limit || Math.max(1, usage.used_tokens), { id: "usage-bar", threshold: limit ? usage.threshold : 0, hot: usage.should_compact });
  track.classList.toggle("no-limit", !limit);
  const head = el("div", { class: "card usage-head", id: "usage" },
    track,
    el("span", { id: "usage-text", text }));
  return head;
}

function updateUsage(usage) {
  const track = document.getElementById("usage-bar");
  if (!track) return;
  const { limit, text } = usageLine(usage);
  const fill = track.querySelector(".fill");
  fill.style.width = `${Math.min(100, (100 * usage.used_tokens) / (limit || Math.max(1, usage.used_tokens)))}%`;
  fill.classList.toggle("hot", Boolean(usage.should_compact));
  track.setAttribute("aria-valuenow", usage.used_tokens);
  document.getElementById("usage-text").textContent = text;
}

// Follows a conversation's events from `after` (its newest event when the page loaded).
function follow(ns, cid, after) {
  const key = `${ns}\u0000${cid}`;
  if (live && live.key === key) { live.onEvent = null; return; }
  if (live) live.source.close();
  const source = new EventSource(`/api/events?${q({ namespace: ns, conversation: cid, after })}`);
  live = { key, source, onEvent: null };
  const handle = (kind) => (message) => {
    const event = JSON.parse(message.data);
    if (kind === "usage" && event.usage) updateUsage(event.usage);
    if (live && live.onEvent) live.onEvent(kind, event);
  };
  for (const kind of ["usage", "eviction", "compaction", "truncation", "duplicate_read", "checkpoint_created", "checkpoint_restored", "erasure"]) {
    source.addEventListener(kind, handle(kind));
  }
  source.addEventListener("failed", (message) => { source.close(); });
}

function stopFollowing() {
  if (live) live.source.close();
  live = null;
}

async function conversationView(ns, cid, tab, params) {
  crumbs([["Namespaces", "#/"], [ns, `#/n/${enc(ns)}`], [cid]]);
  const info = await api(`/api/conversation?${q({ namespace: ns, conversation: cid })}`);
  const base = `#/n/${enc(ns)}/c/${enc(cid)}`;
  const tabs = el("nav", { class: "tabs" },
    [["timeline", "Timeline"], ["usage", "Usage"], ["why", "Why this context"]].map(([name, label]) =>
      el("a", { href: name === "timeline" ? base : `${base}/${name}`, class: tab === name ? "on" : "", id: `tab-${name}`, text: label })),
    el("a", { href: `#/n/${enc(ns)}/search`, text: "Search" }));
  const body = el("section", { id: `${tab}-view` });
  show(el("h1", { text: cid }), usageHead(info.usage), tabs, body);
  follow(ns, cid, info.conversation.last_event_id);
  if (tab === "usage") return usageView(ns, cid, body);
  if (tab === "why") return whyView(ns, cid, body, info);
  return timelineView(ns, cid, body, params, info);
}

// ---------------------------------------------------------------- timeline

function compactionEvent(c) {
  const freed = Number(c.tokens_before) - Number(c.tokens_after);
  const details = el("details", { class: "compaction-details" },
    el("summary", { text: `Context compacted #${c.number}: ${number(c.items_archived)} items archived, ${number(freed)} tokens freed${c.undone ? " (undone by a restore)" : ""}` }),
    el("div", { class: "quiet", text: `${when(c.created_at)} · ${number(c.tokens_before)} → ${number(c.tokens_after)} tokens${c.extractive ? " · summary extracted by the server" : ""}` }),
    el("h2", { text: "Summary" }),
    el("pre", { class: "summary", text: c.summary }),
    c.ledger ? [el("h2", { text: "Fact ledger" }), el("pre", { class: "ledger", text: c.ledger })] : null);
  return el("div", { class: "event compaction", "data-seq": c.marker_seq }, details);
}

function itemRow(item, here) {
  const state = short(item.state);
  const clipped = item.content.length > 400;
  const content = el("div", { class: "content" + (clipped ? " clipped" : ""), text: item.content });
  if (clipped) content.addEventListener("click", () => content.classList.toggle("clipped"));
  return el("div", { class: `item ${state}${here ? " here" : ""}`, id: `seq-${item.seq}`, "data-seq": item.seq, "data-state": state },
    el("span", { class: "seq", text: `#${item.seq}` }),
    el("span", { class: "time", text: when(item.timestamp) }),
    el("span", { class: "role", text: item.file ? `${item.role} · ${item.file.kind}` : item.role }),
    el("span", { class: "tokens", text: number(item.token_count) }),
    el("div", {},
      el("span", { class: `badge state-${state}`, text: state }),
      item.flags.map((f) => el("span", { class: "badge", text: f })),
      item.marks.map((m) => el("span", { class: "badge mark", text: m })),
      item.file ? el("span", { class: "badge", text: item.file.path }) : null,
      content));
}

function eventRow(event) {
  if (event.kind === "checkpoint") {
    return el("div", { class: "event checkpoint", "data-after": event.after_seq, text: `Checkpoint “${event.name}” at #${event.last_seq} · ${number(event.active_tokens)} tokens active · ${when(event.created_at)}` });
  }
  return el("div", { class: "event truncation", "data-after": event.after_seq, text: `Truncated: ${number(event.items)} items left the active context, ${number(event.tokens)} tokens${event.undone ? " (undone by a restore)" : ""} · ${when(event.time)}` });
}

async function timelineView(ns, cid, body, params, info) {
  const started = performance.now();
  const at = Number(params.get("at") || 0);
  const after = params.has("after") ? Number(params.get("after")) : Math.max(0, at ? at - 20 : 0);
  const data = await api(`/api/timeline?${q({ namespace: ns, conversation: cid, after })}`);
  const rows = [];
  const byAfter = new Map();
  for (const e of data.events) { if (!byAfter.has(e.after_seq)) byAfter.set(e.after_seq, []); byAfter.get(e.after_seq).push(e); }
  for (const item of data.items) {
    if (item.kind === "compaction" && item.compaction) rows.push(compactionEvent(item.compaction));
    rows.push(itemRow(item, item.seq === at));
    for (const e of byAfter.get(item.seq) || []) rows.push(eventRow(e));
  }
  const first = data.items.length ? data.items[0].seq : 0;
  const base = `#/n/${enc(ns)}/c/${enc(cid)}`;
  const jump = el("input", { type: "number", id: "jump-seq", min: 1, max: data.last_seq, placeholder: "seq" });
  const pager = () => el("div", { class: "pager" },
    first > 1 ? el("a", { href: `${base}?after=${Math.max(0, first - 1 - 200)}`, class: "older", text: "← earlier" }) : null,
    el("span", { class: "quiet", text: data.items.length ? `items #${first}–#${data.items[data.items.length - 1].seq} of ${number(data.total_items)} (last #${data.last_seq})` : "no items" }),
    data.next_after !== null ? el("a", { href: `${base}?after=${data.next_after}`, class: "newer", text: "later →" }) : null,
    data.last_seq > 200 ? el("a", { href: `${base}?after=${Math.max(0, data.last_seq - 200)}`, text: "latest" }) : null,
    el("form", { onsubmit: (e) => { e.preventDefault(); location.hash = `${base}?at=${jump.value}`; } }, jump, el("button", { class: "plain", type: "submit" }, "Go")));
  body.replaceChildren(
    el("div", { class: "row" }, legend(), el("span", { class: "quiet", text: `${info.checkpoints.length} checkpoints` })),
    pager(),
    el("div", { class: "timeline", id: "timeline", "data-items": data.items.length }, rows.length ? rows : el("p", { class: "quiet", text: "Nothing here." })),
    pager());
  timings.timeline = performance.now() - started;
  timings.timelineSinceLoad = performance.now();
  document.getElementById("timeline").setAttribute("data-rendered", "yes");
  if (at) document.getElementById(`seq-${at}`)?.scrollIntoView({ block: "center" });
  live.onEvent = (kind) => {
    if (kind !== "usage") {
      const note = document.getElementById("changed") || body.insertBefore(el("p", { id: "changed", class: "quiet" }), body.firstChild);
      note.replaceChildren(`The conversation changed (${kind}). `, el("a", { href: "#", onclick: (e) => { e.preventDefault(); route(); }, text: "Reload" }));
    }
  };
}

// ---------------------------------------------------------------- usage over time

async function usageView(ns, cid, body) {
  const data = await api(`/api/usage?${q({ namespace: ns, conversation: cid })}`);
  body.replaceChildren(
    el("p", { class: "quiet", text: "Tokens of the active context after each item, over the conversation's life: compactions, truncations and replaced reads show as drops. The bar above and this chart follow the conversation live." }),
    usageChart(data),
    el("div", { class: "legend" },
      el("span", {}, el("i", { class: "p-recency" }), "active tokens"),
      el("span", {}, el("i", { class: "s-compacted" }), "a drop"),
      data.usage.usable_tokens ? el("span", { text: `dashed: usable limit ${number(data.usage.usable_tokens)} and compaction threshold ${Math.round(100 * data.usage.threshold)}%` }) : el("span", { text: "no model limit set" })),
    el("h2", { text: "Drops" }),
    dropsTable(ns, cid, data.points),
    el("h2", { text: "Savings in the active context now" }),
    el("pre", { class: "rendered", id: "savings", text: Object.entries(data.usage.optimisations || {}).map(([k, v]) => `${k.replace(/_/g, " ")}: ${number(v)}`).join("\n") }));
  let pending = null;
  live.onEvent = () => {
    clearTimeout(pending);
    pending = setTimeout(async () => {
      if (!document.getElementById("usage-chart")) return;
      const fresh = await api(`/api/usage?${q({ namespace: ns, conversation: cid })}`).catch(() => null);
      if (!fresh) return;
      document.getElementById("usage-chart").replaceWith(usageChart(fresh));
      document.getElementById("drops").replaceWith(dropsTable(ns, cid, fresh.points));
    }, 400);
  };
}

function usageChart(data) {
  const points = data.points;
  const usage = data.usage;
  const chart = svg("svg", { class: "chart", id: "usage-chart", viewBox: "0 0 1000 260", "data-points": points.length });
  const limit = Number(usage.usable_tokens || 0);
  const top = Math.max(1, limit, ...points.map((p) => p.tokens));
  const x = (i) => 60 + (920 * i) / Math.max(1, points.length - 1);
  const y = (t) => 240 - (220 * t) / top;
  const label = (text, at) => { const node = svg("text", { x: 4, y: at + 4 }); node.textContent = text; return node; };
  chart.append(svg("line", { class: "axis", x1: 60, x2: 980, y1: 240, y2: 240 }), label("0", 240), label(number(top), 20));
  if (limit) {
    chart.append(svg("line", { class: "limit", x1: 60, x2: 980, y1: y(limit), y2: y(limit) }));
    chart.append(svg("line", { class: "threshold", x1: 60, x2: 980, y1: y(limit * usage.threshold), y2: y(limit * usage.threshold) }));
  }
  if (points.length) {
    chart.append(svg("path", { class: "line", d: points.map((p, i) => `${i ? "L" : "M"}${x(i).toFixed(1)},${y(p.tokens).toFixed(1)}`).join(" ") }));
  }
  points.forEach((p, i) => {
    if (!p.event && points.length > 60) return;
    const dot = svg("circle", { class: p.event ? "drop" : "point", cx: x(i), cy: y(p.tokens), r: p.event ? 5 : 2.5 });
    const title = svg("title", {});
    title.textContent = `#${p.seq}${p.event ? `: ${p.event}` : ""}, ${number(p.tokens)} tokens`;
    dot.append(title);
    chart.append(dot);
  });
  return chart;
}

function dropsTable(ns, cid, points) {
  const drops = points.filter((p) => p.event);
  if (!drops.length) return el("p", { class: "quiet", id: "drops", text: "No compaction, truncation or replaced read yet." });
  return el("table", { id: "drops" }, el("tr", {}, el("th", { text: "after" }), el("th", { text: "what" }), el("th", { text: "tokens after" })),
    drops.map((p) => el("tr", {}, el("td", {}, el("a", { href: `#/n/${enc(ns)}/c/${enc(cid)}?at=${p.seq}`, text: `#${p.seq}` })), el("td", { text: p.event }), el("td", { text: number(p.tokens) }))));
}

// ---------------------------------------------------------------- why this context

const PARTS = ["recency", "importance", "similarity", "lexical", "role", "time"];

function optionsForm(side, defaults) {
  const f = {
    query: el("textarea", { name: "query", rows: 2, placeholder: "empty: the conversation's focus" }),
    budget: el("input", { type: "number", name: "budget", min: 1, value: defaults.budget }),
    mode: el("select", { name: "mode" }, ["hybrid", "dense", "lexical"].map((m) => el("option", { value: m, text: m }))),
    recent: el("input", { type: "number", name: "recent_share", min: 0, max: 1, step: 0.05, placeholder: "unset: by relevance" }),
    categories: el("input", { type: "checkbox", name: "categories" }),
    asOf: el("input", { type: "datetime-local", name: "as_of", step: 1 }),
  };
  f.query.value = defaults.query || "";
  const grid = el("div", { class: "form-grid", id: `options-${side}` },
    el("label", { text: "query" }), f.query,
    el("label", { text: "budget (tokens)" }), f.budget,
    el("label", { text: "mode" }), f.mode,
    el("label", { text: "recent share" }), f.recent,
    el("label", { text: "category budgets" }), f.categories,
    el("label", { text: "as of (UTC)" }), f.asOf);
  const request = (ns, cid) => {
    const options = { mode: `RETRIEVAL_MODE_${f.mode.value.toUpperCase()}` };
    if (f.recent.value !== "") options.recentShare = Number(f.recent.value);
    if (f.categories.checked) options.categories = {};
    const body = { namespace: ns, conversationId: cid, query: f.query.value, maxTokens: Number(f.budget.value), options };
    if (f.asOf.value) body.asOf = new Date(`${f.asOf.value}Z`).toISOString();
    return body;
  };
  return { grid, fields: f, request };
}

function scoredRow(ns, cid, scored, section) {
  const item = scored.item;
  const parts = scored.parts || {};
  const sum = PARTS.reduce((s, p) => s + Math.max(0, parts[p] || 0), 0);
  const partsBar = el("div", { class: "parts", title: PARTS.map((p) => `${p} ${Number(parts[p] || 0).toFixed(3)}`).join(" · ") });
  for (const p of PARTS) {
    const v = Math.max(0, parts[p] || 0);
    if (!v) continue;
    const seg = el("span", { class: `p-${p}` });
    seg.style.width = `${(100 * v) / Math.max(sum, 1e-9)}%`;
    partsBar.append(seg);
  }
  const category = scored.category && scored.category !== "CATEGORY_UNSPECIFIED" ? short(scored.category) : "";
  return el("div", { class: `scored ${section}`, "data-seq": item.seq, "data-tokens": item.token_count, "data-category": category },
    el("a", { href: `#/n/${enc(ns)}/c/${enc(cid)}?at=${item.seq}`, text: `#${item.seq}` }),
    el("span", { text: category ? `${item.role} · ${category}` : item.role }),
    el("span", { class: "quiet", text: `${number(item.token_count)} t` }),
    el("span", { text: Number(scored.score).toFixed(3) }),
    partsBar,
    el("div", { class: "snippet", text: (scored.neighbor_of ? `(neighbour of #${scored.neighbor_of}) ` : "") + (scored.replaced ? "(replaced by a later read) " : "") + item.content.slice(0, 300) }));
}

function accountBar(tokens) {
  const parts = [["recent", "p-similarity"], ["history", "p-recency"], ["query", "p-importance"], ["system", "p-role"]];
  const stack = el("div", { class: "parts", title: parts.map(([p]) => `${p} ${tokens[p]}`).join(" · ") });
  for (const [p, cls] of parts) {
    const v = Number(tokens[p] || 0);
    if (!v) continue;
    const seg = el("span", { class: cls });
    seg.style.width = `${(100 * v) / Math.max(1, tokens.budget)}%`;
    stack.append(seg);
  }
  return stack;
}

function contextResult(ns, cid, data, side) {
  const t = data.tokens;
  const out = el("div", { class: "card result", id: `result-${side}`, "data-total": t.total, "data-budget": t.budget });
  out.append(
    el("h2", { text: "Token account" }),
    accountBar(t),
    el("table", { class: "account" },
      el("tr", {}, ["budget", "total", "recent", "history", "query", "system", "window items left out"].map((h) => el("th", { text: h }))),
      el("tr", {}, [t.budget, t.total, t.recent, t.history, t.query, t.system, t.recent_omitted].map((v) => el("td", { text: number(v) })))),
    el("p", { class: "quiet", text: `query: “${data.query.length > 240 ? `${data.query.slice(0, 240)}…` : data.query}”${data.query_from_focus ? " (the focus stood in for an empty query)" : ""} · state ${short(data.state)}${data.time_range ? ` · time range read from “${data.time_range.phrase}”` : ""}${data.unindexed_items ? ` · ${data.unindexed_items} items not embedded yet (found lexically only)` : ""}` }),
  );
  if (data.allocation) {
    const a = data.allocation;
    out.append(el("h2", { text: `Categories (${number(a.allocated)} tokens shared)` }),
      el("div", { class: "alloc", id: `allocation-${side}` }, a.categories.map((c) => [
        el("span", { text: short(c.category) }),
        bar(c.used, Math.max(1, c.granted)),
        el("span", { class: "quiet", text: `${number(c.used)} / ${number(c.granted)} granted${c.borrowed ? `, +${c.borrowed} borrowed` : ""}${c.lent ? `, ${c.lent} lent` : ""}` }),
      ])));
    out.append(el("h2", { text: "Contributors" }),
      el("table", {}, el("tr", {}, ["source", "type", "score", "tokens", "chosen / why not"].map((h) => el("th", { text: h }))),
        a.contributors.map((p) => el("tr", { class: p.chosen ? "" : "left-out" },
          el("td", { text: p.source }), el("td", { text: short(p.type) }), el("td", { text: Number(p.score).toFixed(3) }),
          el("td", { text: number(p.tokens) }), el("td", { text: p.chosen ? `chosen${p.detail ? ` (${p.detail})` : ""}` : p.reason })))));
  }
  out.append(
    el("h2", { text: `History (${data.history.length})` }),
    el("div", { class: "legend" }, PARTS.map((p) => el("span", {}, el("i", { class: `p-${p}` }), p))),
    el("div", { class: "scored-list history" }, data.history.map((s) => scoredRow(ns, cid, s, "history"))),
    el("h2", { text: `Recent window (${data.recent.length})` }),
    el("div", { class: "scored-list recent" }, data.recent.map((s) => scoredRow(ns, cid, s, "recent"))),
    t.recent_omitted ? el("p", { class: "quiet", text: `Left out: ${t.recent_omitted} window items did not fit the budget.` }) : null,
    el("details", {}, el("summary", { text: "Rendered text" }), el("pre", { class: "rendered", text: data.text })));
  return out;
}

function whyView(ns, cid, body, info) {
  const a = optionsForm("a", { budget: 2000 });
  const b = optionsForm("b", { budget: 1000 });
  const compare = el("input", { type: "checkbox", id: "compare" });
  const sideB = el("div", { class: "card", id: "side-b" }, el("h2", { text: "Options B" }), b.grid);
  sideB.hidden = true;
  compare.addEventListener("change", () => { sideB.hidden = !compare.checked; });
  const results = el("div", { class: "compare", id: "results" });
  const form = el("form", {
    id: "why-form",
    onsubmit: async (event) => {
      event.preventDefault();
      results.replaceChildren(el("p", { class: "quiet", text: "Asking…" }));
      try {
        const sides = compare.checked ? [["a", a], ["b", b]] : [["a", a]];
        const answers = await Promise.all(sides.map(([, s]) => api("/api/context", s.request(ns, cid))));
        results.replaceChildren(...answers.map((data, i) => contextResult(ns, cid, data, sides[i][0])));
        results.setAttribute("data-done", "yes");
      } catch (error) {
        results.replaceChildren(el("p", { class: "error", id: "why-error", text: error.message }));
      }
    },
  },
  el("div", { class: "compare" }, el("div", { class: "card" }, el("h2", { text: "Options" }), a.grid), sideB),
  el("div", { class: "row" }, el("label", {}, compare, " compare with a second set of options"), el("button", { type: "submit", id: "ask" }, "Show the context")));
  body.replaceChildren(
    el("p", { class: "quiet", text: "Exactly what GetContext returns for these options: each item with its score parts, what was left out, the token account and the category allocation." }),
    form, results);
}

// ---------------------------------------------------------------- search

async function searchView(ns, params) {
  crumbs([["Namespaces", "#/"], [ns, `#/n/${enc(ns)}`], ["Search"]]);
  const query = params.get("q") || "";
  const input = el("input", { type: "text", id: "search-input", size: 60, value: query, placeholder: "search every conversation of the namespace" });
  const mode = el("select", { id: "search-mode" }, ["hybrid", "dense", "lexical"].map((m) => el("option", { value: m, text: m, selected: m === (params.get("mode") || "hybrid") })));
  const form = el("form", { class: "row", onsubmit: (e) => { e.preventDefault(); location.hash = `#/n/${enc(ns)}/search?${q({ q: input.value, mode: mode.value })}`; } },
    input, mode, el("button", { type: "submit", id: "search" }, "Search"));
  const results = el("div", { id: "hits" });
  show(el("h1", { text: `Search ${ns}` }), form, results);
  input.focus();
  if (!query) return;
  const data = await api("/api/search", { namespace: ns, query, topK: 20, includeWindow: true, mode: `RETRIEVAL_MODE_${(params.get("mode") || "hybrid").toUpperCase()}` });
  results.replaceChildren(data.hits.length
    ? el("table", {}, el("tr", {}, ["conversation", "item", "state", "score", "content"].map((h) => el("th", { text: h }))),
      data.hits.map((h) => el("tr", { class: "hit" },
        el("td", { text: h.item.conversation_id }),
        el("td", {}, el("a", { class: "hit-link", href: `#/n/${enc(ns)}/c/${enc(h.item.conversation_id)}?at=${h.item.seq}`, text: `#${h.item.seq}` })),
        el("td", { text: short(h.item.state) }),
        el("td", { text: Number(h.score).toFixed(3) }),
        el("td", { class: "snippet", text: h.item.content.slice(0, 300) }))))
    : el("p", { class: "quiet", text: "No hits." }));
}

// ---------------------------------------------------------------- routes

async function route() {
  const hash = location.hash || "#/";
  const [path, query] = hash.slice(1).split("?");
  const params = new URLSearchParams(query || "");
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  try {
    await who();
    if (session.keys_required && !session.signed_in) { stopFollowing(); return signIn(""); }
    if (parts[0] !== "n") { stopFollowing(); return await namespacesView(); }
    const ns = parts[1];
    if (parts[2] === "search") { stopFollowing(); return await searchView(ns, params); }
    if (parts[2] === "c" && parts[3] !== undefined) return await conversationView(ns, parts[3], parts[4] || "timeline", params);
    stopFollowing();
    return await conversationsView(ns, params);
  } catch (error) {
    failure(error);
  }
}

window.addEventListener("hashchange", route);
route();
