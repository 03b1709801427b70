/**
 * A run on `api: responses` whose model reasons is durable like any other
 * (docs/durable-runs.md): its reasoning items are journaled with the replies,
 * so a `runtime exec` killed with SIGKILL resumes sending the same items back
 * (the strict test server takes only those it issued) without asking for a
 * reply twice, and `runtime replay` of a run finds the same requests and events.
 */
import { afterAll, describe, expect, it } from "vitest";
import { runCli } from "../support/cli.js";
import { type Arrival, execKilledAt, storedRun } from "../support/kill-resume.js";
import { type ChatBody, type OpenAIServer, type Reply, startOpenAIServer } from "../support/openai-server.js";
import { reactReply, tempDir, writeTeam } from "../support/team.js";

const servers: OpenAIServer[] = [];
afterAll(async () => {
  await Promise.all(servers.map((s) => s.close()));
});

/** Two calculator rounds, then the answer; every reply reasons. */
function reply(body: ChatBody): Reply {
  const rounds = (body.messages ?? []).filter((m) => m.role === "assistant").length;
  const reasoning = `Let me think about round ${rounds}.`;
  if (rounds < 2) {
    return {
      reasoning,
      content: reactReply("CALL_TOOL", {}, "", `round ${rounds}`),
      tool_calls: [{ id: `c${rounds}`, name: "calculator", arguments: { expression: `6*${7 + rounds}` } }],
    };
  }
  return { reasoning, content: reactReply("ANSWER", { answer: "42, then 48" }) };
}

async function team() {
  const arrival: Arrival = {};
  const server = await startOpenAIServer({ strict: true, respond: (body, index) => (arrival.onArrival?.(index) === "drop" ? { drop: true } : reply(body)) });
  servers.push(server);
  const file = writeTeam(`version: 1
name: durable-responses
models:
  default: { provider: openai, model: o4-mini, api: responses, base_url: "${server.url}", api_key: sk-durable-0123456789, max_retries: 0 }
agents:
  solver: { kind: react, tools: [calculator] }
`);
  return { server, file, arrival };
}

const carriesReasoning = (body: Record<string, unknown> | undefined) =>
  ((body?.["input"] ?? []) as Array<{ type?: string }>).some((i) => i.type === "reasoning");

describe("a reasoning run on the Responses API, killed, resumed, replayed", () => {
  it("replays identical, and resumes sending the journaled reasoning items without asking a reply twice", async () => {
    const clean = await team();
    const traceClean = tempDir();
    const baseline = await runCli(["exec", clean.file, "go", "--trace-dir", traceClean]);
    expect(baseline.stderr).toBe("");
    expect(baseline.stdout).toBe("42, then 48\n");
    expect(clean.server.responsesRequests.map((r) => carriesReasoning(r.body))).toEqual([false, true, true]);
    const replay = await runCli(["replay", storedRun(traceClean).task_id, "--trace-dir", traceClean]);
    expect(replay.stdout).toMatch(/^identical: \d+ events, the same answer\n$/);
    expect(replay.code).toBe(0);

    const { server, file, arrival } = await team();
    const traceDir = tempDir();
    // Killed as the third request (the one after two reasoning replies) arrives; it is left unanswered.
    await execKilledAt([file, "go", "--trace-dir", traceDir], arrival, 2);
    const before = storedRun(traceDir);
    expect(before.replies).toBe(2);
    const resumed = await runCli(["resume", before.task_id, "--trace-dir", traceDir]);
    expect(resumed.stderr).toBe("");
    expect(resumed.stdout).toBe("42, then 48\n");
    // Asked once more only: the request the kill left unanswered, byte for byte as the first process sent it.
    const bodies = server.responsesRequests.map((r) => JSON.stringify(r.body));
    expect(bodies).toHaveLength(4);
    expect(bodies[3]).toBe(bodies[2]);
    expect(carriesReasoning(server.responsesRequests[3]?.body)).toBe(true);
  });
});
