import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { TRACE_DB_FILE, TraceStore } from "../../src/store/sqlite/trace-store.js";
import { runCli } from "../support/cli.js";
import { tempDir } from "../support/team.js";
import { CIRCLE_QUESTION, postRun, serveTeam } from "../support/runtime-server.js";

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (closers.length) await closers.pop()?.();
});

/** teams/research-flow.yaml: the flow `research` calls `planner`, `executor` and `replanner` as child steps. */
const FLOW = "teams/research-flow.yaml";

describe("every agent step is indexed by its agent", () => {
  it("runtime trace --agent finds a planner called inside a flow, and the flow itself", async () => {
    const dir = tempDir("agent-index-");
    const exec = await runCli(["exec", FLOW, CIRCLE_QUESTION, "--trace-dir", dir]);
    expect(exec.code).toBe(0);
    const store = TraceStore.open(dir, { create: false });
    const [run] = store.listRuns();
    store.close();
    expect(run?.agent_id).toBe("research");

    for (const agent of ["planner", "executor", "replanner", "research"]) {
      const listed = await runCli(["trace", "--agent", agent, "--trace-dir", dir]);
      expect(listed.code, `${agent}: ${listed.stderr}`).toBe(0);
      expect(listed.stdout).toContain(run!.task_id);
    }
    const nobody = await runCli(["trace", "--agent", "nobody", "--trace-dir", dir]);
    expect(nobody.code).toBe(1);
    expect(nobody.stderr).toContain("no runs of agent nobody");
  });

  it("GET /v1/runs?agent=planner lists the flow's run", async () => {
    const server = await serveTeam(FLOW);
    closers.push(() => server.close());
    const { response } = await postRun(server.url, { input: CIRCLE_QUESTION }, server.token);
    expect(response.status).toBe(200);
    const body = (await (await server.fetch(`${server.url}/v1/runs?agent=planner`)).json()) as { runs: Array<{ task_id: string; agent_id: string }> };
    expect(body.runs).toHaveLength(1);
    expect(body.runs[0]?.agent_id).toBe("research");
    const none = (await (await server.fetch(`${server.url}/v1/runs?agent=calculator`)).json()) as { runs: unknown[] };
    expect(none.runs).toEqual([]);
  });

  it("a store written before the index gets it from its events, once", async () => {
    const dir = tempDir("agent-index-old-");
    const exec = await runCli(["exec", FLOW, CIRCLE_QUESTION, "--trace-dir", dir]);
    expect(exec.code).toBe(0);
    // As an older runtime left it: no agent index.
    const db = new Database(join(dir, TRACE_DB_FILE));
    db.exec("DROP TABLE run_agents; DELETE FROM meta WHERE key = 'agent_index_version'");
    db.close();

    const store = TraceStore.open(dir, { create: false });
    expect(store.runsOfAgent("planner")).toHaveLength(1);
    expect(store.runsOfAgent("executor")).toHaveLength(1);
    store.close();
    const check = new Database(join(dir, TRACE_DB_FILE), { readonly: true });
    const rows = check.prepare("SELECT agent_id FROM run_agents ORDER BY agent_id").all() as Array<{ agent_id: string }>;
    check.close();
    expect(rows.map((r) => r.agent_id)).toEqual(["executor", "planner", "replanner", "research"]);
  });
});
