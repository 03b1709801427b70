/**
 * One agent step (docs/design/engine.md#steps): `agent.started`, the kind's
 * runner with an AgentContext whose services are the engine's, then
 * `agent.finished`. Agents called by agents are child steps of their caller.
 */
import type { AgentConfig, JsonSchema, ModelConfig, ResolvedTeam } from "../config/types.js";
import { RuntimeError, runErrorOf, type ErrorCode } from "../errors.js";
import { recursionScopes, type EventBus } from "../events/bus.js";
import { addUsage } from "../events/usage.js";
import { ZERO_USAGE, type EventScope, type RunEventBody, type Usage } from "../events/types.js";
import { KINDS } from "../kinds/registry.js";
import type { Attachment } from "../models/attachment.js";
import type { AgentContext, AgentResult, AgentRunner, Outcome, RunStores } from "../kinds/types.js";
import type { ChatClient } from "../models/types.js";
import type { McpServers } from "../tools/mcp/servers.js";
import { createToolBox, type ToolJournal } from "../tools/toolbox.js";
import type { Approvals } from "./approvals.js";
import type { Exchange } from "../store/conversations.js";
import type { Tool, ToolBox } from "../tools/types.js";
import { accountsFor, type Account } from "./budget.js";
import { StepKeys, type Journal } from "./journal.js";
import { ContextFit } from "./context-fit.js";
import { callModel } from "./model-call.js";
import { prepareTools, resolveTools } from "./resolve-tools.js";
import { stateObserver } from "./state-reporter.js";
import { StepGuards, type Blocked } from "../guardrails/guard.js";
import { judge } from "../guardrails/judge.js";

/** What a guardrail's judge is told it judges. */
const WHAT = {
  input: "the request an agent was given",
  output: "an agent's answer",
  tool_input: "the arguments of a tool call",
  tool_output: "the result of a tool call",
};

/** Agents calling agents deeper than this are refused (cycles are already refused at load time). */
const MAX_DEPTH = 16;

/** What every step of one run shares. */
export interface RunShared {
  team: ResolvedTeam;
  bus: EventBus;
  journal: Journal;
  task_id: string;
  session_id: string;
  /** The caller named the session (docs/sessions.md). */
  inSession: boolean;
  /** The conversation the caller gave (`RunOptions.history`). */
  history?: readonly Exchange[];
  /** The files the run was given (`RunOptions.attachments`). */
  attachments?: readonly Attachment[];
  trace_dir: string;
  /** Plans and todo sessions (the run's store, or the embedded ones under trace_dir). */
  stores: RunStores;
  client(model: ModelConfig): ChatClient;
  toolCache: Map<string, Tool>;
  /** Tools given to `runTeam` in code, by name. */
  providedTools: ReadonlyMap<string, Tool>;
  /** The run's MCP servers, started as steps need them (src/tools/mcp/servers.ts). */
  mcp: McpServers;
  /** Models found unavailable in this run (src/engine/model-call.ts). */
  unavailableModels: Set<string>;
  /** The team's budget account, when it has one (src/engine/budget.ts). */
  accounts: readonly Account[];
  /** Calls waiting for a person (src/engine/approvals.ts). */
  approvals: Approvals;
  /** Steps still running; the run waits for all of them before it finishes. */
  inflight: Set<Promise<unknown>>;
  /** The guardrail that blocked the run (docs/guardrails.md): no model or tool call starts after it. */
  blocked?: Blocked;
  newId(): string;
  now(): Date;
}

/** The calling step, for a child step. */
interface Parent {
  step_id: string;
  depth: number;
  keys: StepKeys;
  /** The schema the caller expects the child's answer to match. */
  expects?: JsonSchema;
  /** The budget accounts the caller spends from. */
  accounts: readonly Account[];
}

/**
 * Run one agent of the team as one step. Never throws: a bug in a runner
 * becomes an error result with a one-line message.
 */
export function runAgentStep(run: RunShared, name: string, input: string, signal: AbortSignal, parent?: Parent): Promise<AgentResult> {
  const step = runStep(run, name, input, signal, parent);
  run.inflight.add(step);
  void step.finally(() => run.inflight.delete(step));
  return step;
}

/**
 * One step in four named parts (docs/design/engine.md#steps): open it (ids,
 * `agent.started`, dispatch), give it the engine's services, run its kind
 * under the input guardrails, and settle its result.
 */
