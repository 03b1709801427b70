// A run as a tree and as a timeline (docs/server.md#run-history), from its
// events alone: the one implementation that the page of `runtime serve` and
// the file of `runtime trace TASK_ID --html` both use. Plain ESM with no
// dependencies, shipped as it is. Every text from a model, a tool or a user
// is put in the page as text (textContent), never as HTML.

/**
 * The timeline of a run: one lane per agent step (in the order the steps
 * started, children under their parents), one bar per model call and per
 * tool call, placed by its start and end time.
 */
export function buildTimeline(events) {
  const lanes = new Map();
  const order = [];
  let start = Infinity;
  let end = -Infinity;
  const time = (ts) => Date.parse(ts);
  const lane = (e) => {
    const key = e.step_id ?? `run:${e.agent_id}`;
    let found = lanes.get(key);
    if (!found) {
      const parent = e.parent_step_id !== undefined ? lanes.get(e.parent_step_id) : undefined;
      found = { step_id: key, agent_id: e.agent_id, depth: parent ? parent.depth + 1 : 0, parent: e.parent_step_id, bars: [], start: time(e.ts), end: time(e.ts), result: undefined };
      lanes.set(key, found);
      order.push(found);
    }
    return found;
  };
  const tools = new Map();
  for (const e of events) {
    const at = time(e.ts);
    if (Number.isFinite(at)) {
      start = Math.min(start, at);
      end = Math.max(end, at);
    }
    if (e.type === "agent.started") lane(e);
    else if (e.type === "agent.finished") {
      const l = lane(e);
      l.end = at;
      l.result = e.result_type;
    } else if (e.type === "llm.response") {
      const l = lane(e);
      const ms = e.duration_ms ?? 0;
      const tokens = e.usage ? e.usage.total_tokens : undefined;
      l.bars.push({ kind: "model", name: e.model, start: at - ms, end: at, ms, tokens, ok: true, detail: e.thought ?? e.content ?? "" });
      start = Math.min(start, at - ms);
    } else if (e.type === "llm.error") {
      const l = lane(e);
      l.bars.push({ kind: "model", name: e.model, start: at, end: at, ms: 0, ok: false, detail: e.error ?? "" });
    } else if (e.type === "tool.started") {
      tools.set(`${e.step_id}/${e.call_id}`, at);
    } else if (e.type === "tool.finished") {
      const l = lane(e);
      const ms = e.duration_ms ?? 0;
      const began = tools.get(`${e.step_id}/${e.call_id}`) ?? at - ms;
      const detail = e.ok ? JSON.stringify(e.result) : e.error;
      l.bars.push({ kind: "tool", name: e.tool, start: began, end: at, ms, ok: e.ok, detail: detail ?? "" });
    }
  }
  for (const l of order) l.end = Math.max(l.end, ...l.bars.map((b) => b.end));
  // Children right below their parent, in start order.
  const sorted = [];
  const place = (parent) => {
    for (const l of order) {
      if ((l.parent ?? undefined) === parent && !sorted.includes(l)) {
        sorted.push(l);
        place(l.step_id);
      }
    }
  };
  place(undefined);
  for (const l of order) if (!sorted.includes(l)) sorted.push(l);
  if (!Number.isFinite(start)) start = end = 0;
  return { start, end: Math.max(end, start + 1), lanes: sorted };
}

/** The number of bars of a timeline (model and tool calls). */
export function barCount(timeline) {
  return timeline.lanes.reduce((n, l) => n + l.bars.length, 0);
}

const el = (doc, tag, className, text) => {
  const node = doc.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
};

