/**
 * Every example team (teams/*.yaml) on `api: responses`: its models rewritten
 * to the test server, which answers from the team's own script over the
 * Responses API and refuses what OpenAI would refuse; the run answers as the
 * team does on its scripted model, and no request goes to Chat Completions.
 */
import { readdirSync, readFileSync } from "node:fs";
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

/** The first case's question of the team's agent tests. */
const questionOf = (name: string): string =>
  (parse(readFileSync(`${ROOT}teams/${name}.test.yaml`, "utf8")) as { cases: { input: string }[] }).cases[0]?.input ?? "";

/** A plan's id names the time it was made: the SOP's answer shows it. */
const sameAnswer = (answer: string | undefined) => (answer ?? "").replace(/(SAFE_SOP_v9)-\S+/g, "$1-<id>");

const servers: OpenAIServer[] = [];
afterAll(async () => {
  await Promise.all(servers.map((s) => s.close()));
});

describe("every example team on api: responses", () => {
  it("there are example teams", () => {
    expect(TEAMS.length).toBeGreaterThanOrEqual(7);
  });

  it.each(TEAMS)("%s answers as on its scripted model", async (name) => {
    const question = questionOf(name);
    const scripted = await runTeam(await loadTeam(`${ROOT}teams/${name}.yaml`), { input: question, traceDir: tempDir("teams-") }).result;
    expect(scripted.result_type, scripted.error?.message).toBe("answer");

    const { server } = await startScriptServer(serverTeam(name, "http://unused").script, { strict: true });
    servers.push(server);
    const team = await loadTeam(serverTeam(name, server.url, "responses").file);
    const events: RunEvent[] = [];
    const result = await runTeam(team, { input: question, traceDir: tempDir("teams-"), sinks: [(e) => events.push(e)] }).result;
    expect(result.error?.message).toBeUndefined();
    expect(sameAnswer(result.answer)).toBe(sameAnswer(scripted.answer));
    expect(server.chatRequests).toEqual([]);
    expect(server.responsesRequests.length).toBe(events.filter((e) => e.type === "llm.response").length);
    expect(server.responsesRequests.every((r) => r.body?.["store"] === false)).toBe(true);
  });
});
