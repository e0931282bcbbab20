// synartesis desktop: the page. Plain JavaScript, no build step, nothing from the network.
// Everything a card shows comes from the journal through the server; text is always set with
// textContent (never parsed as HTML), so nothing a model or a tool returns can run in this page.
"use strict";

const $ = (sel, root = document) => root.querySelector(sel);

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") node.className = v;
    else if (k === "text") node.textContent = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

async function api(method, path, body) {
  const opts = { method, headers: {}, credentials: "same-origin" };
  if (body !== undefined) {
    opts.headers["content-type"] = "application/json";
    opts.body = JSON.stringify(body);
  }
  const resp = await fetch(path, opts);
  let data = null;
  try { data = await resp.json(); } catch (e) { data = null; }
  if (!resp.ok) {
    const msg = (data && data.error) || (data && data.results && data.results.map(r => r.message).join("; ")) || `HTTP ${resp.status}`;
    throw new Error(msg);
  }
  return data;
}

const S = {
  state: null,           // /api/state
  conversations: {},     // id -> conversation json
  view: null,            // {kind: "conv"|"run", id}
  run: null,             // /api/runs/ID when a run is shown
  history: [],
  gated: [],
  details: {},           // action id -> detail json (fetched when a card opens)
};

// ---------------------------------------------------------------- theme
function applyTheme(theme) {
  document.documentElement.dataset.theme = theme;
  $("#theme-toggle").textContent = theme === "dark" ? "Light" : "Dark";
  $("#theme-toggle").setAttribute("aria-label", theme === "dark" ? "Switch to the light theme" : "Switch to the dark theme");
}
function initTheme() {
  let theme = null;
  try { theme = localStorage.getItem("synartesis-theme"); } catch (e) { /* storage off */ }
  if (!theme) theme = window.matchMedia && matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light";
  applyTheme(theme);
  $("#theme-toggle").addEventListener("click", () => {
    const next = document.documentElement.dataset.theme === "dark" ? "light" : "dark";
    applyTheme(next);
    try { localStorage.setItem("synartesis-theme", next); } catch (e) { /* storage off */ }
  });
}

// ---------------------------------------------------------------- words
const STATUS_WORDS = {
  applied: "applied", gated: "held — waiting for you", approved: "approved", used: "approved, used",
  denied: "denied", failed: "failed", unknown: "outcome unknown", pending: "running",
  rolling_back: "being undone", rolled_back: "undone", unrecoverable: "undo halted here",
};
const PRIOR_WORDS = { captured: "prior captured", absent: "nothing existed before" };

function priorWord(a) {
  if (!a) return "";
  if (a.class === "readonly") return "nothing to capture";
  return PRIOR_WORDS[a.prior] || "no prior state captured";
}
function short(value, n = 160) {
  const text = typeof value === "string" ? value : JSON.stringify(value);
  return text.length > n ? text.slice(0, n - 1) + "…" : text;
}

// ---------------------------------------------------------------- ledger
function showLedger(scope, ledger) {
  $("#ledger-scope").textContent = scope;
  for (const node of document.querySelectorAll("[data-ledger]")) {
    node.textContent = ledger ? String(ledger[node.dataset.ledger] ?? 0) : "0";
  }
  $("#ledger-waiting").hidden = !(ledger && ledger.waiting);
}

// ---------------------------------------------------------------- side lists
function renderSide() {
  const convs = Object.values(S.conversations);
  const list = $("#conversation-list");
  list.replaceChildren(...convs.map(c => el("li", {}, el("button", {
    type: "button", "aria-current": S.view && S.view.kind === "conv" && S.view.id === c.id ? "true" : "false",
    onclick: () => openConversation(c.id),
  }, c.title, el("span", { class: "sub", text: `${c.ledger.calls} calls${c.busy ? " · working" : ""}` })))));
  if (!convs.length) list.replaceChildren(el("li", { class: "hint", text: "none yet" }));

  $("#gated-count").textContent = String(S.gated.length);
  const gl = $("#gated-list");
  gl.replaceChildren(...S.gated.map(a => el("li", {}, el("button", {
    type: "button", onclick: () => openRun(a.run),
  }, `${a.server}.${a.tool}`, el("span", { class: "sub", text: short(a.note || "held", 60) })))));
  if (!S.gated.length) gl.replaceChildren(el("li", { class: "hint", text: "nothing is waiting" }));

  const hl = $("#history-list");
  hl.replaceChildren(...S.history.slice(0, 60).map(r => el("li", {}, el("button", {
    type: "button", "aria-current": S.view && S.view.kind === "run" && S.view.id === r.id ? "true" : "false",
    onclick: () => openRun(r.id),
  }, `${r.label || "(no client name)"}`, el("span", {
    class: "sub", text: `${r.id.slice(0, 8)} · ${r.status} · ${r.actions} actions${r.conversation ? " · this window" : ""}`,
  })))));
  if (!S.history.length) hl.replaceChildren(el("li", { class: "hint", text: "no runs in the journal yet" }));
}

