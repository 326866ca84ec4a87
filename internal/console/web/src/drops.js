// The drop pages: the form that makes a drop of SKUs picked from the
// list, and a drop's page, which steers the drop's waiting room
// (/drops/{id}/room, as a SKU's but for `open`, which a drop refuses).
import { $, call, el, members, message, show, when } from "./lib.js";
import { roomCodes, roomControls, roomCounters, roomJSON } from "./room.js";

// fits is whether SKU s may be made a size of a new drop: not on sale
// yet, no waiting room of its own, in no drop, not split in buckets
// (docs/shop/drops.md). The API judges again: this only spares the list
// what it would refuse.
const fits = (s) => s.state === "upcoming" && !s.waiting_room && !s.drop && s.buckets <= 1;

// listed bounds the pages of the admin list the form reads (100 SKUs a
// page): the rest are given by id.
const listed = 10;

export function newDropPage() {
  const form = $("#drop-create");
  const body = $("#drop-skus tbody");
  const load = async () => {
    const found = [];
    let cursor = "";
    let more = false;
    for (let page = 0; page < listed; page++) {
      const r = await call("GET", `/skus?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
      if (!r.ok) {
        body.replaceChildren(message(`${r.status || "no answer"} · ${r.data?.error ?? "error"}: ${r.data?.detail ?? "no detail"}`, 4, "error"));
        return;
      }
      found.push(...r.data.items.filter(fits));
      cursor = r.data.next_cursor;
      more = Boolean(cursor);
      if (!more) break;
    }
    $("#drop-skus-more").hidden = !more;
    if (found.length === 0) {
      body.replaceChildren(message("No SKU can be a size of a drop: create the sizes first, each without a waiting room, on one window.", 4));
      return;
    }
    body.replaceChildren(...found.map((s) => {
      const tr = el("tr", null, { "data-sku": s.id });
      const pick = el("td");
      const box = el("input", null, { type: "checkbox", name: "sku", value: String(s.id), id: `pick-${s.id}` });
      pick.append(box, " ", el("label", `#${s.id} ${s.name}`, { for: `pick-${s.id}` }));
      tr.append(pick, el("td", `${when(s.starts_at)} → ${when(s.ends_at)}`), el("td", s.stock, { class: "num" }),
        el("td", s.per_user_limit, { class: "num" }));
      return tr;
    }));
  };
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const m = members(form);
    m.text("name");
    const ids = [...form.querySelectorAll('input[name="sku"]:checked')].map((b) => b.value);
    for (const v of m.value("more_skus").split(/[\s,]+/)) if (v !== "" && !ids.includes(v)) ids.push(v);
    m.put("skus", `[${ids.map((v) => (/^\d+$/.test(v) ? v : JSON.stringify(v))).join(",")}]`);
    m.integer("per_user_limit");
    m.put("waiting_room", roomJSON(form));
    const res = await call("POST", "/drops", m.json());
    const box = $("#drop-result");
    show(box, res, res.ok ? `${res.status === 201 ? "created" : "made already"}: drop #${res.data.id}, ${res.data.name}` : "");
    if (!res.ok) return;
    const ul = el("ul", null, { id: "drop-made" });
    for (const s of res.data.skus) {
      const li = el("li");
      li.append(el("a", `#${s.id} ${s.name}`, { href: `/console/skus/${s.id}` }), `: ${s.stock_left} left`);
      ul.append(li);
    }
    box.insertBefore(ul, box.children[1] ?? null);
    box.prepend(el("a", `See drop #${res.data.id}`, { href: `/console/drops/${res.data.id}`, id: "see-drop", class: "button" }));
    load();
  });
  $("#drop-skus-reload").addEventListener("click", load);
  load();
}

export function dropPage() {
  const id = document.body.dataset.drop;
  const name = () => $("#drop-name").textContent;
  roomControls(`/drops/${id}`, name, "the drop's own");
  roomCodes(`/drops/${id}`, name);
  // The room's counters are the audit's of the drop's first SKU, whose
  // room is the drop's.
  call("GET", `/skus/${id}/audit`).then((r) => {
    if (r.ok) roomCounters(r.data.waiting_room);
  });
}
