// Usage over a conversation's life: the chart with its drops, rebuilt as events come.

import { api } from "./api.js";
import { el, enc, number, q, svg } from "./dom.js";
import { onEvent } from "./live.js";

export async function usageView(ns, cid, body) {
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
  onEvent(() => {
    clearTimeout(pending);
    pending = setTimeout(async () => {
      if (!document.getElementById("usage-chart")) return;
      const fresh = await api(`/api/usage?${q({ namespace: ns, conversation: cid })}`).catch(() => null);
      if (!fresh) return;
      document.getElementById("usage-chart").replaceWith(usageChart(fresh));
      document.getElementById("drops").replaceWith(dropsTable(ns, cid, fresh.points));
    }, 400);
  });
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