// ---------------------------------------------------------------- cards
function fillCard(node, card, action, opts) {
  const a = action;
  const cls = a ? a.class : "pending";
  const status = a ? a.label : (card.state === "error" ? "not sent" : "calling…");
  node.className = `card cls-${cls} state-${card.state || "done"} status-${a ? a.status : "none"}`;
  node.dataset.action = a ? a.id : "";
  node.dataset.tool = `${card.server}.${card.tool}`;
  $(".card-class", node).textContent = a ? a.class : "…";
  $(".card-tool", node).textContent = `${card.server}.${card.tool}`;
  $(".card-status", node).textContent = STATUS_WORDS[status] || status;
  $(".card-prior", node).textContent = a ? priorWord(a) : "";
  let reason = "";
  if (card.error) reason = card.error;
  else if (a && a.status === "gated") reason = `Held: ${a.note || "this call cannot be undone"}.`;
  else if (a && a.status === "denied") reason = `Denied by ${a.decidedBy}${a.reason ? ": " + a.reason : ""}.`;
  else if (a && a.decidedBy) reason = `Approved by ${a.decidedBy}${a.status === "applied" ? "; the retry went through once" : ""}.`;
  else if (a && a.status === "rolled_back") reason = `Undone: ${a.note || "rolled back"}.`;
  else if (a && a.note && a.status !== "applied") reason = a.note;
  if (a && a.inverse && a.inverse.length && a.status !== "rolled_back") {
    reason += (reason ? " " : "") + "Undo: " + a.inverse.map(i => `${i.server}.${i.tool} ${short(i.args, 100)}`).join(", then ");
  }
  $(".card-reason", node).textContent = reason;
  const decide = $(".card-decide", node);
  decide.hidden = !(a && a.status === "gated");
  const undoable = a && a.class !== "readonly" && ["applied", "unrecoverable"].includes(a.status);
  $(".undo-here", node).hidden = !(undoable && opts.undoHere);
  const details = $(".card-details", node);
  if (details.open && a) loadDetail(node, a.id);
}

function makeCard(card, opts) {
  const node = $("#card-template").content.firstElementChild.cloneNode(true);
  $(".approve", node).addEventListener("click", () => decideCard(node, true));
  $(".deny", node).addEventListener("click", () => decideCard(node, false));
  $(".deny-reason", node).addEventListener("keydown", ev => { if (ev.key === "Enter") { ev.preventDefault(); decideCard(node, false); } });
  $(".card-details", node).addEventListener("toggle", ev => { if (ev.target.open && node.dataset.action) loadDetail(node, node.dataset.action, true); });
  $(".undo-here", node).addEventListener("click", () => {
    const a = node._action;
    if (a) startUndo(opts.scope(), { run: a.run, seq: a.seq }, `back to ${a.server}.${a.tool} (seq ${a.seq})`);
  });
  return node;
}

async function loadDetail(node, aid, force) {
  if (!force && S.details[aid] && S.details[aid]._at === (node._action && node._action.updatedAt)) return;
  try {
    const d = await api("GET", `/api/actions/${aid}`);
    d._at = node._action && node._action.updatedAt;
    S.details[aid] = d;
    const rows = [["arguments", d.args], ["result", d.result], ["snapshot (the state it replaced)", d.snapshot],
      ["state after the call", d.post], ["resolved inverse", d.inverse]];
    const dl = el("dl", {});
    for (const [name, value] of rows) {
      if (value === null || value === undefined) continue;
      dl.append(el("dt", { text: name }), el("dd", {}, el("pre", { text: JSON.stringify(value, null, 2) })));
    }
    dl.append(el("dt", { text: "journal" }), el("dd", { class: "hint", text: `action ${d.id} · run ${d.run} · seq ${d.seq} · rule ${d.rule || "none (held)"}` }));
    $(".card-detail-body", node).replaceChildren(dl);
  } catch (e) {
    $(".card-detail-body", node).replaceChildren(el("p", { class: "error-text", text: e.message }));
  }
}

