/**
 * A failure keeps its code from where it starts to what a user sees: the
 * run's result, `run.finished.error_code` and the CLI's exit status
 * (src/errors.ts, docs/cli.md#exit-status). Real parts: the built CLI,
 * the project's OpenAI-compatible test server, an MCP server process.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ERROR_CODES, type ErrorCode } from "../../src/errors.js";
import { exitStatusOf } from "../../src/cli/exit.js";
import { loadTeam, runTeam, type RunEvent } from "../../src/index.js";
import { ROOT, runCli } from "../support/cli.js";
import { startOpenAIServer, type OpenAIServer, type Reply } from "../support/openai-server.js";
import { reactReply, tempDir, writeTeam } from "../support/team.js";
import { NOTES_SERVER, newTag, processesWith } from "../support/mcp-servers.js";

const servers: OpenAIServer[] = [];
const tags: string[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
  for (const pid of tags.splice(0).flatMap(processesWith)) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // gone
    }
  }
});

async function model(respond: (index: number) => Reply): Promise<OpenAIServer> {
  const server = await startOpenAIServer({ respond: (_body, index) => respond(index) });
  servers.push(server);
  return server;
}

function team(url: string, agent: string, tools = ""): string {
  return writeTeam(`version: 1
name: codes
models:
  default: { provider: openai, model: m, base_url: "${url}", api_key: sk-codes-0123456789, max_retries: 0 }
${tools}agents:
${agent}`);
}

/** `runtime exec FILE q --events ndjson`: the exit status and the run.finished event. */
async function exec(file: string): Promise<{ code: number | null; finished: RunEvent | undefined; stderr: string }> {
  const r = await runCli(["exec", file, "q", "--events", "ndjson", "--trace-dir", tempDir()], { timeoutMs: 30_000 });
  const events = r.stdout
    .split("\n")
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as RunEvent);
  return { code: r.code, finished: events.findLast((e) => e.type === "run.finished"), stderr: r.stderr };
}

describe("error codes end to end", () => {
  it("a tool that fails (an MCP server that exits mid-run) ends the run with TOOL_FAILED and exit status 1", async () => {
    const tag = newTag();
    tags.push(tag);
    const server = await model(() => ({ content: null, tool_calls: [{ id: "c1", name: "crash", arguments: {} }] }));
    const file = team(
      server.url,
      "  solver: { kind: react, tools: [notes] }\n",
      `tools:\n  notes:\n    mcp: { command: [node, ${JSON.stringify(NOTES_SERVER)}, "${tag}"], env: { NOTES_TOKEN: notes-secret-0123456789 } }\n`,
    );
    const { code, finished, stderr } = await exec(file);
    expect(finished).toMatchObject({ type: "run.finished", result_type: "error", error_code: "TOOL_FAILED" });
    expect(stderr).toContain('run failed: MCP server "notes" exited with code 3');
    expect(code).toBe(1);
  });

  it("an agent out of max_iteration ends the run with MAX_ITERATION and exit status 1", async () => {
    const server = await model(() => ({ content: reactReply("PLAN", { plan: "1. think again" }) }));
    const { code, finished, stderr } = await exec(team(server.url, "  solver: { kind: react, max_iteration: 2 }\n"));
    expect(finished).toMatchObject({
      type: "run.finished",
      result_type: "error",
      error: "reached max_iteration (2) without an answer",
      error_code: "MAX_ITERATION",
    });
    expect(stderr).toContain("run failed: reached max_iteration (2) without an answer");
    expect(code).toBe(1);
  });

  it("a run cancelled through its signal ends with ABORTED, in its result and its run.finished", async () => {
    const server = await model(() => ({ content: reactReply("ANSWER", { answer: "late" }) }));
    const abort = new AbortController();
    const events: RunEvent[] = [];
    const run = runTeam(await loadTeam(team(server.url, "  solver: { kind: react }\n")), {
      input: "q",
      traceDir: tempDir(),
      signal: abort.signal,
      sinks: [
        (e) => {
          events.push(e);
          if (e.type === "llm.request") abort.abort();
        },
      ],
    });
    const result = await run.result;
    expect(result.error).toEqual({ code: "ABORTED", message: "interrupted" });
    expect(events.at(-1)).toMatchObject({ type: "run.finished", error: "interrupted", error_code: "ABORTED" });
    expect(exitStatusOf(result.error!.code)).toBe(130);
  });

  it("a bad team file exits 2, before any run", async () => {
    const dir = tempDir();
    const file = writeTeam("version: 1\nname: bad\nagents:\n  solver: { kind: react, max_iteration: -1 }\n", {}, dir);
    const r = await runCli(["exec", file, "q", "--trace-dir", join(dir, "traces")]);
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split("\n").length).toBeLessThan(5);
    expect(r.stderr).not.toMatch(/\n\s+at /);
  });

  it("the exit status is decided by the code alone: 2 for wrong input, 3 paused, 4 blocked, 130 aborted, 1 for any other", () => {
    const expected: Partial<Record<ErrorCode, number>> = { CONFIG_INVALID: 2, USAGE: 2, PAUSED: 3, BLOCKED: 4, ABORTED: 130 };
    for (const code of ERROR_CODES) expect(exitStatusOf(code), code).toBe(expected[code] ?? 1);
  });

  it("docs/events.md lists every code of ErrorCode, and no other", () => {
    const text = readFileSync(join(ROOT, "docs/events.md"), "utf8");
    const table = text.slice(text.indexOf("## Error codes"));
    const listed = [...table.matchAll(/^\| `([A-Z_]+)` \|/gm)].map((m) => m[1]);
    expect(listed).toEqual([...ERROR_CODES]);
  });
});
