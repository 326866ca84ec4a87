// The console's script: the live feed (server-sent events from
// /console/events), the sale's chart (uPlot), and the forms and buttons,
// which call the admin API under /console/api with the session's CSRF
// token. It keeps nothing in browser storage.
import uPlot from "uplot";

const $ = (sel, root = document) => root.querySelector(sel);
const csrf = () => $('meta[name="csrf-token"]')?.content ?? "";

// call sends a request to the admin API under /console/api and returns
// its status and decoded body; a lost session goes back to the login.
async function call(method, path, body, contentType = "application/json") {
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
function el(tag, text, attrs = {}) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  return e;
}

// show puts the API's answer to an action in box: a line that says what
// happened, and the whole answer beneath it.
function show(box, res, done) {
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
function confirmed(question) {
  const d = $("#confirm");
  $("#confirm-text").textContent = question;
  d.returnValue = "";
  d.showModal();
  return new Promise((resolve) => d.addEventListener("close", () => resolve(d.returnValue === "ok"), { once: true }));
}

// message is a table row of one cell spanning cols columns.
function message(text, cols, cls = "muted") {
  const tr = el("tr");
  tr.append(el("td", text, { colspan: String(cols), class: cls }));
  return tr;
}

const num = (v) => (v === null || v === undefined ? "–" : String(v));
const rate = (v) => (v === null || v === undefined ? "–" : v.toFixed(1));
const when = (iso) => iso.replace("T", " ").replace(/(:\d\d)(\.\d+)?Z$/, "$1");

function lag(seconds) {
  if (!seconds) return "none";
  if (seconds < 60) return `${seconds.toFixed(1)} s`;
  return `${Math.floor(seconds / 60)} min ${Math.round(seconds % 60)} s`;
}

// leaving is set once the page is being left: a feed closed then is no
// news.
let leaving = false;
addEventListener("pagehide", () => {
  leaving = true;
});

// live opens the feed at url and hands each event's data to its handler.
function live(url, handlers) {
  const badge = $("#live");
  const mark = (state, text) => {
    badge.dataset.state = state;
    badge.textContent = text;
  };
  const es = new EventSource(url);
  es.addEventListener("open", () => mark("on", "live"));
  es.addEventListener("error", async () => {
    if (leaving) return;
    if (es.readyState !== EventSource.CLOSED) {
      mark("wait", "reconnecting…");
      return;
    }
    mark("off", "not live");
    const r = await call("GET", "/skus?limit=1");
    if (r.ok) setTimeout(() => live(url, handlers), 5000);
  });
  es.addEventListener("expired", () => {
    es.close();
    location.assign("/console/login");
  });
  for (const [event, handle] of Object.entries(handlers)) {
    es.addEventListener(event, (e) => {
      mark("on", "live");
      handle(JSON.parse(e.data));
    });
  }
}

function problem(detail) {
  const p = $("#problem");
  p.hidden = !detail;
  p.textContent = detail ?? "";
}

// The sales page: one row per SKU, updated in place.
function salesPage() {
  const body = $("#sales tbody");
  const rows = new Map();
  const cols = [
    ["id", "ID"], ["name", "Name"], ["state", "State"], ["window", "Window (UTC)"], ["stock", "Stock"], ["sold", "Sold"],
    ["left", "Left in Redis"], ["queued", "Queued"], ["pending", "Pending payment"], ["paid", "Paid"],
    ["ops", "Orders/s"], ["dead", "Dead letters"],
  ];
  const row = (id) => {
    let tr = rows.get(id);
    if (tr) return tr;
    tr = el("tr", null, { "data-sku": id });
    for (const [field, label] of cols) {
      const td = el(field === "id" ? "th" : "td", null, { "data-field": field, "data-label": label });
      if (field === "id") td.setAttribute("scope", "row");
      if (!["id", "name", "state", "window"].includes(field)) td.className = "num";
      if (field === "name") td.append(el("a", null, { href: `/console/skus/${id}` }));
      if (field === "state") td.append(el("span", null, { class: "badge" }));
      tr.append(td);
    }
    rows.set(id, tr);
    return tr;
  };
  const set = (tr, field, text) => {
    const td = tr.querySelector(`[data-field="${field}"]`);
    const target = td.firstElementChild ?? td;
    if (target.textContent !== text) target.textContent = text;
    return target;
  };
  live("/console/events", {
    sales(fr) {
      problem(null);
      $("#more").hidden = !fr.more;
      const keep = new Set();
      const ordered = [];
      for (const s of fr.items) {
        const tr = row(s.id);
        keep.add(s.id);
        ordered.push(tr);
        set(tr, "id", s.id);
        set(tr, "name", s.name);
        set(tr, "state", s.state).dataset.state = s.state;
        set(tr, "window", `${when(s.starts_at)} → ${when(s.ends_at)}`);
        set(tr, "stock", num(s.stock));
        set(tr, "sold", num(s.sold));
        set(tr, "left", num(s.redis_left));
        set(tr, "queued", num(s.queued_orders));
        set(tr, "pending", num(s.pending_payment));
        set(tr, "paid", num(s.paid));
        set(tr, "ops", rate(s.orders_per_second));
        set(tr, "dead", num(s.dead_letters));
        tr.classList.toggle("alert", s.dead_letters > 0);
      }
      for (const [id, tr] of rows) if (!keep.has(id)) rows.delete(id);
      if (ordered.length === 0) {
        body.replaceChildren(message("No sales yet: create one.", 12));
        return;
      }
      const same = ordered.length === body.children.length && ordered.every((tr, i) => body.children[i] === tr);
      if (!same) body.replaceChildren(...ordered);
    },
    problem: (p) => problem(p.detail),
  });
}

// body reads the create form into the JSON the admin API takes. Whole
// numbers are sent as written, so that a big id keeps every digit; any
// other text is sent as a string, for the API to refuse in its own words.
function skuBody(form) {
  const parts = [];
  const put = (key, raw) => parts.push(`${JSON.stringify(key)}:${raw}`);
  const value = (name) => form.elements[name].value.trim();
  const integer = (key, name = key) => {
    const v = value(name);
    if (v === "") return;
    put(key, /^-?\d+$/.test(v) ? v : JSON.stringify(v));
  };
  const time = (key, name = key) => {
    const v = value(name);
    if (v === "") return;
    const d = new Date(v);
    put(key, JSON.stringify(Number.isNaN(d.getTime()) ? v : d.toISOString()));
  };
  integer("id");
  if (value("name") !== "") put("name", JSON.stringify(value("name")));
  integer("price_cents");
  integer("stock");
  integer("per_user_limit");
  integer("buckets");
  time("starts_at");
  time("ends_at");
  put("limit_counts_cancelled", form.elements.limit_counts_cancelled.checked ? "true" : "false");
  if (form.elements.hidden.checked) put("hidden", "true");
  if (form.elements.room.checked) {
    // The room's fields are collected apart, then nested.
    const sku = parts.splice(0);
    time("opens_at", "room_opens_at");
    if (value("room_mode") !== "") put("mode", JSON.stringify(value("room_mode")));
    integer("admit_per_second", "room_admit_per_second");
    if (value("room_pass_ttl") !== "") put("pass_ttl", JSON.stringify(value("room_pass_ttl")));
    const ob = value("room_overbook");
    if (ob !== "") put("overbook", /^\d+(\.\d+)?$/.test(ob) ? ob : JSON.stringify(ob));
    integer("pow_bits", "room_pow_bits");
    const room = parts.splice(0);
    parts.push(...sku, `"waiting_room":{${room.join(",")}}`);
  }
  return `{${parts.join(",")}}`;
}

function newPage() {
  const form = $("#create");
  const room = () => {
    for (const e of $("#room-fields").querySelectorAll("input, select")) e.disabled = !form.elements.room.checked;
  };
  form.elements.room.addEventListener("change", room);
  room();
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const box = $("#create-result");
    const res = await call("POST", "/skus", skuBody(form));
    show(box, res, res.ok ? `${res.status === 201 ? "created" : "updated"} sale #${res.data.id}, ${res.data.name}` : "");
    if (res.ok) {
      const a = el("a", `Watch sale #${res.data.id} live`, { href: `/console/skus/${res.data.id}`, id: "watch", class: "button" });
      box.prepend(a);
    }
  });
  const seed = $("#seed");
  seed.addEventListener("submit", async (e) => {
    e.preventDefault();
    const box = $("#seed-result");
    const file = $("#seed-file").files[0];
    if (!file) {
      box.replaceChildren(el("p", "Choose a file first.", { class: "error", role: "alert" }));
      return;
    }
    const type = /\.csv$/i.test(file.name) ? "text/csv" : "application/yaml";
    const res = await call("POST", "/seed", await file.text(), type);
    const n = res.ok ? res.data.items.length : 0;
    show(box, res, `${n} sale${n === 1 ? "" : "s"} seeded from ${file.name}`);
    if (res.ok) {
      const ul = el("ul");
      for (const it of res.data.items) {
        const li = el("li");
        li.append(el("a", `#${it.sku.id} ${it.sku.name}`, { href: `/console/skus/${it.sku.id}` }), ` ${it.created ? "created" : "updated"}`);
        ul.append(li);
      }
      box.insertBefore(ul, box.children[1] ?? null);
    }
  });
}

