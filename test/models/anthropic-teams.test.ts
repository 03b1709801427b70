/**
 * Every example team (teams/*.yaml) on `provider: anthropic`: its models
 * rewritten to the test server, which answers from the team's own script
 * over Anthropic's Messages API (plain and streamed) and refuses what
 * Anthropic refuses; the run answers as the team does on its scripted model,
 * and no request goes to an OpenAI API.
 */
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { afterAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { loadTeam } from "../../src/config/load.js";
import { runTeam } from "../../src/engine/run-team.js";
import type { RunEvent } from "../../src/events/types.js";
import { ROOT } from "../support/cli.js";
import type { OpenAIServer } from "../support/openai-server.js";
import { serverTeam, startScriptServer } from "../support/script-server.js";
import { tempDir } from "../support/team.js";

const TEAMS = readdirSync(`${ROOT}teams`)
  .filter((f) => f.endsWith(".yaml") && !f.endsWith(".test.yaml"))
  .map((f) => f.replace(/\.yaml$/, ""));

const questionOf = (name: string): string =>
  (parse(readFileSync(`${ROOT}teams/${name}.test.yaml`, "utf8")) as { cases: { input: string }[] }).cases[0]?.input ?? "";

const sameAnswer = (answer: string | undefined) => (answer ?? "").replace(/(SAFE_SOP_v9)-\S+/g, "$1-<id>");

const servers: OpenAIServer[] = [];
afterAll(async () => {
  await Promise.all(servers.map((s) => s.close()));
});

describe.each([false, true])("every example team on provider: anthropic, stream: %s", (stream) => {
  it.each(TEAMS)("%s answers as on its scripted model", async (name) => {
    const question = questionOf(name);
    const scripted = await runTeam(await loadTeam(`${ROOT}teams/${name}.yaml`), { input: question, traceDir: tempDir("teams-") }).result;
    expect(scripted.result_type, scripted.error?.message).toBe("answer");

    const { server } = await startScriptServer(serverTeam(name, "http://unused").script, { strict: true });
    servers.push(server);
    const { file } = serverTeam(name, server.url, "anthropic");
    writeFileSync(file, readFileSync(file, "utf8").replaceAll("provider: anthropic", `provider: anthropic\n    stream: ${stream}`));
    const team = await loadTeam(file);
    const events: RunEvent[] = [];
    const result = await runTeam(team, { input: question, traceDir: tempDir("teams-"), sinks: [(e) => events.push(e)] }).result;
    expect(result.error?.message).toBeUndefined();
    expect(sameAnswer(result.answer)).toBe(sameAnswer(scripted.answer));
    expect(server.chatRequests).toEqual([]);
    expect(server.anthropicRequests.length).toBe(events.filter((e) => e.type === "llm.response").length);
    expect(server.anthropicRequests.every((r) => r.body?.["stream"] === (stream ? true : undefined))).toBe(true);
    if (stream && result.answer) expect(events.some((e) => e.type === "llm.delta")).toBe(true);
  });
});
