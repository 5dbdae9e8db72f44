// The contextwm inspector: one page, a view per route (#/...), every figure read from the
// server's JSON reads. Text from conversations is only ever set as textContent.

import { activeView } from "./active.js";
import { api, Failed } from "./api.js";
import { crumbs, el, enc, q, show } from "./dom.js";
import { conversationsView, namespacesView } from "./conversations.js";
import { follow, stopFollowing, usageHead } from "./live.js";
import { searchView } from "./search.js";
import { signIn, who } from "./session.js";
import { timelineView } from "./timeline.js";
import { usageView } from "./usage.js";
import { whyView } from "./why.js";

function failure(error) {
  if (error instanceof Failed && error.status === 401) return signIn(error.message);
  show(el("p", { class: "error", id: "error", text: error.message }));
}

async function conversationView(ns, cid, tab, params) {
  crumbs([["Namespaces", "#/"], [ns, `#/n/${enc(ns)}`], [cid]]);
  const info = await api(`/api/conversation?${q({ namespace: ns, conversation: cid })}`);
  const base = `#/n/${enc(ns)}/c/${enc(cid)}`;
  const tabs = el("nav", { class: "tabs" },
    [["timeline", "Timeline"], ["active", "Sent to the model"], ["usage", "Usage"], ["why", "Why this context"]].map(([name, label]) =>
      el("a", { href: name === "timeline" ? base : `${base}/${name}`, class: tab === name ? "on" : "", id: `tab-${name}`, text: label })),
    el("a", { href: `#/n/${enc(ns)}/search`, text: "Search" }));
  const body = el("section", { id: `${tab}-view` });
  show(el("h1", { text: cid }), usageHead(info.usage), tabs, body);
  follow(ns, cid, info.conversation.last_event_id);
  if (tab === "active") return activeView(ns, cid, body, params);
  if (tab === "usage") return usageView(ns, cid, body);
  if (tab === "why") return whyView(ns, cid, body, info);
  return timelineView(ns, cid, body, params, info);
}

async function route() {
  const hash = location.hash || "#/";
  const [path, query] = hash.slice(1).split("?");
  const params = new URLSearchParams(query || "");
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  try {
    const session = await who();
    if (session.keys_required && !session.signed_in) { stopFollowing(); return signIn(""); }
    if (parts[0] !== "n") { stopFollowing(); return await namespacesView(); }
    const ns = parts[1];
    if (parts[2] === "search") { stopFollowing(); return await searchView(ns, params); }
    if (parts[2] === "c" && parts[3] !== undefined) return await conversationView(ns, parts[3], parts[4] || "timeline", params);
    stopFollowing();
    return await conversationsView(ns, params);
  } catch (error) {
    failure(error);
  }
}

window.addEventListener("hashchange", route);
// Back from the browser's page cache with its stream closed: follow again.
window.addEventListener("pageshow", (event) => { if (event.persisted) route(); });
route();