// chart draws orders per second and units left against time.
function chart(box) {
  const data = [[], [], []];
  const opts = {
    width: Math.max(box.clientWidth, 280),
    height: 260,
    series: [
      { label: "Time (UTC)", value: (u, v) => (v == null ? "–" : new Date(v * 1000).toISOString().slice(11, 19)) },
      { label: "Orders/s", scale: "ops", stroke: "#2563eb", fill: "rgba(37,99,235,0.12)", width: 2, value: (u, v) => (v == null ? "–" : v.toFixed(1)) },
      { label: "Units left", scale: "units", stroke: "#ea580c", width: 2, value: (u, v) => (v == null ? "–" : String(v)) },
    ],
    scales: { ops: { range: (u, lo, hi) => [0, Math.max(1, hi * 1.1)] }, units: { range: (u, lo, hi) => [0, Math.max(1, hi * 1.05)] } },
    axes: [
      {
        stroke: "#475569",
        grid: { stroke: "#e2e8f0" },
        space: 70,
        incrs: [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600],
        values: (u, splits) => splits.map((v) => new Date(v * 1000).toISOString().slice(11, 19)),
      },
      { scale: "ops", label: "orders/s", stroke: "#2563eb", grid: { stroke: "#e2e8f0" }, size: 56 },
      { scale: "units", label: "units left", side: 1, stroke: "#ea580c", grid: { show: false }, size: 64 },
    ],
    legend: { live: true },
    cursor: { points: { size: 6 } },
  };
  const plot = new uPlot(opts, data, box);
  new ResizeObserver(() => plot.setSize({ width: Math.max(box.clientWidth, 280), height: 260 })).observe(box);
  const max = 3600;
  return {
    reset(points) {
      data[0] = points.map((p) => p.t / 1000);
      data[1] = points.map((p) => p.ops);
      data[2] = points.map((p) => p.left);
      plot.setData(data);
    },
    add(p) {
      if (data[0].length && data[0][data[0].length - 1] >= p.t / 1000) return;
      data[0].push(p.t / 1000);
      data[1].push(p.ops);
      data[2].push(p.left);
      if (data[0].length > max) data.forEach((a) => a.shift());
      plot.setData(data);
    },
  };
}

