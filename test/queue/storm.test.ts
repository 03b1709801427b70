/**
 * A storm under the queue (docs/scale-out.md#100-workers-on-one-postgresql),
 * small enough for every test run: 8 `runtime worker` processes, 40 runs of
 * a team whose tool records each call's tag in a file (3 calls a run), 2 workers SIGKILLed
 * every 2 s and replaced, and `pg_ctl restart -m fast` once mid-way. Every
 * run answers once, every call's side effect is there once, and no call
 * whose result was committed is run again: a call runs twice only when a
 * kill cut it off (its tool is `idempotent`: it records a tag once).
 */
import { join } from "node:path";
import pg from "pg";
import { describe, expect, it, vi } from "vitest";
import { createStore } from "../../src/store/create.js";
import { RunQueue } from "../../src/queue/run-queue.js";
import { startOpenAIServer, type Reply } from "../support/openai-server.js";
import { usePostgres } from "../support/postgres.js";
import { answer, lines, type Proc, requests, start, tagOf, toolMessages, useFleet, waitFor, worker } from "../support/scale-out.js";
import { tempDir, writeTeam } from "../support/team.js";

vi.setConfig({ testTimeout: 120_000, hookTimeout: 60_000 });

const postgres = usePostgres();

const servers = useFleet();

/** A team whose `record` tool writes its tag to EFFECTS unless it is there (idempotent), and every execution to CALLS. */
function stormTeam(modelUrl: string, dir: string): string {
  return writeTeam(
    `version: 1
name: storm
models:
  default: { provider: openai, model: m, base_url: "${modelUrl}", api_key: sk-storm-0123456789, max_retries: 0 }
tools:
  record:
    command: [sh, -c, 'line=$(cat); echo "$line" >> "$CALLS"; grep -qxF "$line" "$EFFECTS" 2>/dev/null || echo "$line" >> "$EFFECTS"; echo "{\\"recorded\\":true}"']
    effect: idempotent
    description: Record that a job was done.
    parameters: { type: object, properties: { tag: { type: string } }, required: [tag] }
    env: { EFFECTS: "${join(dir, "effects.log")}", CALLS: "${join(dir, "calls.log")}" }
agents:
  solver:
    kind: react
    tools: [record]
`,
  );
}

describe("a storm: workers SIGKILLed and replaced, PostgreSQL restarted", () => {
  it("40 runs each answer once, each side effect once, no committed call run again", async () => {
    const url = await postgres.createDatabase("storm");
    const dir = tempDir("storm-");
    const model = await startOpenAIServer({
      respond: (body): Reply => {
        const tag = tagOf(body);
        const round = toolMessages(body);
        if (round < 3) return { content: null, tool_calls: [{ name: "record", arguments: { tag: `${tag}-${round}` } }], delay_ms: 300 };
        return { ...answer(`done ${tag}`), delay_ms: 300 };
      },
    });
    servers.push(model);
    const team = stormTeam(model.url, dir);
    const flags = ["--concurrency", "2", "--lease-ms", "3000"];
    const live = new Set<Proc>(await Promise.all(Array.from({ length: 8 }, () => worker(team, url, flags))));

    const store = await createStore(url);
    const queue = await RunQueue.open(store, ["storm"]);
    const jobs = Array.from({ length: 40 }, (_, i) => ({ task_id: `storm-${i}`, tag: `job-${i}` }));
    try {
      for (const { task_id, tag } of jobs) await queue.enqueue({ task_id, team: "storm", input: `Please record ${tag}.` });
      // Through the store's pool, which outlives the restart (a lone client's lost connection would be an unhandled error).
      const done = async () =>
        (
          await store
            .database!.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM runtime.run_requests WHERE state = 'done'")
            .catch(() => ({ rows: [{ n: -1 }] }))
        ).rows[0]!.n;

      // 2 workers killed and 2 started 1.5 s after the runs came, then every 2 s; PostgreSQL restarted once, with runs still to do.
      let kills = 0;
      let doneAtRestart = -1;
      let storming = true;
      const storm = (async () => {
        for (let round = 0; storming; round++) {
          await new Promise((r) => setTimeout(r, round === 0 ? 1_500 : 2_000));
          if (!storming) break;
          const victims = [...live].sort(() => Math.random() - 0.5).slice(0, 2);
          for (const v of victims) {
            v.child.kill("SIGKILL");
            live.delete(v);
          }
          kills += victims.length;
          if (round === 1) {
            doneAtRestart = await done();
            await postgres.restart();
          }
          // Replacements join when they are up (under load a start takes seconds): the storm goes on meanwhile.
          for (const _ of victims) live.add(start(["worker", team, "--store", url, ...flags]));
        }
      })();
      let seen = 0;
      await waitFor(
        () => `the 40 runs to be done (${seen} are)`,
        async () => (seen = await done()) === 40 || undefined,
        90_000,
      ).finally(() => {
        storming = false;
      });
      await storm;

      // The storm happened while the runs went on.
      expect(kills).toBeGreaterThanOrEqual(4);
      expect(doneAtRestart).toBeGreaterThanOrEqual(0);
      expect(doneAtRestart).toBeLessThan(40);
      // Each run done with its answer, told once, its events whole.
      const rows = await requests(url);
      expect(rows.map((r) => `${r.state} ${r.result_type}`)).toEqual(jobs.map(() => "done answer"));
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      try {
        for (const { task_id, tag } of jobs) {
          const { rows: events } = await client.query<{ seq: number; type: string; answer: string | null }>(
            "SELECT seq, type, json::jsonb->>'answer' AS answer FROM runtime.events WHERE task_id = $1 ORDER BY seq",
            [task_id],
          );
          expect(events.map((e) => e.seq)).toEqual(events.map((_, k) => k + 1));
          expect(events.filter((e) => e.type === "run.finished" && e.answer !== null).map((e) => e.answer)).toEqual([`done ${tag}`]);
        }
      } finally {
        await client.end();
      }
      // Each call's side effect once, none missing.
      const tags = jobs.flatMap(({ tag }) => [`${tag}-0`, `${tag}-1`, `${tag}-2`]).sort();
      expect(
        lines(join(dir, "effects.log"))
          .map((l) => JSON.parse(l).tag)
          .sort(),
      ).toEqual(tags);
      // A call ran again only when a kill cut it off: at most one per run a killed worker held (2 each).
      const calls = lines(join(dir, "calls.log")).map((l) => JSON.parse(l).tag as string);
      expect(calls.length - tags.length).toBeLessThanOrEqual(kills * 2);
      // The workers not killed lived through it all.
      for (const p of live) expect(p.child.exitCode, p.log()).toBeNull();
      process.stderr.write(
        `storm: ${kills} workers killed, ${calls.length - tags.length} call(s) cut off and run again, ${doneAtRestart} runs done at the restart\n`,
      );
    } finally {
      await queue.close();
      await store.close();
    }
  });
});
