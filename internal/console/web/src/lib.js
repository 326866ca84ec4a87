// What every page of the console's script uses: the calls of the admin
// API under /console/api, the elements it makes, the answers it shows and
// the JSON its forms send.

export const $ = (sel, root = document) => root.querySelector(sel);
const csrf = () => $('meta[name="csrf-token"]')?.content ?? "";

// call sends a request to the admin API under /console/api and returns
// its status and decoded body; a lost session goes back to the login.
export async function call(method, path, body, contentType = "application/json") {
  const headers = { "X-CSRF-Token": csrf(), Accept: "application/json" };
  if (body !== undefined) headers["Content-Type"] = contentType;
  let res;
  try {
    res = await fetch("/console/api" + path, { method, headers, body, credentials: "same-origin" });
  } catch (e) {
    return { ok: false, status: 0, data: { error: "network", detail: String(e) } };
  }
  let data = null;
  try {
    data = await res.json();
  } catch {
    data = null;
  }
  if (res.status === 401) location.assign("/console/login");
  return { ok: res.ok, status: res.status, data };
}

// el makes an element with text and attributes.
export function el(tag, text, attrs = {}) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  return e;
}

// show puts the API's answer to an action in box: a line that says what
// happened, and the whole answer beneath it.
export function show(box, res, done) {
  box.replaceChildren();
  const line = res.ok
    ? el("p", `${res.status} · ${done}`, { class: "ok" })
    : el("p", `${res.status || "no answer"} · ${res.data?.error ?? "error"}: ${res.data?.detail ?? "no detail"}`, { class: "error", role: "alert" });
  box.append(line);
  if (res.data) {
    const d = el("details");
    d.append(el("summary", "The API's answer"), el("pre", JSON.stringify(res.data, null, 2)));
    box.append(d);
  }
}

// confirmed asks the question in the page's dialog.
export function confirmed(question) {
  const d = $("#confirm");
  $("#confirm-text").textContent = question;
  d.returnValue = "";
  d.showModal();
  return new Promise((resolve) => d.addEventListener("close", () => resolve(d.returnValue === "ok"), { once: true }));
}

// message is a table row of one cell spanning cols columns.
export function message(text, cols, cls = "muted") {
  const tr = el("tr");
  tr.append(el("td", text, { colspan: String(cols), class: cls }));
  return tr;
}

export const num = (v) => (v === null || v === undefined ? "–" : String(v));
export const rate = (v) => (v === null || v === undefined ? "–" : v.toFixed(1));
export const when = (iso) => iso.replace("T", " ").replace(/(:\d\d)(\.\d+)?Z$/, "$1");

export function problem(detail) {
  const p = $("#problem");
  p.hidden = !detail;
  p.textContent = detail ?? "";
}

// members reads a form's fields into the members of a JSON object, kept
// as raw JSON text. Whole numbers are sent as written, so that a big id
// keeps every digit; any other text is sent as a string, for the API to
// refuse in its own words. A field left empty is not sent.
export function members(form) {
  const parts = [];
  const value = (name) => form.elements[name].value.trim();
  const put = (key, raw) => parts.push(`${JSON.stringify(key)}:${raw}`);
  return {
    value,
    put,
    text(key, name = key) {
      const v = value(name);
      if (v !== "") put(key, JSON.stringify(v));
    },
    integer(key, name = key) {
      const v = value(name);
      if (v !== "") put(key, /^-?\d+$/.test(v) ? v : JSON.stringify(v));
    },
    decimal(key, name = key) {
      const v = value(name);
      if (v !== "") put(key, /^\d+(\.\d+)?$/.test(v) ? v : JSON.stringify(v));
    },
    // time sends a datetime-local field, in the browser's time zone, in
    // UTC.
    time(key, name = key) {
      const v = value(name);
      if (v === "") return;
      const d = new Date(v);
      put(key, JSON.stringify(Number.isNaN(d.getTime()) ? v : d.toISOString()));
    },
    json: () => `{${parts.join(",")}}`,
  };
}