function salePage() {
  const id = document.body.dataset.sku;
  const name = () => $("#sku-name").textContent;
  const plot = chart($("#chart"));
  let dead = -1;

  const queueRows = (q) => {
    const body = $("#queue tbody");
    const rows = (q.buckets?.length ? q.buckets : [{ bucket: "all", ...q }]).map((b) => {
      const tr = el("tr");
      tr.append(el("th", b.bucket, { scope: "row" }), el("td", b.due, { class: "num" }), el("td", b.delayed, { class: "num" }),
        el("td", b.in_flight, { class: "num" }), el("td", b.dead, { class: "num" }));
      return tr;
    });
    body.replaceChildren(...rows);
  };

  const audit = (r) => {
    const status = $("#audit-status");
    status.textContent = r.consistent ? "Consistent: every unit is accounted for." : `${r.violations.length} violation(s):`;
    status.className = r.consistent ? "ok" : "error";
    $("#violations").replaceChildren(...r.violations.map((v) => el("li", v)));
    const room = r.waiting_room;
    if (room && $("#room-joined")) {
      $("#room-joined").textContent = num(room.joined);
      $("#room-admitted").textContent = num(room.admitted);
      $("#room-waiting").textContent = num(room.waiting);
      $("#room-valid").textContent = num(room.valid_passes);
      $("#room-expired").textContent = num(room.expired_passes);
    }
  };

  const loadDead = async () => {
    const res = await call("GET", `/skus/${id}/dead?n=100`);
    const body = $("#dead tbody");
    if (!res.ok) {
      body.replaceChildren(message(`${res.data?.error}: ${res.data?.detail}`, 5, "error"));
      return;
    }
    if (res.data.dead.length === 0) {
      body.replaceChildren(message("No dead letters.", 5));
      return;
    }
    body.replaceChildren(...res.data.dead.map((t) => {
      const tr = el("tr", null, { "data-task": t.id });
      const acts = el("td", null, { class: "buttons" });
      const requeue = el("button", "Requeue", { type: "button", "aria-label": `Requeue dead letter ${t.id}`, "data-act": "requeue" });
      const drop = el("button", "Delete", { type: "button", class: "danger", "aria-label": `Delete dead letter ${t.id}`, "data-act": "delete" });
      requeue.addEventListener("click", async () => {
        if (!(await confirmed(`Requeue dead letter ${t.id}? Its orders go back to the drain with fresh attempts.`))) return;
        const r = await call("POST", `/skus/${id}/dead/${encodeURIComponent(t.id)}/requeue`);
        show($("#action-result"), r, `dead letter ${t.id} requeued`);
        loadDead();
      });
      drop.addEventListener("click", async () => {
        if (!(await confirmed(`Delete dead letter ${t.id}? Its orders that are not in MySQL are dropped and their units go back on sale.`))) return;
        const r = await call("DELETE", `/skus/${id}/dead/${encodeURIComponent(t.id)}`);
        show($("#action-result"), r, `dead letter ${t.id} deleted`);
        loadDead();
      });
      acts.append(requeue, drop);
      tr.append(el("td", t.id, { class: "mono" }), el("td", t.attempts, { class: "num" }), el("td", when(t.at)),
        el("td", t.last_error ?? "", { class: "mono" }), acts);
      return tr;
    }));
  };

  live(`/console/events?sku=${id}`, {
    history: (points) => plot.reset(points),
    sale(fr) {
      problem(null);
      const s = fr.sku;
      $("#sku-name").textContent = s.name;
      const state = $("#sku-state");
      state.textContent = s.state;
      state.dataset.state = s.state;
      $("#sku-window").textContent = `${when(s.starts_at)} → ${when(s.ends_at)} UTC`;
      $("#f-stock").textContent = num(s.stock);
      $("#f-sold").textContent = num(s.sold);
      $("#f-left").textContent = num(s.redis_left);
      $("#f-queued").textContent = num(s.queued_orders);
      $("#f-pending").textContent = num(s.pending_payment);
      $("#f-paid").textContent = num(s.paid);
      $("#f-ops").textContent = rate(s.orders_per_second);
      $("#f-lag").textContent = lag(fr.lag_seconds);
      $("#f-dead").textContent = num(s.dead_letters);
      $("#f-dead").parentElement.classList.toggle("alert", s.dead_letters > 0);
      queueRows(fr.queue);
      plot.add(fr.point);
      if (s.dead_letters !== dead) {
        dead = s.dead_letters;
        loadDead();
      }
    },
    audit,
    problem: (p) => problem(p.detail),
  });

  if ($("#room-state")) roomControls(id, name);
  if ($("#room-codes-form")) roomCodes(id, name);

  $("#audit-now").addEventListener("click", async () => {
    const r = await call("GET", `/skus/${id}/audit`);
    if (r.ok) audit(r.data);
    show($("#action-result"), r, r.ok && r.data.consistent ? "audited: consistent" : "audited");
  });
  $("#stock-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    const v = $("#new-stock").value.trim();
    if (!(await confirmed(`Set the stock of ${name()} to ${v}?`))) return;
    const r = await call("PUT", `/skus/${id}/stock`, `{"stock":${/^\d+$/.test(v) ? v : JSON.stringify(v)}}`);
    show($("#action-result"), r, `stock set to ${r.data?.stock}`);
  });
  $("#end-sale").addEventListener("click", async () => {
    if (!(await confirmed(`End the sale of ${name()} now? No buy is accepted once it has ended, on any instance.`))) return;
    const r = await call("POST", `/skus/${id}/end`);
    show($("#action-result"), r, `sale ended at ${r.data?.ends_at}`);
  });
  $("#reconcile").addEventListener("click", async () => {
    if (!(await confirmed(`Rebuild the Redis state of ${name()} from MySQL? Its buyers get 503 busy for the moment it takes.`))) return;
    const r = await call("POST", `/skus/${id}/reconcile`);
    show($("#action-result"), r, r.ok && r.data.consistent ? "reconciled: consistent" : "reconciled");
    if (r.ok) audit(r.data);
  });
}

