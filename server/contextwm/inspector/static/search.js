// Search a namespace; each hit links to its place in the timeline.

import { api } from "./api.js";
import { around, crumbs, el, enc, q, short, show, words } from "./dom.js";

export async function searchView(ns, params) {
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
  const found = words(query);
  results.replaceChildren(data.hits.length
    ? el("table", {}, el("tr", {}, ["conversation", "item", "state", "score", "content"].map((h) => el("th", { text: h }))),
      data.hits.map((h) => el("tr", { class: "hit" },
        el("td", { text: h.item.conversation_id }),
        el("td", {}, el("a", { class: "hit-link", href: `#/n/${enc(ns)}/c/${enc(h.item.conversation_id)}?at=${h.item.seq}`, text: `#${h.item.seq}` })),
        el("td", { text: short(h.item.state) }),
        el("td", { text: Number(h.score).toFixed(3) }),
        el("td", { class: "snippet" }, around(h.item.content, found)))))
    : el("p", { class: "quiet", text: "No hits." }));
}