async function runStep(run: RunShared, name: string, input: string, signal: AbortSignal, parent?: Parent): Promise<AgentResult> {
  const opened = await openStep(run, name, input, parent);
  if ("ended" in opened) return opened.ended;
  const step = opened;
  const services = stepServices(run, step, signal, parent);
  try {
    await prepareTools(run.team, step.agent, run.toolCache, run.mcp, signal);
    const given = await checkInput(services.guards, input);
    return await settle(step, services, await step.runner(agentContext(run, step, services, signal, parent), given));
  } catch (err) {
    return settle(step, services, { result_type: "error", error: runErrorOf(err, `agent ${name} failed`) });
  }
}

/** A step once opened: who runs it, where its events go, how it ends. */
interface OpenStep {
  name: string;
  agent: AgentConfig;
  runner: AgentRunner;
  keys: StepKeys;
  step_id: string;
  depth: number;
  scope: EventScope;
  /** Emits one of the step's events, unless a resumed step is going over what it did before (they are in the store already). */
  out(body: RunEventBody, at: EventScope): void;
  /** Emits `agent.finished` with the result, and returns it. */
  finish(result: AgentResult): AgentResult;
}

/** Steps 1–3: the step's ids and scope, `agent.started`, and the dispatch to its kind's runner; or the error it ends with at once. */
async function openStep(run: RunShared, name: string, input: string, parent: Parent | undefined): Promise<OpenStep | { ended: AgentResult }> {
  const agent = run.team.agents[name];
  const keys = new StepKeys(parent ? parent.keys.nextChild() : "0");
  const replay = run.journal.replay;
  // A resumed step keeps its id, so its events before and after the resume are one step's.
  const step_id = replay?.stepId(keys.key) ?? run.newId();
  const scope: EventScope = { agent_id: name, step_id, ...(parent ? { parent_step_id: parent.step_id } : {}) };
  const depth = (parent?.depth ?? -1) + 1;
  if (!agent) return { ended: failed("NOT_FOUND", `unknown agent '${name}'`) };
  run.journal.stepStarted(keys.key, step_id, name);
  // What a deny or pii guardrail finds is masked in the step's events (src/guardrails/event-mask.ts);
  // its code (and the pii finder's) loads with the first step that has one.
  const spans = agent.guardrails?.some((g) => g.check.kind === "deny" || g.check.kind === "pii");
  const masked = spans ? (await import("../guardrails/event-mask.js")).EventMask.of(agent.guardrails) : undefined;
  const out = (body: RunEventBody, at: EventScope): void => {
    if (replay?.replaying(keys.key)) return;
    for (const each of masked ? masked.apply(body, at.trace_id) : [body]) run.bus.emit(each, at);
  };
  out({ type: "agent.started", kind: agent.kind, input }, scope);
  const finish = (result: AgentResult): AgentResult => {
    const { error, ...rest } = result;
    out({ type: "agent.finished", ...rest, ...(error ? { error: error.message, error_code: error.code } : {}) }, scope);
    return result;
  };
  // Dispatch is the one place a kind is looked at; the runner gets its own config type.
  const runner = KINDS[agent.kind]?.run as AgentRunner | undefined;
  if (!runner) return { ended: finish(failed("CONFIG_INVALID", `agent kind '${agent.kind}' is not available in this build`)) };
  if (depth > MAX_DEPTH) return { ended: finish(failed("CONFIG_INVALID", `agents nested deeper than ${MAX_DEPTH} levels`)) };
  return { name, agent, runner, keys, step_id, depth, scope, out, finish };
}

/** The engine's services of one step, and what the step counts while it runs. */
interface StepServices {
  /** The budget accounts the step spends from: its callers', and its own when it has one. */
  accounts: readonly Account[];
  emit: AgentContext["emit"];
  scopes: (trace_id: string | undefined) => EventScope;
  client(modelName?: string): ChatClient;
  /** Stops a call that must not start: a paused run (approvals), or a guardrail that blocked it. */
  halt(): void;
  callModel: AgentContext["callModel"];
  /** Runs another agent as a child step, counted in this step's usage. */
  child(name: string, query: string, signal: AbortSignal, expects?: JsonSchema): Promise<AgentResult>;
  guards: StepGuards | undefined;
  /** The step's usage: its own model replies and its children's steps (the engine's count, not its kind's). */
  usage: Usage;
  /** Child steps still running: a step ends after them. */
  children: Set<Promise<AgentResult>>;
  /** The last answer the kind put through the output guardrails itself, as they let it through. */
  checkedAnswer?: string;
}

