// The console's script: the live feed (server-sent events from
// /console/events), the sale's chart (uPlot), and the forms and buttons,
// which call the admin API under /console/api with the session's CSRF
// token. It keeps nothing in browser storage.
import uPlot from "uplot";

import { dropPage, newDropPage } from "./drops.js";
import { $, call, confirmed, el, members, message, num, problem, rate, show, when } from "./lib.js";
import { roomCodes, roomControls, roomCounters, roomJSON } from "./room.js";

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
      // A SKU of a drop names it, beside its own name.
      if (field === "name") td.append(el("a", null, { href: `/console/skus/${id}` }), el("a", null, { class: "drop-tag", hidden: "" }));
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
        const tag = tr.querySelector(".drop-tag");
        tag.hidden = !s.drop;
        if (s.drop && tag.dataset.drop !== String(s.drop)) {
          tag.dataset.drop = String(s.drop);
          tag.textContent = `drop #${s.drop}`;
          tag.href = `/console/drops/${s.drop}`;
        }
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

// skuBody reads the create form into the JSON the admin API takes.
function skuBody(form) {
  const m = members(form);
  m.integer("id");
  m.text("name");
  m.integer("price_cents");
  m.integer("stock");
  m.integer("per_user_limit");
  m.integer("buckets");
  m.time("starts_at");
  m.time("ends_at");
  m.put("limit_counts_cancelled", form.elements.limit_counts_cancelled.checked ? "true" : "false");
  if (form.elements.hidden.checked) m.put("hidden", "true");
  if (form.elements.room.checked) m.put("waiting_room", roomJSON(form));
  return m.json();
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
    roomCounters(r.waiting_room);
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

  if ($("#room-state")) roomControls(`/skus/${id}`, name, "the sale's own");
  if ($("#room-codes-form")) roomCodes(`/skus/${id}`, name);

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

const pages = { sales: salesPage, new: newPage, sale: salePage, newdrop: newDropPage, drop: dropPage };
pages[document.body.dataset.page]?.();
