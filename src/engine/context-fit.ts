/**
 * Context that fits (docs/context.md): a step's requests to a model with a
 * `context_window`, kept under `compact_at` of it. Every kind lays a
 * request out as a head (the user's request and one system prompt, in
 * either order) and then its body (react's recursions, plan_and_solve's
 * assistant and tool messages). When a request would pass the threshold,
 * large messages of the body are trimmed first; if that is not enough, the
 * older part of the body is replaced by a summary the model writes, so the
 * request becomes: the head, the summary, the recent turns.
 *
 * The step keeps what it did: later requests carry the same summary and the
 * same trimmed messages (matched by the message objects the kinds keep for
 * the whole step), so a compaction happens once, not once per request.
 * Everything here follows from the messages and the replies' usage, which
 * the journal holds: a resumed or replayed step compacts the same way and
 * its summary call finds the recorded reply (src/engine/model-call.ts).
 */
import { RuntimeError } from "../errors.js";
import type { Usage } from "../events/types.js";
import type { ChatMessage, ToolSpec } from "../models/types.js";
import { contentTokens, decode, messageTokens, requestTokens } from "./tokens.js";

/** A model's window, by the model's name in the team. */
export interface ContextWindow {
  model: string;
  tokens: number;
  compact_at: number;
}

/** What went into the summary: the earlier summary, if any, and the messages it now stands for. */
export interface SummaryInput {
  summary: string;
  messages: readonly ChatMessage[];
  /** At most this many words. */
  max_words: number;
}

export interface Fitted {
  messages: ChatMessage[];
  /** The request's tokens as counted (uncorrected): `observe` compares it with the server's count. */
  counted: number;
  /** What this request compacted; undefined when it went as the step's earlier compactions left it. */
  compacted?: { tokens_before: number; tokens_after: number; summarised: number; trimmed: number };
}

/** A body message as sent, and the kind's message it stands for (none: the summary). */
interface Entry {
  sent: ChatMessage;
  original?: ChatMessage;
}

/** The share of the threshold the recent turns keep whole when the rest is summarised. */
const RECENT_SHARE = 0.4;
/** A message of the body over this share of the threshold is large: it is trimmed first. */
const LARGE_SHARE = 1 / 8;

export class ContextFit {
  private summary: { covered: ChatMessage[]; message: ChatMessage; text: string } | undefined;
  private readonly trimmed = new WeakMap<ChatMessage, ChatMessage>();
  /** The server's prompt tokens per counted token, per model, from the last reply. */
  private readonly ratios = new Map<string, number>();

  /** A reply's usage tells what the server counted for a request this step counted `counted`. */
  observe(model: string, counted: number, usage: Usage): void {
    // A share far off means the server reports something else (a fixed number, a cache): counting alone is safer.
    if (counted > 0 && usage.prompt_tokens > 0) this.ratios.set(model, Math.min(4, Math.max(0.5, usage.prompt_tokens / counted)));
  }