/** The step's budget accounts, its model path (fallbacks, budget, journal, context fit), its guardrails and its child steps. */
function stepServices(run: RunShared, step: OpenStep, signal: AbortSignal, parent: Parent | undefined): StepServices {
  const { name, agent, keys, step_id, depth, scope, out } = step;
  const accounts = accountsFor(parent?.accounts ?? run.accounts, name, agent.budget);
  const scopes = recursionScopes(scope);
  const emit: AgentContext["emit"] = (body, extra) => out(body, scopes(extra?.trace_id));
  const client = (modelName = agent.model): ChatClient => {
    const config = run.team.models[modelName];
    if (!config) throw new RuntimeError("NOT_FOUND", `unknown model '${modelName}'`);
    return run.client(config);
  };
  const halt = (): void => {
    run.approvals.halt();
    if (run.blocked) throw new RuntimeError("BLOCKED", `blocked by guardrail '${run.blocked.name}'`);
  };
  const spent = (more: Usage): void => {
    services.usage = addUsage(services.usage, more);
  };
  const context = new ContextFit();
  const callModelOfStep: AgentContext["callModel"] = (call) =>
    callModel(
      {
        model: agent.model,
        client,
        fallbacks: (modelName) => {
          const config = run.team.models[modelName];
          return config !== undefined && config.provider !== "scripted" ? config.fallback : [];
        },
        unavailable: run.unavailableModels,
        accounts,
        config: (modelName) => run.team.models[modelName],
        emit,
        signal,
        agent_id: name,
        journal: run.journal,
        keys,
        halt,
        spent,
        context,
        ...(agent.compaction ? { compaction: agent.compaction.model } : {}),
      },
      call,
    );
  // A step ends after its children: an agent called as a tool and cancelled with its caller
  // still finishes (agent.finished) before the caller does.
  const children = new Set<Promise<AgentResult>>();
  const child: StepServices["child"] = (childName, query, childSignal, expects) => {
    const started = runAgentStep(run, childName, query, childSignal, { step_id, depth, keys, accounts, ...(expects ? { expects } : {}) });
    children.add(started);
    void started.then((result) => spent(result.usage)).finally(() => children.delete(started));
    return started;
  };
  // The agent's guardrails (docs/guardrails.md); a judge asks its model on the step's one model path.
  const guards = agent.guardrails?.length
    ? new StepGuards(agent.guardrails, {
        agent: name,
        signal,
        emit: (body) => out(body, scope),
        block: (blocked) => {
          run.blocked ??= blocked;
        },
        judge: (model, rubric, subject) =>
          judge(callModelOfStep, model, rubric, { text: subject.text, what: `${WHAT[subject.on]}${subject.tool ? ` (${subject.tool})` : ""}` }),
      })
    : undefined;
  const services: StepServices = { accounts, emit, scopes, client, halt, callModel: callModelOfStep, child, guards, usage: ZERO_USAGE, children };
  return services;
}

/** Step 4: the `AgentContext` the kind's runner is given (docs/design/engine.md#agentcontext-services). */
function agentContext(run: RunShared, step: OpenStep, services: StepServices, signal: AbortSignal, parent: Parent | undefined): AgentContext {
  const { keys } = step;
  const { guards, emit, client } = services;
  const replay = run.journal.replay;
  return {
    team: run.team,
    agent: step.agent,
    scope: step.scope,
    task_id: run.task_id,
    session_id: run.session_id,
    inSession: run.inSession,
    ...(run.history ? { history: run.history } : {}),
    ...(run.attachments ? { attachments: run.attachments } : {}),
    signal,
    trace_dir: run.trace_dir,
    stores: run.stores,
    emit,
    callModel: services.callModel,
    modelName: (modelName) => client(modelName).model,
    tools: (extra = []) => stepTools(run, step, services, signal, extra),
    callAgent: (childName, query, options) => services.child(childName, query, signal, options?.expects),
    ...(parent?.expects ? { expects: parent.expects } : {}),
    async remember(what, read) {
      const key = keys.nextValue();
      const stored = replay?.value(key, what);
      if (stored) return stored.value as Awaited<ReturnType<typeof read>>;
      const value = await read();
      run.journal.value(key, what, value);
      return value;
    },
    replaying: () => replay?.replaying(keys.key) ?? false,
    observeStates: (machine, options) => stateObserver(machine, emit, options),
    async checkAnswer(answer) {
      if (!guards?.applies("output")) return { ok: true, answer };
      const verdict = await guards.check("output", answer);
      if (!verdict.ok) return verdict;
      services.checkedAnswer = verdict.text;
      return { ok: true, answer: verdict.text };
    },
    async checkTurns(turns) {
      if (turns.length === 0 || !guards?.applies("input")) return [...turns];
      // Each request and answer that has text, as one subject; an empty one (a turn the client began with an answer) is not asked about.
      const texts = turns
        .flatMap((turn, i) => [
          { text: turn.input, where: `the request of earlier turn ${i + 1}`, turn: i, field: "input" as const },
          { text: turn.answer, where: `the answer of earlier turn ${i + 1}`, turn: i, field: "answer" as const },
        ])
        .filter((t) => t.text !== "");
      const verdict = await guards.checkAll("input", texts, undefined, { retry: false });
      const checked = turns.map((turn) => ({ ...turn }));
      if (verdict.ok) for (const [i, t] of texts.entries()) checked[t.turn]![t.field] = verdict.texts[i] ?? t.text;
      return checked;
    },
    newId: run.newId,
    now: run.now,
  };
}

