// A waiting room's settings in a form, and its controls and priority
// codes on a page: a SKU's own room (/skus/{id}/room) or a drop's
// (/drops/{id}/room), which take the same commands but open.
import { $, call, confirmed, el, members, message, num, show, when } from "./lib.js";

// roomJSON reads the waiting room's fields of form (room_opens_at,
// room_mode, …: the "room-fields" template) into the JSON object the
// admin API takes as waiting_room.
export function roomJSON(form) {
  const m = members(form);
  m.time("opens_at", "room_opens_at");
  m.text("mode", "room_mode");
  m.integer("admit_per_second", "room_admit_per_second");
  m.text("pass_ttl", "room_pass_ttl");
  m.decimal("overbook", "room_overbook");
  m.integer("pow_bits", "room_pow_bits");
  return m.json();
}

// roomCounters shows the counters of a room's audit (joined, admitted,
// waiting, valid and expired passes).
export function roomCounters(room) {
  if (!room || !$("#room-joined")) return;
  $("#room-joined").textContent = num(room.joined);
  $("#room-admitted").textContent = num(room.admitted);
  $("#room-waiting").textContent = num(room.waiting);
  $("#room-valid").textContent = num(room.valid_passes);
  $("#room-expired").textContent = num(room.expired_passes);
}

// roomControls shows the controls of the room at base and wires its
// buttons: each asks first, then sends the command. own says whose rate
// the room admits at when none is set here.
export function roomControls(base, name, own) {
  const render = (c) => {
    const state = $("#room-state");
    state.textContent = c.state;
    state.dataset.state = c.state;
    $("#room-rate").textContent = c.admit_per_second ? `${c.admit_per_second} per second` : `none (${own})`;
    const body = $("#room-changes tbody");
    if (c.changes.length === 0) {
      body.replaceChildren(message("No change yet.", 3));
      return;
    }
    body.replaceChildren(...c.changes.map((ch) => {
      const tr = el("tr");
      tr.append(el("td", when(ch.at)), el("td", ch.action), el("td", ch.admit_per_second ?? "", { class: "num" }));
      return tr;
    }));
  };
  const send = async (body, done) => {
    const r = await call("POST", `${base}/room`, JSON.stringify(body));
    show($("#action-result"), r, done(r.data));
    if (r.ok) render(r.data);
  };
  const questions = {
    pause: () => `Pause the waiting room of ${name()}? Nobody is admitted until it is resumed; passes given stay valid.`,
    resume: () => `Resume the waiting room of ${name()}? It admits at its rate again, and buys need a pass.`,
    open: () => `Open ${name()} to every buyer? Buys need no pass until the room is resumed or paused.`,
    close: () => `Close the waiting room of ${name()} for good? Nobody waiting is admitted any more; passes given stay valid.`,
  };
  for (const b of document.querySelectorAll("[data-room-action]")) {
    const action = b.dataset.roomAction;
    b.addEventListener("click", async () => {
      if (!(await confirmed(questions[action]()))) return;
      await send({ action }, (c) => `room ${c?.state}`);
    });
  }
  $("#room-rate-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    const v = $("#room-new-rate").value.trim();
    if (!(await confirmed(`Admit ${v || "?"} per second in the waiting room of ${name()}?`))) return;
    const n = /^\d+$/.test(v) ? Number(v) : v;
    await send({ action: "rate", admit_per_second: n }, (c) => `rate set to ${c?.admit_per_second}`);
  });
  call("GET", `${base}/room`).then((r) => {
    if (r.ok) render(r.data);
    else $("#room-changes tbody").replaceChildren(message(`${r.data?.error}: ${r.data?.detail}`, 3, "error"));
  });
}

// roomCodes shows how many priority codes the room at base holds and
// makes more: the codes made are shown once, to be copied.
export function roomCodes(base, name) {
  const counts = (c) => {
    $("#room-codes-total").textContent = num(c.total);
    $("#room-codes-used").textContent = num(c.used);
  };
  $("#room-codes-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    const v = $("#room-codes-count").value.trim();
    if (!(await confirmed(`Make ${v || "?"} priority codes for the waiting room of ${name()}? Each admits one shopper ahead of the line.`))) return;
    const n = /^\d+$/.test(v) ? Number(v) : v;
    const r = await call("POST", `${base}/room/codes`, JSON.stringify({ count: n }));
    show($("#action-result"), r, `${r.data?.codes?.length} codes made`);
    if (!r.ok) return;
    counts(r.data);
    $("#room-codes-made").value = r.data.codes.join("\n");
  });
  call("GET", `${base}/room/codes`).then((r) => {
    if (r.ok) counts(r.data);
  });
}
