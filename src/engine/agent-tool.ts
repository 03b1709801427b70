import type { AgentConfig } from "../config/types.js";
import type { Tool } from "../tools/types.js";
import type { AgentResult } from "../kinds/types.js";
import { prefixed, toRuntimeError } from "../errors.js";

/** Run a named agent as a child of the calling step, under the given signal. */
export type CallAgentFromTool = (name: string, query: string, signal: AbortSignal) => Promise<AgentResult>;

/** Hours, not seconds: a child agent is bounded by its own max_iteration and the caller's signal. */
const AGENT_TOOL_TIMEOUT_MS = 60 * 60 * 1000;

/**
 * Offer an agent to another agent's model as a tool: `{query}` in, its answer
 * out. A child that ends in error becomes a failed tool result the caller's
 * model can react to.
 */
export function agentAsTool(agent: AgentConfig, call: CallAgentFromTool): Tool {
  return {
    name: agent.name,
    description: agent.description || `Ask the '${agent.name}' agent (${agent.kind}) and get its answer.`,
    parameters: {
      type: "object",
      properties: { query: { type: "string", description: "The request for the agent, self-contained." } },
      required: ["query"],
      additionalProperties: false,
    },
    // What the agent does is journalled under its own step: a resume runs it again, and it goes over
    // its journal call by call (so later agents it calls keep their keys, and a replay shows its events).
    effect: "idempotent",
    replay: "rerun",
    timeout_ms: AGENT_TOOL_TIMEOUT_MS,
    max_output_bytes: 262_144,
    async execute(args, ctx) {
      const result = await call(agent.name, String(args.query), ctx.signal);
      if (result.result_type === "error") throw toRuntimeError(prefixed(`agent ${agent.name} failed: `, result.error));
      return result.answer ?? "";
    },
  };
}