  async fit(
    messages: ChatMessage[],
    tools: readonly ToolSpec[] | undefined,
    window: ContextWindow,
    summarise: (input: SummaryInput) => Promise<string>,
  ): Promise<Fitted> {
    const ratio = this.ratios.get(window.model) ?? 1;
    const threshold = Math.floor(window.tokens * window.compact_at);
    const head = messages.slice(0, headLength(messages));
    let body = this.known(messages.slice(head.length));
    const request = () => [...head, ...body.map((e) => e.sent)];
    const estimate = () => Math.ceil(requestTokens(request(), tools) * ratio);
    const first = request();
    const counted = requestTokens(first, tools);
    const before = Math.ceil(counted * ratio);
    if (before <= threshold) return { messages: first, counted };

    const large = Math.max(64, Math.floor(threshold * LARGE_SHARE));
    let trimmed = 0;
    const trim = (upTo: number) => {
      for (const e of body.slice(0, upTo)) {
        if (!e.original || e.sent !== e.original || messageTokens(e.sent) <= large) continue;
        const cut = trimmedTo(e.original, large);
        if (cut === e.original) continue;
        e.sent = cut;
        this.trimmed.set(e.original, cut);
        trimmed++;
      }
    };
    // Large results of earlier turns first; the last message is what the model is answering now.
    trim(body.length - 1);
    let summarised = 0;
    const cut = estimate() > threshold ? recentStart(body, Math.floor(threshold * RECENT_SHARE)) : 0;
    if (cut > 0) {
      const older = body.slice(0, cut);
      const replaced = older.flatMap((e) => (e.original ? [e.original] : []));
      const text = (
        await summarise({ summary: this.summary?.text ?? "", messages: older.flatMap((e) => (e.original ? [e.sent] : [])), max_words: maxWords(threshold) })
      ).trim();
      const covered = [...(older[0]?.original === undefined && this.summary ? this.summary.covered : []), ...replaced];
      const message: ChatMessage = { role: "assistant", content: `Summary of the earlier part of this work (${covered.length} messages):\n${text}` };
      this.summary = { covered, message, text };
      body = [{ sent: message }, ...body.slice(cut)];
      summarised = replaced.length;
    }
    if (estimate() > threshold) trim(body.length);
    const after = estimate();
    if (after > window.tokens) {
      const headTokens = Math.ceil(requestTokens(head) * ratio);
      throw new RuntimeError(
        "CONTEXT_TOO_LARGE",
        `the request to model '${window.model}' needs about ${after} tokens, more than its context_window of ${window.tokens} even compacted (the request and system prompt alone: ${headTokens})`,
      );
    }
    const sent = request();
    const fitted = { messages: sent, counted: requestTokens(sent, tools) };
    return summarised + trimmed === 0 ? fitted : { ...fitted, compacted: { tokens_before: before, tokens_after: after, summarised, trimmed } };
  }

  /** The body as the step's earlier compactions left it: its summary in place of what it covers, trimmed messages trimmed. */
  private known(body: readonly ChatMessage[]): Entry[] {
    const covered = this.summary?.covered ?? [];
    const summarised = this.summary !== undefined && covered.length <= body.length && covered.every((m, i) => sameMessage(m, body[i]!));
    const rest = summarised ? body.slice(covered.length) : body;
    const entries: Entry[] = rest.map((m) => ({ sent: this.trimmed.get(m) ?? m, original: m }));
    return summarised && this.summary ? [{ sent: this.summary.message }, ...entries] : entries;
  }
}

/** The head: the messages before the first assistant or tool message (the user's request and the system prompt). */
function headLength(messages: readonly ChatMessage[]): number {
  const i = messages.findIndex((m) => m.role === "assistant" || m.role === "tool");
  return i < 0 ? messages.length : i;
}

/**
 * Where the recent turns start: the earliest place a turn starts (never
 * between an assistant message and its tool results) from which the rest
 * fits in `budget`; else the last turn's start. 0 when nothing older than
 * the last turn but a summary is left to summarise.
 */
function recentStart(body: readonly Entry[], budget: number): number {
  let size = 0;
  let start = 0;
  let lastTurn = 0;
  for (let i = body.length - 1; i > 0; i--) {
    size += messageTokens(body[i]!.sent);
    if (body[i]!.sent.role === "tool") continue;
    if (lastTurn === 0) lastTurn = i;
    if (size > budget) break;
    start = i;
  }
  const cut = start > 0 ? start : lastTurn;
  return body.slice(0, cut).some((e) => e.original) ? cut : 0;
}

/** A message with its content cut to `tokens`: its beginning and its end, with how much was left out between them. */
function trimmedTo(m: ChatMessage, tokens: number): ChatMessage {
  const all = contentTokens(m);
  if (all.length <= tokens) return m;
  const keepHead = Math.floor((tokens * 2) / 3);
  const keepTail = tokens - keepHead;
  const content = `${decode(all.slice(0, keepHead))}\n… [${all.length - tokens} tokens trimmed to fit the context window] …\n${decode(all.slice(-keepTail))}`;
  return { ...m, content } as ChatMessage;
}

/** The summary's length: a tenth of the threshold in words (about 1.3 tokens each), within reason. */
function maxWords(threshold: number): number {
  return Math.min(1000, Math.max(50, Math.floor(threshold / 10)));
}

function sameMessage(a: ChatMessage, b: ChatMessage): boolean {
  return a === b || JSON.stringify(a) === JSON.stringify(b);
}
