// The live view of one run: start it (POST /v1/runs) or follow it (?task=ID),
// read its Server-Sent Events and draw the plan, the todo list, the tool calls,
// the answer, the run's tree and its timeline; and the list of past runs.
// Every text from a model or a tool goes through textContent.

import { describeEvent } from "/events/describe.js";
import { RunProjection } from "/events/projection.js";
import { TIMELINE_CSS, renderTimeline, renderTree, runView } from "/timeline.js";

const $ = (id) => document.getElementById(id);

/** Build an element; string children become text nodes, never HTML. */
function el(tag, className, ...children) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  for (const child of children) node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  return node;
}

function clip(text, max = 160) {
  const s = typeof text === "string" ? text : JSON.stringify(text);
  return s === undefined ? "" : s.length > max ? `${s.slice(0, max)}…` : s;
}

/** Everything the page knows about the run it shows. */
let view;
function resetView() {
  view = {
    lastSeq: 0,
    agent: "",
    iteration: 0,
    state: "",
    finished: false,
    plan: { steps: [], finished: 0 },
    // The todo session shown: the latest one a todo event named (its list is the projection's, stale versions dropped).
    todoSession: "",
    // docs/durable-runs.md#approvals: calls waiting for a person, by approval id.
    approvals: new Map(),
    taskId: "",
    /** The run the views show; events of any other are ignored. */
    showing: "",
    // The run's projection (src/events/projection.ts), for the tree and the timeline (redrawn at most a few times a second).
    projection: new RunProjection(),
    // When the last event arrived here: a running call's bar grows from the server's clock, not this one's.
    lastArrival: 0,
    /** Following the run gave up: no event came for a while. */
    stalled: false,
  };
  $("timeline").replaceChildren(el("p", "muted", "No model or tool calls yet."));
  $("tree").replaceChildren(el("p", "muted", "Nothing yet."));
  $("plan").replaceChildren(el("li", "muted", "No plan yet."));
  $("plan-status").hidden = true;
  $("todos").replaceChildren(el("li", "muted", "No todo list yet."));
  $("tools").replaceChildren(el("li", "muted", "No tool calls yet."));
  $("log").replaceChildren(el("li", "muted", "Nothing yet."));
  $("result").hidden = true;
  $("answer").textContent = "";
  $("error").hidden = true;
  $("error").textContent = "";
  $("approvals").hidden = true;
  $("approval-list").replaceChildren();
}

function setStatus(...parts) {
  $("status").replaceChildren(...parts.map((p) => (p instanceof Node ? p : document.createTextNode(p))));
}

function showProgress(taskId) {
  const parts = [];
  if (view.agent) parts.push("agent ", el("b", "", view.agent));
  if (view.iteration) parts.push(" · recursion ", el("b", "", String(view.iteration)));
  if (view.state) parts.push(" · ", el("span", "", view.state));
  if (taskId) parts.push(" · task ", el("code", "", taskId));
  setStatus(...parts);
}

// ---- applying events -------------------------------------------------------

function apply(event) {
  // Another run was opened meanwhile: the one still streaming goes on, out of view.
  if (view.showing && event.task_id !== view.showing) return;
  if (event.seq <= view.lastSeq) return; // already shown (a replay after reconnecting)
  view.lastSeq = event.seq;
  view.taskId = event.task_id;
  const touched = view.projection.apply(event);
  view.lastArrival = Date.now();
  scheduleTimeline();
  // The line every view gives such an event (src/events/describe.ts); a model's replies have lines of their own below.
  if (LOGGED.has(event.type)) log("", describeEvent(event) ?? event.type);
  switch (event.type) {
    case "agent.started":
      view.agent = event.agent_id;
      break;
    case "recursion.started":
      view.agent = event.agent_id;
      view.iteration = event.iteration;
      break;
    case "state.changed":
      view.state = `${event.machine}: ${event.to}`;
      break;
    case "llm.response":
      if (event.reasoning) log(event.agent_id, `#${view.iteration} reasoning — ${clip(event.reasoning, 240)}`);
      log(event.agent_id, `#${view.iteration} ${event.action_type ?? "reply"}${event.thought ? ` — ${clip(event.thought, 240)}` : ""}`);
      if (event.action_type === "PLAN" || event.action_type === "REMEND") planFromReply(event.content);
      break;
    case "plan.created":
    case "plan.updated":
      view.plan = { steps: event.steps, finished: event.finished ?? 0, done: event.done };
      drawPlan();
      break;
    case "todo.updated":
    case "todo.completed":
    case "todo.item_progress":
      view.todoSession = event.session_id;
      drawTodos();
      break;
    case "tool.started":
    case "tool.finished":
      // The projection's call (src/events/call-tracker.ts): its arguments, status, result and time.
      if (touched?.kind === "tool") drawTool(touched);
      break;
    case "task.status":
      drawPlan();
      break;
    case "approval.requested":
      view.approvals.set(event.approval_id, { ...event, decided: "" });
      drawApprovals();
      break;
    case "approval.decided": {
      const known = view.approvals.get(event.approval_id);
      if (known) known.decided = event.decision;
      drawApprovals();
      break;
    }
    case "run.resumed":
      view.finished = false;
      $("result").hidden = true;
      break;
    case "run.finished":
      view.finished = true;
      showResult(event);
      break;
  }
  if (event.type !== "run.finished") showProgress(event.task_id);
}

