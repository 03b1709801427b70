import { afterEach, describe, expect, it } from "vitest";
import { loadTeam } from "../../src/config/load.js";
import { ConfigError } from "../../src/errors.js";
import type { RunEvent } from "../../src/events/types.js";
import { runTeam } from "../../src/engine/run-team.js";
import { closePlanTool } from "../../src/store/sqlite/store.js";
import { runCli } from "../support/cli.js";
import { startOpenAIServer, type OpenAIServer } from "../support/openai-server.js";
import { reactReply, tempDir, writeTeam } from "../support/team.js";

const servers: OpenAIServer[] = [];
const dirs: string[] = [];
afterEach(async () => {
  while (servers.length) await servers.pop()?.close();
  while (dirs.length) closePlanTool(dirs.pop()!);
});

describe("a built-in under another name", () => {
  it("an alias of a Plan Tool method validates and runs as that method", async () => {
    const server = await startOpenAIServer({
      replies: [
        {
          content: reactReply("CALL_TOOL", {}),
          tool_calls: [
            { id: "s", name: "plan_status", arguments: { plan_id: "nope" } },
            { id: "c", name: "calc", arguments: { expression: "6 * 7" } },
          ],
        },
        { content: reactReply("ANSWER", { answer: "done" }) },
      ],
    });
    servers.push(server);
    const file = writeTeam(`version: 1
name: alias
models:
  default: { provider: openai, model: m, base_url: "${server.url}", api_key: sk-alias-0123456789, max_retries: 0 }
tools:
  plan_status: { builtin: get_plan_status, description: The status of a plan. }
  calc: { builtin: calculator, timeout_ms: 2000 }
agents:
  solver: { kind: react, tools: [plan_status, calc] }
`);
    const dir = tempDir();
    dirs.push(dir);
    const events: RunEvent[] = [];
    const result = await runTeam(await loadTeam(file), { input: "q", traceDir: dir, sinks: [(e) => events.push(e)] }).result;
    expect(result).toMatchObject({ result_type: "answer", answer: "done" });
    const finished = events.filter((e): e is Extract<RunEvent, { type: "tool.finished" }> => e.type === "tool.finished");
    expect(finished.map((e) => [e.tool, e.ok, e.result])).toEqual([
      ["plan_status", true, null],
      ["calc", true, { expression: "6 * 7", result: 42 }],
    ]);
    const specs = (server.chatRequests[0]!.body!.tools as Array<{ function: { name: string; description: string } }>).map((t) => t.function);
    expect(specs[0]).toMatchObject({ name: "plan_status", description: "The status of a plan." });
  });

  it("refuses renaming a built-in the kinds recognise by name, and an alias that takes a built-in's name", async () => {
    const file = writeTeam(
      `version: 1
name: alias-bad
models:
  default: { provider: scripted, script: ./s.yaml }
tools:
  finish: { builtin: terminate }
  calculator: { builtin: get_task }
agents:
  solver: { kind: react, tools: [finish, calculator] }
`,
      { "s.yaml": "version: 1\nreplies: []\n" },
    );
    const error = (await loadTeam(file).catch((e: unknown) => e)) as ConfigError;
    expect(error).toBeInstanceOf(ConfigError);
    expect(error.problems.map((p) => `${p.path} ${p.message}`)).toEqual([
      "/tools/finish/builtin 'terminate' is recognised by its name and cannot be renamed: declare it as 'terminate: {builtin: terminate}' to change its limits",
      "/tools/calculator 'calculator' is the name of a built-in tool; an alias of 'get_task' needs another name",
    ]);
  });
});

describe("warnings", () => {
  it("runtime validate warns about a react prompt without {{current_state}}, and still says ok", async () => {
    const file = writeTeam(
      `version: 1
name: warn
models:
  default: { provider: scripted, script: ./s.yaml }
agents:
  blind: { kind: react, prompt: "You solve things." }
  seeing: { kind: react, prompt: "You solve things. {{current_state}}" }
`,
      { "s.yaml": "version: 1\nreplies: []\n" },
    );
    const r = await runCli(["validate", file]);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(`${file}: ok\n`);
    expect(r.stderr).toBe(
      `${file}:6:33 /agents/blind/prompt warning: this react prompt has no {{current_state}}: the model will not see its plan, tool results or errors; add {{current_state}} where they belong\n`,
    );
  });
});