async function decideCard(node, approve) {
  const aid = node.dataset.action;
  if (!aid) return;
  const reason = $(".deny-reason", node).value.trim();
  for (const b of node.querySelectorAll(".card-decide button")) b.disabled = true;
  try {
    await api("POST", `/api/actions/${aid}/${approve ? "approve" : "deny"}`, approve ? {} : { reason });
  } catch (e) {
    $(".card-reason", node).textContent = e.message;
  } finally {
    for (const b of node.querySelectorAll(".card-decide button")) b.disabled = false;
  }
}

// ---------------------------------------------------------------- conversation view
function renderConversation(conv) {
  $("#empty").hidden = true; $("#run-view").hidden = true; $("#conversation").hidden = false;
  $("#conv-title").textContent = conv.title;
  showLedger(conv.title, conv.ledger);
  const sel = $("#conv-profile");
  if (sel.dataset.conv !== conv.id || sel.options.length !== S.state.profiles.length) {
    sel.replaceChildren(...S.state.profiles.map(p => el("option", { value: p.id, text: `${p.label}${p.model ? " · " + p.model : ""}` })));
    sel.dataset.conv = conv.id;
  }
  sel.value = conv.profile;
  renderServers(conv);
  const list = $("#transcript");
  const seen = new Set();
  let prev = null;
  for (const item of conv.items) {
    seen.add(item.id);
    let node = list.querySelector(`[data-item="${item.id}"]`);
    if (!node) {
      node = item.kind === "card" ? makeCard(conv.cards[item.card], { undoHere: true, scope: () => ({ conversation: conv.id }) })
        : el("li", {});
      node.dataset.item = item.id;
      if (prev) prev.after(node); else list.prepend(node);
      stickToBottom(list);
    }
    if (item.kind === "card") {
      const card = conv.cards[item.card];
      node._action = card.action;
      fillCard(node, card, card.action, { undoHere: true });
    } else if (item.kind === "notice") {
      node.className = `notice ${item.level}`;
      node.textContent = item.text;
    } else {
      node.className = `msg ${item.kind}${item.streaming ? " streaming" : ""}`;
      if (node.textContent !== item.text) node.textContent = item.text;
    }
    prev = node;
  }
  for (const node of [...list.children]) if (!seen.has(node.dataset.item)) node.remove();
  $("#send").disabled = conv.busy;
  $("#stop").disabled = !conv.busy;
  $("#undo-conversation").disabled = conv.busy || !conv.runs.length;
  $("#live-check").disabled = !conv.runs.length;
}

function stickToBottom(list) {
  requestAnimationFrame(() => { list.scrollTop = list.scrollHeight; });
}

function renderServers(conv) {
  const box = $("#server-toggles");
  const servers = S.state.servers;
  const nodes = [el("legend", { text: "Servers in this conversation" })];
  if (!servers.length) nodes.push(el("span", { class: "hint", text: "no MCP servers in the policy" }));
  for (const s of servers) {
    const input = el("input", { type: "checkbox", value: s.name, checked: conv.servers.includes(s.name), disabled: !s.available || conv.busy });
    input.addEventListener("change", () => {
      const wanted = [...box.querySelectorAll("input:checked")].map(i => i.value);
      api("PUT", `/api/conversations/${conv.id}/servers`, { servers: wanted }).catch(e => alertNotice(e.message));
    });
    nodes.push(el("label", {}, input, s.name, conv.connected.includes(s.name) ? el("span", { class: "why", text: "connected" }) : null,
      s.why ? el("span", { class: "why", text: s.why }) : null));
  }
  box.replaceChildren(...nodes);
}

function alertNotice(text) {
  const list = $("#transcript");
  list.append(el("li", { class: "notice error", text }));
  stickToBottom(list);
}

async function openConversation(id) {
  S.view = { kind: "conv", id };
  const conv = S.conversations[id] || await api("GET", `/api/conversations/${id}`);
  S.conversations[id] = conv;
  $("#transcript").replaceChildren();
  renderConversation(conv);
  renderSide();
  $("#composer-text").focus();
}

