/**
 * The entry agent's answer as its model writes it, for the terminal's live
 * view and --verbose log (docs/cli.md#watching-a-run): the run's events go,
 * in order, through the one reader of an answer in the making
 * (src/kinds/answer-text.ts, as the OpenAI-compatible and A2A streams read
 * them), and what it adds is handed to `show`. The answer itself is printed
 * on stdout once the run has answered, as before.
 */
import type { ResolvedTeam } from "../config/types.js";
import type { EventSink } from "../events/bus.js";
import { AnswerText } from "../kinds/answer-text.js";

export type AnswerFeed = EventSink & {
  /** Resolves once every event given so far has been read (and its text shown). */
  settled(): Promise<void>;
};

export function answerFeed(team: ResolvedTeam, show: (text: string) => void): AnswerFeed {
  const reader = new AnswerText(team);
  let read: Promise<void> = Promise.resolve();
  let failed = false;
  const feed = ((event) => {
    if (failed) return;
    // The reader is asynchronous (it loads the entry agent's kind once): one event after another.
    read = read
      .then(() => reader.feed(event))
      .then((text) => {
        if (text) show(text);
      })
      .catch(() => {
        // Only the text shown while it is written is lost: the answer still comes whole at the end.
        failed = true;
      });
  }) as AnswerFeed;
  feed.settled = () => read;
  return feed;
}
