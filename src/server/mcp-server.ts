/**
 * A team served over MCP (docs/mcp.md): each agent (or one) is an MCP tool
 * taking `{query}`; a call is one run started through `launchRun`, the one
 * launch path of every protocol (queued for workers on PostgreSQL, counted
 * against the run limits, listed, traced, owned by the caller), followed
 * through the store to its run.finished and answered with the run's answer,
 * or its error with `isError`. A client that sends a progressToken gets
 * progress notifications from the run's events.
 */
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { CallToolResult, ServerNotification } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import type { ResolvedTeam } from "../config/types.js";
import type { RunEvent } from "../events/types.js";
import { describeEvent } from "../events/describe.js";
import { ERROR_CODES, RuntimeError } from "../errors.js";
import { follow } from "../store/follow.js";
import type { Caller } from "./auth.js";
import { launchRun, type ServerContext } from "./runs-api.js";

export interface TeamMcpServerOptions {
  /** Serve only this agent. @default every agent of the team */
  agent?: string;
  /** The server's version, as it introduces itself. */
  version: string;
}

/** The MCP servers of a team, sharing their runs. */
export interface TeamMcpServers {
  /** A server to connect to a transport: one for stdio, one per session over Streamable HTTP, its runs `caller`'s. */
  create(caller: Caller): McpServer;
  /** Resolves once no call is being answered (their runs ended and stored). */
  idle(): Promise<void>;
}

type RunFinished = Extract<RunEvent, { type: "run.finished" }>;

/** The MCP server of a team, for `runtime mcp` over stdio and MCP at `/mcp` of the HTTP app (src/server/mcp-http.ts). */
export function teamMcpServer(ctx: ServerContext, options: TeamMcpServerOptions): TeamMcpServers {
  const { team } = ctx;
  const agents = options.agent !== undefined ? [options.agent] : Object.keys(team.agents);
  for (const name of agents) {
    if (!team.agents[name]) throw new RuntimeError("NOT_FOUND", `unknown agent '${name}' (agents: ${Object.keys(team.agents).join(", ")})`);
  }
  const calls = new Set<Promise<unknown>>();
  return {
    create: (caller) => serverOf(ctx, caller, agents, options.version, calls),
    idle: async () => {
      while (calls.size > 0) await Promise.allSettled([...calls]);
    },
  };
}

function serverOf(ctx: ServerContext, caller: Caller, agents: string[], version: string, calls: Set<Promise<unknown>>): McpServer {
  const { team } = ctx;
  const server = new McpServer({ name: team.name, version }, { instructions: instructions(team) });
  for (const name of agents) {
    const agent = team.agents[name]!;
    server.registerTool(
      name,
      {
        title: `${team.name}: ${name}`,
        description: agent.description || `Ask the '${name}' agent (${agent.kind}) of the team '${team.name}' and get its answer.`,
        inputSchema: { query: z.string().min(1).describe("The request for the agent, self-contained.") },
        outputSchema: {
          task_id: z.string().describe("The run's task id (`runtime trace TASK_ID`)."),
          result_type: z.enum(["answer", "error", "paused", "blocked"]),
          answer: z.string().optional(),
          error: z.string().optional(),
          error_code: z.enum(ERROR_CODES).optional().describe("Why the run failed, as a code (docs/events.md#error-codes)."),
          waiting_for: z.array(z.string()).optional().describe("A paused run: the tools whose calls wait for approval."),
        },
        annotations: { openWorldHint: true },
      },
      async ({ query }, extra): Promise<CallToolResult> => {
        const token = extra._meta?.progressToken;
        let progress = 0;
        const notify = async (event: RunEvent): Promise<void> => {
          const message = token === undefined ? undefined : describeEvent(event);
          if (message === undefined) return;
          const notification: ServerNotification = { method: "notifications/progress", params: { progressToken: token!, progress: ++progress, message } };
          // Each notification is sent before the result: a client drops progress that comes after it.
          await extra.sendNotification(notification).catch(() => undefined);
        };
        const call = answer(ctx, caller, name, query, extra.signal, notify);
        calls.add(call);
        return call.finally(() => calls.delete(call));
      },
    );
  }
  return server;
}

/** Launch the run of one call and follow it to its end; the call's cancellation cancels a run of this process. */
async function answer(
  ctx: ServerContext,
  caller: Caller,
  agent: string,
  query: string,
  signal: AbortSignal,
  notify: (event: RunEvent) => Promise<void>,
): Promise<CallToolResult> {
  const run = await launchRun({ ...ctx, caller }, { input: query, agent });
  const cancel = () => run.cancel?.();
  signal.addEventListener("abort", cancel, { once: true });
  try {
    // A call cancelled (the client's cancellation, its session closed) stops following; the run of this process ends interrupted.
    for await (const { event } of follow(ctx.store, run.task_id, 0, { more: run.more, signal })) {
      await notify(event);
      if (event.type === "run.finished") return resultOf(run.task_id, event);
    }
  } finally {
    signal.removeEventListener("abort", cancel);
  }
  throw new RuntimeError("STORE", `run ${run.task_id} ended without its run.finished`);
}

/**
 * The call's answer: the run's answer; its error with `isError`; or, for a
 * run paused for approval, how to continue it (docs/mcp.md#approvals-and-budgets).
 */
function resultOf(taskId: string, finished: RunFinished): CallToolResult {
  const waiting = [...new Set(finished.approvals?.map((a) => a.tool))];
  const text =
    finished.result_type === "answer"
      ? (finished.answer ?? "")
      : finished.result_type === "paused"
        ? `run ${taskId} is paused, waiting for approval of ${waiting.join(", ") || "a tool call"}: decide with \`runtime approve ${taskId}\` (or the page and approvals API of \`runtime serve\`), then \`runtime resume ${taskId}\``
        : `run failed: ${finished.error ?? "unknown error"}`;
  return {
    content: [{ type: "text", text }],
    structuredContent: {
      task_id: taskId,
      result_type: finished.result_type,
      ...(finished.answer !== undefined ? { answer: finished.answer } : {}),
      ...(finished.error !== undefined ? { error: finished.error } : {}),
      ...(finished.error_code !== undefined ? { error_code: finished.error_code } : {}),
      ...(finished.result_type === "paused" ? { waiting_for: waiting } : {}),
    },
    ...(finished.result_type === "error" || finished.result_type === "blocked" ? { isError: true } : {}),
  };
}

function instructions(team: ResolvedTeam): string {
  const about = team.description ? `${team.description} ` : "";
  return `${about}Each tool is an agent of the team '${team.name}': give it a self-contained request as \`query\`; it answers with the agent's final answer.`;
}