const duration = (ms) => (ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${Math.round(ms)} ms`);

/** Draw a timeline into `container` (replacing what it held). */
export function renderTimeline(container, timeline, doc = document) {
  container.replaceChildren();
  if (timeline.lanes.length === 0) {
    container.append(el(doc, "p", "muted", "No model or tool calls yet."));
    return;
  }
  const span = timeline.end - timeline.start;
  const axis = el(doc, "div", "tl-axis");
  axis.append(el(doc, "span", "", "0"), el(doc, "span", "", duration(span)));
  container.append(axis);
  for (const lane of timeline.lanes) {
    const row = el(doc, "div", "tl-lane");
    row.dataset.step = lane.step_id;
    const label = el(doc, "div", "tl-label", `${"  ".repeat(lane.depth)}${lane.agent_id}`);
    label.style.paddingLeft = `${lane.depth * 12}px`;
    label.title = `${lane.agent_id} (step ${lane.step_id})${lane.result ? `: ${lane.result}` : ""}`;
    const track = el(doc, "div", "tl-track");
    for (const bar of lane.bars) {
      const left = ((bar.start - timeline.start) / span) * 100;
      const width = Math.max(((bar.end - bar.start) / span) * 100, 0.4);
      const node = el(doc, "div", `tl-bar tl-${bar.kind}${bar.ok ? "" : " tl-failed"}`);
      node.style.left = `${Math.max(0, Math.min(left, 99.6))}%`;
      node.style.width = `${Math.min(width, 100 - Math.max(0, left))}%`;
      const tokens = bar.tokens !== undefined ? `, ${bar.tokens} tokens` : "";
      node.textContent = `${bar.name} ${duration(bar.ms)}`;
      node.title = `${bar.kind === "model" ? "model" : "tool"} ${bar.name}: ${duration(bar.ms)}${tokens}${bar.ok ? "" : " (failed)"}\n${String(bar.detail).slice(0, 500)}`;
      node.dataset.kind = bar.kind;
      track.append(node);
    }
    row.append(label, track);
    container.append(row);
  }
}

/** Draw a run's events as a tree into `container`: agent steps, their model calls and tool calls. */
export function renderTree(container, events, doc = document) {
  container.replaceChildren();
  const timeline = buildTimeline(events);
  const byParent = new Map();
  for (const lane of timeline.lanes) {
    const key = lane.parent ?? "";
    if (!byParent.has(key)) byParent.set(key, []);
    byParent.get(key).push(lane);
  }
  const list = (parent) => {
    const ul = el(doc, "ul", "tree");
    for (const lane of byParent.get(parent) ?? []) {
      const li = el(doc, "li", "", `${lane.agent_id}${lane.result ? ` → ${lane.result}` : ""}`);
      const calls = el(doc, "ul", "tree");
      for (const bar of lane.bars) {
        const tokens = bar.tokens !== undefined ? `, ${bar.tokens} tokens` : "";
        calls.append(el(doc, "li", bar.ok ? `call-${bar.kind}` : "call-failed", `${bar.kind === "model" ? "model" : "tool"} ${bar.name} (${duration(bar.ms)}${tokens})`));
      }
      if (calls.childElementCount) li.append(calls);
      if (byParent.has(lane.step_id)) li.append(list(lane.step_id));
      ul.append(li);
    }
    return ul;
  };
  container.append(list(""));
  const finished = events.findLast?.((e) => e.type === "run.finished");
  if (finished) container.append(el(doc, "p", finished.result_type === "answer" ? "done" : "bad", finished.result_type === "answer" ? finished.answer ?? "" : `${finished.result_type}: ${finished.error ?? ""}`));
}

/** The styles of the tree and the timeline, shared by the page and the exported file. */
export const TIMELINE_CSS = `
.tl-axis { display: flex; justify-content: space-between; font-size: 11px; color: #667085; margin-left: 160px; }
.tl-lane { display: flex; align-items: center; min-height: 22px; border-top: 1px dashed #e4e7ec; }
.tl-label { width: 160px; flex: none; font-size: 12px; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
.tl-track { position: relative; flex: 1; height: 18px; }
.tl-bar { position: absolute; top: 2px; height: 14px; border-radius: 3px; font-size: 10px; line-height: 14px; color: #fff; overflow: hidden; white-space: nowrap; padding: 0 3px; }
.tl-model { background: #1849a9; } .tl-tool { background: #137333; } .tl-failed { background: #b42318; }
ul.tree { list-style: none; padding-left: 16px; margin: 2px 0; font-size: 13px; }
ul.tree .call-model { color: #1849a9; } ul.tree .call-tool { color: #137333; } ul.tree .call-failed { color: #b42318; }
`;