let timelineTimer;
/** Redraw the tree and the timeline soon (live runs send many events a second). */
function scheduleTimeline() {
  if (timelineTimer) return;
  timelineTimer = setTimeout(() => {
    timelineTimer = undefined;
    drawTimeline();
  }, 150);
}

function drawTimeline() {
  const lastTs = Date.parse(view.projection.tree.last_at);
  // The server's time now, as far as this page can tell: the last event's time plus what passed since it came.
  const now = Number.isFinite(lastTs) && !view.stalled ? lastTs + (Date.now() - view.lastArrival) : undefined;
  const model = runView(view.projection.tree, now);
  renderTimeline($("timeline"), model);
  renderTree($("tree"), model);
}

// A call under way grows while nothing else happens.
setInterval(() => {
  if (!view.finished && !view.stalled && view.projection.tree.events && !document.hidden) drawTimeline();
}, 500);

// ---- the list of runs ---------------------------------------------------------

const clock = (iso) => (iso ? new Date(iso).toLocaleString() : "");
/** How long a run took, or has been going on (by this page's clock, so roughly). */
const seconds = (run) => {
  const end = run.finished_at ? Date.parse(run.finished_at) : Date.now();
  const s = Math.max(0, (end - Date.parse(run.started_at)) / 1000).toFixed(1);
  return run.finished_at ? `${s} s` : `${s} s…`;
};

const RUN_STATUS_CLASS = { answer: "completed", running: "in_progress", paused: "paused", blocked: "failed", error: "failed" };
let listGeneration = 0;
/** Fetch and draw the runs the filters ask for, newest first. */
async function loadRuns() {
  const generation = ++listGeneration;
  const query = new URLSearchParams({ limit: "50" });
  for (const [name, id] of [
    ["agent", "filter-agent"],
    ["status", "filter-status"],
    ["session", "filter-session"],
  ]) {
    const value = $(id).value.trim();
    if (value) query.set(name, value);
  }
  const response = await fetch(`/v1/runs?${query}`);
  if (!response.ok) return;
  const { runs } = await response.json();
  // Filters changed while this answer was on its way: a newer one draws the list.
  if (generation !== listGeneration) return;
  const rows = runs.map((run) => {
    const status = run.result_type ?? "running";
    const row = el(
      "tr",
      view.taskId === run.task_id ? "current" : "",
      el("td", "", clock(run.started_at)),
      el("td", "", run.agent_id),
      el("td", `status-${RUN_STATUS_CLASS[status] ?? "failed"}`, status),
      el("td", "input", clip(run.input, 200)),
      el("td", "", seconds(run)),
      el("td", "", run.usage ? String(run.usage.total_tokens) : ""),
    );
    row.dataset.task = run.task_id;
    row.title = run.task_id;
    row.tabIndex = 0;
    row.addEventListener("click", () => void openRun(run.task_id));
    row.addEventListener("keydown", (e) => {
      if (e.key === "Enter") void openRun(run.task_id);
    });
    return row;
  });
  $("runs").tBodies[0].replaceChildren(...(rows.length ? rows : [el("tr", "", el("td", "muted", "No runs."))]));
  listRunning = runs.some((run) => run.finished_at === undefined);
}

/** Whether the list shows a run going on: then it is refreshed every second, else every 2 (runs started elsewhere show up). */
let listRunning = false;
let listAge = 0;

