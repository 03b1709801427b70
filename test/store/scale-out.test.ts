/**
 * Beyond one machine (docs/scale-out.md), as an operator runs it: a real
 * PostgreSQL, `runtime serve --store` processes that queue runs and
 * `runtime worker` processes that take them (test/support/scale-out.ts), a
 * model behind the project's OpenAI-compatible test server, and a command
 * tool whose every call leaves a line in a file (a side effect that must
 * never happen twice).
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it, vi } from "vitest";
import { createStore } from "../../src/store/create.js";
import { ROOT } from "../support/cli.js";
import { startOpenAIServer, type ChatBody, type Reply } from "../support/openai-server.js";
import { usePostgres } from "../support/postgres.js";
import { tempDir } from "../support/team.js";
import { authedFetch, parseSse, readSse } from "../support/runtime-server.js";
import { answer, lines, post, recordingTeam, requests, serve, start, tagOf, toolMessages, useFleet, waitFor, worker } from "../support/scale-out.js";
import { wideWorkflow } from "../support/workflows.js";

vi.setConfig({ testTimeout: 120_000, hookTimeout: 60_000 });

const postgres = usePostgres();

const servers = useFleet();

describe("runtime serve --store and runtime worker on PostgreSQL", () => {
  it("runs submitted to two servers are executed by three workers, each exactly once", async () => {
    const url = await postgres.createDatabase("scale");
    const effects = join(tempDir("effects-"), "effects.log");
    const model = await startOpenAIServer({
      respond: (body): Reply =>
        toolMessages(body) === 0
          ? { content: null, tool_calls: [{ name: "record", arguments: { tag: tagOf(body) } }], delay_ms: 150 }
          : { ...answer(`done ${tagOf(body)}`), delay_ms: 150 },
    });
    servers.push(model);
    const team = recordingTeam(model.url, effects);
    const [a, b] = await Promise.all([serve(team, url), serve(team, url)]);
    const workers = await Promise.all([worker(team, url), worker(team, url), worker(team, url)]);

    const jobs = Array.from({ length: 12 }, (_, i) => `job-${i}`);
    const results = await Promise.all(jobs.map((job, i) => post(i % 2 === 0 ? a! : b!, `Please record ${job}.`)));

    for (const [i, { task, events }] of results.entries()) {
      const finished = events.at(-1);
      expect(finished?.event).toBe("run.finished");
      expect(JSON.stringify(finished?.data)).toContain(`"answer":"done ${jobs[i]}"`);
      // One run, told whole and once: seq 1..n without a gap or a repeat, one run.started.
      expect(events.map((e) => Number(e.id))).toEqual(events.map((_, k) => k + 1));
      expect(events.filter((e) => e.event === "run.started")).toHaveLength(1);
      expect(task).toMatch(/^[0-9a-f-]{36}$/);
    }
    // Every side effect happened exactly once.
    expect(lines(effects).sort()).toEqual([...jobs].sort());
    // Each run was taken once, by one worker, and all three workers took some.
    const rows = await requests(url);
    expect(rows).toHaveLength(12);
    expect(rows.every((r) => r.state === "done" && r.attempts === 1)).toBe(true);
    const taken = workers.map((w) => [...w.log().matchAll(/running run (\S+)/g)].map((m) => m[1]));
    expect(taken.flat().sort()).toEqual(results.map((r) => r.task).sort());
    for (const t of taken) expect(t.length).toBeGreaterThan(0);

    // Either server tells any run: the other server's run, replayed from the store after Last-Event-ID.
    const other = results[1]!;
    const replay = await authedFetch(a!.token)(`${a!.url}/v1/runs/${other.task}/events`, { headers: { "last-event-id": "3" } });
    const replayed = parseSse(await replay.text());
    expect(replayed.map((e) => e.id)).toEqual(other.events.slice(3).map((e) => e.id));

    // Operations: probes answer without a token, metrics want it.
    expect((await fetch(`${a!.url}/healthz`)).status).toBe(200);
    expect((await fetch(`${a!.url}/readyz`)).status).toBe(200);
    expect((await fetch(`${a!.url}/metrics`)).status).toBe(401);
    const metrics = await (await authedFetch(a!.token)(`${a!.url}/metrics`)).text();
    expect(metrics).toMatch(/^runtime_runs_queued 0$/m);

    // SIGTERM: each worker stops cleanly with nothing to hand back.
    for (const w of workers) w.child.kill("SIGTERM");
    expect(await Promise.all(workers.map((w) => w.exited))).toEqual([0, 0, 0]);
  });

  it("a worker killed mid-run (SIGKILL) loses its lease; another resumes the run from the journal without repeating the tool", async () => {
    const url = await postgres.createDatabase("kill");
    const effects = join(tempDir("effects-"), "effects.log");
    let stalled = false;
    const model = await startOpenAIServer({
      respond: (body): Reply => {
        if (toolMessages(body) === 0) return { content: null, tool_calls: [{ name: "record", arguments: { tag: tagOf(body) } }] };
        // The first worker never hears back after its tool ran: it is killed while it waits.
        if (!stalled) {
          stalled = true;
          return { ...answer("too late"), delay_ms: 60_000 };
        }
        return answer(`done ${tagOf(body)}`);
      },
    });
    servers.push(model);
    const team = recordingTeam(model.url, effects);
    const server = await serve(team, url);
    const first = await worker(team, url);

    const response = await authedFetch(server.token)(`${server.url}/v1/runs`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ input: "Please record job-kill." }),
    });
    const streamed = readSse(response);
    // The tool ran and the second model call is waiting: kill the worker that holds the run.
    await waitFor("the tool's side effect", () => lines(effects).length === 1 || undefined);
    await waitFor("the second model request", () => model.chatRequests.length === 2 || undefined);
    const [held] = await requests(url);
    expect(held?.state).toBe("running");
    expect(held?.worker_id).toContain(`-${first.child.pid}-`);
    first.child.kill("SIGKILL");
    await first.exited;

    const second = await worker(team, url);
    const events = await streamed;
    expect(events.at(-1)?.data).toMatchObject({ type: "run.finished", result_type: "answer", answer: "done job-kill" });
    expect(events.filter((e) => e.event === "run.resumed")).toHaveLength(1);
    // The tool's result came from the journal: its side effect happened once.
    expect(lines(effects)).toEqual(["job-kill"]);
    expect(events.filter((e) => e.event === "tool.finished")).toHaveLength(1);
    expect(second.log()).toMatch(/resuming run \S+ \(attempt 2\)/);
    const [row] = await requests(url);
    expect(row).toMatchObject({ state: "done", attempts: 2 });
    expect(row?.worker_id).toContain(`-${second.child.pid}-`);
  });

  it("a worker frozen past its lease (SIGSTOP) finds the run taken on waking and stops it: the tool runs once, the events stay one run's", async () => {
    const url = await postgres.createDatabase("frozen");
    const effects = join(tempDir("effects-"), "effects.log");
    const model = await startOpenAIServer({
      respond: (body, index): Reply => {
        if (toolMessages(body) === 0)
          return { content: null, tool_calls: [{ name: "record", arguments: { tag: tagOf(body) } }], delay_ms: index === 0 ? 2_500 : 0 };
        return answer(`done ${tagOf(body)}`);
      },
    });
    servers.push(model);
    const team = recordingTeam(model.url, effects);
    const server = await serve(team, url);
    const first = start(["worker", team, "--store", url, "--concurrency", "1", "--lease-ms", "900"]);
    await waitFor("the first worker", () => first.log().includes("takes runs of") || undefined, 20_000, first);
    const response = await authedFetch(server.token)(`${server.url}/v1/runs`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ input: "Please record job-frozen." }),
    });
    const streamed = readSse(response);
    await waitFor("the first model request", () => model.chatRequests.length === 1 || undefined);
    first.child.kill("SIGSTOP");
    try {
      // The second worker's own lease is longer: on a loaded machine it keeps the run (attempt 2) while the first sleeps.
      const second = await worker(team, url, ["--lease-ms", "3000"]);
      const events = await streamed;
      expect(events.at(-1)?.data).toMatchObject({ type: "run.finished", result_type: "answer", answer: "done job-frozen" });
      expect(second.log()).toMatch(/resuming run/);
    } finally {
      first.child.kill("SIGCONT");
    }
    // Awake, the first worker gets its late reply, finds the lease gone at its next commit and stops: no second side effect.
    await waitFor(
      () => `the first worker to give the run up (${first.log()})`,
      () => first.log().includes("lost the lease") || undefined,
      20_000,
    );
    await new Promise((r) => setTimeout(r, 500));
    expect(lines(effects)).toEqual(["job-frozen"]);
    const store = await createStore(url);
    try {
      const [run] = await store.runs.listRuns();
      const stored = await store.runs.eventsOfTask(run!.task_id);
      expect(stored.map((e) => e.seq)).toEqual(stored.map((_, i) => i + 1));
      expect(stored.filter((e) => e.type === "run.finished")).toHaveLength(1);
      expect(stored.at(-1)).toMatchObject({ type: "run.finished", result_type: "answer" });
    } finally {
      await store.close();
    }
    const [row] = await requests(url);
    expect(row).toMatchObject({ state: "done", attempts: 2 });
  });

  it("a worker leaves the runs of teams it does not run in the queue, for a worker that runs them", async () => {
    const url = await postgres.createDatabase("teams");
    const effects = join(tempDir("effects-"), "effects.log");
    const model = await startOpenAIServer({
      respond: (body): Reply =>
        toolMessages(body) === 0 ? { content: null, tool_calls: [{ name: "record", arguments: { tag: tagOf(body) } }] } : answer(`done ${tagOf(body)}`),
    });
    servers.push(model);
    const mine = recordingTeam(model.url, effects);
    const theirs = recordingTeam(model.url, effects);
    writeFileSync(theirs, readFileSync(theirs, "utf8").replace("name: scale", "name: other"));
    const server = await serve(theirs, url);
    const wrong = await worker(mine, url);
    const response = await authedFetch(server.token)(`${server.url}/v1/runs`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ input: "Please record job-other." }),
    });
    const streamed = readSse(response);
    // The worker of another team does not take it (each team has its own queue).
    await new Promise((r) => setTimeout(r, 1_500));
    expect((await requests(url))[0]).toMatchObject({ state: "queued", attempts: 0 });
    expect(wrong.log()).not.toMatch(/running run/);
    const right = await worker(theirs, url);
    const events = await streamed;
    expect(events.at(-1)?.data).toMatchObject({ result_type: "answer", answer: "done job-other" });
    expect(right.log()).toMatch(/running run/);
    expect(lines(effects)).toEqual(["job-other"]);
  });

  it("SIGTERM: a worker lets a short run finish, and hands a long one back for another worker to resume", async () => {
    const url = await postgres.createDatabase("term");
    const effects = join(tempDir("effects-"), "effects.log");
    const model = await startOpenAIServer({
      respond: (body): Reply => {
        const tag = tagOf(body);
        if (toolMessages(body) === 0) return { content: null, tool_calls: [{ name: "record", arguments: { tag } }] };
        // The long job's answer takes longer than the grace period, the first time it is asked for.
        const slow = tag === "job-long" && model.chatRequests.filter((r) => tagOf(r.body as ChatBody) === "job-long").length <= 2;
        return { ...answer(`done ${tag}`), delay_ms: slow ? 5_000 : 300 };
      },
    });
    servers.push(model);
    const team = recordingTeam(model.url, effects);
    const server = await serve(team, url);
    const first = await worker(team, url, ["--grace-ms", "1500", "--port", "0", "--token", "metrics-token-0123456789"]);
    const ops = /metrics on (http:\/\/[^\s(]+)/.exec(first.log())?.[1];
    expect(ops).toBeDefined();
    expect((await fetch(`${ops}/readyz`)).status).toBe(200);

    const long = post(server, "Please record job-long.");
    const short = post(server, "Please record job-short.");
    await waitFor("both tools to run", () => lines(effects).length === 2 || undefined);
    first.child.kill("SIGTERM");
    expect(await first.exited).toBe(0);
    expect(first.log()).toMatch(/run \S+ answer/);
    expect(first.log()).toMatch(/handed run \S+ back to the queue/);
    expect((await short).events.at(-1)?.data).toMatchObject({ result_type: "answer", answer: "done job-short" });

    const second = await worker(team, url);
    const events = (await long).events;
    expect(events.at(-1)?.data).toMatchObject({ result_type: "answer", answer: "done job-long" });
    // The handed-back run ended once as interrupted, then went on from its journal elsewhere.
    expect(events.filter((e) => e.event === "run.finished").map((e) => (e.data as { result_type: string }).result_type)).toEqual(["error", "answer"]);
    expect(lines(effects).sort()).toEqual(["job-long", "job-short"]);
    expect(second.log()).toMatch(/resuming run/);
  });

  it("a queued run that pauses for an approval goes on, on a worker, once a person approves through any server", async () => {
    const url = await postgres.createDatabase("approve");
    const effects = join(tempDir("effects-"), "effects.log");
    const model = await startOpenAIServer({
      respond: (body): Reply =>
        toolMessages(body) === 0 ? { content: null, tool_calls: [{ name: "record", arguments: { tag: tagOf(body) } }] } : answer(`done ${tagOf(body)}`),
    });
    servers.push(model);
    const team = recordingTeam(model.url, effects);
    const text = readFileSync(team, "utf8").replace("    env: { EFFECTS", "    approval: required\n    env: { EFFECTS");
    writeFileSync(team, text);
    const [a, b] = await Promise.all([serve(team, url), serve(team, url)]);
    await worker(team, url);
    const first = await post(a!, "Please record job-ask.");
    expect(first.events.at(-1)?.data).toMatchObject({ result_type: "paused" });
    expect(lines(effects)).toEqual([]);

    const decided = await authedFetch(b!.token)(`${b!.url}/v1/runs/${first.task}/approvals`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ decision: "approve" }),
    });
    expect(decided.status).toBe(202);
    expect(await decided.json()).toMatchObject({ resumed: true });
    const rest = await authedFetch(b!.token)(`${b!.url}/v1/runs/${first.task}/events`, { headers: { "last-event-id": first.events.at(-1)!.id! } });
    const events = parseSse(await rest.text());
    expect(events[0]?.event).toBe("run.resumed");
    expect(events.at(-1)?.data).toMatchObject({ result_type: "answer", answer: "done job-ask" });
    expect(lines(effects)).toEqual(["job-ask"]);
    // Resuming a run that is done and answered queues nothing new to run: its answer stands.
    const again = await authedFetch(a!.token)(`${a!.url}/v1/runs/${first.task}/resume`, { method: "POST" });
    expect(again.status).toBe(202);
    await waitFor("the resumed run to be done again", async () => ((await requests(url))[0]?.state === "done" ? true : undefined));
    expect(lines(effects)).toEqual(["job-ask"]);
  });

  it("a worker's metrics count its runs, model and tool latency and tokens, behind its token", async () => {
    const url = await postgres.createDatabase("metrics");
    const effects = join(tempDir("effects-"), "effects.log");
    const model = await startOpenAIServer({
      respond: (body): Reply =>
        toolMessages(body) === 0 ? { content: null, tool_calls: [{ name: "record", arguments: { tag: tagOf(body) } }] } : answer("done"),
    });
    servers.push(model);
    const team = recordingTeam(model.url, effects);
    const server = await serve(team, url);
    const w = await worker(team, url, ["--port", "0", "--token", "metrics-token-0123456789"]);
    const ops = /metrics on (http:\/\/[^\s(]+)/.exec(w.log())?.[1];
    await post(server, "Please record job-m1.");
    await post(server, "Please record job-m2.");
    expect((await fetch(`${ops}/metrics`)).status).toBe(401);
    const text = await (await fetch(`${ops}/metrics`, { headers: { authorization: "Bearer metrics-token-0123456789" } })).text();
    expect(text).toMatch(/^runtime_runs_finished_total\{result="answer"\} 2$/m);
    expect(text).toMatch(/^runtime_model_call_seconds_count\{model="m"\} 4$/m);
    expect(text).toMatch(/^runtime_tool_call_seconds_count\{tool="record"\} 2$/m);
    expect(text).toMatch(/^runtime_tokens_total\{kind="prompt"\} [1-9]\d*$/m);
    expect(text).toMatch(/^runtime_worker_runs_running 0$/m);
    expect(text).not.toContain("metrics-token");
  });

  it("a Plan Tool race across worker processes loses no update", async () => {
    const url = await postgres.createDatabase("race");
    const store = await createStore(url);
    const n = 16;
    const planId = "race-plan";
    try {
      expect((await store.planTool().createPlan(planId, wideWorkflow(n))).ok).toBe(true);
    } finally {
      await store.close();
    }
    const effects = join(tempDir("effects-"), "effects.log");
    // Each run moves its own task through inprogress to completed, all runs at once on three workers.
    const model = await startOpenAIServer({
      respond: (body): Reply => {
        const task = `t${/job-(\d+)/.exec(JSON.stringify(body.messages))?.[1] ?? "0"}`;
        const done = toolMessages(body);
        if (done === 0)
          return {
            content: null,
            tool_calls: [{ name: "update_task_status", arguments: { plan_id: planId, task_id: task, status: "inprogress" } }],
            delay_ms: 20,
          };
        if (done === 1)
          return {
            content: null,
            tool_calls: [{ name: "update_task_status", arguments: { plan_id: planId, task_id: task, status: "completed", result_summary: `done ${task}` } }],
          };
        return answer(`finished ${task}`);
      },
    });
    servers.push(model);
    const team = recordingTeam(model.url, effects, "[update_task_status]");
    const server = await serve(team, url);
    await Promise.all([worker(team, url), worker(team, url), worker(team, url)]);
    const results = await Promise.all(Array.from({ length: n }, (_, i) => post(server, `Work on job-${i + 1}.`)));
    for (const r of results) expect(r.events.at(-1)?.data).toMatchObject({ result_type: "answer" });

    const check = await createStore(url);
    try {
      const plan = await check.planTool().get_plan_structure(planId);
      expect(plan?.status).toBe("completed");
      expect(plan?.revision).toBe(2 * n);
      const tasks = plan?.steps.flatMap((s) => s.tasks) ?? [];
      expect(tasks.map((t) => `${t.task_id} ${t.status} ${t.result_summary}`).sort()).toEqual(
        Array.from({ length: n }, (_, i) => `t${i + 1} completed done t${i + 1}`).sort(),
      );
    } finally {
      await check.close();
    }
  });

  it("refuses a worker without a PostgreSQL store, and a store that does not answer, in one line", async () => {
    const team = join(ROOT, "teams", "circle-react.yaml");
    const none = start(["worker", team]);
    expect(await none.exited).toBe(2);
    expect(none.log()).toMatch(/^runtime worker: a worker takes runs from PostgreSQL: give --store/);
    // A store that does not answer (yet) is waited for, in one line per try (test/queue/start-waits.test.ts), until SIGTERM.
    const dead = start(["worker", team, "--store", `postgres://u:pw-secret@127.0.0.1:${postgres.port + 7}/x`]);
    await waitFor("the worker's waiting line", () => dead.log().includes("is not reachable") || undefined, 20_000, dead);
    dead.child.kill("SIGTERM");
    expect(await dead.exited).toBe(0);
    expect(dead.log()).toMatch(/^runtime worker: PostgreSQL at postgres:\/\/u:\*\*\*@127\.0\.0\.1:\d+\/x is not reachable \(/);
    expect(dead.log()).not.toContain("pw-secret");
  });
});
