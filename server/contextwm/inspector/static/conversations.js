// A namespace list, and a namespace's conversations with their fill and usage.

import { api } from "./api.js";
import { ago, bar, crumbs, el, enc, legend, number, q, show, STATES, stateStack, when } from "./dom.js";

export async function namespacesView() {
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

export async function conversationsView(ns, params) {
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
