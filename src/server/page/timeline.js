// A run as a tree and as a timeline (docs/server.md#run-history), drawn from
// the run's projection (src/events/projection.ts, docs/design/projection.md):
// the one implementation that the page of `runtime serve` and the file of
// `runtime trace TASK_ID --html` both use. Plain ESM with no dependencies,
// shipped as it is; `trace --html` inlines it whole.
//
// `runView(tree, now)` is pure (a projection in, a plain model out, no DOM);
// `renderTimeline` and `renderTree` draw that model. Every text from a
// model, a tool or a user goes in as text (textContent), never as HTML.

const time = (ts) => Date.parse(ts);

/** A short JSON (or the string itself) of a tool's arguments or result. */
function show(value) {
  if (value === undefined) return "";
  if (typeof value === "string") return value;
  try {
    return JSON.stringify(value);
  } catch {
    return String(value);
  }
}

/**
 * The timeline's model of a run, laid out from its projection:
 *
 * - `lanes`: one per agent step (an agent's invocation), children right
 *   below their parent, each with its `bars`: one per model call and per
 *   tool call, placed by start and end time (ms since the epoch); calls
 *   that overlap (parallel tool calls) get different `row`s of the lane.
 * - `tree`: the same steps nested (agents → recursions → model and tool
 *   calls, with the steps an agent called in between).
 * - A call started but not ended is `running` while the run goes on (its
 *   bar ends at `now`), and `unfinished` once the run has ended without it.
 *
 * @param {object} run the run's projection (`RunProjection.tree`)
 * @param {number} [now] the time a running call has reached (default: the last event's time)
 */
export function runView(run, now) {
  const ended = run.status !== "running";
  const last = run.events > 0 ? time(run.last_at) : 0;
  const reached = Math.max(last, Number.isFinite(now) ? now : last);
  let start = run.events > 0 ? time(run.started_at) : 0;
  const lanes = [];

  const barOf = (call, lane) => {
    const began = time(call.started_at);
    const going = call.status === "running" || call.status === "unfinished";
    // A call still open reaches `now` while the run goes on; once the run has ended without it, it did not end.
    const unfinished = going && (ended || call.status === "unfinished");
    const end = !going ? time(call.ended_at) : unfinished ? began : reached;
    start = Math.min(start, began);
    const bar = {
      id: call.id,
      kind: call.kind,
      step_id: lane.step_id,
      agent_id: lane.agent_id,
      trace_id: call.trace_id,
      iteration: call.iteration,
      start: began,
      end,
      ms: !going ? (call.duration_ms ?? end - began) : end - began,
      ok: going ? !unfinished : call.kind === "model" ? call.status === "ok" && call.error === undefined : call.status === "ok",
      state: !going ? "done" : unfinished ? "unfinished" : "running",
      error: call.error,
    };
    if (call.kind === "model") {
      return Object.assign(bar, {
        name: call.model_name ?? call.model ?? "fallback",
        messages: call.messages,
        usage: call.usage,
        tokens: call.usage?.total_tokens,
        action: call.action,
        finish_reason: call.finish_reason,
        thought: call.thought,
        reasoning: call.reasoning,
        content: call.content,
        tool_calls: call.tool_calls?.map((c) => c.name),
      });
    }
    return Object.assign(bar, {
      name: call.tool,
      call_id: call.call_id,
      arguments: show(call.arguments),
      result: call.status === "ok" ? show(call.result) : undefined,
    });
  };

  // The step's entries as tree nodes; its calls become its lane's bars.
  const nodesOf = (entries, lane, depth) => {
    const nodes = [];
    for (const entry of entries) {
      if (entry.kind === "step") nodes.push({ type: "step", step: laneOf(entry, lane, depth + 1) });
      else if (entry.kind === "recursion")
        nodes.push({ type: "recursion", iteration: entry.iteration, trace_id: entry.trace_id, children: nodesOf(entry.children, lane, depth) });
      else if (entry.kind === "model" || entry.kind === "tool") {
        const bar = barOf(entry, lane);
        lane.bars.push(bar);
        nodes.push({ type: "call", bar });
      } else if (entry.kind === "guardrail") nodes.push({ type: "guardrail", guardrail: entry });
    }
    return nodes;
  };
  const laneOf = (step, parent, depth) => {
    const lane = {
      step_id: step.id,
      agent_id: step.agent_id,
      kind: step.agent_kind ?? "",
      parent: parent?.step_id,
      depth,
      start: time(step.started_at),
      end: undefined,
      result: step.status === "running" ? undefined : step.status,
      usage: step.usage,
      error: step.error,
      bars: [],
      children: [],
    };
    // Children right below their parent, in the order they started.
    lanes.push(lane);
    lane.children = nodesOf(step.children, lane, depth);
    lane.end =
      step.ended_at !== undefined && step.status !== "running" ? time(step.ended_at) : Math.max(ended ? last : reached, ...lane.bars.map((b) => b.end));
    return lane;
  };
  const tree = run.roots.filter((r) => r.kind === "step").map((step) => laneOf(step, undefined, 0));

  for (const lane of lanes) {
    // Calls that overlap in time (parallel tool calls) take rows of their own in the lane.
    const rowEnds = [];
    for (const bar of [...lane.bars].sort((a, b) => a.start - b.start || a.end - b.end)) {
      let row = rowEnds.findIndex((busyUntil) => busyUntil <= bar.start);
      if (row < 0) row = rowEnds.length;
      rowEnds[row] = Math.max(bar.end, bar.start + 1);
      bar.row = row;
    }
    lane.rows = Math.max(1, rowEnds.length);
  }
  const end = Math.max(ended ? last : reached, start + 1);
  const outcome = run.end;
  return {
    task_id: run.task_id,
    agent_id: run.agent_id,
    input: run.input,
    session_id: run.session_id,
    status: run.status,
    answer: outcome?.answer,
    error: outcome?.error,
    usage: outcome?.usage,
    start,
    end,
    lanes,
    tree,
  };
}

