/**
 * Started beside the database (docs/scale-out.md#when-the-database-goes-away):
 * a `runtime worker` and a `runtime serve --store` started while PostgreSQL
 * is down wait for it, one line per try, and start when it comes up; a
 * SIGTERM ends the wait with status 0; an error that waiting would not mend
 * (an unknown role or database) stands at once.
 */
import { describe, expect, it, vi } from "vitest";
import { startOpenAIServer } from "../support/openai-server.js";
import { usePostgres } from "../support/postgres.js";
import { tempDir } from "../support/team.js";
import { answer, post, type Proc, recordingTeam, STACK_FRAME, start, useFleet, waitFor } from "../support/scale-out.js";

vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 });

const postgres = usePostgres();

const servers = useFleet();

/** The line said per failed try, by `command`, naming the database without a password. */
const waiting = (command: string) =>
  new RegExp(
    `^runtime ${command}: PostgreSQL at postgres://postgres@127\\.0\\.0\\.1:${postgres.port}/\\w+ is not reachable \\(.+\\); trying again in \\d+\\.\\d s$`,
    "m",
  );

/** A worker and a server of one team on `url`, started without waiting for them to be up. */
async function fleet(url: string, workerArgs: string[] = []): Promise<{ worker: Proc; server: Proc }> {
  const model = await startOpenAIServer({ respond: () => answer("done") });
  servers.push(model);
  const team = recordingTeam(model.url, `${tempDir("effects-")}/effects.log`);
  return {
    worker: start(["worker", team, "--store", url, "--lease-ms", "5000", ...workerArgs]),
    server: start(["serve", team, "--store", url, "--port", "0"]),
  };
}

/** Until the worker and the server have each said they wait for PostgreSQL. */
async function bothWaiting(worker: Proc, server: Proc): Promise<void> {
  for (const [command, proc] of [
    ["worker", worker],
    ["serve", server],
  ] as const)
    await waitFor(
      () => `the ${command}'s waiting line: ${proc.log()}`,
      () => waiting(command).test(proc.log()) || undefined,
      20_000,
      proc,
    );
}

const exitOf = (proc: Proc, what: string) =>
  Promise.race([proc.exited, new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`${what} did not exit: ${proc.log()}`)), 15_000))]);

describe("a worker or server started while PostgreSQL is down", () => {
  it("waits, saying so, and takes runs once PostgreSQL is up", async () => {
    const url = await postgres.createDatabase("waits");
    await postgres.down();
    let down = true;
    try {
      const { worker, server } = await fleet(url, ["--port", "0", "--token", "metrics-token-0123456789"]);
      await bothWaiting(worker, server);
      expect(worker.log()).not.toContain("takes runs of");
      // Waiting, the worker is alive and not ready.
      const ops = /metrics on (http:\/\/[^\s(]+)/.exec(worker.log())?.[1];
      expect((await fetch(`${ops}/healthz`)).status).toBe(200);
      expect((await fetch(`${ops}/readyz`)).status).toBe(503);
      await postgres.up();
      down = false;
      await waitFor(
        () => `the worker to start: ${worker.log()}`,
        () => worker.log().includes("takes runs of") || undefined,
        30_000,
        worker,
      );
      const open = await waitFor(
        () => `the server to start: ${server.log()}`,
        () => /open (http:\/\/[^/\s]+)\/\?token=([^;\s]+)/.exec(server.log()) ?? undefined,
        30_000,
        server,
      );
      const { events } = await post({ url: open[1]!, token: decodeURIComponent(open[2]!) }, "Please answer job-1.");
      expect(events.at(-1)?.data, worker.log()).toMatchObject({ type: "run.finished", result_type: "answer", answer: "done" });
      // The worker records the run's end after its last event went out.
      await waitFor(
        () => `the worker to record the run: ${worker.log()}`,
        () => /^runtime worker: run \S+ answer$/m.test(worker.log()) || undefined,
      );
      expect((await fetch(`${ops}/readyz`)).status).toBe(200);

      worker.child.kill("SIGTERM");
      server.child.kill("SIGTERM");
      expect(await exitOf(worker, "the worker")).toBe(0);
      expect(await exitOf(server, "the server")).toBe(0);
      for (const p of [worker, server]) expect(p.log(), p.log()).not.toMatch(STACK_FRAME);
    } finally {
      if (down) await postgres.up();
    }
  });

  it("stops with status 0 and no stack trace on SIGTERM while waiting", async () => {
    const url = await postgres.createDatabase("stops");
    await postgres.down();
    try {
      const { worker, server } = await fleet(url);
      await bothWaiting(worker, server);
      worker.child.kill("SIGTERM");
      server.child.kill("SIGTERM");
      expect(await exitOf(worker, "the worker")).toBe(0);
      expect(await exitOf(server, "the server")).toBe(0);
      expect(worker.log().trimEnd().split("\n").at(-1)).toBe("runtime worker: stopped");
      expect(server.log().trimEnd().split("\n").at(-1)).toBe("runtime serve: stopping");
      for (const [command, p] of [
        ["worker", worker],
        ["serve", server],
      ] as const) {
        expect(p.log(), p.log()).not.toMatch(STACK_FRAME);
        // Nothing but the waiting lines before the last.
        const before = p.log().trimEnd().split("\n").slice(0, -1);
        expect(before.length).toBeGreaterThan(0);
        expect(
          before.filter((line) => !waiting(command).test(line)),
          p.log(),
        ).toEqual([]);
      }
    } finally {
      await postgres.up();
    }
  });

  it("exits at once, in one line, on an error waiting would not mend: an unknown role, an unknown database", async () => {
    const model = await startOpenAIServer({ respond: () => answer("done") });
    servers.push(model);
    const team = recordingTeam(model.url, `${tempDir("effects-")}/effects.log`);
    const cases: [string, RegExp][] = [
      [`postgres://nobody:secret-password@127.0.0.1:${postgres.port}/postgres`, /role "nobody" does not exist/],
      [`postgres://postgres@127.0.0.1:${postgres.port}/no_such_database`, /database "no_such_database" does not exist/],
    ];
    const runs = cases.flatMap(([url, said]) =>
      (["worker", "serve"] as const).map((command) => ({
        command,
        said,
        proc: start([command, team, "--store", url, ...(command === "serve" ? ["--port", "0"] : [])]),
      })),
    );
    for (const { command, said, proc } of runs) {
      expect(await exitOf(proc, command)).toBe(1);
      const lines = proc.log().trimEnd().split("\n");
      expect(lines, proc.log()).toHaveLength(1);
      expect(lines[0]).toMatch(new RegExp(`^runtime ${command}: `));
      expect(lines[0]).toMatch(said);
      expect(lines[0]).not.toContain("secret-password");
      expect(proc.log()).not.toMatch(waiting(command));
    }
  });
});