/** Show a past (or running) run in the views above. */
async function openRun(taskId) {
  // A run this page started goes on (closing its stream would cancel it); its events are no longer shown.
  resetView();
  view.showing = taskId;
  history.replaceState(null, "", `?task=${encodeURIComponent(taskId)}`);
  setStatus(`Loading task ${taskId}…`);
  for (const row of $("runs").tBodies[0].rows) row.classList.toggle("current", row.dataset.task === taskId);
  await follow(taskId).catch((err) => setStatus(`Error: ${err.message}`));
}

/** A react agent's PLAN / REMEND reply carries its plan as numbered text in `output.plan`. */
function planFromReply(content) {
  if (typeof content !== "string") return;
  const start = content.indexOf("{");
  const end = content.lastIndexOf("}");
  if (start < 0 || end <= start) return;
  try {
    const plan = JSON.parse(content.slice(start, end + 1))?.action?.result?.output?.plan;
    if (typeof plan !== "string") return;
    const steps = plan
      .split("\n")
      .map((l) => l.replace(/^\s*\d+[.)]\s*/, "").trim())
      .filter(Boolean);
    if (steps.length) {
      view.plan = { steps, finished: 0 };
      drawPlan();
    }
  } catch {
    // not JSON: the reply is shown in the recursion log anyway
  }
}

// ---- drawing -----------------------------------------------------------------

const TASK_MARK = { ready: "☐", inprogress: "◐", completed: "☑", error: "✗", skipped: "⤼" };

/**
 * The plan's steps; a sop run's steps read `STEP/TASK name → assignee`, and
 * those get their task's status from the Plan Tool's task.status events.
 */
function drawPlan() {
  const { steps, finished, done } = view.plan;
  // Plan Tool (docs/design/plan-tool-design.md): its tasks' statuses and the plan's, as the projection keeps them.
  const { plan_tasks: tasks, plan_tool: planTool } = view.projection.tree;
  const shown = new Set();
  const items = steps.map((s, i) => {
    const text = String(s);
    const taskId = /^[^\s/]+\/(\S+) /.exec(text)?.[1];
    const taskStatus = taskId !== undefined ? tasks[taskId] : undefined;
    if (taskStatus === undefined) return el("li", (done ? done.includes(i + 1) : i < finished) ? "done" : "", text);
    shown.add(taskId);
    return planTask(`${TASK_MARK[taskStatus] ?? "?"} ${text}`, taskStatus);
  });
  // Tasks of a plan whose steps were never announced (a plan made through the tools) still show.
  for (const [taskId, taskStatus] of Object.entries(tasks))
    if (!shown.has(taskId)) items.push(planTask(`${TASK_MARK[taskStatus] ?? "?"} ${taskId}`, taskStatus));
  if (items.length) $("plan").replaceChildren(...items);
  $("plan-status").hidden = !planTool;
  $("plan-status").textContent = planTool ? `plan ${planTool.plan_id} · ${planTool.status}` : "";
}

function planTask(text, status) {
  const li = el("li", `task-${status}`, text);
  li.dataset.status = status;
  return li;
}

const TODO_MARK = { pending: "☐", in_progress: "◐", completed: "☑", failed: "✗", skipped: "⤼", blocked: "⛔" };

function drawTodos() {
  const list = view.projection.tree.todos[view.todoSession]?.todos;
  if (!list) return;
  // A plan_and_solve agent plans with its todo list and announces no other plan.
  if (!view.plan.steps.length && !Object.keys(view.projection.tree.plan_tasks).length)
    $("plan").replaceChildren(el("li", "muted", "The todo list is the plan."));
  const items = [...list].sort((a, b) => a.index - b.index);
  $("todos").replaceChildren(
    ...items.map((t) => {
      const li = el("li", `status-${t.status}`, `${TODO_MARK[t.status] ?? "?"} ${t.content}`);
      li.dataset.status = t.status;
      if (t.tool_calls_count) li.append(el("span", "muted", ` · ${t.tool_calls_count} tool call${t.tool_calls_count === 1 ? "" : "s"}`));
      if (t.notes) li.append(el("span", "muted", ` — ${t.notes}`));
      return li;
    }),
  );
}

