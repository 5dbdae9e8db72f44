// The conversation shown: its live usage bar, fed by its event stream (Watch, as server-sent
// events), which the view in front may also listen to.

import { bar, el, number, q } from "./dom.js";

let live = null; // the open event stream, if any

function usageLine(usage) {
  const limit = Number(usage.usable_tokens || 0);
  const text = limit
    ? `${number(usage.used_tokens)} of ${number(limit)} usable tokens (${Math.round(100 * usage.fill_ratio)}%), compaction at ${Math.round(100 * usage.threshold)}% · ${number(usage.active_items)} items active · ${usage.compactions} compactions`
    : `${number(usage.used_tokens)} tokens active, no model limit set · ${number(usage.active_items)} items · ${usage.compactions} compactions`;
  return { limit, text };
}

export function usageHead(usage) {
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
export function follow(ns, cid, after) {
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
  source.addEventListener("failed", (message) => {
    source.close();
    // Say so: a bar that silently stops moving reads as a conversation at rest.
    const head = document.getElementById("usage");
    if (!head) return;
    const said = document.getElementById("live-stopped") || head.appendChild(el("span", { id: "live-stopped", class: "error" }));
    said.textContent = `Live updates stopped: ${JSON.parse(message.data).error}`;
  });
}

// A page left behind gives its stream back at once: the server has only a few to share.
window.addEventListener("pagehide", () => stopFollowing());

export function stopFollowing() {
  if (live) live.source.close();
  live = null;
}

// What the view in front does with the stream's events (kind, event); null: nothing.
export function onEvent(handler) {
  if (live) live.onEvent = handler;
}