async function newConversation() {
  const conv = await api("POST", "/api/conversations", {});
  S.conversations[conv.id] = conv;
  await openConversation(conv.id);
}

async function send(ev) {
  ev.preventDefault();
  const box = $("#composer-text");
  const text = box.value.trim();
  if (!text) return;
  if (!S.view || S.view.kind !== "conv") await newConversation();
  const id = S.view.id;
  box.value = "";
  try {
    await api("POST", `/api/conversations/${id}/messages`, { text });
  } catch (e) {
    box.value = text;
    alertNotice(e.message);
  }
}

// ---------------------------------------------------------------- run view (history)
async function openRun(id) {
  S.view = { kind: "run", id };
  try {
    S.run = await api("GET", `/api/runs/${id}`);
  } catch (e) {
    alertNotice(e.message);
    return;
  }
  $("#run-cards").replaceChildren();
  renderRun();
  renderSide();
}

function renderRun() {
  const data = S.run;
  if (!data) return;
  $("#empty").hidden = true; $("#conversation").hidden = true; $("#run-view").hidden = false;
  const r = data.run;
  $("#run-title").textContent = `${r.label || "(no client name)"} · run ${r.id.slice(0, 8)}`;
  $("#run-meta").textContent = `${r.status} · started ${r.startedAt}${r.endedAt ? " · ended " + r.endedAt : ""}` +
    (data.conversation ? " · a conversation of this window" : " · read-only history: undo and the live check still work");
  showLedger(`run ${r.id.slice(0, 8)}`, data.ledger);
  const list = $("#run-cards");
  const seen = new Set();
  let prev = null;
  for (const a of data.actions) {
    seen.add(a.id);
    let node = list.querySelector(`[data-item="${a.id}"]`);
    if (!node) {
      node = makeCard({}, { undoHere: true, scope: () => ({ run: r.id }) });
      node.dataset.item = a.id;
      if (prev) prev.after(node); else list.prepend(node);
    }
    node._action = a;
    fillCard(node, { server: a.server, tool: a.tool, state: a.status === "gated" ? "held" : "done" }, a, { undoHere: true });
    prev = node;
  }
  for (const node of [...list.children]) if (!seen.has(node.dataset.item)) node.remove();
  if (!data.actions.length) list.replaceChildren(el("li", { class: "hint", text: "this run has no actions" }));
  $("#run-undo").disabled = r.status === "active";
  $("#run-undo").title = r.status === "active" ? "this run is still active: stop its client first" : "";
}

// ---------------------------------------------------------------- undo and live check
function stepLine(s) {
  const calls = (s.calls || []).map(c => `${s.outcome === "would call" || s.kind === "overwrite" ? "would call" : "called"} ${c.server}.${c.tool} ${short(c.args, 140)}`);
  const li = el("li", {}, el("span", { class: `step-kind kind-${s.kind}`, text: s.kind }), ` seq ${s.seq} · ${s.tool} · ${s.reason}`,
    s.outcome && s.outcome !== "would call" ? el("div", { class: "hint", text: "→ " + s.outcome }) : null,
    ...calls.map(c => el("div", { class: "hint", text: c })));
  if (s.expected !== null && s.expected !== undefined) {
    li.append(el("div", {}, "expected (what the run left):"), el("pre", { text: JSON.stringify(s.expected, null, 2) }),
      el("div", {}, "actual (now):"), el("pre", { text: JSON.stringify(s.actual, null, 2) }));
  } else if (s.detail && s.kind === "halt") {
    li.append(el("pre", { text: s.detail }));
  }
  return li;
}

function renderReports(reports, dry) {
  const body = [];
  for (const r of reports) {
    body.push(el("h3", { text: `run ${r.run.slice(0, 8)}${r.forcePreview ? " · force preview" : dry ? " · the plan (dry run: nothing sent)" : ""}` }));
    for (const w of r.warnings || []) body.push(el("p", { class: "hint", text: "warning: " + w }));
    body.push(el("ol", { class: "steps" }, ...r.steps.map(stepLine)));
    // as the CLI says it: a halt before anything was put back changed nothing
    const changed = r.steps.filter(s => (s.kind === "revert" && s.outcome !== "would call") ||
      (s.kind === "already-reverted" && s.reason !== "already rolled back")).length;
    const deferred = r.dryRun && !r.halted && r.deferredChecks  // the plan cannot promise the status
      ? ` only if the real ${r.kind} finds no drift at the ${r.deferredChecks} step${r.deferredChecks === 1 ? "" : "s"} checked only then` : "";
    const status = (r.halted && !r.dryRun && !changed ? "halted — nothing was changed" : r.status) + deferred;
    body.push(el("p", { class: "result-line", text: `result: ${status}${r.dryRun ? " (dry run)" : ""}` }));
  }
  return body;
}

