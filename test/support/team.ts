import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** A fresh temporary directory for one test's team files and traces. */
export function tempDir(prefix = "runtime-test-"): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

/** Write a team file (and any side files) into a fresh directory; returns the team file's path. */
export function writeTeam(yaml: string, files: Record<string, string> = {}, dir = tempDir()): string {
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  const path = join(dir, "team.yaml");
  writeFileSync(path, yaml);
  return path;
}

/** A react-protocol reply body. */
export function reactReply(action_type: string, output: Record<string, unknown>, observe = "", thought = ""): string {
  return JSON.stringify({ observe, thought, action: { result: { action_type, output } } });
}

/**
 * A team whose command tool `echo_env` is given `SERVICE_TOKEN=token` and
 * echoes it ("token is ..."), called once by a scripted react agent: a secret
 * that reaches the run, for tests that it never leaves it.
 */
export function echoEnvTeam(token: string): string {
  return writeTeam(
    `version: 1
name: echo
models:
  offline: { provider: scripted, script: ./script.yaml }
tools:
  echo_env:
    command: [node, ./echo.mjs]
    env: { SERVICE_TOKEN: "${token}", LANG: C }
agents:
  solver:
    kind: react
    tools: [echo_env]
`,
    {
      "echo.mjs":
        "process.stdin.resume(); process.stdin.on('end', () => process.stdout.write(JSON.stringify({ seen: 'token is ' + process.env.SERVICE_TOKEN })));",
      "script.yaml": `version: 1
replies:
  - content: null
    tool_calls: [{ id: c1, name: echo_env, arguments: {} }]
  - content: done
`,
    },
  );
}

/** The computed fields of a resolved openai model, as the loader fills them when a team file leaves them out. */
export const OPENAI_MODEL_DEFAULTS = {
  api: "chat_completions",
  idle_timeout_ms: 30_000,
  max_retry_wait_ms: 30_000,
  headers: {},
  extra_body: {},
  fallback: [],
  attachments: [],
  structured_output: false,
  cache: false,
  compact_at: 0.8,
} as const satisfies Partial<import("../../src/config/types.js").OpenAIModelConfig>;

/** A team of one openai model at `url` (no retries) and the given agents (YAML lines under `agents:`). */
export function modelTeam(name: string, url: string, agents = "  solver: { kind: react }\n"): string {
  return writeTeam(`version: 1
name: ${name}
models:
  default: { provider: openai, model: m, base_url: "${url}", api_key: sk-${name}-0123456789, max_retries: 0 }
agents:
${agents}`);
}
