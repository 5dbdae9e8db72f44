// Why this context: GetContext's answer for one or two option sets, drawn.

import { api } from "./api.js";
import { around, bar, el, enc, number, short, words } from "./dom.js";

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

function scoredRow(ns, cid, scored, section, found) {
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
    el("div", {}, partsBar,
      // The figures in sight, not only on hover: which part made the score.
      el("div", { class: "figures" }, PARTS.filter((p) => Number(parts[p] || 0) !== 0).map((p) => el("span", { class: `figure f-${p}`, "data-part": p, text: `${p} ${Number(parts[p]).toFixed(2)}` })))),
    el("div", { class: "snippet" }, scored.neighbor_of ? `(neighbour of #${scored.neighbor_of}) ` : "", scored.replaced ? "(replaced by a later read) " : "", around(item.content, found)));
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

// The window items that did not fit, by name: read just after the answer, so a conversation
// that changed meanwhile can make them differ from the answer's count.
function leftOut(ns, cid, count, items, side) {
  if (!count && !items.length) return null;
  return el("div", { class: "left-out", id: `left-out-${side}` },
    el("h2", { text: `Left out: ${number(count)} window item${count === 1 ? "" : "s"} did not fit the budget` }),
    items.length !== count ? el("p", { class: "quiet", text: `The conversation changed since the answer: ${number(items.length)} window items are not in it now.` }) : null,
    items.map((i) => el("div", { class: "left-out-item", "data-seq": i.seq },
      el("a", { href: `#/n/${enc(ns)}/c/${enc(cid)}?at=${i.seq}`, text: `#${i.seq}` }),
      el("span", { text: i.role }),
      el("span", { class: "quiet", text: `${number(i.token_count)} t` }),
      el("span", { class: "snippet", text: i.content + (i.clipped ? "…" : "") }))));
}

function contextResult(ns, cid, data, side) {
  const t = data.tokens;
  const found = words(data.query);
  const out = el("div", { class: "card result", id: `result-${side}`, "data-total": t.total, "data-budget": t.budget });
  out.append(
    el("h2", { text: "Token account" }),
    accountBar(t),
    el("table", { class: "account" },
      el("tr", {}, ["budget", "total", "recent", "history", "query", "system", "window items left out"].map((h) => el("th", { text: h }))),
      el("tr", {}, [["budget", t.budget], ["total", t.total], ["recent", t.recent], ["history", t.history], ["query", t.query], ["system", t.system], ["recent_omitted", t.recent_omitted]].map(([k, v]) => el("td", { "data-figure": k, "data-value": v, text: number(v) })))),
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
    el("div", { class: "scored-list history" }, data.history.map((s) => scoredRow(ns, cid, s, "history", found))),
    el("h2", { text: `Recent window (${data.recent.length})` }),
    el("div", { class: "scored-list recent" }, data.recent.map((s) => scoredRow(ns, cid, s, "recent", found))),
    leftOut(ns, cid, t.recent_omitted, data.left_out || [], side),
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
  const results = el("div", { id: "results" });
  const form = el("form", {
    id: "why-form",
    onsubmit: async (event) => {
      event.preventDefault();
      results.replaceChildren(el("p", { class: "quiet", text: "Asking…" }));
      try {
        const sides = compare.checked ? [["a", a], ["b", b]] : [["a", a]];
        const answers = await Promise.all(sides.map(([, s]) => api("/api/context", s.request(ns, cid))));
        const shown = answers.map((data, i) => contextResult(ns, cid, data, sides[i][0]));
        results.replaceChildren(answers.length === 2 ? differences(shown, answers) : "", el("div", { class: "compare" }, shown));
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

// What differs between two answers: each item only one of them holds, or holds in another
// section, is marked on its row; the token figures that differ are marked in the accounts;
// and a summary says it in one place.
function differences(shown, answers) {
  const placed = answers.map((data) => new Map([...data.history.map((s) => [s.item.seq, "history"]), ...data.recent.map((s) => [s.item.seq, "recent"])]));
  const names = ["A", "B"];
  const only = [[], []];
  shown.forEach((card, i) => {
    const other = placed[1 - i];
    for (const row of card.querySelectorAll(".scored")) {
      const seq = Number(row.dataset.seq);
      const section = row.classList.contains("history") ? "history" : "recent";
      if (!other.has(seq)) {
        row.classList.add("only");
        row.dataset.only = names[i];
        row.querySelector(".snippet").prepend(el("span", { class: "badge diff", text: `only in ${names[i]}` }));
        only[i].push(seq);
      } else if (other.get(seq) !== section) {
        row.classList.add("moved");
        row.querySelector(".snippet").prepend(el("span", { class: "badge diff", text: `${other.get(seq)} in ${names[1 - i]}` }));
      }
    }
    const cells = shown[1 - i].querySelectorAll("td[data-figure]");
    for (const cell of card.querySelectorAll("td[data-figure]")) {
      const twin = [...cells].find((c) => c.dataset.figure === cell.dataset.figure);
      if (twin && twin.dataset.value !== cell.dataset.value) cell.classList.add("differs");
    }
  });
  const both = [...placed[0].keys()].filter((seq) => placed[1].has(seq)).length;
  const list = (seqs) => (seqs.length ? seqs.sort((a, b) => a - b).map((s) => `#${s}`).join(", ") : "none");
  return el("div", { class: "card differences", id: "differences" },
    el("h2", { text: "What differs" }),
    el("p", { id: "differences-text", text: `${number(both)} items in both answers · only in A: ${list(only[0])} · only in B: ${list(only[1])} · tokens ${number(answers[0].tokens.total)} (A) and ${number(answers[1].tokens.total)} (B)` }));
}
