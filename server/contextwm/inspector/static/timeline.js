// A conversation's timeline: a screen of items with their states and marks, and the
// compactions, checkpoints and truncations between them.

import { api } from "./api.js";
import { el, enc, legend, number, q, short, STATES, when } from "./dom.js";
import { onEvent } from "./live.js";

function compactionEvent(c) {
  const freed = Number(c.tokens_before) - Number(c.tokens_after);
  const details = el("details", { class: "compaction-details" },
    // The items that left the active context are the ones marked compacted.
    el("summary", { text: `Context compacted #${c.number}: ${number(c.items_archived)} items compacted, ${number(freed)} tokens freed${c.undone ? " (undone by a restore)" : ""}` }),
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
  return el("div", { class: `item ${state}${here ? " here" : ""}`, id: `seq-${item.seq}`, "data-seq": item.seq, "data-state": state, "data-role": item.role, "data-tokens": item.token_count },
    el("span", { class: "seq", text: `#${item.seq}` }),
    el("span", { class: "time", text: when(item.timestamp) }),
    el("span", { class: "role", text: item.file ? `${item.role} · ${item.file.kind}` : item.role }),
    el("span", { class: "tokens", text: number(item.token_count) }),
    el("div", {},
      el("span", { class: `badge state-${state}`, text: state }),
      item.flags.map((f) => el("span", { class: "badge", text: f })),
      Object.entries(item.metadata).map(([k, v]) => el("span", { class: "badge meta", text: `${k}=${v}` })),
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

const ROLES = ["user", "assistant", "tool", "system"];
const FLAGS = ["pinned", "error", "code", "question", "solution"];
// A run of at least this many compacted items folds into one row.
const FOLD_AT = 2;

// The filter row: a role, a state and a flag, kept in the address so that links and the
// pagers keep them.
function filterRow(base, only) {
  const choose = (name, values) => {
    const box = el("select", { id: `filter-${name}`, name },
      el("option", { value: "", text: `any ${name}` }),
      values.map((v) => el("option", { value: v, text: v, selected: only[name] === v })));
    box.addEventListener("change", () => { location.hash = `${base}?${q({ ...only, [name]: box.value })}`; });
    return box;
  };
  const on = Object.values(only).some(Boolean);
  return el("div", { class: "row filters", id: "filters" },
    el("span", { class: "quiet", text: "show" }),
    choose("role", ROLES), choose("state", STATES), choose("flag", FLAGS),
    on ? el("a", { href: base, id: "filter-clear", text: "clear" }) : null);
}

// Consecutive compacted items (and the events between them) as one row that opens.
function folded(rows, at) {
  const out = [];
  let run = [];
  const close = () => {
    const items = run.filter((r) => r.classList.contains("item"));
    if (items.length < FOLD_AT) { out.push(...run); run = []; return; }
    const seqs = items.map((r) => Number(r.dataset.seq));
    const tokens = items.reduce((sum, r) => sum + Number(r.dataset.tokens), 0);
    const fold = el("details", { class: "run compacted", "data-items": items.length, open: seqs.includes(at) },
      el("summary", { text: `${number(items.length)} compacted items, #${seqs[0]}–#${seqs[seqs.length - 1]}, ${number(tokens)} tokens: out of the active context since a compaction` }),
      run);
    out.push(fold);
    run = [];
  };
  for (const row of rows) {
    const compacted = row.classList.contains("item") && row.dataset.state === "compacted";
    if (compacted || (run.length && row.classList.contains("event") && !row.classList.contains("compaction"))) run.push(row);
    else { close(); out.push(row); }
  }
  close();
  return out;
}

export async function timelineView(ns, cid, body, params, info) {
  const started = performance.now();
  const at = Number(params.get("at") || 0);
  const after = params.has("after") ? Number(params.get("after")) : Math.max(0, at ? at - 20 : 0);
  const only = { role: params.get("role") || "", state: params.get("state") || "", flag: params.get("flag") || "" };
  const filtered = Object.values(only).some(Boolean);
  const data = await api(`/api/timeline?${q({ namespace: ns, conversation: cid, after, ...only })}`);
  let rows = [];
  const byAfter = new Map();
  for (const e of data.events) { if (!byAfter.has(e.after_seq)) byAfter.set(e.after_seq, []); byAfter.get(e.after_seq).push(e); }
  for (const item of data.items) {
    if (item.kind === "compaction" && item.compaction) rows.push(compactionEvent(item.compaction));
    rows.push(itemRow(item, item.seq === at));
    for (const e of byAfter.get(item.seq) || []) rows.push(eventRow(e));
  }
  // Asked for by state, every item asked for shows.
  if (!only.state) rows = folded(rows, at);
  const first = data.items.length ? data.items[0].seq : 0;
  const last = data.items.length ? data.items[data.items.length - 1].seq : 0;
  const base = `#/n/${enc(ns)}/c/${enc(cid)}`;
  const keep = (extra) => `${base}?${q({ ...only, ...extra })}`;
  // Each pager has its own box: one element can only be in one place.
  const jumpTo = (where) => {
    const box = el("input", { type: "number", id: `jump-seq-${where}`, class: "jump-seq", min: 1, max: data.last_seq, placeholder: "seq" });
    return el("form", { onsubmit: (e) => { e.preventDefault(); location.hash = keep({ at: box.value }); } }, box, el("button", { class: "plain", type: "submit" }, "Go"));
  };
  const span = data.items.length
    ? filtered
      ? `${number(data.items.length)} matching items, #${first}–#${last}${data.next_after !== null && data.next_after !== last ? ` (looked up to #${data.next_after})` : ""} (last #${data.last_seq})`
      : `items #${first}–#${last} of ${number(data.total_items)} (last #${data.last_seq})`
    : filtered ? `no matching items after #${after}` : "no items";
  // Filtered, a stretch cannot be counted back from its first seq: earlier means the start.
  const earlier = filtered
    ? (after > 0 ? el("a", { href: keep({}), class: "older", text: "← from the start" }) : null)
    : (first > 1 ? el("a", { href: keep({ after: Math.max(0, first - 1 - 200) }), class: "older", text: "← earlier" }) : null);
  const pager = (where) => el("div", { class: "pager", id: `pager-${where}` },
    earlier ? earlier.cloneNode(true) : null,
    el("span", { class: "quiet", text: span }),
    data.next_after !== null ? el("a", { href: keep({ after: data.next_after }), class: "newer", text: "later →" }) : null,
    !filtered && data.last_seq > 200 ? el("a", { href: keep({ after: Math.max(0, data.last_seq - 200) }), text: "latest" }) : null,
    jumpTo(where));
  body.replaceChildren(
    el("div", { class: "row" }, legend(), el("span", { class: "quiet", text: `${info.checkpoints.length} checkpoints` })),
    filterRow(base, only),
    pager("top"),
    el("div", { class: "timeline", id: "timeline", "data-items": data.items.length }, rows.length ? rows : el("p", { class: "quiet", text: "Nothing here." })),
    pager("bottom"));
  // Read by the tests and the benchmark: the first screen's time.
  window.inspectorTimings = { timeline: performance.now() - started, timelineSinceLoad: performance.now() };
  document.getElementById("timeline").setAttribute("data-rendered", "yes");
  if (at) document.getElementById(`seq-${at}`)?.scrollIntoView({ block: "center" });
  followChanges(ns, cid, body, data, base);
}

// Tells of what happened since the screen was read: items appended after its conversation's
// last seq then (a usage event comes with every append), and changes to the states shown.
function followChanges(ns, cid, body, data, base) {
  const changes = new Set();
  let pending = null;
  onEvent((kind) => {
    if (kind !== "usage") changes.add(kind.replace(/_/g, " "));
    clearTimeout(pending);
    pending = setTimeout(async () => {
      if (!body.isConnected) return;
      const fresh = await api(`/api/conversation?${q({ namespace: ns, conversation: cid })}`).catch(() => null);
      if (!fresh || !body.isConnected) return;
      const grown = Number(fresh.conversation.last_seq) - Number(data.last_seq);
      if (grown <= 0 && !changes.size) return;
      const said = [];
      if (grown > 0) said.push(`${number(grown)} new item${grown === 1 ? "" : "s"} since this screen was read, up to #${fresh.conversation.last_seq}`);
      if (changes.size) said.push(`${said.length ? "the" : "The"} conversation changed (${[...changes].join(", ")})`);
      // The newest stretch shows new items when read again; an older one moves to the newest.
      const latest = grown > 0 && data.next_after !== null;
      const note = document.getElementById("changed") || body.insertBefore(el("p", { id: "changed", class: "notice" }), body.firstChild);
      note.replaceChildren(`${said.join("; ")}. `, el("a", {
        href: latest ? `${base}?after=${Math.max(0, Number(fresh.conversation.last_seq) - 200)}` : "#",
        onclick: latest ? null : (e) => { e.preventDefault(); window.dispatchEvent(new HashChangeEvent("hashchange")); },
        text: latest ? "Go to the newest" : grown > 0 ? "Show them" : "Read this screen again",
      }));
    }, 300);
  });
}
