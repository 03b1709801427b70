/**
 * Durable runs (docs/durable-runs.md), end to end as a user runs them: real
 * `runtime exec` processes over the OpenAI-compatible test server, killed
 * with SIGKILL at many points, then `runtime resume`; approvals through
 * `runtime approve`; budgets raised on resume; `runtime replay` and `diff`.
 */
import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { TraceStore } from "../../src/store/sqlite/trace-store.js";
import { BIN, ROOT, runCli } from "../support/cli.js";
import { startOpenAIServer, type ChatBody, type OpenAIServer, type Reply } from "../support/openai-server.js";
import { serverTeam, startScriptServer } from "../support/script-server.js";
import { reactReply, tempDir, writeTeam } from "../support/team.js";

vi.setConfig({ testTimeout: 180_000 });

const servers: OpenAIServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

const CIRCLE = "What are the area and circumference of a circle with radius 5 meters?";
const EXAMPLES: Record<string, string> = {
  "circle-react": CIRCLE,
  "circle-plan": CIRCLE,
  "research-flow": CIRCLE,
  "plan-solver": "For a circle of radius 5 m, give its diameter, circumference and area, and the volume of a sphere of the same radius.",
  "safety-sop": CIRCLE,
};

/** Where a model request arrives: return "drop" to leave it unanswered. */
type Arrival = { onArrival?: (index: number) => "drop" | void };

/**
 * `runtime exec`, killed with SIGKILL as model request `killAt` (from 0)
 * arrives, which is then dropped, or as soon as `when` holds (polled).
 */
function execUntilKilled(args: string[], at: { server: Arrival; killAt: number } | { when: () => boolean }): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, "exec", ...args], { cwd: ROOT, env: { ...process.env, NO_COLOR: "1" }, stdio: "ignore" });
    const kill = () => child.kill("SIGKILL");
    const poll = "when" in at ? setInterval(() => at.when() && kill(), 10) : undefined;
    if ("server" in at) {
      at.server.onArrival = (index) => {
        if (index !== at.killAt) return;
        kill();
        return "drop";
      };
    }
    const timer = setTimeout(() => reject(new Error("the run was never killed")), 20_000);
    child.on("error", reject);
    child.on("exit", (code, signal) => {
      clearTimeout(timer);
      clearInterval(poll);
      if ("server" in at) at.server.onArrival = undefined;
      if (signal !== "SIGKILL") reject(new Error(`the run ended by itself before it was killed (exit ${code})`));
      else resolve();
    });
  });
}

function stored(traceDir: string) {
  const store = TraceStore.open(traceDir, { create: false });
  try {
    const run = store.listRuns()[0];
    if (!run) throw new Error("no run stored");
    const journal = store.journalOf(run.task_id);
    return { task_id: run.task_id, replies: journal.filter((e) => e.kind === "model.reply").length, events: store.eventsOfTask(run.task_id) };
  } finally {
    store.close();
  }
}

describe("runtime resume after SIGKILL, every kind over the test server", () => {
  for (const [name, question] of Object.entries(EXAMPLES)) {
    it(`${name}: killed at the start, midway and before its last request, resumed to the uninterrupted answer, no finished call asked again`, async () => {
      // The run as it goes uninterrupted.
      const baseline = await startScriptServer(serverTeam(name, "http://unused").script);
      servers.push(baseline.server);
      const team0 = serverTeam(name, baseline.server.url);
      const clean = await runCli(["exec", team0.file, question, "--trace-dir", tempDir()]);
      expect(clean.stderr).toBe("");
      expect(clean.code).toBe(0);
      const total = baseline.arrivals.length;
      expect(total).toBeGreaterThan(2);

      for (const killAt of [1, Math.floor(total / 2), total - 1]) {
        const server = await startScriptServer(team0.script);
        servers.push(server.server);
        const team = serverTeam(name, server.server.url);
        const traceDir = tempDir();
        await execUntilKilled([team.file, question, "--trace-dir", traceDir], { server, killAt });
        const before = stored(traceDir);
        const asked = server.arrivals.length;
        const resumed = await runCli(["resume", before.task_id.slice(0, 8), "--trace-dir", traceDir]);
        expect(resumed.stderr, `${name} killed at request ${killAt}`).toBe("");
        expect(resumed.code).toBe(0);
        // A plan's id names the time it was made: the SOP's answer shows it.
        const same = (answer: string) => answer.replace(/(SAFE_SOP_v9)-\S+/g, "$1-<id>");
        expect(same(resumed.stdout), `${name} killed at request ${killAt}`).toBe(same(clean.stdout));
        // Replies committed before the kill were not asked for again; the rest were asked once.
        expect(before.replies + (server.arrivals.length - asked), `${name} killed at request ${killAt}`).toBe(total);
        const after = stored(traceDir);
        const seqs = after.events.map((e) => e.seq);
        expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
        expect(new Set(seqs).size).toBe(seqs.length);
        expect(after.events.filter((e) => e.type === "run.resumed")).toHaveLength(1);
        expect(after.events.at(-1)).toMatchObject({ type: "run.finished", result_type: "answer" });
      }
    });
  }
});

