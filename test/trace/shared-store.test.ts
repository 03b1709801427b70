import { existsSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadTeam } from "../../src/config/load.js";
import { runTeam } from "../../src/engine/run-team.js";
import { openTraceStores } from "../../src/engine/trace-stores.js";
import { runCli } from "../support/cli.js";
import { tempDir } from "../support/team.js";

describe("the trace store shared by the runs of a process", () => {
  it("stays open between sequential runs (no close and reopen per run) and keeps every run", async () => {
    const dir = tempDir();
    const team = await loadTeam("teams/circle-react.yaml");
    const first = await runTeam(team, { input: "radius 5", traceDir: dir }).result;
    expect(openTraceStores()).toContain(dir);
    const second = await runTeam(team, { input: "radius 5 again", traceDir: dir }).result;
    expect([first.result_type, second.result_type]).toEqual(["answer", "answer"]);
    const list = await runCli(["trace", "--trace-dir", dir, "--json"]);
    expect(list.stdout.trim().split("\n").map((l) => (JSON.parse(l) as { task_id: string }).task_id).sort()).toEqual(
      [first.task_id, second.task_id].sort(),
    );
  });

  it("is closed cleanly when the CLI exits (the WAL is checkpointed away)", async () => {
    const dir = tempDir();
    const r = await runCli(["exec", "teams/circle-react.yaml", "radius 5", "--trace-dir", dir]);
    expect(r.code).toBe(0);
    expect(existsSync(join(dir, "traces.db"))).toBe(true);
    expect(existsSync(join(dir, "traces.db-wal"))).toBe(false);
  });
});
