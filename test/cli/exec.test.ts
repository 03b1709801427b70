import { spawn } from "node:child_process";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { loadTeam } from "../../src/config/load.js";
import { teamSecrets } from "../../src/engine/run-team.js";
import { BIN, ROOT, runCli } from "../support/cli.js";
import { startOpenAIServer } from "../support/openai-server.js";
import { echoEnvTeam, reactReply, tempDir, writeTeam } from "../support/team.js";

const SECRET = "plain-SECRET-cli-5f3a9b2c7d";
const servers: { close(): Promise<void> }[] = [];
afterEach(async () => {
  while (servers.length) await servers.pop()?.close();
});

function teamFor(url: string, model = ""): string {
  return writeTeam(`version: 1
name: cli-test
models:
  default:
    provider: openai
    model: test-model
    base_url: ${url}
    api_key: ${SECRET}
    timeout_ms: 1000
    max_retries: 1
${model}
agents:
  solver:
    kind: react
    tools: [calculator]
`);
}

/** Every byte stored under a trace directory, as text. */
function traceBytes(dir: string): string {
  return readdirSync(dir)
    .map((f) => readFileSync(join(dir, f)).toString("latin1"))
    .join("");
}

async function closedPort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
  const port = (srv.address() as { port: number }).port;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}

