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
        if (event.step_id === this.step) this.reply = "";
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
    return added;
  }
}
