/**
 * A client's conversation as the runtime reads it (docs/protocols.md#openai-compatible):
 * the last user message is the run's input; the user and assistant messages
 * before it are the earlier exchanges (`RunOptions.history`), which the agent
 * sees as a session's history. System and developer messages are not read:
 * the agent's own prompt stands (its team file says who it is). Images and
 * PDFs of the last user message, as `data:` URLs, are the run's attachments
 * (docs/attachments.md); those of earlier messages are not read again.
 */
import { RuntimeError } from "../../errors.js";
import { makeAttachment, type Attachment } from "../../models/attachment.js";
import type { Exchange } from "../../store/conversations.js";
import { OpenAIRequestError } from "./errors.js";

/** One message of a chat or one message item of a Responses input, its text already read. */
export interface Said {
  role: "user" | "assistant" | "system" | "developer";
  text: string;
  /** Its image and file parts. */
  files?: Attachment[];
}

const ROLES = new Set(["user", "assistant", "system", "developer"]);

/**
 * The text of a message's `content`: a string, or parts of which the text
 * ones are read (`text`, `input_text`, `output_text`) and joined, and the
 * image and file parts (`image_url`, `input_image`, `input_file`) with their
 * bytes inline as a `data:` URL made attachments; any other part is refused.
 */
export function contentOf(content: unknown, param: string): { text: string; files: Attachment[] } {
  if (typeof content === "string") return { text: content, files: [] };
  if (content === null || content === undefined) return { text: "", files: [] };
  if (!Array.isArray(content)) throw new OpenAIRequestError(400, `${param} must be a string or an array of content parts`, { param });
  const texts: string[] = [];
  const files: Attachment[] = [];
  content.forEach((part: unknown, i) => {
    const p = (part ?? {}) as Record<string, unknown>;
    const at = `${param}[${i}]`;
    if (typeof p.type === "string" && ["text", "input_text", "output_text"].includes(p.type) && typeof p.text === "string") texts.push(p.text);
    else if (p.type === "image_url")
      files.push(fileOf((p.image_url as { url?: unknown } | undefined)?.url, `image-${files.length + 1}`, `${at}.image_url.url`));
    else if (p.type === "input_image") files.push(fileOf(p.image_url, `image-${files.length + 1}`, `${at}.image_url`));
    else if (p.type === "input_file")
      files.push(fileOf(p.file_data, typeof p.filename === "string" ? p.filename : `file-${files.length + 1}`, `${at}.file_data`));
    else throw new OpenAIRequestError(400, `${at} is not a text, image or file part`, { param: at });
  });
  return { text: texts.join("\n"), files };
}

/** A file given inline as a `data:` URL (a link is not fetched: the server reaches out to no address a client names). */
function fileOf(url: unknown, name: string, param: string): Attachment {
  const match = typeof url === "string" ? /^data:([\w.+-]+\/[\w.+-]+)?(?:;[\w=.-]+)*;base64,([A-Za-z0-9+/]*={0,2})$/.exec(url) : null;
  if (!match) throw new OpenAIRequestError(400, `${param} must be a data: URL with the bytes in base64 (links are not fetched)`, { param });
  try {
    return makeAttachment(name, Buffer.from(match[2] ?? "", "base64"), match[1]);
  } catch (err) {
    if (err instanceof RuntimeError) throw new OpenAIRequestError(400, `${param}: ${err.message}`, { param });
    throw err;
  }
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
  const { text, files } = contentOf(content, `${param}.content`);
  return { role: role as Said["role"], text, ...(files.length ? { files } : {}) };
}

/**
 * The run's input (the last message, which must be the user's) and the
 * exchanges before it: consecutive user messages make one request, the
 * assistant messages after them its answer.
 */
export function conversationOf(said: readonly Said[], param: string): { input: string; history: Exchange[]; attachments: Attachment[] } {
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
  return { input: last.text, history, attachments: last.files ?? [] };
}
