/**
 * The PostgreSQL store (docs/scale-out.md#stores): one pool for the runs,
 * plans and todo sessions of a process, the schema migrated when it opens.
 */
import { PlanTool } from "../../plan/plan-tool.js";
import type { Store } from "../store.js";
import { createPool, safeUrl, storeError } from "./connect.js";
import { migrate } from "./migrations.js";
import { PostgresPlanStore } from "./plan-store.js";
import { PostgresRunStore } from "./run-store.js";
import { PostgresTodoSessions } from "./todo-sessions.js";
import { PostgresConversations } from "./conversations.js";
import { PostgresAttachments } from "./attachments.js";

export async function openPostgresStore(url: string, options: { maxConnections?: number } = {}): Promise<Store> {
  const pool = createPool(url, options.maxConnections !== undefined ? { max: options.maxConnections } : {});
  try {
    await migrate(pool);
  } catch (err) {
    await pool.end().catch(() => {});
    throw storeError(url, "cannot open the store", err);
  }
  const planTool = new PlanTool(new PostgresPlanStore(pool, url));
  const conversations = new PostgresConversations(pool, url);
  let closed: Promise<void> | undefined;
  const runs = new PostgresRunStore(pool, url);
  return {
    kind: "postgres",
    location: safeUrl(url),
    database: { pool, url },
    runs,
    planTool: () => planTool,
    todoSessions: () => new PostgresTodoSessions(pool, url),
    conversations: () => conversations,
    attachments: () => new PostgresAttachments(pool, url),
    ping: async () => {
      try {
        await pool.query("SELECT 1");
      } catch (err) {
        throw storeError(url, "the store does not answer", err);
      }
    },
    close: () => (closed ??= runs.close().then(() => pool.end())),
  };
}
