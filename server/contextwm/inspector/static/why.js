// Why this context: GetContext's answer for one or two option sets, drawn.

import { api } from "./api.js";
import { bar, el, enc, number, short } from "./dom.js";

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

export function whyView(ns, cid, body, info) {
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
