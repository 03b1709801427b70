/**
 * Memory across turns (docs/sessions.md; docs/design/plan-and-solve-design.md diagram 6, the todo-list design's
 * Session): a run in a named session sees the session's earlier requests
 * and answers, bounded. The newest turns are given whole up to a budget of
 * characters; older ones are folded into a summary the agent's model writes
 * once (prompts/conversation_summary.hbs) and the session keeps. What the
 * run read is journalled (`ctx.remember`), so a resumed run sees what it saw,
 * and goes through the agent's input guardrails as the input does
 * (`ctx.checkTurns`).
 */
import type { ChatMessage } from "../models/types.js";
import { defaultTemplate } from "../prompts/render.js";
import type { ConversationState, Exchange } from "../store/conversations.js";
import type { AgentContext } from "./types.js";

/** Characters of earlier turns given whole; beyond them, older turns are summarised. */
export const HISTORY_BUDGET_CHARS = 6_000;
const SUMMARY_MAX_WORDS = 250;

let withHistory: ((data: Record<string, unknown>) => string) | undefined;
let summaryPrompt: ((data: Record<string, unknown>) => string) | undefined;

/**
 * The request as the agent's model should see it: `input` alone for an
 * agent another one called, or outside a named session when the caller gave
 * no conversation; else with the conversation's earlier turns (and their
 * summary) before it: those the caller gave (`ctx.history`, an OpenAI
 * client's messages), else the session's stored ones.
 */
export async function requestWithHistory(ctx: AgentContext, input: string): Promise<string> {
  const given = ctx.history;
  if ((!ctx.inSession && given === undefined) || ctx.scope.parent_step_id !== undefined) return input;
  const stored = await ctx.remember("conversation", async (): Promise<ConversationState<Exchange>> => {
    if (given !== undefined) return { turns: [...given], summary: "", through: 0 };
    const store = ctx.stores.conversations();
    try {
      return await store.load(ctx.session_id);
    } finally {
      await store.close();
    }
  });
  // Every turn the model reads goes through the input guardrails first, the caller's or the session's
  // (a turn stored before a guardrail was added, or masked only in its run, is checked again).
  const open = await ctx.checkTurns(stored.turns.slice(stored.through));
  const checked = { ...stored, turns: [...stored.turns.slice(0, stored.through), ...open] };
  // A conversation the caller keeps is summarised for this run only: the caller sends it whole each time.
  const kept = await summarised(ctx, checked, given === undefined);
  if (kept.turns.length === 0 && !kept.summary) return input;
  withHistory ??= defaultTemplate("conversation");
  return withHistory({ summary: kept.summary, turns: kept.turns, input });
}

/**
 * The user's message of the step's first request: its request (with the
 * conversation before it, `requestWithHistory`) and, for the run's entry
 * step, the files the run was given (docs/attachments.md). Agents another
 * one called get their query alone, as they get no history.
 */
export async function userMessage(ctx: AgentContext, input: string): Promise<Extract<ChatMessage, { role: "user" }>> {
  const content = await requestWithHistory(ctx, input);
  const files = ctx.scope.parent_step_id === undefined ? ctx.attachments : undefined;
  return files?.length ? { role: "user", content, attachments: files } : { role: "user", content };
}

/** Turns beyond the budget folded into the summary, by one model call, saved for the session's next runs. */
async function summarised(ctx: AgentContext, state: ConversationState<Exchange>, save: boolean): Promise<{ summary: string; turns: Exchange[] }> {
  const open = state.turns.slice(state.through);
  let size = 0;
  let keep = open.length;
  while (keep > 0) {
    const turn = open[keep - 1]!;
    if (size + turn.input.length + turn.answer.length > HISTORY_BUDGET_CHARS) break;
    size += turn.input.length + turn.answer.length;
    keep--;
  }
  const fold = open.slice(0, keep);
  if (fold.length === 0) return { summary: state.summary, turns: open };
  summaryPrompt ??= defaultTemplate("conversation_summary");
  const messages: ChatMessage[] = [{ role: "user", content: summaryPrompt({ summary: state.summary, turns: fold, max_words: SUMMARY_MAX_WORDS }) }];
  const { reply } = await ctx.callModel({ messages });
  const summary = (reply.content ?? "").trim();
  const through = state.through + fold.length;
  if (save && !ctx.replaying()) {
    const store = ctx.stores.conversations();
    try {
      await store.saveSummary(ctx.session_id, summary, through, ctx.now());
    } finally {
      await store.close();
    }
  }
  return { summary, turns: open.slice(keep) };
}
