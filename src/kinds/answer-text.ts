/**
 * A run's answer as the model writes it (docs/protocols.md#answers-as-they-are-written):
 * read from the run's events, as every follower reads them, so the
 * OpenAI-compatible and A2A streams give the answer's text while it is
 * generated, not once the run has ended. Only the entry agent's answer is
 * given, and only when its kind's answer is the text of one model reply
 * (`KindModule.partialAnswer`) and the model streams (`stream: true`); else
 * the whole answer comes with the run's end. An agent with output
 * guardrails is not streamed: its answer is whole once they have passed it
 * (docs/guardrails.md).
 */
import type { AgentKind, ResolvedTeam } from "../config/types.js";
import type { RunEvent } from "../events/types.js";
import { KINDS } from "./registry.js";

export class AnswerText {
  constructor(private readonly team: ResolvedTeam) {}

  /** The entry agent's step, once started. */
  private step: string | undefined;
  private read: ((reply: string) => string | undefined) | undefined;
  /** The text of the entry agent's reply being streamed. */
  private reply = "";
  /** What has been given so far. */
  private given = "";
  /** A later reply's answer did not go on from what was given (the first was cut off): nothing more until the end. */
  private diverged = false;
  /**
   * The reply ends inside the answer's JSON string, still open: its next
   * deltas are the answer's text, escaped, read on without parsing the whole
   * reply again (each delta costs the same however long the answer); an
   * escape cut at the end of a delta waits in `pending`.
   */
  private open = false;
  private pending = "";

  /** The answer's text that `event` adds ("" for none). */
  async feed(event: RunEvent): Promise<string> {
    switch (event.type) {
      case "agent.started":
        if (this.step === undefined && event.parent_step_id === undefined) {
          this.step = event.step_id;
          const guarded = this.team.agents[event.agent_id]?.guardrails?.some((g) => g.on === "output") === true;
          if (!guarded) this.read = (await KINDS[event.kind as AgentKind]?.load())?.partialAnswer;
        }
        return "";
      case "llm.request":
        if (event.step_id === this.step) {
          this.reply = "";
          this.open = false;
        }
        return "";
      case "llm.delta":
        return event.step_id === this.step ? this.more(event.text) : "";
      default:
        return "";
    }
  }

  /**
   * The rest of the run's `answer` after what was given. A given text that
   * the answer does not go on from (a reply cut off at the token limit, then
   * answered again differently) cannot be taken back: the answer follows it
   * whole, after a blank line.
   */
  rest(answer: string): string {
    if (answer.startsWith(this.given)) return answer.slice(this.given.length);
    return `\n\n${answer}`;
  }

  private more(text: string): string {
    if (!this.read || this.diverged) return "";
    this.reply += text;
    if (this.open) {
      const read = unescapeJson(this.pending + text);
      if (read) {
        this.pending = read.pending;
        this.open = !read.closed;
        this.given += read.text;
        return read.text;
      }
      // An escape JSON does not have: the reply is read whole from here.
      this.open = false;
    }
    const answer = this.read(this.reply);
    if (answer === undefined) return "";
    if (answer.length <= this.given.length) {
      if (!this.given.startsWith(answer)) this.diverged = true;
      return "";
    }
    if (!answer.startsWith(this.given)) {
      this.diverged = true;
      return "";
    }
    const added = answer.slice(this.given.length);
    this.given = answer;
    // Still open when the reply ends with the answer as JSON escapes it, and at most blanks not given yet
    // (a model escaping otherwise is read whole each time).
    const escaped = JSON.stringify(answer).slice(1, -1);
    const at = this.reply.lastIndexOf(escaped);
    const tail = at < 0 ? undefined : this.reply.slice(at + escaped.length);
    const after = tail === undefined ? undefined : unescapeJson(tail);
    this.open = after !== undefined && !after.closed && after.text.trim() === "";
    this.pending = this.open ? (tail ?? "") : "";
    return added;
  }
}

const ESCAPES: Record<string, string> = { '"': '"', "\\": "\\", "/": "/", b: "\b", f: "\f", n: "\n", r: "\r", t: "\t" };

/**
 * The text of `raw`, the inside of a JSON string, up to its closing quote
 * (`closed`); an escape cut at the end is left `pending`. Undefined for an
 * escape JSON does not have.
 */
function unescapeJson(raw: string): { text: string; pending: string; closed: boolean } | undefined {
  let text = "";
  let i = 0;
  while (i < raw.length) {
    const quote = raw.indexOf('"', i);
    const slash = raw.indexOf("\\", i);
    const stop = slash >= 0 && (quote < 0 || slash < quote) ? slash : quote;
    if (stop < 0) return { text: text + raw.slice(i), pending: "", closed: false };
    text += raw.slice(i, stop);
    if (stop === quote) return { text, pending: "", closed: true };
    const kind = raw[stop + 1];
    if (kind === undefined) return { text, pending: raw.slice(stop), closed: false };
    if (kind === "u") {
      const hex = raw.slice(stop + 2, stop + 6);
      if (hex.length < 4 && /^[0-9a-fA-F]*$/.test(hex)) return { text, pending: raw.slice(stop), closed: false };
      if (!/^[0-9a-fA-F]{4}$/.test(hex)) return undefined;
      text += String.fromCharCode(Number.parseInt(hex, 16));
      i = stop + 6;
      continue;
    }
    const escaped = ESCAPES[kind];
    if (escaped === undefined) return undefined;
    text += escaped;
    i = stop + 2;
  }
  return { text, pending: "", closed: false };
}
