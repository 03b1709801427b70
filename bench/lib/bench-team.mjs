/**
 * What the benches share: the chat server child (bench/lib/chat-server.mjs,
 * its own process, so its CPU is not counted; bench/lib/solver-server.mjs for
 * plan_solver), the react team that runs the calculator loop against it, and
 * a line about the machine's load.
 */
import { spawn } from "node:child_process";
import { availableParallelism, loadavg } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { fixed } from "./stats.mjs";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "../..");

/** Start the chat server; resolves with its base URL, a request-stats reader and a stop function. */
export async function startChatServer(latencyMs) {
  return startServerChild("bench/lib/chat-server.mjs", { BENCH_DELAY_MS: String(latencyMs) });
}

/**
 * Start a bench server script of this folder as a child process (it prints its
 * port on stdout); resolves with its base URL, a request-stats reader and a
 * stop function.
 */
export async function startServerChild(script, env) {
  const child = spawn(process.execPath, [join(ROOT, script)], {
    stdio: ["pipe", "pipe", "inherit"],
    env: { ...process.env, ...env },
  });
  const port = await new Promise((resolve, reject) => {
    let text = "";
    child.stdout.on("data", (c) => {
      text += c;
      if (text.includes("\n")) resolve(Number(text.trim()));
    });
    child.once("exit", (code) => reject(new Error(`${script} exited (${code}) before listening`)));
  });
  const root = `http://127.0.0.1:${port}`;
  return {
    url: `${root}/v1`,
    stats: async (tag) => (await fetch(`${root}/stats?tag=${tag}`)).json(),
    stop: () => {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
    },
  };
}

/**
 * The react team of the benches: one calculator call per step against the chat server at `url`, streamed with `stream`;
 * `timeoutMs`, the model's timeout_ms, for a server slower than its default allows.
 */
export function benchTeamYaml(url, name, { stream = false, timeoutMs } = {}) {
  return `version: 1
name: ${name}
entry: solver
models:
  bench:
    provider: openai
    model: bench-model
    base_url: "${url}"
    api_key: bench-key
    max_retries: 0
    stream: ${stream}${
      timeoutMs
        ? `
    timeout_ms: ${timeoutMs}`
        : ""
    }
agents:
  solver:
    kind: react
    description: Computes figures with the calculator, one tool call per step.
    model: bench
    max_iteration: 40
    tools: [calculator]
`;
}

/** The machine's load, said beside the figures. */
export function loadLine() {
  const [one] = loadavg();
  const cores = availableParallelism();
  return `load average ${fixed(one)} on ${cores} cores${one > cores ? " (busy machine: absolute figures are inflated; the ratios hold better)" : ""}`;
}