/** A react agent that records 0..3 with a side-effecting command tool, one call per step, then answers. */
async function recordingTeam(options: { slow?: number; approval?: string; budget?: string; perReply?: number } = {}) {
  const perReply = options.perReply ?? 1;
  const arrival: Arrival = {};
  const server = await startOpenAIServer({
    respond: (body: ChatBody, index: number): Reply => {
      if (arrival.onArrival?.(index) === "drop") return { drop: true };
      // The react kind reports tool results inside its own assistant turns (`tool_results`).
      const done = (body.messages ?? [])
        .filter((m) => m.role === "assistant")
        .reduce((n, m) => n + ((JSON.parse(String(m.content)) as { tool_results?: unknown[] }).tool_results?.length ?? 0), 0);
      if (done >= 4) return { content: reactReply("ANSWER", { answer: `recorded ${done}` }) };
      const calls = Array.from({ length: Math.min(perReply, 4 - done) }, (_, i) => ({ id: `r${done + i}`, name: "record", arguments: { n: done + i } }));
      return { content: reactReply("CALL_TOOL", {}), tool_calls: calls };
    },
  });
  servers.push(server);
  const dir = tempDir("record-");
  const counter = join(dir, "counter.txt");
  const file = writeTeam(
    `version: 1
name: recorder
${options.budget ?? ""}
models:
  default: { provider: openai, model: m, base_url: "${server.url}", api_key: sk-record-0123456789, max_retries: 0 }
tools:
  record:
    command: [node, ./record.mjs]
    description: Record a number.
    parameters: { type: object, properties: { n: { type: integer } }, required: [n] }
    env: { COUNTER: "${counter}", SLOW: "${options.slow ?? -1}" }
    ${options.approval === "tool" ? "approval: required" : ""}
agents:
  solver:
    kind: react
    tools: [record]
    ${options.approval === "agent" ? "approval: { record: required }" : ""}
`,
    {
      "record.mjs": `import { appendFileSync } from "node:fs";
let input = "";
process.stdin.on("data", (d) => (input += d));
process.stdin.on("end", () => {
  const { n } = JSON.parse(input);
  appendFileSync(process.env.COUNTER, n + "\\n");
  const out = () => process.stdout.write(JSON.stringify({ recorded: n }));
  if (n === Number(process.env.SLOW)) setTimeout(out, 10000); else out();
});
`,
    },
    dir,
  );
  const counts = () => (existsSync(counter) ? readFileSync(counter, "utf8").trim().split("\n").filter(Boolean).map(Number).sort() : []);
  return { server, arrival, file, counts, traceDir: join(dir, "traces") };
}