// roomControls shows the controls of the sale's waiting room and wires
// its buttons: each asks first, then sends the command.
function roomControls(id, name) {
  const render = (c) => {
    const state = $("#room-state");
    state.textContent = c.state;
    state.dataset.state = c.state;
    $("#room-rate").textContent = c.admit_per_second ? `${c.admit_per_second} per second` : "none (the sale's own)";
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
    const r = await call("POST", `/skus/${id}/room`, JSON.stringify(body));
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
  call("GET", `/skus/${id}/room`).then((r) => {
    if (r.ok) render(r.data);
    else $("#room-changes tbody").replaceChildren(message(`${r.data?.error}: ${r.data?.detail}`, 3, "error"));
  });
}

// roomCodes shows how many priority codes the sale's waiting room holds
// and makes more: the codes made are shown once, to be copied.
function roomCodes(id, name) {
  const counts = (c) => {
    $("#room-codes-total").textContent = num(c.total);
    $("#room-codes-used").textContent = num(c.used);
  };
  $("#room-codes-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    const v = $("#room-codes-count").value.trim();
    if (!(await confirmed(`Make ${v || "?"} priority codes for the waiting room of ${name()}? Each admits one shopper ahead of the line.`))) return;
    const n = /^\d+$/.test(v) ? Number(v) : v;
    const r = await call("POST", `/skus/${id}/room/codes`, JSON.stringify({ count: n }));
    show($("#action-result"), r, `${r.data?.codes?.length} codes made`);
    if (!r.ok) return;
    counts(r.data);
    $("#room-codes-made").value = r.data.codes.join("\n");
  });
  call("GET", `/skus/${id}/room/codes`).then((r) => {
    if (r.ok) counts(r.data);
  });
}

const pages = { sales: salesPage, new: newPage, sale: salePage };
pages[document.body.dataset.page]?.();
