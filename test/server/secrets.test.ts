import { afterEach, describe, expect, it } from "vitest";
import { echoEnvTeam } from "../support/team.js";
import { postRun, serveTeam } from "../support/runtime-server.js";

const TOKEN = "opaque9Value-Of-The-SSE-Token";
const closers: { close(): Promise<void> }[] = [];
afterEach(async () => {
  while (closers.length) await closers.pop()?.close();
});

describe("runtime serve: secrets", () => {
  it("never sends a tool's secret-named env value over SSE, nor in the run's stored events it serves", async () => {
    const team = echoEnvTeam(TOKEN);
    const server = await serveTeam(team);
    closers.push(server);
    const { response, events } = await postRun(server.url, { input: "echo" }, server.token);
    expect(response.status).toBe(200);
    const finished = events.find((e) => e.data.type === "tool.finished");
    // The tool did echo it: the value reached the run, and was masked before the stream.
    expect(JSON.stringify(finished?.data)).toContain("token is [REDACTED]");
    expect(JSON.stringify(events)).not.toContain(TOKEN);
    const taskId = response.headers.get("x-task-id");
    const stored = await (await server.fetch(`${server.url}/v1/runs/${taskId}`)).text();
    expect(stored).toContain("token is [REDACTED]");
    expect(stored).not.toContain(TOKEN);
  });
});