function ways(report, planned) {
  // a plan (dry run) touched nothing yet: it says what the undo would do, a real undo what it did;
  // an unknown outcome has no "way the run left it" to put back: offer what can be done
  const unknown = report.halted.reason.startsWith("outcome unknown");
  const lead = planned ? `The undo would halt at sequence ${report.halted.seq}: ${report.halted.reason}. It would touch nothing older.`
                       : `Halted at sequence ${report.halted.seq}: ${report.halted.reason}. Nothing older was touched.`;
  return el("div", { class: "ways" },
    el("p", { text: `${lead} Three ways on:` }),
    el("ol", {}, el("li", { text: "leave it as it is;" }),
      el("li", { text: unknown ? "check the resource by hand and put it back as it was before the call, then Undo again (it then finds nothing to undo there);"
                               : "put the resource back the way the run left it, then Replan;" }),
      el("li", { text: unknown ? "Force: step over this action (leaving whatever it did) and undo the older ones."
                               : "Force: first see what would be overwritten, then overwrite it." })));
}

let undoScope = null;

function startUndo(scope, since, label) {
  undoScope = { ...scope, since: since || null };
  const dlg = $("#undo-dialog");
  $("#undo-title").textContent = `Undo ${label}`;
  $("#undo-body").replaceChildren(el("p", { class: "hint", text: "Reading the current state of everything this wrote…" }));
  $("#undo-buttons").replaceChildren(el("button", { type: "button", class: "ghost", onclick: () => dlg.close(), text: "Cancel" }));
  if (!dlg.open) dlg.showModal();
  runUndo({ dryRun: true });
}

async function runUndo(flags) {
  const dlg = $("#undo-dialog");
  const buttons = $("#undo-buttons");
  for (const b of buttons.querySelectorAll("button")) b.disabled = true;
  dlg.dataset.phase = flags.dryRun ? "planning" : "running";
  let data;
  try {
    data = await api("POST", "/api/undo", { ...undoScope, ...flags });
  } catch (e) {
    dlg.dataset.phase = "error";
    $("#undo-body").replaceChildren(el("p", { class: "error-text", text: e.message }));
    buttons.replaceChildren(el("button", { type: "button", class: "ghost", onclick: () => dlg.close(), text: "Close" }));
    return;
  }
  const halted = data.reports.find(r => r.halted);
  dlg.dataset.phase = flags.dryRun ? "plan" : flags.force && !flags.yes ? "force-preview" : halted ? "halted" : "done";
  if (data.nothing) {
    $("#undo-body").replaceChildren(el("p", { text: "Nothing here can be undone: no applied write is left." }));
    buttons.replaceChildren(el("button", { type: "button", class: "ghost", onclick: () => dlg.close(), text: "Close" }));
    return;
  }
  const body = renderReports(data.reports, data.dryRun);
  const close = el("button", { type: "button", class: "ghost", onclick: () => dlg.close(), text: flags.dryRun ? "Cancel" : "Close" });
  if (flags.dryRun && halted) {
    body.push(ways(halted, true));
    buttons.replaceChildren(close,
      el("button", { type: "button", class: "ghost", text: "Replan", onclick: () => runUndo({ dryRun: false, replan: true }) }),
      el("button", { type: "button", class: "danger", text: "Preview force", onclick: () => runUndo({ dryRun: false, force: true }) }));
  } else if (flags.dryRun && !flags.force) {
    const n = data.reports.reduce((k, r) => k + r.steps.filter(s => s.kind === "revert").length, 0);
    body.push(el("p", { text: `${n} would be reverted. Nothing has been changed yet.` }));
    buttons.replaceChildren(close, el("button", { type: "button", class: "danger", id: "confirm-undo", text: "Confirm undo",
      onclick: () => runUndo({ dryRun: false }) }));
  } else if (flags.force && !flags.yes) {
    const over = data.reports.reduce((k, r) => k + r.steps.filter(s => s.kind === "overwrite").length, 0);
    body.push(el("p", { text: over ? `--force --yes would overwrite ${over} drifted resource(s) shown above. Nothing was changed.`
      : "Nothing has drifted; forcing would do what the plan shows. Nothing was changed." }));
    buttons.replaceChildren(close, el("button", { type: "button", class: "danger", text: "Overwrite (force)",
      onclick: () => runUndo({ dryRun: false, force: true, yes: true }) }));
  } else if (halted) {
    body.push(ways(halted, false));
    buttons.replaceChildren(close,
      el("button", { type: "button", class: "ghost", text: "Replan", onclick: () => runUndo({ dryRun: false, replan: true }) }),
      el("button", { type: "button", class: "danger", text: "Preview force", onclick: () => runUndo({ dryRun: false, force: true }) }));
  } else {
    buttons.replaceChildren(close);
  }
  $("#undo-body").replaceChildren(...body);
  refreshLists();
}

