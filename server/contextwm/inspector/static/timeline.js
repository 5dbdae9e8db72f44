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
  // Read by the tests and the benchmark: the first screen's time.
  window.inspectorTimings = { timeline: performance.now() - started, timelineSinceLoad: performance.now() };
  document.getElementById("timeline").setAttribute("data-rendered", "yes");
  if (at) document.getElementById(`seq-${at}`)?.scrollIntoView({ block: "center" });
  onEvent((kind) => {
    if (kind !== "usage") {
      const note = document.getElementById("changed") || body.insertBefore(el("p", { id: "changed", class: "quiet" }), body.firstChild);
      note.replaceChildren(`The conversation changed (${kind}). `, el("a", { href: "#", onclick: (e) => { e.preventDefault(); window.dispatchEvent(new HashChangeEvent("hashchange")); }, text: "Reload" }));
    }
  });
}
