import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { loadTeam } from "../../src/config/load.js";
import type { RunEvent } from "../../src/events/types.js";
import { createChatClient } from "../../src/models/factory.js";
import { recordingClient, writeScript, type RecordedReply } from "../../src/models/recorder.js";
import { runTeam } from "../../src/engine/run-team.js";
import { startOpenAIServer, type OpenAIServer } from "../support/openai-server.js";
import { reactReply, tempDir, writeTeam } from "../support/team.js";

const KEY = "sk-record-SECRET-987654321";
let server: OpenAIServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const model = (url: string) => `    provider: openai
    model: test-model
    base_url: ${url}
    api_key: ${KEY}
    max_retries: 0
    timeout_ms: 5000`;

function team(modelBlock: string, dir: string): string {
  return writeTeam(
    `version: 1
name: record-replay
models:
  default:
${modelBlock}
agents:
  solver:
    kind: react
    tools: [calculator]
`,
    {},
    dir,
  );
}

async function run(file: string, record?: RecordedReply[]) {
  const loaded = await loadTeam(file);
  const handle = runTeam(loaded, {
    input: "Circle of radius 5: area and circumference?",
    traceDir: tempDir(),
    ...(record ? { createClient: (config) => recordingClient(createChatClient(config), record) } : {}),
  });
  const events: RunEvent[] = [];
  for await (const e of handle.events) events.push(e);
  return { result: await handle.result, events };
}

interface Transcript {
  llm: { content: string | null; calls: { id: string; name: string; arguments: string }[] }[];
  /** Concurrent calls finish in any order, so tools are sorted by call id. */
  tools: { tool: string; call_id: string; ok: boolean }[];
}

/** What the model said and what the tools did, without ids and timings. */
function transcript(events: RunEvent[]): Transcript {
  const out: Transcript = { llm: [], tools: [] };
  for (const e of events) {
    if (e.type === "llm.response") out.llm.push({ content: e.content ?? null, calls: e.tool_calls ?? [] });
    if (e.type === "tool.finished") out.tools.push({ tool: e.tool, call_id: e.call_id, ok: e.ok });
  }
  out.tools.sort((a, b) => a.call_id.localeCompare(b.call_id));
  return out;
}

describe("record a live run, replay it on the scripted model", () => {
  it("replays the same replies, tool calls and answer offline", async () => {
    server = await startOpenAIServer({
      respond(_body, index) {
        if (index === 0) {
          return {
            content: reactReply("CALL_TOOL", {}, "first recursion", "compute both"),
            tool_calls: [
              { id: "c_area", name: "calculator", arguments: { expression: "round(pi * 5^2, 2)" } },
              { id: "c_circ", name: "calculator", arguments: '{"expression": "round(2 * pi * 5, 2)"' },
            ],
          };
        }
        if (index === 1) {
          return {
            content: reactReply("CALL_TOOL", {}, "the second call had broken arguments", "repair it"),
            tool_calls: [{ id: "c_circ2", name: "calculator", arguments: { expression: "round(2 * pi * 5, 2)" } }],
          };
        }
        return { content: reactReply("ANSWER", { answer: "area 78.54, circumference 31.42" }) };
      },
    });
    const dir = tempDir();
    const recorded: RecordedReply[] = [];
    const live = await run(team(model(server.url), dir), recorded);
    expect(live.result.result_type).toBe("answer");
    expect(recorded).toHaveLength(3);

    const script = join(dir, "recorded.yaml");
    writeScript(script, recorded);
    expect(readFileSync(script, "utf8")).not.toContain(KEY);

    const replay = await run(team(`    provider: scripted\n    script: ./recorded.yaml`, dir));
    expect(replay.result.result_type).toBe("answer");
    expect(replay.result.answer).toBe(live.result.answer);
    expect(transcript(replay.events)).toEqual(transcript(live.events));
    expect(transcript(live.events).llm).toHaveLength(3);
    expect(transcript(live.events).tools).toEqual([
      { tool: "calculator", call_id: "c_area", ok: true },
      { tool: "calculator", call_id: "c_circ", ok: false },
      { tool: "calculator", call_id: "c_circ2", ok: true },
    ]);
  });
});
