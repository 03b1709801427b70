/**
 * The adapters every port's suite runs against (test/store/<port>.test.ts,
 * the way Hono runs one router suite over each router): the embedded SQLite
 * store in a new temporary directory, and PostgreSQL in a new database of a
 * real server the file starts (test/support/postgres.ts).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, vi } from "vitest";
import { createStore } from "../../src/store/create.js";
import { closePlanTool } from "../../src/store/sqlite/store.js";
import type { Store } from "../../src/store/store.js";
import { startPostgres, type TestPostgres } from "./postgres.js";

export interface Adapter {
  name: "sqlite" | "postgres";
  /** A new, empty store, closed after the test. */
  open(): Promise<Store>;
}

let postgres: TestPostgres | undefined;
let databases = 0;
const opened: Store[] = [];
const dirs: string[] = [];

/** Register the hooks of a suite file and give its adapters, for `describe.each(adapters())`. */
export function adapters(): Adapter[] {
  vi.setConfig({ testTimeout: 60_000, hookTimeout: 120_000 });
  beforeAll(async () => {
    postgres = await startPostgres();
  });
  afterEach(async () => {
    for (const store of opened.splice(0)) await store.close();
    for (const dir of dirs.splice(0)) {
      closePlanTool(dir);
      rmSync(dir, { recursive: true, force: true });
    }
  });
  afterAll(() => postgres?.stop());
  const keep = (store: Store) => {
    opened.push(store);
    return store;
  };
  return [
    {
      name: "sqlite",
      open: async () => {
        const dir = mkdtempSync(join(tmpdir(), "store-suite-"));
        dirs.push(dir);
        return keep(await createStore(dir));
      },
    },
    {
      name: "postgres",
      open: async () => {
        if (!postgres) throw new Error("PostgreSQL did not start");
        return keep(await createStore(await postgres.createDatabase(`suite${++databases}`)));
      },
    },
  ];
}
