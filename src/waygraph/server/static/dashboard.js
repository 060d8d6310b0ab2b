// waygraph dashboard: keeps the server-rendered pages live. No framework, no build step.
// Every value from the server is put into the page with textContent, never as HTML,
// except drawings, which the server's own SVG writer escapes.
"use strict";

const $ = (selector, root = document) => root.querySelector(selector);
const el = (tag, attrs = {}, ...children) => {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else node.setAttribute(key, value);
  }
  for (const child of children) node.append(child);
  return node;
};

async function api(path, options = {}) {
  const response = await fetch(path, {
    credentials: "same-origin",
    headers: { Accept: "application/json", ...(options.body ? { "Content-Type": "application/json" } : {}) },
    ...options,
  });
  const type = response.headers.get("content-type") || "";
  const body = type.includes("json") ? await response.json() : await response.text();
  if (!response.ok) throw new Error((body && body.message) || response.statusText);
  return body;
}

function ago(ts) {
  const seconds = Math.max(0, Math.floor(Date.now() / 1000 - ts));
  if (seconds < 60) return `${seconds} s ago`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ago`;
  if (seconds < 86400) return `${Math.floor(seconds / 3600)} h ago`;
  return `${Math.floor(seconds / 86400)} d ago`;
}

function badge(status) {
  const value = status || "unknown";
  return el("span", { class: `badge s-${value}`, text: value });
}

function setLive(on) {
  document.querySelectorAll(".live").forEach((node) => node.classList.toggle("off", !on));
}

// ------------------------------------------------------------------ match box

function matchBoxes() {
  document.querySelectorAll("#match-form").forEach((form) => {
    const result = form.parentElement.querySelector("#match-result");
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      const data = new FormData(form);
      const body = { message: data.get("message") || "" };
      if (data.get("domain")) body.domain = data.get("domain");
      result.replaceChildren(el("p", { class: "muted", text: "Matching…" }));
      try {
        const answer = await api("/api/match", { method: "POST", body: JSON.stringify(body) });
        const verdict = answer.activates
          ? el("div", { class: "verdict" }, "Activates ", el("a", { href: `/plans/${encodeURIComponent(answer.activates)}`, text: answer.activates }))
          : el("div", { class: "verdict none", text: "No plan activates for this message." });
        const rows = answer.matches.map((m) =>
          el("div", { class: "match-row" },
            el("span", {}, el("strong", { text: m.plan_id }), ` · score ${m.score}`),
            el("span", { class: "why", text: m.activates ? `hits: ${m.hits.join(", ")}` : m.reason || "" })));
        result.replaceChildren(verdict, ...rows);
      } catch (error) {
        result.replaceChildren(el("div", { class: "verdict none", text: `Error: ${error.message}` }));
      }
    });
  });
}

// ------------------------------------------------------------------ sessions table

function sessionRow(row) {
  const name = row.session_id !== null
    ? el("a", { href: `/sessions/${encodeURIComponent(row.session_id)}`, text: row.session_id })
    : el("span", { class: "muted", text: row.key });
  const first = el("td", {}, name);
  if (row.kind !== "guided") first.append(" ", el("span", { class: "tag", text: row.kind }));
  const plan = row.plan ? el("a", { href: `/plans/${encodeURIComponent(row.plan)}`, text: row.plan }) : "—";
  const dash = (value) => (value === null || value === undefined ? "—" : String(value));
  const when = el("td", { title: new Date(row.updated_at * 1000).toLocaleString(), "data-ts": row.updated_at, text: ago(row.updated_at) });
  const status = el("td", {}, badge(row.status));
  // The same mark as the server's (html.WAITING_TAG): a person's answer is awaited.
  if ((row.status === "running" || row.status === "paused") && row.awaiting === "user") {
    status.append(" ", el("span", { class: "tag waiting", text: "waiting for the user" }));
  }
  const tr = el("tr", { "data-session": row.session_id || "", "data-status": row.status || "" },
    first, el("td", {}, plan), status,
    el("td", { class: "mono", text: dash(row.current_node) }),
    el("td", { class: "num", text: dash(row.attempts) }),
    el("td", { class: "num", text: dash(row.turn) }), when);
  tr.dataset.sig = [row.status, row.current_node, row.turn, row.attempts, row.awaiting].join("|");
  return tr;
}

// The count, chip numbers and pager in the words the server wrote them (server/table.py).
function tableControls(answer) {
  const n = (value) => value.toLocaleString("en-US");
  const rows = answer.sessions.length;
  $("#sessions-count").textContent = rows
    ? `Showing ${n(answer.offset + 1)}–${n(answer.offset + rows)} of ${n(answer.total)}`
    : `Showing 0 of ${n(answer.total)}`;
  const all = Object.values(answer.counts).reduce((a, b) => a + b, 0);
  document.querySelectorAll("#status-chips [data-chip]").forEach((chip) => {
    const status = chip.dataset.chip;
    chip.querySelector(".n").textContent = n(status ? answer.counts[status] ?? 0 : all);
  });
  const page = Math.floor(answer.offset / answer.limit) + 1;
  const pages = Math.max(1, Math.ceil(answer.total / answer.limit));
  $("#page-of").textContent = `Page ${n(page)} of ${n(pages)}`;
  $("#page-newer").hidden = page <= 1;
  $("#page-older").hidden = page >= pages;
}

function sessionsPage() {
  const body = $("#sessions-body");
  if (!body) return;
  const data = document.body.dataset;
  const every = Math.max(0.5, parseFloat(data.refresh || "2")) * 1000;
  // The same page of the same search as the server rendered.
  const query = new URLSearchParams({ offset: data.offset || "0", limit: data.limit || "50" });
  if (data.status) query.set("status", data.status);
  if (data.q) query.set("q", data.q);
  let known = new Map();
  let first = true;
  async function refresh() {
    if (document.hidden) return;
    try {
      const answer = await api(`/api/sessions?${query}`);
      const rows = answer.sessions.map((row) => {
        const tr = sessionRow(row);
        const id = `${row.session_id}|${row.kind}|${row.key}`;
        if (!first && known.get(id) !== tr.dataset.sig) tr.classList.add("fresh");
        return [id, tr];
      });
      known = new Map(rows.map(([id, tr]) => [id, tr.dataset.sig]));
      first = false;
      body.replaceChildren(...rows.map(([, tr]) => tr));
      $("#sessions-empty").hidden = rows.length > 0;
      tableControls(answer);
      setLive(true);
    } catch (error) {
      setLive(false);
    }
  }
  refresh();
  setInterval(refresh, every);
  document.addEventListener("visibilitychange", refresh);
}

// ------------------------------------------------------------------ one session

function describe(event) {
  const node = event.node;
  switch (event.type) {
    case "plan_activated": {
      const triggers = (event.triggers || []).join(", ");
      return `Plan ${event.plan_id} activated` + (triggers ? ` by “${triggers}”` : "");
    }
    case "node_entered": return `Entered ${node}` + (event.attempt ? ` (attempt ${event.attempt})` : "");
    case "node_verified": {
      const outcome = event.outcome ?? (event.passed ? "success" : "fail");
      const verdict = { success: "passed", fail: "failed" }[outcome] ?? "could not decide";
      const why = outcome === "unknown" && event.reason ? `: ${event.reason}` : "";
      return `Verification ${verdict} at ${node}` + (event.check ? ` (${event.check})` : "") + why;
    }
    case "rewound": return `Rewound to checkpoint ${node}`;
    case "claim_recorded": return `The model said (not evidence) at ${node}: “${event.excerpt ?? ""}”`;
    case "claim_unverified": return `The model claimed it was done; unverified: ${(event.nodes || []).join(", ")}`;
    case "repeat_detected": return `The same failing call ${event.count} times at ${node}: ${event.call}`;
    case "retry_triggered": return `Retry ${node}: attempt ${event.attempt}` + (event.max_attempts ? ` of ${event.max_attempts}` : "");
    case "edge_followed": return `${node} → ${event.to} (${event.condition})`;
    case "checkpoint_saved": return `Checkpoint saved at ${node}`;
    case "plan_completed": case "plan_escalated": case "plan_expired": case "plan_aborted":
    case "plan_failed": case "stall": {
      // Event-driven plans say where they are as a state, guided runs as a node.
      const where = node ?? event.state;
      const label = event.type === "stall" ? "Stalled" : event.type.replace("plan_", "Plan ");
      return label + (where != null ? ` at ${where}` : "") + (event.reason ? `: ${event.reason}` : "");
    }
    case "plan_created": return `Plan created in state ${event.state}`;
    case "state_entered": return `Entered state ${event.state}`;
    case "event_applied":
      return event.to ? `${event.event_type}: ${event.from} → ${event.to}` : `${event.event_type} received in ${event.from}`;
    case "request_sent": return `Sent ${event.event_type} from ${event.state}`;
    case "plan_paused": return `Paused in state ${event.state}`;
    case "plan_resumed": return `Resumed in state ${event.state}`;
    case "dependencies_met":
      return `Dependencies met: ${Array.isArray(event.depends_on) ? event.depends_on.join(", ") : event.depends_on}`;
    case "plan_saved": return "Plan saved";
    // What people are asked and answer: the words of describe.py's _PERSON_WORDS.
    case "question_asked":
      return "The model asked the user" + at(event) + (event.excerpt ? `: “${excerpt(event.excerpt)}”` : "");
    case "human_asked": {
      const prompt = event.prompt ? `: “${excerpt(event.prompt)}”` : "";
      const choices = choicesText(event.choices);
      if (choices) return `Asked the user${at(event)}${prompt}; choices ${choices}`;
      return `Asked the user to confirm${at(event)}${prompt}` + (event.value ? ` (reply ${quote(event.value)})` : "");
    }
    case "human_answered": {
      const said = `${event.by || "The user"} answered “${excerpt(event.answer ?? "")}”${at(event)}`;
      if (event.choice == null) return said;
      return `${said}: chose ${quote(event.choice)}` + (event.to ? ` → ${event.to}` : "");
    }
    case "answer_rejected": {
      const choices = choicesText(event.choices);
      return `Answer “${excerpt(event.answer ?? "")}”${at(event)} is not one of the choices` + (choices ? `: ${choices}` : "");
    }
    case "result_ignored":
      return `${event.tool ? `A result of ${event.tool}` : "A tool result"}${at(event)} was only recorded: a person decides here`;
    case "node_finished": {
      // A generated plan's step or a pipeline's node (describe.py's _step_finished).
      const result = event.result || {};
      const status = event.status || result.status;
      const tries = result.attempts > 1 ? ` after ${result.attempts} attempts` : "";
      const said = status === "completed" ? result.output : event.error || result.error;
      return `Step ${node} ${status}${tries}` + (said != null && said !== "" ? `: ${excerpt(said)}` : "");
    }
    default: {
      // An event type this page does not know: its fields in words, never a JSON dump.
      const { seq, type, key, turn, ...rest } = event;
      const details = Object.entries(rest).map(([k, v]) => `${k} ${v}`).join(", ");
      const label = String(type).replaceAll("_", " ");
      return label.charAt(0).toUpperCase() + label.slice(1) + (details ? `: ${details.slice(0, 200)}` : "");
    }
  }
}

const at = (event) => (event.node != null ? ` at ${event.node}` : "");
// Python's repr of a plain string, as describe.py and people.choices_text quote labels.
const quote = (text) => (String(text).includes("'") && !String(text).includes('"') ? `"${text}"` : `'${text}'`);
function excerpt(value) {
  const text = (typeof value === "string" ? value : JSON.stringify(value)).split(/\s+/).filter(Boolean).join(" ");
  return text.length <= 120 ? text : text.slice(0, 119) + "…";
}
function choicesText(labels) {
  if (!Array.isArray(labels) || !labels.length) return "";
  const quoted = labels.map(quote);
  return quoted.length === 1 ? quoted[0] : `${quoted.slice(0, -1).join(", ")} or ${quoted[quoted.length - 1]}`;
}

function tone(event) {
  if (event.type === "node_verified") {
    const outcome = event.outcome ?? (event.passed ? "success" : "fail");
    return { success: "good", fail: "bad" }[outcome] ?? "info";
  }
  if (["plan_completed", "checkpoint_saved"].includes(event.type)) return "good";
  if (["plan_escalated", "plan_aborted", "plan_expired", "plan_failed", "stall", "retry_triggered", "repeat_detected", "claim_unverified"].includes(event.type)) return "bad";
  if (["plan_activated", "node_entered", "plan_created", "state_entered", "human_asked", "question_asked"].includes(event.type)) return "info";
  if (event.type === "human_answered") return "good";
  if (event.type === "answer_rejected") return "bad";
  return "plain";
}

// The output a node_verified event judged, expandable (server side: html.judged_output).
function judgedOutput(event) {
  if (event.type !== "node_verified" || typeof event.output !== "string") return "";
  const outcome = event.outcome ?? (event.passed ? "success" : "fail");
  const verdict = { success: "passed", fail: "failed" }[outcome] ?? "undecided";
  let line = event.output.split("\n").map((l) => l.trim()).find((l) => l) ?? "(blank)";
  if (line.length > 120) line = line.slice(0, 117) + "...";
  return el("details", { class: "output" },
    el("summary", {}, el("b", { text: verdict }), ` ${line}`),
    el("pre", { text: event.output }));
}

function sessionPage() {
  const initial = $("#initial");
  if (!initial) return;
  const state = JSON.parse(initial.textContent);
  const id = encodeURIComponent(state.session_id);
  const timeline = $("#timeline");
  let pending = null;

  async function refresh() {
    pending = null;
    try {
      const detail = await api(`/api/sessions/${id}`);
      const run = detail.run || {};
      $("#f-status").replaceChildren(badge(run.status));
      // A generated plan's run has several current nodes: the steps running.
      const current = Array.isArray(run.current_node) ? run.current_node.join(", ") : run.current_node;
      $("#f-node").textContent = current || "—";
      $("#f-attempts").textContent = run.attempts ?? "—";
      $("#f-turn").textContent = run.turn ?? "—";
      // A completed run reads complete (server side: html.progress).
      const done = run.status === "completed" ? run.current_step ?? run.total_nodes : run.completed_nodes;
      $("#f-progress").textContent = `${done ?? "—"} / ${run.total_nodes ?? "—"}`;
      const waitingFact = $("#f-waiting");
      if (waitingFact) {
        // Server side: html.waiting_fact.
        // A pipeline run at a human gate is paused: it waits for the user too.
        const waits = (run.status === "running" || run.status === "paused") && run.awaiting === "user";
        waitingFact.textContent = waits ? "the user" : run.status === "running" ? "the agent" : "—";
      }
      showQuestion(detail.waiting || null);
      $("#guidance").textContent = detail.context || (detail.kind === "dag"
        ? "None needed: waygraph runs this plan's steps itself, as a DAG."
        : "No guidance: the run is not active.");
      const reason = $("#f-reason");
      reason.textContent = run.reason || "";
      reason.hidden = !run.reason;
      reason.className = run.reason ? "reason" : "";
      if (state.drawing) {
        const svg = await api(`/api/sessions/${id}/drawing`);
        $("#drawing").innerHTML = svg; // the server's SVG writer escapes all plan text
      }
    } catch (error) {
      setLive(false);
    }
  }
  const soon = () => { if (!pending) pending = setTimeout(refresh, 120); };

  const source = new EventSource(`/api/sessions/${id}/stream?after=${state.after}`);
  source.onopen = () => setLive(true);
  source.onerror = () => setLive(false);
  source.addEventListener("run", (message) => {
    const run = JSON.parse(message.data);
    if (run.key !== state.key) window.location.reload(); // a new run started in this session
  });
  source.onmessage = (message) => {
    const event = JSON.parse(message.data);
    if (timeline.querySelector(`[data-seq="${event.seq}"]`)) return;
    const item = el("li", { class: `ev t-${tone(event)} new`, "data-seq": event.seq },
      el("span", { class: "seq", text: `#${event.seq}` }),
      el("span", { class: "what" }, describe(event), judgedOutput(event)),
      el("span", { class: "turn", text: `turn ${event.turn ?? "—"}` }));
    timeline.prepend(item);
    soon();
  };

  // The question a waiting run asks a person (server side: html.answer_box).
  const box = $("#answer");
  function showQuestion(waiting) {
    if (!box) return;
    box.hidden = !waiting;
    if (!waiting) return;
    const choices = waiting.kind === "choice" ? waiting.choices || [] : [];
    $("#answer-node").textContent = waiting.node ? ` at ${waiting.node}` : "";
    $("#answer-prompt").textContent = waiting.prompt
      || (waiting.kind === "question" ? "The model asked the user a question." : "");
    $("#answer-choices").replaceChildren(...choices.map((label) =>
      el("button", { type: "button", class: "choice", "data-answer": label, text: label })));
    const form = $("#answer-form");
    form.hidden = choices.length > 0;
    form.elements.answer.placeholder = waiting.value || (waiting.kind === "question" ? "your reply" : "your answer");
    let hint = {
      choice: "A person decides here: pick one.",
      question: "The model asked this; the reply goes to it as the user's answer.",
    }[waiting.kind] || "";
    if (waiting.kind === "confirm") {
      hint = waiting.value
        ? `This step passes only on a reply that contains ${quote(waiting.value)}.`
        : "Reply to confirm this step (a reply that says no does not).";
    }
    $("#answer-hint").textContent = hint;
  }
  async function send(answer) {
    const problem = $("#answer-error");
    const buttons = box.querySelectorAll("button");
    buttons.forEach((b) => { b.disabled = true; });
    try {
      const result = await api(`/api/sessions/${id}/answer`, { method: "POST", body: JSON.stringify({ answer }) });
      // An answer that is none of the choices is a 200 whose error lists them.
      problem.textContent = result.error || "";
      problem.hidden = !result.error;
      if (!result.error) box.querySelector("#answer-form").reset();
      soon();
    } catch (error) {
      problem.textContent = `The answer was not taken: ${error.message}`;
      problem.hidden = false;
    } finally {
      buttons.forEach((b) => { b.disabled = false; });
    }
  }
  if (box) {
    box.addEventListener("click", (event) => {
      const choice = event.target.closest("button.choice");
      if (choice) send(choice.dataset.answer);
    });
    $("#answer-form").addEventListener("submit", (event) => {
      event.preventDefault();
      const answer = event.target.elements.answer.value;
      if (answer.trim()) send(answer);
    });
  }

  const reset = $("#reset-session");
  if (reset) reset.addEventListener("click", async () => {
    if (!window.confirm(`Reset session ${state.session_id}? A running plan is aborted.`)) return;
    try { await api(`/api/sessions/${id}`, { method: "DELETE" }); soon(); }
    catch (error) { window.alert(`Reset failed: ${error.message}`); }
  });
}

// A session plan's page: reload it when the model's plan file changes (steps grow).
function sessionPlanPage() {
  const watched = $("#session-plan");
  if (!watched) return;
  const state = JSON.parse(watched.textContent);
  const every = Math.max(0.5, parseFloat(document.body.dataset.refresh || "2")) * 1000;
  setInterval(async () => {
    try {
      const plan = await api(`/api/session-plans/${encodeURIComponent(state.session_id)}`);
      // The same list as session_plans.signature on the server.
      const now = [plan.status ?? null, plan.updated_at ?? null,
        (plan.steps || []).map((s) => [s.id ?? null, s.status ?? null])];
      if (JSON.stringify(now) !== JSON.stringify(state.signature)) window.location.reload();
    } catch (error) { /* the file is being replaced: try again at the next tick */ }
  }, every);
}

function tickTimes() {
  document.querySelectorAll("[data-ts]").forEach((node) => { node.textContent = ago(parseFloat(node.dataset.ts)); });
}

document.addEventListener("DOMContentLoaded", () => {
  matchBoxes();
  sessionsPage();
  sessionPage();
  sessionPlanPage();
  setInterval(tickTimes, 5000);
});
