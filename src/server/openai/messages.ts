/**
 * A client's conversation as the runtime reads it (docs/protocols.md#openai-compatible):
 * the last user message is the run's input; the user and assistant messages
 * before it are the earlier exchanges (`RunOptions.history`), which the agent
 * sees as a session's history. System and developer messages are not read:
 * the agent's own prompt stands (its team file says who it is).
 */
import type { Exchange } from "../../store/conversations.js";
import { OpenAIRequestError } from "./errors.js";

/** One message of a chat or one message item of a Responses input, its text already read. */
export interface Said {
  role: "user" | "assistant" | "system" | "developer";
  text: string;
}

const ROLES = new Set(["user", "assistant", "system", "developer"]);

/**
 * The text of a message's `content`: a string, or parts of which the text
 * ones are read (`text`, `input_text`, `output_text`); any other part
 * (an image, a file) is refused, since an agent's input is text.
 */
export function textOf(content: unknown, param: string): string {
  if (typeof content === "string") return content;
  if (content === null || content === undefined) return "";
  if (!Array.isArray(content)) throw new OpenAIRequestError(400, `${param} must be a string or an array of text parts`, { param });
  return content
    .map((part: unknown, i) => {
      const p = (part ?? {}) as Record<string, unknown>;
      if (typeof p.type !== "string" || !["text", "input_text", "output_text"].includes(p.type) || typeof p.text !== "string") {
        throw new OpenAIRequestError(400, `${param}[${i}] is not a text part: this server's agents read text only`, { param: `${param}[${i}]` });
      }
      return p.text;
    })
    .join("\n");
}

/** A message's role and text, or a 400 naming it. */
export function saidOf(message: unknown, param: string): Said {
  if (message === null || typeof message !== "object" || Array.isArray(message)) throw new OpenAIRequestError(400, `${param} must be an object`, { param });
  const { role, content } = message as Record<string, unknown>;
  if (typeof role !== "string" || !ROLES.has(role)) {
    throw new OpenAIRequestError(400, `${param}.role must be user, assistant, system or developer (this server runs no client-side tools)`, {
      param: `${param}.role`,
    });
  }
  return { role: role as Said["role"], text: textOf(content, `${param}.content`) };
}

/**
 * The run's input (the last message, which must be the user's) and the
 * exchanges before it: consecutive user messages make one request, the
 * assistant messages after them its answer.
 */
export function conversationOf(said: readonly Said[], param: string): { input: string; history: Exchange[] } {
  const last = said.at(-1);
  if (last?.role !== "user" || !last.text.trim()) {
    throw new OpenAIRequestError(400, `the last of ${param} must be a user message with text: it is the agent's input`, { param });
  }
  const history: Exchange[] = [];
  let open: Exchange | undefined;
  for (const { role, text } of said.slice(0, -1)) {
    if (role === "user") {
      if (open?.answer) {
        history.push(open);
        open = undefined;
      }
      open = open ? { input: `${open.input}\n\n${text}`, answer: "" } : { input: text, answer: "" };
    } else if (role === "assistant") {
      open ??= { input: "", answer: "" };
      open.answer = open.answer ? `${open.answer}\n\n${text}` : text;
    }
  }
  if (open) history.push(open);
  return { input: last.text, history };
}
