// Who is signed in: the key's name in the header, and the sign-in form when keys are required.

import { api } from "./api.js";
import { crumbs, el, show } from "./dom.js";

// Shows the current route again (after signing in or out).
const again = () => window.dispatchEvent(new HashChangeEvent("hashchange"));


export async function who() {
  const session = await api("/api/session");
  const box = document.getElementById("who");
  box.replaceChildren();
  if (session.key) {
    box.append(`key ${session.key.name || session.key.key_id} (${session.key.role}: ${session.key.namespaces.join(", ")})`);
    box.append(el("button", { class: "plain", id: "sign-out", onclick: async () => { await api("/api/sign-out", {}); again(); } }, "Sign out"));
  } else if (!session.keys_required) {
    box.append("no API key needed on loopback");
  }
  return session;
}

export function signIn(message) {
  crumbs([["Sign in"]]);
  const input = el("input", { type: "password", id: "key-input", placeholder: "cwm_…", size: 60, autocomplete: "off" });
  const note = el("p", { class: "error", id: "sign-in-error", text: message && message !== "sign in with an API key" ? message : "" });
  if (!note.textContent) note.hidden = true;
  const form = el("form", {
    class: "card",
    onsubmit: async (event) => {
      event.preventDefault();
      try {
        await api("/api/sign-in", { key: input.value });
        again();
      } catch (error) {
        note.hidden = false;
        note.textContent = error.message;
      }
    },
  },
  el("h1", { text: "Sign in with an API key" }),
  el("p", { class: "quiet", text: "This server requires API keys. You will see the namespaces your key may read, and nothing else." }),
  el("div", { class: "row" }, input, el("button", { type: "submit", id: "sign-in" }, "Sign in")),
  note);
  show(form);
  input.focus();
}
