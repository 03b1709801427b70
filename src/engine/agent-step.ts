import type { ModelConfig, ResolvedTeam } from "../config/types.js";
import { describeError } from "../errors.js";
import type { EventBus } from "../events/bus.js";
import { ZERO_USAGE, type EventScope } from "../events/types.js";
import type { ChatClient } from "../models/types.js";
import { createToolBox } from "../tools/toolbox.js";
import type { Tool } from "../tools/types.js";
import { AGENT_RUNNERS } from "./kinds.js";
import { resolveTools } from "./resolve-tools.js";
import type { AgentContext, AgentResult } from "./types.js";

/** Agents calling agents deeper than this are refused (cycles are already refused at load time). */
const MAX_DEPTH = 16;

/** What every step of one run shares. */
export interface RunShared {
  team: ResolvedTeam;
  bus: EventBus;
  task_id: string;
  session_id: string;
  trace_dir: string;
  client(model: ModelConfig): ChatClient;
  toolCache: Map<string, Tool>;
  /** Steps still running; the run waits for all of them before it finishes. */
  inflight: Set<Promise<unknown>>;
  newId(): string;
  now(): Date;
}

/**
 * Run one agent of the team as one step: emit `agent.started`, hand an
 * AgentContext to the kind's runner, emit `agent.finished`. Never throws:
 * a bug in a runner becomes an error result with a one-line message.
 */
export function runAgentStep(
  run: RunShared,
  name: string,
  input: string,
  signal: AbortSignal,
  parent?: { step_id: string; depth: number },
): Promise<AgentResult> {
  const step = runStep(run, name, input, signal, parent);
  run.inflight.add(step);
  void step.finally(() => run.inflight.delete(step));
  return step;
}

async function runStep(
  run: RunShared,
  name: string,
  input: string,
  signal: AbortSignal,
  parent?: { step_id: string; depth: number },
): Promise<AgentResult> {
  const agent = run.team.agents[name];
  const step_id = run.newId();
  const scope: EventScope = { agent_id: name, step_id, ...(parent ? { parent_step_id: parent.step_id } : {}) };
  const depth = (parent?.depth ?? -1) + 1;
  if (!agent) return { result_type: "error", error: `unknown agent '${name}'`, usage: ZERO_USAGE };

  run.bus.emit({ type: "agent.started", kind: agent.kind, input }, scope);
  const finish = (result: AgentResult): AgentResult => {
    run.bus.emit({ type: "agent.finished", ...result }, scope);
    return result;
  };
  const runner = AGENT_RUNNERS[agent.kind];
  if (!runner) return finish(failed(`agent kind '${agent.kind}' is not available in this build`));
  if (depth > MAX_DEPTH) return finish(failed(`agents nested deeper than ${MAX_DEPTH} levels`));

  const child = (childName: string, query: string, childSignal: AbortSignal) =>
    runAgentStep(run, childName, query, childSignal, { step_id, depth });

  const ctx: AgentContext = {
    team: run.team,
    agent,
    scope,
    task_id: run.task_id,
    session_id: run.session_id,
    signal,
    trace_dir: run.trace_dir,
    emit: (body, extra) => run.bus.emit(body, extra?.trace_id ? { ...scope, trace_id: extra.trace_id } : scope),
    model(modelName = agent.model) {
      const config = run.team.models[modelName];
      if (!config) throw new Error(`unknown model '${modelName}'`);
      return run.client(config);
    },
    tools(extra = []) {
      const tools = resolveTools({
        team: run.team,
        agent,
        trace_dir: run.trace_dir,
        callAgent: child,
        extra,
        cache: run.toolCache,
      });
      return createToolBox({
        tools,
        allow: agent.tools,
        scope,
        emit: (body, s) => run.bus.emit(body, s),
        signal,
      });
    },
    callAgent: (childName, query) => child(childName, query, signal),
    newId: run.newId,
    now: run.now,
  };

  try {
    return finish(await runner(ctx, input));
  } catch (err) {
    return finish(failed(`agent ${name} failed: ${describeError(err)}`));
  }
}

function failed(error: string): AgentResult {
  return { result_type: "error", error, usage: ZERO_USAGE };
}
