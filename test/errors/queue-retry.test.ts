/**
 * A queued run's retry is decided by its error's code (src/queue/worker.ts,
 * `retried`): a run that failed on its store (STORE) goes back to the queue
 * and resumes; a run that failed for any other reason ends. A real
 * PostgreSQL, a worker in this process, the project's OpenAI-compatible
 * test server.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { RuntimeError } from "../../src/errors.js";
import { loadTeam } from "../../src/index.js";
import { createChatClient } from "../../src/models/factory.js";
import type { ModelConfig } from "../../src/config/types.js";
import { RunQueue } from "../../src/queue/run-queue.js";
import { MAX_ATTEMPTS, retried, startWorker } from "../../src/queue/worker.js";
import { createStore } from "../../src/store/create.js";
import type { Store } from "../../src/store/store.js";
import { startOpenAIServer, type OpenAIServer } from "../support/openai-server.js";
import { startPostgres, type TestPostgres } from "../support/postgres.js";
import { reactReply, writeTeam } from "../support/team.js";

vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 });

let postgres: TestPostgres;
let model: OpenAIServer;
beforeAll(async () => {
  postgres = await startPostgres();
  model = await startOpenAIServer({ respond: () => ({ content: reactReply("ANSWER", { answer: "42" }) }) });
});
afterAll(async () => {
  await model?.close();
  await postgres?.stop();
});

/** Runs `task_id` on a worker whose model client fails with `code` the first `failures` times; its state and attempts after. */
async function queued(
  task_id: string,
  code: "STORE" | "MODEL_UNAVAILABLE",
  failures: number,
  /** Claims before this worker's, by workers that died holding the run. */
  priorClaims = 0,
): Promise<{ state: string | undefined; attempts: number; result_type: string }> {
  const team = await loadTeam(
    writeTeam(`version: 1
name: retry
models:
  default: { provider: openai, model: m, base_url: "${model.url}", api_key: sk-retry-0123456789, max_retries: 0 }
agents:
  solver: { kind: react }
`),
  );
  const store: Store = await createStore(postgres.url);
  const queue = await RunQueue.open(store, [team.name]);
  let made = 0;
  const createClient = (config: ModelConfig) => {
    if (made++ < failures) throw new RuntimeError(code, `the ${code === "STORE" ? "database" : "model"} is away`);
    return createChatClient(config);
  };
  const worker = await startWorker({ store, teams: [team], pollMs: 50, leaseMs: 5_000, runOptions: { createClient } });
  try {
    await queue.enqueue({ task_id, team: team.name, input: "q" });
    if (priorClaims) await store.database!.pool.query("UPDATE runtime.run_requests SET attempts = $2 WHERE task_id = $1", [task_id, priorClaims]);
    for (let i = 0; i < 400 && (await queue.stateOf(task_id)) !== "done"; i++) await new Promise((r) => setTimeout(r, 50));
    const { rows } = await store.database!.pool.query<{ state: string; attempts: number; result_type: string }>(
      "SELECT state, attempts, result_type FROM runtime.run_requests WHERE task_id = $1",
      [task_id],
    );
    return { state: rows[0]?.state, attempts: rows[0]?.attempts ?? 0, result_type: rows[0]?.result_type ?? "" };
  } finally {
    await worker.stop({ graceMs: 1_000 });
    await queue.close();
    await store.close();
  }
}

describe("a queued run's retry, by code", () => {
  it("a run that failed on its store (STORE) is queued again and resumes to its answer", async () => {
    expect(await queued("retry-store-1", "STORE", 1)).toEqual({ state: "done", attempts: 2, result_type: "answer" });
  });

  it("a run that failed for another reason (MODEL_UNAVAILABLE) ends at its first attempt", async () => {
    expect(await queued("retry-model-1", "MODEL_UNAVAILABLE", 1)).toEqual({ state: "done", attempts: 1, result_type: "error" });
  });

  it("a store that keeps failing stops the retries after MAX_ATTEMPTS: the last failure ends the run", async () => {
    expect(retried("STORE", 0)).toBe(true);
    expect(retried("STORE", MAX_ATTEMPTS - 2)).toBe(true);
    expect(retried("STORE", MAX_ATTEMPTS - 1)).toBe(false);
    expect(retried("TOOL_FAILED", 0)).toBe(false);
    expect(retried(undefined, 0)).toBe(false);
    expect(await queued("retry-store-all", "STORE", MAX_ATTEMPTS)).toEqual({ state: "done", attempts: MAX_ATTEMPTS, result_type: "error" });
    expect(await queued("retry-store-most", "STORE", MAX_ATTEMPTS - 1)).toEqual({ state: "done", attempts: MAX_ATTEMPTS, result_type: "answer" });
  });

  it("claims after workers died are not store failures: a run claimed many times still gets its retries", async () => {
    expect(await queued("retry-after-kills", "STORE", 1, 7)).toEqual({ state: "done", attempts: 9, result_type: "answer" });
  });
});