/** The number of bars of a run view: its model and tool calls. */
export function barCount(view) {
  return view.lanes.reduce((n, l) => n + l.bars.length, 0);
}

/** A duration for people: `850 ms`, `1.25 s`, `2 m 5 s`. */
export function duration(ms) {
  if (!(ms >= 0)) return "";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(2)} s`;
  return `${Math.floor(ms / 60_000)} m ${Math.round((ms % 60_000) / 1000)} s`;
}

const clip = (text, max) => (text === undefined ? "" : text.length > max ? `${text.slice(0, max)}…` : text);

/** The lines a bar's tooltip shows, as [label, text] pairs. */
export function barDetails(bar, view) {
  const rows = [
    [bar.kind === "model" ? "model" : "tool", bar.name],
    ["agent", bar.agent_id + (bar.iteration !== undefined ? ` · recursion ${bar.iteration}` : "")],
    ["start", `+${duration(bar.start - view.start)}`],
    ["duration", bar.state === "running" ? `${duration(bar.ms)} so far` : duration(bar.ms)],
  ];
  if (bar.state !== "done") rows.push(["state", bar.state === "running" ? "running" : "did not end (the run ended first)"]);
  if (bar.usage)
    rows.push([
      "tokens",
      `${bar.usage.total_tokens} (${bar.usage.prompt_tokens} prompt + ${bar.usage.completion_tokens} completion)${bar.usage.unknown ? ", not all reported" : ""}`,
    ]);
  if (bar.messages !== undefined) rows.push(["messages", String(bar.messages)]);
  if (bar.action) rows.push(["action", bar.action + (bar.finish_reason ? ` (${bar.finish_reason})` : "")]);
  if (bar.tool_calls?.length) rows.push(["calls", bar.tool_calls.join(", ")]);
  if (bar.thought) rows.push(["thought", clip(bar.thought, 400)]);
  if (bar.reasoning) rows.push(["reasoning", clip(bar.reasoning, 400)]);
  if (bar.content && !bar.thought) rows.push(["reply", clip(bar.content, 400)]);
  if (bar.arguments) rows.push(["arguments", clip(bar.arguments, 400)]);
  if (bar.result !== undefined) rows.push(["result", clip(bar.result, 400)]);
  if (bar.error) rows.push([bar.kind === "model" && bar.ok === false && bar.action ? "refused" : "error", clip(bar.error, 400)]);
  return rows;
}

/** What a bar says on itself: its name, duration and tokens. */
const barLabel = (bar) => `${bar.name} · ${duration(bar.ms)}${bar.tokens !== undefined ? ` · ${bar.tokens} tok` : ""}`;

// ---- drawing (textContent only) ------------------------------------------------

const el = (doc, tag, className, text) => {
  const node = doc.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
};

const barsShown = new WeakMap();
/** The height of one row of bars in a lane, in CSS pixels. */
const ROW_HEIGHT = 16;

/** The tooltip of a timeline: one element, filled with the hovered or focused bar's details. */
function tooltipOf(container, doc) {
  let tip = container.querySelector(":scope > .tl-tip");
  if (tip) return tip;
  tip = el(doc, "div", "tl-tip");
  tip.hidden = true;
  tip.setAttribute("role", "tooltip");
  const showTip = (event) => {
    const target = event.target instanceof doc.defaultView.Element ? event.target.closest(".tl-bar") : null;
    const shown = barsShown.get(container);
    const bar = target && shown?.bars.get(target.dataset.bar);
    if (!bar) return;
    const list = el(doc, "dl");
    for (const [label, text] of barDetails(bar, shown.view)) list.append(el(doc, "dt", "", label), el(doc, "dd", "", text));
    tip.replaceChildren(list);
    tip.hidden = false;
    tip.dataset.bar = bar.id;
    const box = container.getBoundingClientRect();
    const at = target.getBoundingClientRect();
    tip.style.left = `${Math.max(0, Math.min(at.left - box.left, box.width - 360))}px`;
    tip.style.top = `${at.bottom - box.top + 4}px`;
  };
  const hide = () => {
    tip.hidden = true;
  };
  container.addEventListener("mouseover", showTip);
  container.addEventListener("focusin", showTip);
  container.addEventListener("mouseleave", hide);
  container.addEventListener("focusout", hide);
  return tip;
}

/** Draw a run view's timeline into `container`: an axis, one lane per agent step, one bar per call. */
export function renderTimeline(container, view, doc = document) {
  const tip = tooltipOf(container, doc);
  container.style.position = "relative";
  const bars = new Map();
  barsShown.set(container, { view, bars });
  const body = [];
  if (view.lanes.every((l) => l.bars.length === 0)) {
    body.push(el(doc, "p", "muted", "No model or tool calls yet."));
  } else {
    const span = view.end - view.start;
    const axis = el(doc, "div", "tl-axis");
    const ticks = el(doc, "div", "tl-ticks");
    for (let i = 0; i <= 4; i++) {
      const tick = el(doc, "span", "", i === 0 ? "0" : duration((span * i) / 4));
      tick.style.left = `${i * 25}%`;
      ticks.append(tick);
    }
    axis.append(el(doc, "div", "tl-label"), ticks);
    body.push(axis);
    for (const lane of view.lanes) {
      const row = el(doc, "div", "tl-lane");
      row.dataset.step = lane.step_id;
      const label = el(doc, "div", "tl-label", lane.agent_id);
      label.style.paddingLeft = `${lane.depth * 12}px`;
      label.title = `${lane.agent_id}${lane.kind ? ` (${lane.kind})` : ""}, step ${lane.step_id}${lane.result ? `: ${lane.result}` : ""} · ${duration(lane.end - lane.start)}`;
      const track = el(doc, "div", "tl-track");
      track.style.height = `${lane.rows * ROW_HEIGHT + 4}px`;
      const extent = el(doc, "div", "tl-step");
      extent.style.left = `${((lane.start - view.start) / span) * 100}%`;
      extent.style.width = `${Math.max(((lane.end - lane.start) / span) * 100, 0.2)}%`;
      track.append(extent);
      for (const bar of lane.bars) {
        bars.set(bar.id, bar);
        const left = Math.max(0, Math.min(((bar.start - view.start) / span) * 100, 99.6));
        const width = Math.min(Math.max(((bar.end - bar.start) / span) * 100, 0.4), 100 - left);
        const node = el(doc, "div", `tl-bar tl-${bar.kind}${bar.ok ? "" : " tl-failed"}${bar.state === "done" ? "" : ` tl-${bar.state}`}`, barLabel(bar));
        node.style.left = `${left}%`;
        node.style.top = `${2 + bar.row * ROW_HEIGHT}px`;
        node.style.width = `${width}%`;
        node.tabIndex = 0;
        node.dataset.bar = bar.id;
        node.dataset.kind = bar.kind;
        node.setAttribute("aria-label", `${bar.kind} ${barLabel(bar)}`);
        track.append(node);
      }
      row.append(label, track);
      body.push(row);
    }
  }
  const lanes = container.querySelector(":scope > .tl-body") ?? el(doc, "div", "tl-body");
  lanes.replaceChildren(...body);
  if (lanes.parentNode !== container || tip.parentNode !== container) container.replaceChildren(lanes, tip);
  // A bar redrawn under the pointer keeps its tooltip; a bar gone hides it.
  if (!tip.hidden && !bars.has(tip.dataset.bar)) tip.hidden = true;
}

/** One line of a call in the tree. */
function callLine(bar) {
  const tokens = bar.tokens !== undefined ? ` · ${bar.tokens} tok` : "";
  const state = bar.state === "running" ? " · running" : bar.state === "unfinished" ? " · did not end" : "";
  if (bar.kind === "model") {
    const what = bar.state !== "done" ? "no reply yet" : bar.ok ? (bar.action ?? "reply") : bar.action ? "refused" : "error";
    const said = bar.thought ?? bar.error ?? "";
    return `model ${bar.name} · ${what} · ${duration(bar.ms)}${tokens}${state}${said ? ` — ${clip(said, 200)}` : ""}`;
  }
  const outcome = bar.state !== "done" ? "" : bar.ok ? ` → ${clip(bar.result ?? "", 160)}` : ` ✗ ${clip(bar.error ?? "failed", 160)}`;
  return `tool ${bar.name}(${clip(bar.arguments ?? "", 120)})${outcome} · ${duration(bar.ms)}${state}`;
}

/** Draw a run view as a tree into `container`: agent steps, their recursions, model and tool calls. */
export function renderTree(container, view, doc = document) {
  const list = (nodes) => {
    const ul = el(doc, "ul", "tree");
    for (const node of nodes) {
      if (node.type === "call") {
        const li = el(
          doc,
          "li",
          node.bar.state !== "done" ? `call-${node.bar.state}` : node.bar.ok ? `call-${node.bar.kind}` : "call-failed",
          callLine(node.bar),
        );
        li.dataset.bar = node.bar.id;
        ul.append(li);
      } else if (node.type === "guardrail") {
        // A guardrail's verdict (docs/guardrails.md): passed, or what it did when it tripped.
        const g = node.guardrail;
        const where = `guardrail ${g.name} (${g.on}${g.tool ? ` of ${g.tool}` : ""})`;
        const said = g.passed
          ? `${where} passed`
          : `${where} ${g.action === "block" ? "blocked" : g.action === "redact" ? "redacted" : "retry"}: ${clip(g.reason ?? "", 200)}`;
        ul.append(el(doc, "li", g.passed ? "call-tool" : g.action === "block" ? "call-failed" : "tree-recursion", said));
      } else if (node.type === "recursion") {
        const li = el(doc, "li", "tree-recursion", `recursion ${node.iteration}`);
        if (node.children.length) li.append(list(node.children));
        ul.append(li);
      } else {
        const step = node.type === "step" ? node.step : node;
        const usage = step.usage ? ` · ${step.usage.total_tokens} tok` : "";
        const result = step.result ? ` → ${step.result}` : " · running";
        const li = el(doc, "li", "tree-step", `${step.agent_id}${step.kind ? ` (${step.kind})` : ""}${result} · ${duration(step.end - step.start)}${usage}`);
        li.dataset.step = step.step_id;
        if (step.error) li.append(el(doc, "div", "bad", clip(step.error, 400)));
        if (step.children.length) li.append(list(step.children));
        ul.append(li);
      }
    }
    return ul;
  };
  if (view.tree.length === 0) {
    container.replaceChildren(el(doc, "p", "muted", "Nothing yet."));
    return;
  }
  const parts = [list(view.tree)];
  if (view.status === "answer") parts.push(el(doc, "p", "done", view.answer ?? ""));
  else if (view.status === "error") parts.push(el(doc, "p", "bad", `error: ${view.error ?? ""}`));
  else if (view.status === "paused") parts.push(el(doc, "p", "muted", "paused: waiting for approval"));
  else if (view.status === "blocked") parts.push(el(doc, "p", "bad", view.error ?? "blocked by a guardrail"));
  container.replaceChildren(...parts);
}

/** The styles of the tree and the timeline, shared by the page and the exported file. */
export const TIMELINE_CSS = `
.tl-body { position: relative; }
.tl-axis { display: flex; font-size: 11px; color: #667085; height: 16px; }
.tl-ticks { position: relative; flex: 1; }
.tl-ticks span { position: absolute; transform: translateX(-50%); white-space: nowrap; }
.tl-ticks span:first-child { transform: none; } .tl-ticks span:last-child { transform: translateX(-100%); }
.tl-lane { display: flex; align-items: center; min-height: 22px; border-top: 1px dashed #e4e7ec; }
.tl-label { width: 170px; flex: none; font-size: 12px; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
.tl-track { position: relative; flex: 1; min-height: 18px; }
.tl-step { position: absolute; top: 8px; height: 2px; background: #d0d5dd; }
.tl-bar { position: absolute; top: 2px; height: 14px; min-width: 3px; border-radius: 3px; font-size: 10px; line-height: 14px; color: #fff; overflow: hidden; white-space: nowrap; padding: 0 3px; box-sizing: border-box; cursor: default; }
.tl-bar:focus { outline: 2px solid #f79009; }
.tl-model { background: #1849a9; } .tl-tool { background: #137333; } .tl-failed { background: #b42318; }
.tl-running { background-image: repeating-linear-gradient(45deg, transparent 0 6px, rgba(255,255,255,.3) 6px 12px); }
.tl-unfinished { opacity: .5; }
.tl-tip { position: absolute; z-index: 10; width: 360px; background: #1d2330; color: #fff; border-radius: 6px; padding: 6px 8px; font-size: 12px; box-shadow: 0 4px 12px rgba(0,0,0,.25); pointer-events: none; }
.tl-tip dl { margin: 0; display: grid; grid-template-columns: auto 1fr; gap: 1px 8px; }
.tl-tip dt { color: #98a2b3; } .tl-tip dd { margin: 0; white-space: pre-wrap; overflow-wrap: anywhere; }
ul.tree { list-style: none; padding-left: 16px; margin: 2px 0; font-size: 13px; }
ul.tree li { overflow-wrap: anywhere; }
ul.tree .tree-step { font-weight: 600; } ul.tree .tree-step li { font-weight: 400; }
ul.tree .tree-recursion { color: #667085; } ul.tree .tree-recursion li { color: #1d2330; }
ul.tree .call-model { color: #1849a9; } ul.tree .call-tool { color: #137333; } ul.tree .call-failed { color: #b42318; }
ul.tree .call-running { color: #b54708; } ul.tree .call-unfinished { color: #667085; }
`;