async function liveCheck(scope, label) {
  const dlg = $("#undo-dialog");
  $("#undo-title").textContent = `Live check of ${label}`;
  $("#undo-body").replaceChildren(el("p", { class: "hint", text: "Reading every resource it wrote, as it is now (nothing is written)…" }));
  $("#undo-buttons").replaceChildren(el("button", { type: "button", class: "ghost", onclick: () => dlg.close(), text: "Close" }));
  if (!dlg.open) dlg.showModal();
  try {
    const data = await api("POST", "/api/live", scope);
    const body = [];
    for (const r of data.reports) {
      body.push(el("h3", { text: `run ${r.run.slice(0, 8)}` }));
      for (const w of r.warnings || []) body.push(el("p", { class: "hint", text: "warning: " + w }));
      if (!r.items.length) body.push(el("p", { text: "this run wrote nothing" }));
      body.push(el("ol", { class: "steps" }, ...r.items.map(i => {
        const li = el("li", {}, el("span", { class: `step-kind state-${i.state}`, text: i.state }), ` seq ${i.seq} · ${i.tool} · ${i.detail}`);
        if (i.state === "drifted") li.append(el("div", {}, "expected:"), el("pre", { text: JSON.stringify(i.expected, null, 2) }),
          el("div", {}, "actual:"), el("pre", { text: JSON.stringify(i.actual, null, 2) }));
        return li;
      })));
    }
    $("#undo-body").replaceChildren(...body);
  } catch (e) {
    $("#undo-body").replaceChildren(el("p", { class: "error-text", text: e.message }));
  }
}

// ---------------------------------------------------------------- settings and keys
function currentProfile() {
  return S.state.profiles.find(p => p.id === $("#profile-select").value);
}
function showProfile() {
  const p = currentProfile();
  if (!p) return;
  $("#profile-url").value = p.baseUrl;
  $("#profile-model").value = p.model;
  $("#profile-key").value = "";
  const k = S.state.keys[p.id];
  const where = k && k.storage === "keychain" ? "in the OS keychain" : "in memory for this window only";
  $("#key-status").textContent = k && k.saved ? `key saved ${where}` : (p.needsKey ? "no key saved" : "no key needed (a key is sent if you save one)");
  $("#settings-error").textContent = "";
}
function openSettings() {
  const sel = $("#profile-select");
  sel.replaceChildren(...S.state.profiles.map(p => el("option", { value: p.id, text: p.label })));
  sel.value = S.state.current;
  showProfile();
  $("#settings").showModal();
}
async function saveSettings() {
  const p = currentProfile();
  const err = $("#settings-error");
  err.textContent = "";
  try {
    await api("PUT", `/api/profiles/${p.id}`, { baseUrl: $("#profile-url").value, model: $("#profile-model").value });
    const key = $("#profile-key").value;
    if (key) {
      $("#profile-key").value = "";  // the page never keeps it
      await api("POST", `/api/keys/${p.id}`, { key });
    }
    await loadState();
    $("#profile-select").value = p.id;
    showProfile();
    if (S.view && S.view.kind === "conv") {
      await api("PUT", `/api/conversations/${S.view.id}/profile`, { profile: p.id });
    }
    $("#key-status").textContent = "saved · " + $("#key-status").textContent;
  } catch (e) {
    err.textContent = e.message;
  }
}
async function forgetKey() {
  const p = currentProfile();
  await api("DELETE", `/api/keys/${p.id}`);
  await loadState();
  showProfile();
}

