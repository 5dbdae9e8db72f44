// What the agent sends its model now: the active context row by row as GetActiveContext
// gives it (placeholders and notices as sent), and its tokens by section and by role.

import { api } from "./api.js";
import { el, enc, number, q } from "./dom.js";
import { onEvent } from "./live.js";

// Rows per screen, as the server sends them.
const ROWS = 200;
const SECTION_CLASS = {
  "compaction summary": "sec-compaction",
  messages: "sec-messages",
  "masked tool outputs": "sec-masked",
  "replaced reads": "sec-replaced",
  "truncation notices": "sec-notice",
};
const TREATMENT = { as_is: "as is", masked: "masked: placeholder sent", duplicate_read: "replaced read: notice sent", truncation_notice: "truncation notice" };

function sectionsBar(data) {
  const stack = el("div", { class: "parts sections-bar", id: "sections-bar" });
  for (const s of data.sections) {
    if (!s.tokens) continue;
    const part = el("span", { class: SECTION_CLASS[s.section] || "sec-messages", title: `${s.section}: ${number(s.tokens)} tokens` });
    part.style.width = `${(100 * s.tokens) / Math.max(1, data.total_tokens)}%`;
    stack.append(part);
  }
  return stack;
}

function sectionsTable(data) {
  const share = (t) => `${data.total_tokens ? Math.round((100 * t) / data.total_tokens) : 0}%`;
  return el("table", { id: "sections" },
    el("tr", {}, ["section", "rows", "tokens sent", "share", "tokens stored", "saved"].map((h) => el("th", { text: h }))),
    data.sections.map((s) => el("tr", { class: "section", "data-section": s.section, "data-tokens": s.tokens, "data-entries": s.entries },
      el("td", {}, el("i", { class: `key ${SECTION_CLASS[s.section] || "sec-messages"}` }), s.section),
      el("td", { text: number(s.entries) }),
      el("td", { text: number(s.tokens) }),
      el("td", { text: share(s.tokens) }),
      el("td", { text: number(s.stored_tokens) }),
      el("td", { text: s.stored_tokens > s.tokens ? number(s.stored_tokens - s.tokens) : "" }))),
    el("tr", { class: "total" }, el("th", { text: "the whole" }), el("th", { text: number(data.total_entries) }), el("th", { id: "sent-total", text: number(data.total_tokens) }), el("th", { text: "100%" }), el("th"), el("th")));
}

function rolesTable(data) {
  return el("table", { id: "roles" },
    el("tr", {}, ["role", "rows", "tokens sent"].map((h) => el("th", { text: h }))),
    data.roles.map((r) => el("tr", { "data-role": r.role, "data-tokens": r.tokens },
      el("td", { text: r.role }), el("td", { text: number(r.entries) }), el("td", { text: number(r.tokens) }))));
}

function entryRow(base, entry) {
  const long = entry.content.length > 600;
  const content = el("div", { class: "content" + (long ? " clipped" : ""), text: entry.content });
  if (long) content.addEventListener("click", () => content.classList.toggle("clipped"));
  const what = entry.kind === "compaction" ? "compaction summary" : TREATMENT[entry.treatment] || entry.treatment;
  return el("div", { class: `sent ${entry.treatment}${entry.kind === "compaction" ? " compaction" : ""}`, "data-seq": entry.seq, "data-treatment": entry.treatment, "data-tokens": entry.token_count },
    entry.seq ? el("a", { href: `${base}?at=${entry.seq}`, text: `#${entry.seq}` }) : el("span", { class: "quiet", text: "notice" }),
    el("span", { class: "role", text: entry.role }),
    el("span", { class: "tokens", text: number(entry.token_count), title: "tokens sent" }),
    el("div", {},
      entry.treatment !== "as_is" || entry.kind === "compaction" ? el("span", { class: "badge mark", text: what }) : null,
      entry.original_tokens !== entry.token_count ? el("span", { class: "badge", text: `${number(entry.original_tokens)} tokens stored` }) : null,
      content));
}

export async function activeView(ns, cid, body, params) {
  const start = Number(params.get("start") || 0);
  const data = await api(`/api/active?${q({ namespace: ns, conversation: cid, start })}`);
  const base = `#/n/${enc(ns)}/c/${enc(cid)}`;
  const here = (at) => `${base}/active?${q({ start: at })}`;
  const end = data.start + data.entries.length;
  const pager = el("div", { class: "pager" },
    data.start > 0 ? el("a", { href: here(Math.max(0, data.start - ROWS)), text: "← earlier" }) : null,
    el("span", { class: "quiet", text: data.entries.length ? `rows ${number(data.start + 1)}–${number(end)} of ${number(data.total_entries)}` : "nothing is sent: the active context is empty" }),
    end < data.total_entries ? el("a", { href: here(end), text: "later →" }) : null);
  const usage = data.usage;
  const counted = usage.source === "reported"
    ? `The provider's last report puts it at ${number(usage.used_tokens)}, which is what usage goes by.`
    : "This is what usage goes by.";
  body.replaceChildren(
    el("p", { class: "quiet", text: "Exactly what the agent sends its model now (GetActiveContext): from the last compaction on, with masked tool outputs, replaced reads and truncated runs as the placeholders and notices that stand for them." }),
    el("div", { class: "card" },
      el("h2", { text: `${number(data.total_tokens)} tokens in ${number(data.total_entries)} rows` }),
      sectionsBar(data),
      el("p", { class: "quiet", text: `The server counts ${number(usage.active_tokens)} active tokens. ${counted}` }),
      el("div", { class: "compare tables" }, sectionsTable(data), rolesTable(data))),
    pager,
    el("div", { class: "timeline", id: "sent", "data-rows": data.entries.length }, data.entries.map((e) => entryRow(base, e))),
    pager.cloneNode(true));
  document.getElementById("sent").setAttribute("data-rendered", "yes");
  onEvent((kind) => {
    if (!body.isConnected || document.getElementById("sent-changed")) return;
    body.insertBefore(el("p", { id: "sent-changed", class: "notice" }, `The conversation changed (${kind.replace(/_/g, " ")}): what is sent has too. `,
      el("a", { href: "#", onclick: (e) => { e.preventDefault(); window.dispatchEvent(new HashChangeEvent("hashchange")); }, text: "Read it again" })), body.firstChild);
  });
}
