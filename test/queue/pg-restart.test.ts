/**
 * Through a PostgreSQL restart (docs/scale-out.md#when-the-database-goes-away),
 * as an operator sees it: one `runtime serve --store`, three `runtime worker`,
 * ten runs half done when `pg_ctl restart -m fast` cuts every connection.
 * Every process lives on, every run answers, every side effect happens once,
 * and no model call that had answered is asked again.
 */
import { join } from "node:path";
import pg from "pg";
import { describe, expect, it, vi } from "vitest";
import { startOpenAIServer, type ChatBody, type Reply } from "../support/openai-server.js";
import { usePostgres } from "../support/postgres.js";
import { tempDir } from "../support/team.js";
import { createStore } from "../../src/store/create.js";
import { circleReactRun } from "../support/trace-events.js";
import { answer, lines, post, recordingTeam, requests, serve, STACK_FRAME, tagOf, toolMessages, useFleet, waitFor, worker } from "../support/scale-out.js";

vi.setConfig({ testTimeout: 180_000, hookTimeout: 60_000 });

const postgres = usePostgres();

const servers = useFleet();

describe("a PostgreSQL restart under running workers", () => {
  it("ten runs half done all answer, each side effect once, no model call asked twice, no process exits", async () => {
    const url = await postgres.createDatabase("restart");
    const effects = join(tempDir("effects-"), "effects.log");
    // Two tool calls then the answer, each model reply slow: the runs are spread over their steps when the database goes.
    const model = await startOpenAIServer({
      respond: (body): Reply => {
        const tag = tagOf(body);
        const round = toolMessages(body);
        if (round < 2) return { content: null, tool_calls: [{ name: "record", arguments: { tag: `${tag}-${round}` } }], delay_ms: 300 };
        return { ...answer(`done ${tag}`), delay_ms: 300 };
      },
    });
    servers.push(model);
    const team = recordingTeam(model.url, effects);
    const server = await serve(team, url);
    const workers = await Promise.all([0, 1, 2].map(() => worker(team, url, ["--concurrency", "4", "--lease-ms", "15000"])));
    const processes = [server.proc, ...workers];

    const jobs = Array.from({ length: 10 }, (_, i) => `job-${i}`);
    const results = Promise.all(jobs.map((job) => post(server, `Please record ${job}.`)));
    // Half done: some tools ran, most runs have more to do.
    await waitFor("the runs to be half done", () => lines(effects).length >= 6 || undefined, 60_000);
    const doneAtRestart = lines(effects).length;
    await postgres.restart();
    const restarted = Date.now();

    let timer: NodeJS.Timeout | undefined;
    const done = await Promise.race([
      results,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`not all runs answered within a minute of the restart: ${logs()}`)), 60_000);
      }),
      ...processes.map((p) => p.exited.then((code): never => expect.fail(`a process exited (${code}): ${p.log()}`))),
    ]).finally(() => clearTimeout(timer));
    const afterMs = Date.now() - restarted;
    function logs(): string {
      return processes.map((p) => p.log()).join("\n---\n");
    }

    for (const [i, { events }] of done.entries()) {
      expect(events.at(-1)?.data, logs()).toMatchObject({ type: "run.finished", result_type: "answer", answer: `done ${jobs[i]}` });
      // One run, told whole and once.
      expect(events.map((e) => Number(e.id))).toEqual(events.map((_, k) => k + 1));
    }
    // The restart came with tools still to run.
    expect(doneAtRestart).toBeLessThan(20);
    // Each side effect once: two tool calls a run, none repeated, none lost.
    expect(lines(effects).sort()).toEqual(jobs.flatMap((j) => [`${j}-0`, `${j}-1`]).sort());
    // Each model call asked once: a reply that came while the database was away was kept, not asked for again.
    const asked = new Map<string, number>();
    for (const r of model.chatRequests) {
      const key = `${tagOf(r.body as ChatBody)} ${toolMessages(r.body as ChatBody)}`;
      asked.set(key, (asked.get(key) ?? 0) + 1);
    }
    expect([...asked].filter(([, n]) => n !== 1)).toEqual([]);
    expect(asked.size).toBe(30);
    // Each run taken once, by the worker that finished it: leases held across the gap.
    const rows = await requests(url);
    expect(rows.map((r) => `${r.state} ${r.result_type} ${r.attempts}`)).toEqual(jobs.map(() => "done answer 1"));
    // Every process lives, and none printed a stack trace.
    for (const p of processes) {
      expect(p.child.exitCode, p.log()).toBeNull();
      expect(p.log(), p.log()).not.toMatch(STACK_FRAME);
      expect(p.out()).not.toMatch(STACK_FRAME);
    }
    process.stderr.write(`pg-restart: the ten runs answered ${afterMs} ms after the restart\n`);
  });

  it("a run's writer keeps what it appended while the database was down, and durable() settles once it is written, with no warning", async () => {
    const url = await postgres.createDatabase("writer");
    const store = await createStore(url);
    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(`${w.name}: ${w.message}`);
    process.on("warning", onWarning);
    try {
      const events = circleReactRun("task-restart");
      const stored: number[] = [];
      const writer = store.runs.writer((seq) => stored.push(seq));
      writer.append(events.slice(0, 3), [{ task_id: "task-restart", key: "0/t0", kind: "tool.started", ts: events[0]!.ts, json: "{}" }]);
      await writer.durable();
      const restarted = postgres.restart();
      // Appended while the server is down: the first write of it fails.
      await waitFor("the database to go down", async () => {
        const client = new pg.Client({ connectionString: url });
        client.on("error", () => {});
        try {
          await client.connect();
          return undefined;
        } catch {
          return true;
        } finally {
          await client.end().catch(() => {});
        }
      });
      writer.append(events.slice(3), [{ task_id: "task-restart", key: "0/t0", kind: "tool.result", ts: events[3]!.ts, json: '{"ok":1}' }]);
      await writer.durable();
      await restarted;
      expect(await store.runs.eventsOfTask("task-restart")).toEqual(events);
      expect((await store.runs.journalOf("task-restart")).map((e) => [e.kind, e.json])).toEqual([["tool.result", '{"ok":1}']]);
      expect(stored.at(-1)).toBe(events.length);
      await writer.close();
    } finally {
      process.off("warning", onWarning);
      await store.close();
    }
    expect(warnings).toEqual([]);
  });
});