/** The step's `ToolBox` (`ctx.tools`): the allow-list resolved plus the tools the kind binds, under the step's budget, approvals and guardrails. */
function stepTools(run: RunShared, step: OpenStep, services: StepServices, signal: AbortSignal, extra: readonly Tool[]): ToolBox {
  const { agent, scope, out } = step;
  const { accounts, guards } = services;
  const { tools, approval } = resolveTools({
    team: run.team,
    agent,
    planTool: run.stores.planTool,
    callAgent: services.child,
    bound: extra,
    cache: run.toolCache,
    given: run.providedTools,
    mcp: run.mcp,
    signal,
  });
  return createToolBox({
    tools,
    // The allow-list as resolved: an MCP entry stands for the tools of its server.
    allow: tools.map((t) => t.name),
    scope,
    scopes: services.scopes,
    emit: (body, s) => out(body, s ?? scope),
    signal,
    journal: toolJournal(run.journal, step.keys),
    budget: {
      check: () => {
        for (const a of accounts) a.checkToolCall();
      },
      count: () => {
        for (const a of accounts) a.toolCall();
      },
    },
    stopping: () => run.approvals.paused || run.blocked !== undefined || accounts.some((a) => a.exhausted !== undefined),
    halt: services.halt,
    ...(approval.size > 0 ? { approval } : {}),
    approve: (request) => run.approvals.decide(request, (body) => out(body, scope)),
    ...(guards ? { guard: guards } : {}),
  });
}

/** An input guardrail sees the input before the kind (and so any model) does. */
async function checkInput(guards: StepGuards | undefined, input: string): Promise<string> {
  if (!guards?.applies("input")) return input;
  const verdict = await guards.check("input", input, undefined, { retry: false });
  return verdict.ok ? verdict.text : input;
}

/** Steps 5–6, the one place a step's result is made: its kind's outcome, or the budget's error, with the usage counted, after its children. */
async function settle(step: OpenStep, services: StepServices, outcome: Outcome): Promise<AgentResult> {
  const { guards, children } = services;
  while (children.size > 0) await Promise.allSettled([...children]);
  // An answer the kind did not put through the output guardrails is checked here; a retry cannot be given, so it blocks.
  if (outcome.result_type === "answer" && outcome.answer !== undefined && outcome.answer !== services.checkedAnswer && guards?.applies("output")) {
    try {
      const verdict = await guards.check("output", outcome.answer, undefined, { retry: false });
      if (verdict.ok) outcome = { ...outcome, answer: verdict.text };
    } catch (err) {
      outcome = { result_type: "error", error: runErrorOf(err, `agent ${step.name} failed`) };
    }
  }
  // A step whose own budget stopped a call ends with that error, whatever its kind made of it.
  const own = step.agent.budget ? services.accounts.at(-1)?.exhausted : undefined;
  const ended: Outcome = own !== undefined ? { result_type: "error", error: { code: "BUDGET", message: own } } : outcome;
  return step.finish({
    result_type: ended.result_type,
    ...(ended.answer !== undefined ? { answer: ended.answer } : {}),
    ...(ended.error !== undefined ? { error: ended.error } : {}),
    ...(ended.result_type === "answer" && ended.verification ? { verification: ended.verification } : {}),
    usage: services.usage,
  });
}

/** The step's tool calls in the run's journal, each under the step's next tool key. */
function toolJournal(journal: Journal, keys: StepKeys): ToolJournal {
  const replay = journal.replay;
  return {
    open(call, args) {
      const key = keys.nextTool();
      const recorded = replay?.toolCall(key, call.name, args);
      return { key, ...(recorded ? { recorded } : {}), quiet: replay?.mode === "resume" };
    },
    started: (key, call, args) => journal.toolStarted(key, call, args),
    finished: (key, outcome) => journal.toolResult(key, outcome),
    commit: () => journal.commit(),
  };
}

function failed(code: ErrorCode, message: string): AgentResult {
  return { result_type: "error", error: { code, message }, usage: ZERO_USAGE };
}