function drawTool(call) {
  const agent = view.projection.step(call.step)?.agent_id ?? "";
  const line = el("li", "", el("span", "agent", `${agent} › `), `${call.tool}(${clip(call.arguments, 120)}) `);
  if (call.status === "ok") line.append(el("span", "ok", `→ ${clip(summary(call.result), 120)}`), el("span", "muted", ` · ${call.duration_ms} ms`));
  else if (call.status === "error") line.append(el("span", "bad", `✗ ${clip(call.error ?? "failed")}`), el("span", "muted", ` · ${call.duration_ms} ms`));
  else line.append(el("span", "running", "… running"));
  line.id = `tool-${call.id}`;
  const list = $("tools");
  const old = list.querySelector(`[id="tool-${CSS.escape(call.id)}"]`);
  if (old) old.replaceWith(line);
  else {
    if (list.firstElementChild?.classList.contains("muted")) list.replaceChildren();
    list.append(line);
  }
}

/** Tools often answer `{result}`, `{answer}` or `{message}`; show just that when it is there. */
function summary(result) {
  if (!result || typeof result !== "object") return result;
  for (const key of ["result", "answer", "message"]) if (key in result) return result[key];
  return result;
}

/** The events the log tells in their one line (src/events/describe.ts). */
const LOGGED = new Set(["agent.started", "llm.error", "llm.notice", "tool.progress", "task.status", "approval.requested", "approval.decided", "run.resumed"]);

function log(agent, text) {
  const list = $("log");
  if (list.firstElementChild?.classList.contains("muted")) list.replaceChildren();
  list.append(el("li", "", ...(agent ? [el("span", "agent", `${agent} `)] : []), text));
}

/** The calls waiting for a decision, each with Approve and Deny (and a reason for the model). */
function drawApprovals() {
  const waiting = [...view.approvals.values()].filter((a) => !a.decided);
  $("approvals").hidden = waiting.length === 0;
  $("approval-list").replaceChildren(
    ...waiting.map((a) => {
      const reason = el("input", "reason");
      reason.placeholder = "Reason (told to the model when denied)";
      const approve = el("button", "approve", "Approve");
      const deny = el("button", "deny", "Deny");
      approve.type = deny.type = "button";
      approve.addEventListener("click", () => void decide(a.approval_id, "approve", reason.value));
      deny.addEventListener("click", () => void decide(a.approval_id, "deny", reason.value));
      const item = el(
        "li",
        "approval",
        el("b", "", a.tool),
        ` ${clip(a.arguments, 300)}`,
        a.in_doubt ? el("span", "muted", " · it may have run before the run stopped") : "",
        el("br"),
        reason,
        approve,
        deny,
      );
      item.dataset.approval = a.approval_id;
      return item;
    }),
  );
}

async function decide(approvalId, decision, reason) {
  const taskId = view.taskId;
  const response = await fetch(`/v1/runs/${encodeURIComponent(taskId)}/approvals`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ decision, approval_id: approvalId, ...(reason ? { reason } : {}) }),
  });
  if (!response.ok) {
    setStatus(`Error: ${await errorText(response)}`);
    return;
  }
  const outcome = await response.json();
  const known = view.approvals.get(approvalId);
  if (known) known.decided = decision;
  drawApprovals();
  if (outcome.resumed) {
    view.finished = false;
    setStatus(`Resumed · task ${taskId}`);
    await follow(taskId).catch((err) => setStatus(`Error: ${err.message}`));
  }
}

function showResult(event) {
  if (event.result_type === "paused") {
    setStatus(`Paused: waiting for approval · task ${event.task_id}`);
    drawApprovals();
    return;
  }
  $("result").hidden = false;
  if (event.result_type === "answer") {
    $("answer").textContent = event.answer ?? "";
    // A report drawn as a tree (a sop run's plan) needs fixed-width characters to keep its columns.
    $("answer").classList.toggle("tree", /^\s*[├└│]/m.test(event.answer ?? ""));
    setStatus(`Finished: answered · task ${event.task_id}`);
  } else {
    $("error").hidden = false;
    $("error").textContent =
      event.result_type === "blocked" ? `The run was blocked: ${event.error ?? "by a guardrail"}` : `The run ended in error: ${event.error ?? "unknown error"}`;
    $("error").classList.toggle("tree", /^\s*[├└│]/m.test(event.error ?? ""));
    setStatus(`Finished: ${event.result_type === "blocked" ? "blocked" : "error"} · task ${event.task_id}`);
  }
}