// ---------------------------------------------------------------- state and live events
async function loadState() {
  S.state = await api("GET", "/api/state");
  for (const c of S.state.conversations) S.conversations[c.id] = S.conversations[c.id] || null;
  const notice = $("#key-notice");
  notice.hidden = !S.state.keyNotice;
  notice.textContent = S.state.keyNotice || "";
  const problem = $("#policy-problem");
  problem.hidden = !S.state.policy.problem;
  problem.textContent = S.state.policy.problem || "";
  $("#journal-path").textContent = `journal ${S.state.journal} · policy ${S.state.policy.path}`;
  for (const id of Object.keys(S.conversations)) {
    if (!S.conversations[id]) S.conversations[id] = await api("GET", `/api/conversations/${id}`);
  }
}

let listsTimer = null;
function refreshLists() {
  if (listsTimer) return;
  listsTimer = setTimeout(async () => {
    listsTimer = null;
    try {
      const [h, g] = await Promise.all([api("GET", "/api/history"), api("GET", "/api/gates")]);
      S.history = h.runs; S.gated = g.gated;
      renderSide();
      if (S.view && S.view.kind === "run") {
        S.run = await api("GET", `/api/runs/${S.view.id}`);
        renderRun();
      }
    } catch (e) { /* the next event tries again */ }
  }, 120);
}

function connectEvents() {
  const source = new EventSource("/api/events");
  source.onmessage = ev => {
    const msg = JSON.parse(ev.data);
    if (msg.type === "conversation") {
      S.conversations[msg.data.id] = msg.data;
      if (S.view && S.view.kind === "conv" && S.view.id === msg.data.id) renderConversation(msg.data);
      renderSide();
    } else if (msg.type === "delta") {
      const d = msg.data;
      const conv = S.conversations[d.conversation];
      if (conv) {
        const item = conv.items.find(i => i.id === d.item);
        if (item) item.text += d.text;
      }
      if (S.view && S.view.kind === "conv" && S.view.id === d.conversation) {
        const node = $(`#transcript [data-item="${d.item}"]`);
        if (node) { node.textContent += d.text; stickToBottom($("#transcript")); }
      }
    } else if (msg.type === "journal" || msg.type === "conversations") {
      refreshLists();
    } else if (msg.type === "problem") {
      $("#policy-problem").hidden = false;
      $("#policy-problem").textContent = msg.data.text;
    }
  };
  source.onopen = () => refreshLists();
}

function wire() {
  $("#new-conversation").addEventListener("click", () => newConversation().catch(e => alertNotice(e.message)));
  $("#composer").addEventListener("submit", send);
  $("#composer-text").addEventListener("keydown", ev => {
    if (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing) { ev.preventDefault(); $("#composer").requestSubmit(); }
  });
  $("#stop").addEventListener("click", () => S.view && api("POST", `/api/conversations/${S.view.id}/stop`, {}));
  $("#undo-conversation").addEventListener("click", () => {
    const conv = S.conversations[S.view.id];
    startUndo({ conversation: conv.id }, null, `“${conv.title}”`);
  });
  $("#live-check").addEventListener("click", () => liveCheck({ conversation: S.view.id }, "this conversation"));
  $("#run-undo").addEventListener("click", () => startUndo({ run: S.view.id }, null, `run ${S.view.id.slice(0, 8)}`));
  $("#run-live").addEventListener("click", () => liveCheck({ run: S.view.id }, `run ${S.view.id.slice(0, 8)}`));
  $("#conv-profile").addEventListener("change", ev => api("PUT", `/api/conversations/${S.view.id}/profile`, { profile: ev.target.value }));
  $("#open-settings").addEventListener("click", openSettings);
  $("#profile-select").addEventListener("change", showProfile);
  $("#save-settings").addEventListener("click", saveSettings);
  $("#forget-key").addEventListener("click", forgetKey);
  $("#undo-dialog").addEventListener("close", () => { refreshLists(); });
}

async function main() {
  initTheme();
  wire();
  try {
    await loadState();
  } catch (e) {
    document.body.prepend(el("div", { class: "banner error", role: "alert", text: `cannot load the window's state: ${e.message}` }));
    return;
  }
  renderSide();
  connectEvents();
  document.body.dataset.ready = "true";
}

main();