describe("runtime exec", () => {
  it("runs the offline circle demo and prints only the answer", async () => {
    const traces = tempDir();
    const r = await runCli(["exec", "teams/circle-react.yaml", "What is the area and circumference of a circle of radius 5 m?", "--trace-dir", traces]);
    expect(r.code).toBe(0);
    expect(r.stdout.trim()).toBe("A circle of radius 5 m has an area of 78.54 m² and a circumference of 31.42 m.");
  });

  it("streams NDJSON events with increasing seq and a trace_id on every recursion, and no key anywhere", async () => {
    const server = await startOpenAIServer({
      replies: [
        { content: null, tool_calls: [{ id: "a", name: "calculator", arguments: { expression: "6*7" } }] },
        { content: reactReply("ANSWER", { answer: "42" }) },
      ],
    });
    servers.push(server);
    const traces = tempDir();
    const r = await runCli(["exec", teamFor(server.url), "six times seven", "--events", "ndjson", "--trace-dir", traces]);
    expect(r.code).toBe(0);
    const events = r.stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const seqs = events.map((e) => e.seq as number);
    seqs.slice(1).forEach((s, i) => {
      expect(s).toBeGreaterThan(seqs[i]!);
    });
    const recursions = events.filter((e) => e.type === "recursion.started");
    expect(recursions).toHaveLength(2);
    for (const e of recursions) expect(typeof e.trace_id).toBe("string");
    for (const e of events.filter((e) => e.type === "llm.request" || e.type === "llm.response" || String(e.type).startsWith("tool."))) {
      expect(e.trace_id).toBeTruthy();
    }
    expect(events.at(-1)).toMatchObject({ type: "run.finished", result_type: "answer", answer: "42" });
    expect(r.stdout + r.stderr).not.toContain(SECRET);
    expect(traceBytes(traces)).not.toContain(SECRET);
    // The key did reach the server, as a bearer token, and nowhere else.
    expect(server.requests[0]?.headers.authorization).toBe(`Bearer ${SECRET}`);
  });

  it("records a live run with --record and replays it offline on the scripted model", async () => {
    const server = await startOpenAIServer({
      replies: [
        { content: reactReply("CALL_TOOL", {}, "first", "multiply"), tool_calls: [{ id: "m1", name: "calculator", arguments: { expression: "6*7" } }] },
        { content: reactReply("ANSWER", { answer: "six times seven is 42" }) },
      ],
    });
    servers.push(server);
    const live = teamFor(server.url);
    const dir = tempDir();
    const script = join(dir, "recorded.yaml");
    const r = await runCli(["exec", live, "six times seven", "--record", script, "--trace-dir", dir]);
    expect(r.code).toBe(0);
    expect(r.stdout.trim()).toBe("six times seven is 42");
    const recorded = readFileSync(script, "utf8");
    expect(recorded).toContain("calculator");
    expect(recorded).not.toContain(SECRET);
    // The replaying team sits beside its script: scripts are read from the team's folder only.
    const offline = writeTeam(
      `version: 1
name: replay
models:
  default: { provider: scripted, script: ./recorded.yaml }
agents:
  solver: { kind: react, tools: [calculator] }
`,
      {},
      dir,
    );
    const replay = await runCli(["exec", offline, "six times seven", "--trace-dir", dir]);
    expect(replay.code).toBe(0);
    expect(replay.stdout).toBe(r.stdout);
    expect(server.requests).toHaveLength(2); // the replay never reached the server
  });

  it("ends with exit 1 and a one-line message when the endpoint is dead", async () => {
    const port = await closedPort();
    const r = await runCli(["exec", teamFor(`http://127.0.0.1:${port}/v1`), "hello", "--trace-dir", tempDir()]);
    expect(r.code).toBe(1);
    expect(r.ms).toBeLessThan(10_000);
    expect(r.stderr).toMatch(/run failed: .*127\.0\.0\.1/);
    expect(r.stderr).not.toMatch(/\n\s+at /); // no stack trace
    expect(r.stderr).not.toContain(SECRET);
  });

  it("exits 2 on an invalid team file and on missing input", async () => {
    const bad = writeTeam("version: 1\nname: x\nagents:\n  a: { kind: react, tools: [calculater] }\n");
    const r = await runCli(["exec", bad, "hi"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/team\.yaml:4:\d+ \/agents\/a\/tools\/0 .*calculater.*calculator/);
    const noInput = await runCli(["exec", "teams/circle-react.yaml"]);
    expect(noInput.code).toBe(2);
    expect(noInput.stderr).toContain("no input");
  });

  it("exits 2 with a one-line message for an unreadable --input-file and an unusable --trace-dir", async () => {
    const dir = tempDir();
    const missing = join(dir, "no-such-input.txt");
    const r = await runCli(["exec", "teams/circle-react.yaml", "--input-file", missing, "--trace-dir", dir]);
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(`runtime exec: cannot read --input-file ${missing}: no such file\n`);
    const isDir = await runCli(["exec", "teams/circle-react.yaml", "--input-file", dir, "--trace-dir", dir]);
    expect(isDir.code).toBe(2);
    expect(isDir.stderr).toBe(`runtime exec: cannot read --input-file ${dir}: it is a directory\n`);

    const record = join(dir, "no-such-dir", "replies.yaml");
    const badRecord = await runCli(["exec", "teams/circle-react.yaml", "hi", "--record", record, "--trace-dir", dir]);
    expect(badRecord.code).toBe(2);
    expect(badRecord.stdout).toBe("");
    expect(badRecord.stderr).toBe(`runtime exec: cannot write --record ${record}: directory ${join(dir, "no-such-dir")} does not exist\n`);

    const file = join(dir, "a-file");
    writeFileSync(file, "");
    const traceIsFile = await runCli(["exec", "teams/circle-react.yaml", "hi", "--trace-dir", file]);
    expect(traceIsFile.code).toBe(2);
    expect(traceIsFile.stdout).toBe("");
    expect(traceIsFile.stderr).toBe(`runtime exec: trace directory ${file} is not a directory\n`);
    // Node's recursive mkdir spins forever on a path it cannot create under /proc; the store must not.
    const proc = await runCli(["exec", "teams/circle-react.yaml", "hi", "--trace-dir", "/proc/no-such-dir/traces"], { timeoutMs: 10_000 });
    expect(proc.code).toBe(2);
    expect(proc.stderr).toMatch(/^runtime exec: cannot open trace store \/proc\/no-such-dir\/traces\/traces\.db: .*ENOENT/);
  });

  it("masks the secrets a team gives its tools (a command's secret-named env, an http tool's secret-named headers) when a tool echoes them", async () => {
    const token = "opaque9Value-Of-The-Token";
    const dir = tempDir();
    const team = echoEnvTeam(token);
    const r = await runCli(["exec", team, "echo", "--events", "ndjson", "--trace-dir", dir]);
    expect(r.code).toBe(0);
    const finished = r.stdout.split("\n").find((l) => l.includes('"tool.finished"')) ?? "";
    expect(finished).toContain("token is [REDACTED]");
    expect(r.stdout + r.stderr).not.toContain(token);
    expect(traceBytes(dir)).not.toContain(token);
    // The same rule for an http tool's headers: secret-named ones are masked by value, others are not secrets.
    const http = writeTeam(
      `version: 1
name: h
models:
  m: { provider: scripted, script: ./s.yaml }
tools:
  api:
    http: { url: "https://example.org/x", headers: { X-Api-Key: "opaque9-header-key", Accept: application/json } }
agents:
  a: { kind: react, tools: [api] }
`,
      { "s.yaml": "version: 1\nreplies: []\n" },
    );
    expect(teamSecrets(await loadTeam(http))).toEqual(["opaque9-header-key"]);
    // And a model's headers (OpenRouter, Azure gateways): secret-named ones only.
    const model = writeTeam(`version: 1
name: mh
models:
  m: { provider: openai, model: x, api_key: sk-model-key-1, headers: { Authorization: "Bearer gw-opaque-7", HTTP-Referer: "https://example.com" } }
agents:
  a: { kind: react }
`);
    expect(teamSecrets(await loadTeam(model), {})).toEqual(["sk-model-key-1", "Bearer gw-opaque-7"]);
  });

  it("keeps the trace of a run killed with kill -9 mid-run, and Ctrl-C exits 130 with the trace flushed", async () => {
    const server = await startOpenAIServer({
      respond: (body) =>
        (body.messages ?? []).length === 2
          ? { content: null, tool_calls: [{ id: "a", name: "calculator", arguments: { expression: "1+1" } }] }
          : { content: reactReply("ANSWER", { answer: "late" }), delay_ms: 10_000 },
    });
    servers.push(server);
    const team = teamFor(server.url).replace("timeout_ms: 1000", "timeout_ms: 60000");
    for (const signal of ["SIGKILL", "SIGINT"] as const) {
      const traces = tempDir();
      const child = spawn(process.execPath, [BIN, "exec", team, "go", "--events", "ndjson", "--trace-dir", traces], {
        cwd: ROOT,
        stdio: ["ignore", "pipe", "pipe"],
      });
      let out = "";
      child.stdout.on("data", (d: Buffer) => (out += d.toString()));
      // Killed once the second request has reached the server: what it is built from (the tool's
      // result) was committed before it left (docs/design/journal.md#when-it-is-written).
      const before = server.chatRequests.length;
      while (server.chatRequests.length < before + 2) await new Promise((r) => setTimeout(r, 5));
      const taskId = String(JSON.parse(out.split("\n")[0]!).task_id);
      const exited = new Promise<number | null>((r) => child.on("close", (code) => r(code)));
      child.kill(signal);
      const code = await exited;
      if (signal === "SIGINT") expect(code).toBe(130);
      const trace = await runCli(["trace", taskId, "--trace-dir", traces]);
      expect(trace.code).toBe(0);
      expect(trace.stdout).toContain("calculator");
      if (signal === "SIGINT") expect(trace.stdout).toMatch(/interrupted/);
      const json = await runCli(["trace", taskId, "--json", "--trace-dir", traces]);
      const types = json.stdout
        .trim()
        .split("\n")
        .map((l) => (JSON.parse(l) as { type: string }).type);
      expect(types, JSON.stringify(types)).toContain("tool.finished");
      expect(types.at(-1) === "run.finished").toBe(signal === "SIGINT");
    }
  }, 60_000);
});