// ---- the event stream ----------------------------------------------------------

/** Read a text/event-stream response and call `onEvent` with each event's JSON data. */
async function readStream(response, onEvent) {
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value.replace(/\r\n/g, "\n");
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const data = block
        .split("\n")
        .filter((line) => line.startsWith("data:"))
        .map((line) => line.slice(5).replace(/^ /, ""))
        .join("\n");
      if (data) onEvent(JSON.parse(data));
    }
  }
}

async function errorText(response) {
  try {
    return (await response.json()).error ?? response.statusText;
  } catch {
    return response.statusText;
  }
}

let controller;

function busy(on) {
  $("run").disabled = on;
  $("stop").disabled = !on;
}

async function startRun(input, agent) {
  resetView();
  controller = new AbortController();
  busy(true);
  setStatus("Starting…");
  try {
    const response = await fetch("/v1/runs", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(agent ? { input, agent } : { input }),
      signal: controller.signal,
    });
    if (!response.ok) throw new Error(await errorText(response));
    const taskId = response.headers.get("x-task-id");
    if (taskId) history.replaceState(null, "", `?task=${encodeURIComponent(taskId)}`);
    view.showing = taskId ?? "";
    void loadRuns();
    await readStream(response, apply);
    if (!view.finished && taskId) await follow(taskId);
  } catch (err) {
    if (err.name !== "AbortError") setStatus(`Error: ${err.message}`);
    else setStatus("Stopped; the run was cancelled and its trace kept.");
  } finally {
    busy(false);
    void loadRuns();
  }
}

/** Show a stored or running run; reconnect with Last-Event-ID when the stream drops. */
async function follow(taskId) {
  for (let attempt = 0; attempt < 5 && !view.finished && (!view.showing || view.showing === taskId); attempt++) {
    const response = await fetch(`/v1/runs/${encodeURIComponent(taskId)}/events`, {
      headers: view.lastSeq ? { "last-event-id": String(view.lastSeq) } : {},
    });
    if (!response.ok) throw new Error(await errorText(response));
    await readStream(response, apply);
    if (!view.finished) await new Promise((r) => setTimeout(r, 1000));
  }
  if (!view.finished && (!view.showing || view.showing === taskId)) {
    // Nothing more comes: its calls under way stop growing where the last event left them.
    view.stalled = true;
    drawTimeline();
    setStatus(`The run ${taskId} has not finished (its process may have stopped).`);
  }
}

async function loadTeam() {
  const response = await fetch("/v1/team");
  if (!response.ok) return;
  const team = await response.json();
  $("team-name").textContent = team.name;
  $("team-description").textContent = team.description;
  document.title = `${team.name} · runtime`;
  $("agent").replaceChildren(
    ...team.agents.map((a) => {
      const option = el("option", "", `${a.name} (${a.kind})`);
      option.value = a.name;
      option.selected = a.entry;
      option.title = a.description;
      return option;
    }),
  );
  $("filter-agent").append(
    ...team.agents.map((a) => {
      const option = el("option", "", a.name);
      option.value = a.name;
      return option;
    }),
  );
}

$("ask").addEventListener("submit", (e) => {
  e.preventDefault();
  const input = $("input").value.trim();
  if (input) void startRun(input, $("agent").value);
});
$("input").addEventListener("keydown", (e) => {
  if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) $("ask").requestSubmit();
});
$("stop").addEventListener("click", () => controller?.abort());
$("filter-agent").addEventListener("change", () => void loadRuns());
$("filter-status").addEventListener("change", () => void loadRuns());
$("filter-session").addEventListener("change", () => void loadRuns());
$("run-filters").addEventListener("submit", (e) => {
  e.preventDefault();
  void loadRuns();
});

const style = document.createElement("style");
style.textContent = TIMELINE_CSS;
document.head.append(style);
resetView();
void loadTeam();
void loadRuns();
// Runs started elsewhere (another tab, the API) show up too.
setInterval(() => {
  listAge += 1;
  if (!document.hidden && (listRunning || listAge >= 2)) {
    listAge = 0;
    void loadRuns();
  }
}, 1000);
const task = new URLSearchParams(location.search).get("task");
if (task) {
  setStatus(`Loading task ${task}…`);
  follow(task).catch((err) => setStatus(`Error: ${err.message}`));
}
