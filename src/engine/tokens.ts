/**
 * Counting a request's tokens against a model's `context_window`
 * (docs/context.md): js-tiktoken's `o200k_base` encoding (the GPT-4o and
 * later family; other models' tokenizers differ by a share that the
 * server's reported `prompt_tokens` corrects, src/engine/context-fit.ts).
 * Loaded on first use only: its ranks take about a second to load, which a
 * run whose models declare no window never pays.
 */
import { lazily } from "../lazy.js";
import type { ChatMessage, ToolSpec } from "../models/types.js";

type Encoder = { encode(text: string, allowedSpecial?: string[] | "all", disallowedSpecial?: string[] | "all"): number[]; decode(tokens: number[]): string };

const lite = lazily<{ Tiktoken: new (ranks: unknown) => Encoder }>("js-tiktoken/lite");
const ranks = lazily<unknown>("js-tiktoken/ranks/o200k_base");
let encoder: Encoder | undefined;

/** The tokens of a text; special-token markers in it (`<|endoftext|>`) are counted as the text they are. */
export function encode(text: string): number[] {
  encoder ??= new (lite().Tiktoken)(ranks());
  return encoder.encode(text, [], []);
}

export function decode(tokens: number[]): string {
  encoder ??= new (lite().Tiktoken)(ranks());
  return encoder.decode(tokens);
}

/** What Chat Completions adds around each message (role, separators), as OpenAI's own counting guide gives it. */
const PER_MESSAGE = 4;

/**
 * A message does not change once made, and the kinds keep one object per
 * message for the whole step (src/kinds/react/run.ts): each is counted once,
 * not once per later request.
 */
const counted = new WeakMap<object, number>();

/**
 * The tokens of the messages counted last: a large message is counted when
 * it first goes out and trimmed on a later request, and encoding it again
 * would double the cost of counting (bench/compaction.mjs: ~6 ms for a
 * 7,600-character tool result on a busy 2-core machine).
 */
const recent = new Map<ChatMessage, number[]>();
const RECENT = 16;

/** The tokens of a message's content. */
export function contentTokens(m: ChatMessage): number[] {
  let tokens = recent.get(m);
  if (tokens === undefined) {
    tokens = m.content ? encode(m.content) : [];
    recent.set(m, tokens);
    if (recent.size > RECENT) recent.delete(recent.keys().next().value as ChatMessage);
  }
  return tokens;
}

/** The tokens of one message: its content, its tool calls, and the overhead of a message. */
export function messageTokens(m: ChatMessage): number {
  let n = counted.get(m);
  if (n === undefined) {
    n = PER_MESSAGE + contentTokens(m).length;
    if (m.role === "assistant") for (const c of m.tool_calls ?? []) n += encode(c.name).length + encode(c.arguments).length + PER_MESSAGE;
    counted.set(m, n);
  }
  return n;
}

/** The tokens of a request: its messages and the tools it offers. */
export function requestTokens(messages: readonly ChatMessage[], tools?: readonly ToolSpec[]): number {
  let n = 0;
  for (const m of messages) n += messageTokens(m);
  if (tools?.length) {
    let t = counted.get(tools);
    if (t === undefined) {
      t = encode(JSON.stringify(tools)).length;
      counted.set(tools, t);
    }
    n += t;
  }
  return n;
}
