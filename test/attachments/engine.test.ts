/**
 * A run's attachments in the engine (docs/attachments.md): a plan_and_solve
 * agent sends them on its first user message (kept for every request of the
 * step), and a run is refused them, with a one-line USAGE error and no
 * request, by an orchestrating kind, by a model on Chat Completions for a
 * PDF, and past the count cap.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { loadTeam } from "../../src/config/load.js";
import { runTeam } from "../../src/engine/run-team.js";
import { makeAttachment } from "../../src/models/attachment.js";
import { PDF, PNG, PNG_URL } from "../support/attachments.js";
import { type OpenAIServer, startOpenAIServer } from "../support/openai-server.js";
import { call, calls, planTeam, todos } from "../support/plan-and-solve.js";
import { tempDir, writeTeam } from "../support/team.js";

const servers: OpenAIServer[] = [];
afterEach(async () => {
  while (servers.length) await servers.pop()?.close();
});

const image = () => makeAttachment("pic.png", PNG);

describe("attachments in the engine", () => {
  it("a plan_and_solve agent sends the image on its first user message, in every request of its step", async () => {
    const replies = [
      calls(call("p", "write_todos", todos("Describe the picture"))),
      calls(call("d", "update_todo_item", { index: 1, status: "completed" })),
      calls(call("t", "terminate", { answer: "a red dot" })),
    ];
    const server = await startOpenAIServer({ respond: (_body, index) => replies[index] ?? calls(call("t", "terminate", { answer: "a red dot" })) });
    servers.push(server);
    const file = planTeam(server.url);
    writeFileSync(file, readFileSync(file, "utf8").replace("    timeout_ms: 5000\ntools:", "    timeout_ms: 5000\n    attachments: [image]\ntools:"));
    const team = await loadTeam(file);
    const result = await runTeam(team, { input: "What is in this picture?", attachments: [image()], traceDir: tempDir() }).result;
    expect(result.answer).toBe("a red dot");
    expect(server.chatRequests.length).toBeGreaterThanOrEqual(3);
    for (const request of server.chatRequests) {
      const user = request.body?.messages?.find((m) => m.role === "user");
      expect(user?.content).toEqual([
        { type: "text", text: "What is in this picture?" },
        { type: "image_url", image_url: { url: PNG_URL } },
      ]);
    }
  });

  it("refuses, before any request: an orchestrating kind, a PDF on Chat Completions, more than 10 files", async () => {
    const server = await startOpenAIServer({});
    servers.push(server);
    const refused = async (yaml: string, files = [image()]) => {
      const team = await loadTeam(writeTeam(yaml));
      const result = await runTeam(team, { input: "look", attachments: files, traceDir: tempDir() }).result;
      expect(result.result_type).toBe("error");
      expect(result.error?.code).toBe("USAGE");
      return result.error?.message;
    };
    const model = `models:\n  default: { provider: openai, model: m, base_url: "${server.url}", api_key: sk-x-0123456789, max_retries: 0, attachments: [image, pdf] }\n`;
    expect(await refused(`version: 1\nname: pdf\n${model}agents:\n  looker: { kind: react }\n`, [makeAttachment("doc.pdf", PDF)])).toBe(
      "model default of agent looker takes PDF attachments only with api: responses",
    );
    expect(await refused(`version: 1\nname: many\n${model}agents:\n  looker: { kind: react }\n`, Array.from({ length: 11 }, image))).toBe(
      "11 attachments: a run takes at most 10",
    );
    const flow = await loadTeam("teams/research-flow.yaml");
    const result = await runTeam(flow, { input: "look", attachments: [image()], traceDir: tempDir() }).result;
    expect(result.error).toEqual({
      code: "USAGE",
      message: "agent research (kind plan_and_solve_flow) takes no attachments: give them to a react or plan_and_solve agent",
    });
    expect(server.requests).toHaveLength(0);
  });
});
