/**
 * A team served over MCP (docs/mcp.md): each agent (or one) is an MCP tool
 * taking `{query}`; a call is one run (`runTeam`), answered with the run's
 * answer, or its error with `isError`. A client that sends a progressToken
 * gets progress notifications from the run's events.
 */
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { CallToolResult, ServerNotification } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import type { ResolvedTeam } from "../config/types.js";
import { runTeam, type RunOptions, type RunResult } from "../engine/run-team.js";
import type { RunEvent } from "../events/types.js";
import { describeEvent } from "../events/describe.js";
import { ERROR_CODES, RuntimeError } from "../errors.js";

export interface TeamMcpServerOptions {
  /** Serve only this agent. @default every agent of the team */
  agent?: string;
  /** Trace directory of the runs. @default as runTeam */
  traceDir?: string;
  /** The server's version, as it introduces itself. */
  version: string;
  /** Extra run options (tests: ids, clock, model clients). */
  run?: Omit<RunOptions, "input" | "agent" | "traceDir" | "signal" | "sinks">;
}

/** The MCP servers of a team, sharing their runs. */
export interface TeamMcpServers {
  /** A server to connect to a transport: one for stdio, one per session over Streamable HTTP (its runs recorded as `caller`'s). */
  create(caller?: string): McpServer;
  /** Resolves once no run is going (their traces written). */
  idle(): Promise<void>;
}

/** The MCP server of a team, for `runtime mcp` over stdio or Streamable HTTP (src/server/mcp-http.ts). */
export function teamMcpServer(team: ResolvedTeam, options: TeamMcpServerOptions): TeamMcpServers {
  const agents = options.agent !== undefined ? [options.agent] : Object.keys(team.agents);
  for (const name of agents) {
    if (!team.agents[name]) throw new RuntimeError("NOT_FOUND", `unknown agent '${name}' (agents: ${Object.keys(team.agents).join(", ")})`);
  }
  const runs = new Set<Promise<RunResult>>();
  return {
    create: (caller) => serverOf(team, agents, caller === undefined ? options : { ...options, run: { ...options.run, caller } }, runs),
    // Runs still going (their trace being written) when the client went away.
    idle: async () => {
      while (runs.size > 0) await Promise.allSettled([...runs]);
    },
  };
}

function serverOf(team: ResolvedTeam, agents: string[], options: TeamMcpServerOptions, runs: Set<Promise<RunResult>>): McpServer {
  const server = new McpServer({ name: team.name, version: options.version }, { instructions: instructions(team) });
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
        // Each notification is sent before the result: a client drops progress that comes after it.
        let sent: Promise<unknown> = Promise.resolve();
        const notify = (event: RunEvent): void => {
          if (token === undefined) return;
          const message = describeEvent(event);
          if (message === undefined) return;
          const notification: ServerNotification = { method: "notifications/progress", params: { progressToken: token, progress: ++progress, message } };
          sent = Promise.all([sent, extra.sendNotification(notification).catch(() => undefined)]);
        };
        const run = runTeam(team, {
          ...options.run,
          input: query,
          agent: name,
          ...(options.traceDir !== undefined ? { traceDir: options.traceDir } : {}),
          signal: extra.signal,
          sinks: [notify],
        });
        runs.add(run.result);
        const result = await run.result.finally(() => runs.delete(run.result));
        await sent;
        return resultOf(result);
      },
    );
  }
  return server;
}

/**
 * The call's answer: the run's answer; its error with `isError`; or, for a
 * run paused for approval, how to continue it (docs/mcp.md#approvals-and-budgets).
 */
function resultOf(result: RunResult): CallToolResult {
  const waiting = [...new Set(result.approvals?.map((a) => a.tool))];
  const text =
    result.result_type === "answer"
      ? (result.answer ?? "")
      : result.result_type === "paused"
        ? `run ${result.task_id} is paused, waiting for approval of ${waiting.join(", ") || "a tool call"}: decide with \`runtime approve ${result.task_id}\` (or the page and approvals API of \`runtime serve\`), then \`runtime resume ${result.task_id}\``
        : `run failed: ${result.error?.message ?? "unknown error"}`;
  return {
    content: [{ type: "text", text }],
    structuredContent: {
      task_id: result.task_id,
      result_type: result.result_type,
      ...(result.answer !== undefined ? { answer: result.answer } : {}),
      ...(result.error !== undefined ? { error: result.error.message, error_code: result.error.code } : {}),
      ...(result.result_type === "paused" ? { waiting_for: waiting } : {}),
    },
    ...(result.result_type === "error" || result.result_type === "blocked" ? { isError: true } : {}),
  };
}

function instructions(team: ResolvedTeam): string {
  const about = team.description ? `${team.description} ` : "";
  return `${about}Each tool is an agent of the team '${team.name}': give it a self-contained request as \`query\`; it answers with the agent's final answer.`;
}

/** A short line for the events worth a progress notification; undefined for the rest (streamed tokens, say). */
export function progressMessage(event: RunEvent): string | undefined {
  switch (event.type) {
    case "run.started":
      return "run started";
    case "agent.started":
      return `${event.agent_id} started (${event.kind})`;
    case "agent.finished":
      return `${event.agent_id} ${event.result_type === "answer" ? "answered" : "failed"}`;
    case "state.changed":
      return `${event.agent_id}: ${event.to}`;
    case "recursion.started":
      return `${event.agent_id}: round ${event.iteration}`;
    case "llm.request":
      return `${event.agent_id} asks the model ${event.model}`;
    case "tool.started":
      return `${event.agent_id} calls ${event.tool}`;
    case "tool.finished":
      return `${event.tool} ${event.ok ? "done" : "failed"}`;
    case "plan.created":
    case "plan.updated":
      return `plan: ${event.steps.length} step${event.steps.length === 1 ? "" : "s"}`;
    case "todo.updated":
    case "todo.completed": {
      const done = event.todos.filter((t) => t.status === "completed").length;
      return `todo list: ${done}/${event.todos.length} done`;
    }
    case "run.finished":
      return event.result_type === "answer" ? "run answered" : "run failed";
    default:
      return undefined;
  }
}
