// A conversation's timeline: a screen of items with their states and marks, and the
// compactions, checkpoints and truncations between them.

import { api } from "./api.js";
import { el, enc, legend, number, q, short, when } from "./dom.js";
import { onEvent } from "./live.js";

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

export async function timelineView(ns, cid, body, params, info) {
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
  // Each pager has its own box: one element can only be in one place.
  const jumpTo = (where) => {
    const box = el("input", { type: "number", id: `jump-seq-${where}`, class: "jump-seq", min: 1, max: data.last_seq, placeholder: "seq" });
    return el("form", { onsubmit: (e) => { e.preventDefault(); location.hash = `${base}?at=${box.value}`; } }, box, el("button", { class: "plain", type: "submit" }, "Go"));
  };
  const pager = (where) => el("div", { class: "pager", id: `pager-${where}` },
    first > 1 ? el("a", { href: `${base}?after=${Math.max(0, first - 1 - 200)}`, class: "older", text: "← earlier" }) : null,
    el("span", { class: "quiet", text: data.items.length ? `items #${first}–#${data.items[data.items.length - 1].seq} of ${number(data.total_items)} (last #${data.last_seq})` : "no items" }),
    data.next_after !== null ? el("a", { href: `${base}?after=${data.next_after}`, class: "newer", text: "later →" }) : null,
    data.last_seq > 200 ? el("a", { href: `${base}?after=${Math.max(0, data.last_seq - 200)}`, text: "latest" }) : null,
    jumpTo(where));
  body.replaceChildren(
    el("div", { class: "row" }, legend(), el("span", { class: "quiet", text: `${info.checkpoints.length} checkpoints` })),
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
