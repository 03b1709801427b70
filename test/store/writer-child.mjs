// A separate process that writes a trace: `node writer-child.mjs DIR TASK_ID [COUNT]`.
// Without COUNT it appends forever, printing each seq after append returned
// (i.e. after it was committed), until it is killed.
import { TraceStore } from "../../dist/store/sqlite/trace-store.js";

const [dir, taskId, countArg] = process.argv.slice(2);
const count = countArg === undefined ? Infinity : Number(countArg);
const store = TraceStore.open(dir);
const base = { task_id: taskId, agent_id: "writer", step_id: "s1" };
store.append({ ...base, type: "run.started", input: "write until stopped", seq: 1, ts: new Date().toISOString() });
process.stdout.write("1\n");
for (let seq = 2; seq <= count; seq++) {
  const iteration = Math.ceil(seq / 10);
  store.append({
    ...base,
    type: "tool.finished",
    seq,
    ts: new Date().toISOString(),
    trace_id: `${taskId}-tr-${iteration}`,
    tool: "calculator",
    call_id: `c${seq}`,
    arguments: { expression: `${seq} * 2` },
    ok: true,
    result: String(seq * 2),
    duration_ms: 1,
  });
  process.stdout.write(`${seq}\n`);
}
store.close();