describe("side effects on resume", () => {
  it("a write tool runs exactly once across kills at every model request", async () => {
    for (const killAt of [1, 2, 3, 4]) {
      const { arrival, file, counts, traceDir } = await recordingTeam();
      await execUntilKilled([file, "record", "--trace-dir", traceDir], { server: arrival, killAt });
      const { task_id } = stored(traceDir);
      const resumed = await runCli(["resume", task_id, "--trace-dir", traceDir]);
      expect(resumed.stderr).toBe("");
      expect(resumed.stdout).toBe("recorded 4\n");
      expect(counts(), `killed after request ${killAt}`).toEqual([0, 1, 2, 3]);
    }
  });

  it("a write cut off mid-flight is in doubt: the resume pauses (exit 3) instead of running it again; a denial reaches the model", async () => {
    const { server, file, counts, traceDir } = await recordingTeam({ slow: 2 });
    await execUntilKilled([file, "record", "--trace-dir", traceDir], { when: () => counts().includes(2) });
    const { task_id } = stored(traceDir);
    const paused = await runCli(["resume", task_id, "--trace-dir", traceDir]);
    expect(paused.code).toBe(3);
    expect(paused.stderr).toMatch(/paused: waiting for approval of record \(call r2, approval 0\/t2, in doubt/);
    expect(paused.stderr).toContain(`runtime approve ${task_id}`);
    expect(counts()).toEqual([0, 1, 2]);

    const denied = await runCli(["approve", task_id, "r2", "--deny", "--reason", "it was recorded already", "--trace-dir", traceDir]);
    expect(denied.code).toBe(0);
    expect(denied.stdout).toBe("denied: record (call r2, approval 0/t2)\n");
    const resumed = await runCli(["resume", task_id, "--trace-dir", traceDir]);
    expect(resumed.stderr).toBe("");
    expect(resumed.stdout).toBe("recorded 4\n");
    expect(counts()).toEqual([0, 1, 2, 3]);
    const told = JSON.stringify(server.chatRequests.at(-2)?.body?.messages);
    expect(told).toContain("a person denied this call: it was recorded already");
  });
});

describe("approvals", () => {
  it("approval: required on a tool pauses before each call; approve and resume round trips finish the run, each call run once", async () => {
    const { file, counts, traceDir } = await recordingTeam({ approval: "tool" });
    let run = await runCli(["exec", file, "record", "--trace-dir", traceDir]);
    const { task_id } = stored(traceDir);
    let rounds = 0;
    while (run.code === 3) {
      rounds += 1;
      expect(run.stderr).toMatch(/paused: waiting for approval of record/);
      expect(counts()).toHaveLength(rounds - 1);
      expect((await runCli(["approve", task_id, "--trace-dir", traceDir])).code).toBe(0);
      run = await runCli(["resume", task_id, "--trace-dir", traceDir]);
    }
    expect(run.stderr).toBe("");
    expect(run.stdout).toBe("recorded 4\n");
    expect(rounds).toBe(4);
    expect(counts()).toEqual([0, 1, 2, 3]);
    const events = stored(traceDir).events;
    expect(events.filter((e) => e.type === "approval.requested")).toHaveLength(4);
    expect(events.filter((e) => e.type === "approval.decided" && e.decision === "approve")).toHaveLength(4);
  });

  it("several calls in one reply wait together; one approve without a call approves them all", async () => {
    const { file, counts, traceDir } = await recordingTeam({ approval: "agent", perReply: 4 });
    const paused = await runCli(["exec", file, "record", "--trace-dir", traceDir]);
    expect(paused.code).toBe(3);
    const { task_id } = stored(traceDir);
    const approved = await runCli(["approve", task_id, "--trace-dir", traceDir]);
    expect(approved.stdout.trim().split("\n")).toHaveLength(4);
    const resumed = await runCli(["resume", task_id, "--trace-dir", traceDir]);
    expect(resumed.stderr).toBe("");
    expect(resumed.stdout).toBe("recorded 4\n");
    expect(counts()).toEqual([0, 1, 2, 3]);
  });

  it("an approval inside an agent called as a tool pauses the whole run and resumes inside it", async () => {
    const server = await startOpenAIServer({
      respond: (body: ChatBody): Reply => {
        const system = String(body.messages?.find((m) => m.role === "system")?.content ?? "");
        const tools = (body.messages ?? []).filter((m) => m.role === "assistant").length;
        if (system.startsWith("You are boss")) {
          return tools > 0
            ? { content: reactReply("ANSWER", { answer: "boss done" }) }
            : { content: reactReply("CALL_TOOL", {}), tool_calls: [{ id: "h1", name: "helper", arguments: { query: "record 7" } }] };
        }
        return tools > 0
          ? { content: reactReply("ANSWER", { answer: "helper done" }) }
          : { content: reactReply("CALL_TOOL", {}), tool_calls: [{ id: "x1", name: "record", arguments: { n: 7 } }] };
      },
    });
    servers.push(server);
    const dir = tempDir("nested-approval-");
    const counter = join(dir, "counter.txt");
    const file = writeTeam(
      `version: 1
name: nested
models:
  default: { provider: openai, model: m, base_url: "${server.url}", api_key: sk-nested-0123456789, max_retries: 0 }
tools:
  record:
    command: [node, -e, "require('fs').appendFileSync(process.env.COUNTER, '7\\\\n'); process.stdout.write('{}')"]
    env: { COUNTER: "${counter}" }
    approval: required
agents:
  boss: { kind: react, tools: [helper] }
  helper: { kind: react, tools: [record] }
`,
      {},
      dir,
    );
    const traceDir = join(dir, "traces");
    const paused = await runCli(["exec", file, "go", "--trace-dir", traceDir]);
    expect(paused.code).toBe(3);
    expect(paused.stderr).toMatch(/approval 0\.0\/t0/);
    const { task_id } = stored(traceDir);
    expect((await runCli(["approve", task_id, "x1", "--trace-dir", traceDir])).code).toBe(0);
    const resumed = await runCli(["resume", task_id, "--trace-dir", traceDir]);
    expect(resumed.stderr).toBe("");
    expect(resumed.stdout).toBe("boss done\n");
    expect(readFileSync(counter, "utf8")).toBe("7\n");
  });
});

describe("budgets on resume", () => {
  it("a run out of budget exits 1, and resumes with a larger budget to its answer without repeating a call", async () => {
    const { file, counts, traceDir } = await recordingTeam({ budget: "budget: { max_tool_calls: 2 }" });
    const stopped = await runCli(["exec", file, "record", "--trace-dir", traceDir]);
    expect(stopped.code).toBe(1);
    expect(stopped.stderr).toMatch(/budget reached: the team's max_tool_calls is 2/);
    expect(counts()).toEqual([0, 1]);
    const { task_id } = stored(traceDir);
    const bad = await runCli(["resume", task_id, "--budget", "max_tool_calls=lots", "--trace-dir", traceDir]);
    expect(bad.code).toBe(2);
    const resumed = await runCli(["resume", task_id, "--budget", "max_tool_calls=10", "--trace-dir", traceDir]);
    expect(resumed.stderr).toBe("");
    expect(resumed.stdout).toBe("recorded 4\n");
    expect(counts()).toEqual([0, 1, 2, 3]);
    const trace = await runCli(["trace", task_id, "--trace-dir", traceDir]);
    expect(trace.stdout).toMatch(/✗ stopped: budget reached: the team's max_tool_calls is 2/);
    expect(trace.stdout).toMatch(/⟳ resumed at \S+ \(after event \d+\)/);
    // Spend against the budget the run finished with.
    expect(trace.stdout).toMatch(/^budget: tool calls 4\/10$/m);
    // Resuming a finished run prints its answer and changes nothing.
    const events = stored(traceDir).events.length;
    const again = await runCli(["resume", task_id, "--trace-dir", traceDir]);
    expect(again.stdout).toBe("recorded 4\n");
    expect(stored(traceDir).events).toHaveLength(events);
  });
});

describe("runtime replay and diff", () => {
  it("replays every example run offline to identical events", async () => {
    const traceDir = tempDir();
    for (const [name, question] of Object.entries(EXAMPLES)) {
      const run = await runCli(["exec", `teams/${name}.yaml`, question, "--trace-dir", traceDir]);
      expect(run.code).toBe(0);
    }
    const store = TraceStore.open(traceDir, { create: false });
    const ids = store.listRuns().map((r) => r.task_id);
    store.close();
    expect(ids).toHaveLength(5);
    for (const id of ids) {
      const replay = await runCli(["replay", id, "--trace-dir", traceDir]);
      expect(replay.stdout, id).toMatch(/^identical: \d+ events, the same answer\n$/);
      expect(replay.code).toBe(0);
    }
  });

  it("diff points at the first request that differs when a prompt changed", async () => {
    const { file, traceDir } = await recordingTeam();
    expect((await runCli(["exec", file, "record", "--trace-dir", traceDir])).code).toBe(0);
    const changed = readFileSync(file, "utf8").replace("kind: react", 'kind: react\n    prompt: "You are solver. Record carefully. {{current_state}}"');
    const other = writeTeam(changed, { "record.mjs": readFileSync(join(file, "..", "record.mjs"), "utf8") });
    expect((await runCli(["exec", other, "record", "--trace-dir", traceDir])).code).toBe(0);
    const store = TraceStore.open(traceDir, { create: false });
    const [b, a] = store.listRuns().map((r) => r.task_id);
    store.close();
    const diff = await runCli(["diff", a!, b!, "--trace-dir", traceDir]);
    expect(diff.code).toBe(1);
    expect(diff.stdout).toMatch(/first differ at 0\/m0 \(solver\): the request of model call 0\/m0 differs: message \d \(the system prompt\) differs/);
    const same = await runCli(["diff", a!, a!, "--trace-dir", traceDir]);
    expect(same.stdout).toMatch(/^same: /);
    expect(same.code).toBe(0);
  });
});
