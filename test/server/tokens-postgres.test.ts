/**
 * Per-caller tokens beyond one machine (docs/scale-out.md, docs/security.md):
 * two spawned `runtime serve --store postgres://... --tokens FILE` and a
 * `runtime worker` on one real PostgreSQL. A run's owner is in the store,
 * so either server answers for it alike: 404 for another caller, visible to
 * its owner and to an admin, decided only by them; no token in any row.
 * Spawns the built CLI: run `npm run build` first.
 */
import { randomBytes } from "node:crypto";
import pg from "pg";
import { afterEach, describe, expect, it, vi } from "vitest";
import { usePostgres } from "../support/postgres.js";
import { spawnRuntime, type Spawned } from "../support/cli.js";
import { approvalTeam, authedFetch, CIRCLE_QUESTION, parseSse, postRun, spawnServe } from "../support/runtime-server.js";
import { tokensFile } from "../support/tokens.js";

vi.setConfig({ testTimeout: 120_000, hookTimeout: 60_000 });

const postgres = usePostgres();

const spawned: Spawned[] = [];
afterEach(async () => {
  for (const s of spawned.splice(0)) await s.stop();
});

describe("per-caller tokens with two servers on one PostgreSQL store", () => {
  it("the owner is in the store: either server hides alice's run from bob, shows it to her and an admin, and lets only them decide it", async () => {
    const tokens = { alice: randomBytes(24).toString("base64url"), bob: randomBytes(24).toString("base64url"), root: randomBytes(24).toString("base64url") };
    const file = tokensFile([
      { name: "alice", token: tokens.alice, scopes: ["run", "read", "approve"] },
      { name: "bob", token: tokens.bob, scopes: ["run", "read", "approve"] },
      { name: "root", token: tokens.root, scopes: ["admin"] },
    ]);
    const store = await postgres.createDatabase("tokens");
    const team = approvalTeam();
    const a = await spawnServe([team, "--store", store, "--tokens", file]);
    spawned.push(a);
    const b = await spawnServe([team, "--store", store, "--tokens", file]);
    spawned.push(b);
    const worker = await spawnRuntime(["worker", team, "--store", store, "--concurrency", "2"], {}, /takes runs of/);
    spawned.push(worker);
    const as = (name: keyof typeof tokens) => authedFetch(tokens[name]);
    const answers: string[] = [];
    const read = async (response: Response) => {
      const text = await response.text();
      answers.push(text);
      return text;
    };

    // Alice starts a run on server A; a worker runs it until it pauses for approval.
    const { events } = await postRun(a.url, { input: CIRCLE_QUESTION, session_id: "alice-chat" }, tokens.alice);
    answers.push(JSON.stringify(events));
    expect(events[0]?.data).toMatchObject({ type: "run.started", caller: "alice" });
    const paused = events.at(-1)!.data;
    expect(paused).toMatchObject({ type: "run.finished", result_type: "paused" });
    const id = paused.task_id;

    // Server B never saw the request: what it knows of the owner is the store's.
    for (const path of [`/v1/runs/${id}`, `/v1/runs/${id}/events`]) {
      expect({ path, bob: (await as("bob")(`${b.url}${path}`)).status }).toEqual({ path, bob: 404 });
    }
    expect(JSON.parse(await read(await as("bob")(`${b.url}/v1/runs`))).runs).toEqual([]);
    expect(JSON.parse(await read(await as("alice")(`${b.url}/v1/runs/${id}`)))).toMatchObject({ run: { task_id: id, caller: "alice" } });
    expect(JSON.parse(await read(await as("root")(`${b.url}/v1/runs?session=alice-chat`))).runs).toMatchObject([{ task_id: id, caller: "alice" }]);
    const decide = (who: keyof typeof tokens, url: string) =>
      as(who)(`${url}/v1/runs/${id}/approvals`, { method: "POST", headers: { "content-type": "application/json" }, body: '{"decision": "approve"}' });
    expect((await decide("bob", b.url)).status).toBe(404);

    // A queued run is its caller's before its run.started is stored: the queue's request names the caller.
    const queued = await as("bob")(`${a.url}/v1/runs`, {
      method: "POST",
      headers: { "content-type": "application/json", prefer: "respond-async" },
      body: JSON.stringify({ input: CIRCLE_QUESTION }),
    });
    const bobRun = ((await queued.json()) as { task_id: string }).task_id;
    expect((await as("alice")(`${b.url}/v1/runs/${bobRun}/events`)).status).toBe(404);
    const bobEvents = parseSse(await read(await as("bob")(`${b.url}/v1/runs/${bobRun}/events`)));
    expect(bobEvents[0]?.data).toMatchObject({ type: "run.started", caller: "bob" });

    // Alice decides on server B; the worker goes on with her run; she follows it on server A to its answer.
    expect(JSON.parse(await read(await decide("alice", b.url)))).toMatchObject({ resumed: true });
    const rest = parseSse(await read(await as("alice")(`${a.url}/v1/runs/${id}/events`, { headers: { "last-event-id": String(paused.seq) } })));
    expect(rest.at(-1)?.data).toMatchObject({ type: "run.finished", result_type: "answer" });

    // No token in any row of the store (runs, events, journal, the queue's requests), nor in what anyone said.
    const client = new pg.Client({ connectionString: store });
    await client.connect();
    const { rows } = await client.query<{ row: string }>(
      `SELECT table_schema || '.' || table_name AS row FROM information_schema.tables WHERE table_schema IN ('runtime', 'runtime_queue') AND table_type = 'BASE TABLE'`,
    );
    let dump = "";
    for (const { row: table } of rows) {
      const content = await client.query<{ t: string }>(`SELECT t::text AS t FROM ${table} t`);
      dump += content.rows.map((r) => r.t).join("\n");
    }
    await client.end();
    expect(dump).toContain("alice");
    for (const s of [a, b, worker]) await s.stop();
    const everything = [dump, ...answers, a.output(), b.output(), worker.output()].join("\n");
    for (const [name, token] of Object.entries(tokens)) expect({ name, leaked: everything.includes(token) }).toEqual({ name, leaked: false });
  });
});
