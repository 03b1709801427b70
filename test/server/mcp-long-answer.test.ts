/**
 * A long answer through MCP (docs/server.md#slow-readers): a model streams a
 * 64 KB and a 1 MB answer in one burst of thousands of deltas, and an MCP
 * tools/call of the served team (`runtime mcp TEAM --http`, the built CLI:
 * `npm run build` first) answers it whole, its progress notifications ending
 * with the run's answer.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterEach, describe, expect, it } from "vitest";
import { spawnRuntime, type Spawned } from "../support/cli.js";
import { startOpenAIServer, type OpenAIServer } from "../support/openai-server.js";
import { reactReply, tempDir, writeTeam } from "../support/team.js";

const closers: { close(): Promise<void> }[] = [];
const spawned: Spawned[] = [];
afterEach(async () => {
  while (closers.length) await closers.pop()?.close();
  for (const s of spawned.splice(0)) await s.stop();
});

describe.each([
  { size: "64 KB", bytes: 64 * 1024, chunk: 16 },
  { size: "1 MB", bytes: 1024 * 1024, chunk: 256 },
])("a $size answer through MCP", ({ bytes, chunk }) => {
  it("reaches the client of a tools/call whole, the last progress the run's answer", async () => {
    let answer = "";
    for (let i = 0; answer.length < bytes; i++) answer += `${i.toString(36).padStart(7, "0")} `;
    answer = answer.slice(0, bytes);
    const model: OpenAIServer = await startOpenAIServer({ chunk_size: chunk, respond: () => ({ content: reactReply("ANSWER", { answer }) }) });
    closers.push(model);
    const file = writeTeam(`version: 1
name: long
models:
  default: { provider: openai, model: m, base_url: "${model.url}", api_key: sk-long-0123456789, max_retries: 0, stream: true, timeout_ms: 120000 }
agents:
  solver: { kind: react }
`);
    const served = await spawnRuntime(
      ["mcp", file, "--http", "--port", "0", "--trace-dir", tempDir("mcp-long-")],
      { RUNTIME_SERVE_TOKEN: "" },
      /on (http:\/\/127\.0\.0\.1:\d+\/mcp) [\s\S]*Bearer (.+)\n/,
    );
    spawned.push(served);
    const client = new Client({ name: "test", version: "1" });
    await client.connect(new StreamableHTTPClientTransport(new URL(served.url), { requestInit: { headers: { authorization: `Bearer ${served.ready[2]}` } } }));
    closers.push(client);
    const progress: string[] = [];
    const result = await client.callTool({ name: "solver", arguments: { query: "talk" } }, undefined, {
      onprogress: (p) => progress.push(p.message ?? ""),
      timeout: 240_000,
    });
    expect(result.isError).toBeFalsy();
    expect(result.content).toEqual([{ type: "text", text: answer }]);
    expect(result.structuredContent).toMatchObject({ result_type: "answer" });
    expect(progress.at(-1)).toBe("run answered");
  }, 300_000);
});
