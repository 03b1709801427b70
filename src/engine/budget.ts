/**
 * Budgets (docs/budgets.md): what a run, or one agent's step with everything
 * it calls, may spend. One account per budget: the team's covers the whole
 * run; an agent's covers its step and its children (agents called as tools,
 * parallel solvers), each step charging every account above it. Checked at
 * the engine's two call points, before a model call or a tool call starts; a
 * call that would start past a limit throws BUDGET, naming the limit and the
 * figure.
 */
import type { Budget, ModelConfig } from "../config/types.js";
import { RuntimeError } from "../errors.js";
import type { BudgetStatement, Usage } from "../events/types.js";
import { costOf } from "../events/usage.js";

export class Account {
  private tokens = 0;
  private modelCalls = 0;
  private toolCalls = 0;
  private cost = 0;
  private readonly started = Date.now();
  /** Why the budget stopped a call, once it did: the step (or run) it belongs to ends with this error. */
  exhausted: string | undefined;

  constructor(
    /** Whose budget: "the team" or "agent planner". */
    readonly owner: string,
    readonly budget: Budget,
  ) {}

  /** Throws BUDGET if a model call may not start now. */
  checkModelCall(): void {
    const b = this.budget;
    if (b.max_model_calls !== undefined && this.modelCalls >= b.max_model_calls) this.exceeded("max_model_calls", `${this.modelCalls} model calls made`);
    if (b.max_tokens !== undefined && this.tokens >= b.max_tokens) this.exceeded("max_tokens", `${this.tokens} tokens used`);
    if (b.max_cost_usd !== undefined && this.cost >= b.max_cost_usd) this.exceeded("max_cost_usd", `$${this.cost.toFixed(4)} spent`);
    this.checkTime();
  }

  /** Throws BUDGET if a tool call may not start now. */
  checkToolCall(): void {
    const b = this.budget;
    if (b.max_tool_calls !== undefined && this.toolCalls >= b.max_tool_calls) this.exceeded("max_tool_calls", `${this.toolCalls} tool calls made`);
    this.checkTime();
  }

  modelCall(): void {
    this.modelCalls++;
  }

  toolCall(): void {
    this.toolCalls++;
  }

  /** What was spent against each limit set (on run.finished, for `runtime trace` and the terminal). */
  statement(): BudgetStatement {
    const b = this.budget;
    const spent: Record<keyof Budget, number> = {
      max_tokens: this.tokens,
      max_model_calls: this.modelCalls,
      max_tool_calls: this.toolCalls,
      max_seconds: Math.round((Date.now() - this.started) / 100) / 10,
      max_cost_usd: Math.round(this.cost * 10_000) / 10_000,
    };
    const out: BudgetStatement = {};
    for (const key of Object.keys(spent) as (keyof Budget)[]) {
      const limit = b[key];
      if (limit !== undefined) out[key] = { limit, spent: spent[key] };
    }
    return out;
  }

  /** A model call's usage, and its cost at the model's price. */
  spend(usage: Usage, model: ModelConfig | undefined): void {
    this.tokens += usage.total_tokens;
    this.cost += costOf(usage, model !== undefined && model.provider !== "scripted" ? model.price : undefined);
  }

  private checkTime(): void {
    const limit = this.budget.max_seconds;
    const seconds = (Date.now() - this.started) / 1000;
    if (limit !== undefined && seconds >= limit) this.exceeded("max_seconds", `${seconds.toFixed(1)} s elapsed`);
  }

  private exceeded(limit: keyof Budget, figure: string): never {
    this.exhausted ??= `budget reached: ${this.owner}'s ${limit} is ${String(this.budget[limit])} and ${figure}`;
    throw new RuntimeError("BUDGET", this.exhausted);
  }
}

/** The accounts a step charges: those of its ancestors, then its own when its agent has a budget. */
export function accountsFor(parent: readonly Account[], agent: string, budget: Budget | undefined): readonly Account[] {
  return budget ? [...parent, new Account(`agent ${agent}`, budget)] : parent;
}
