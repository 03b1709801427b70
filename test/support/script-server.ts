/**
 * The example teams over HTTP: the test server answers as the team's
 * scripted model would (same script, same reply picking), each agent through
 * its own model id so the server knows who asks, and the same request always
 * gets the same reply, like a model at temperature 0 with a cache. A request
 * the server dropped (the client was killed) consumes nothing, so a resumed
 * run that asks again gets what the first process would have got.
 */
import { createHash } from "node:crypto";
import { cpSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseDocument } from "yaml";
import { loadScript } from "../../src/models/script-format.js";
import { scriptedClientFrom } from "../../src/models/scripted-client.js";
import type { ChatMessage } from "../../src/models/types.js";
import { startOpenAIServer, type ChatBody, type OpenAIServer, type Reply } from "./openai-server.js";
import { tempDir } from "./team.js";

const TEAMS = fileURLToPath(new URL("../../teams/", import.meta.url));

export interface ScriptServer {
  server: OpenAIServer;
  /** Hash of each chat request answered or dropped, in arrival order. */
  arrivals: string[];
  /** Called as request `index` (from 0) arrives; return "drop" to leave it unanswered. */
  onArrival?: (index: number) => "drop" | void;
}

/**
 * A copy of teams/NAME.yaml (and its side files) whose agents reach `server` as `model: <agent name>`,
 * over Chat Completions or, with `api: "responses"`, the Responses API, or with `api: "anthropic"`,
 * Anthropic's Messages API (`provider: anthropic`).
 */
export function serverTeam(
  name: string,
  url: string,
  api: "chat_completions" | "responses" | "anthropic" = "chat_completions",
): { file: string; dir: string; script: string } {
  // teams/ keeps its place beside node_modules, where a team's tools may look (mcp-files' server).
  const root = tempDir(`team-${name}-`);
  const dir = join(root, "teams");
  cpSync(TEAMS, dir, { recursive: true });
  symlinkSync(join(TEAMS, "../node_modules"), join(root, "node_modules"));
  const file = join(dir, `${name}.yaml`);
  const doc = parseDocument(readFileSync(file, "utf8"));
  const models = doc.get("models") as { toJSON(): Record<string, { script?: string }> };
  const script = Object.values(models.toJSON()).find((m) => m.script)?.script;
  if (!script) throw new Error(`${name} has no scripted model`);
  const agents = (doc.get("agents") as { toJSON(): Record<string, unknown> }).toJSON();
  const wired: Record<string, unknown> = {};
  for (const agent of Object.keys(agents)) {
    const key = { api_key: "sk-resume-test-0123456789", max_retries: 0 };
    wired[`via_${agent}`] =
      api === "anthropic"
        ? { provider: "anthropic", model: agent, base_url: url.replace(/\/v1$/, ""), ...key }
        : { provider: "openai", model: agent, api, base_url: url, ...key };
    doc.setIn(["agents", agent, "model"], `via_${agent}`);
  }
  doc.set("models", wired);
  writeFileSync(file, doc.toString());
  return { file, dir, script: join(dir, script) };
}

/** `strict`: the server refuses any request OpenAI would (openai-server.ts). */
export async function startScriptServer(scriptFile: string, options: { strict?: boolean } = {}): Promise<ScriptServer> {
  const client = scriptedClientFrom(loadScript(scriptFile), { model: "script" });
  const answers = new Map<string, Promise<Reply>>();
  const state: ScriptServer = { server: undefined as unknown as OpenAIServer, arrivals: [] };
  state.server = await startOpenAIServer({
    ...(options.strict ? { strict: true } : {}),
    respond: (body: ChatBody, index: number) => {
      const hash = createHash("sha256")
        .update(JSON.stringify([body.model, body.messages]))
        .digest("hex");
      state.arrivals.push(hash);
      if (state.onArrival?.(index) === "drop") return { drop: true };
      let answer = answers.get(hash);
      if (!answer) {
        answer = client.chat({ messages: fromWire(body.messages ?? []), agent_id: String(body.model) }).then((reply) => ({
          content: reply.content,
          ...(reply.tool_calls.length ? { tool_calls: reply.tool_calls.map((c) => ({ id: c.id, name: c.name, arguments: c.arguments })) } : {}),
          usage: { prompt_tokens: reply.usage.prompt_tokens, completion_tokens: reply.usage.completion_tokens },
        }));
        answers.set(hash, answer);
      }
      return answer;
    },
  });
  return state;
}

function fromWire(messages: NonNullable<ChatBody["messages"]>): ChatMessage[] {
  return messages.map((m) => {
    const message = m as {
      role: string;
      content?: string | null;
      tool_call_id?: string;
      tool_calls?: { id: string; function: { name: string; arguments: string } }[];
    };
    if (message.role === "tool") return { role: "tool", tool_call_id: message.tool_call_id ?? "", content: message.content ?? "" };
    if (message.role === "assistant") {
      return {
        role: "assistant",
        content: message.content ?? null,
        ...(message.tool_calls ? { tool_calls: message.tool_calls.map((c) => ({ id: c.id, name: c.function.name, arguments: c.function.arguments })) } : {}),
      };
    }
    return { role: message.role as "system" | "user", content: message.content ?? "" };
  });
}
