#!/usr/bin/env node
/**
 * Benchmark: what counting tokens and compacting cost (docs/context.md).
 *
 * A long react run (--steps recursions, default 60) whose tool returns a
 * bulky page (about 1,200 tokens) each step, against a chat server in its
 * own process (its CPU is not counted), run by runTeam with the trace off:
 *
 *   off  the model declares no context_window: requests grow with every page
 *        (the server takes them whatever their size)
 *   on   context_window (--window, default 16000): every request is counted,
 *        large pages trimmed, older recursions summarised by the model
 *
 * Printed per variant: CPU per step (process.cpuUsage of this process over
 * the run, divided by the model calls the kind made), the bytes of the last
 * request, compactions and summary requests. Each variant runs --rounds
 * times (default 3); the median is printed.
 *
 *   npm run build && node bench/compaction.mjs [--steps 60] [--window 16000] [--rounds 3]
 */
import { createServer } from "node:http";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { reactContent, sendCompletion, serveAsChild } from "./lib/serve-child.mjs";
import { loadLine } from "./lib/bench-team.mjs";
import { fixed, median } from "./lib/stats.mjs";

const { values } = parseArgs({
  options: {
    serve: { type: "boolean", default: false },
    steps: { type: "string", default: "60" },
    window: { type: "string", default: "16000" },
    rounds: { type: "string", default: "3" },
  },
});

if (values.serve) {
  // The server: a page per recursion until the user's steps=N, then the answer; a summary when asked for one.
  const stats = { summaries: 0, lastBytes: 0 };
  serveAsChild(
    createServer((req, res) => {
      let body = "";
      req.on("data", (c) => (body += c));
      req.on("end", () => {
        if (req.url?.startsWith("/stats")) {
          res.end(JSON.stringify(stats));
          stats.summaries = 0;
          return;
        }
        const request = JSON.parse(body);
        const messages = request.messages ?? [];
        const first = String(messages[0]?.content ?? "");
        let message;
        if (first.startsWith("Summarise the earlier part")) {
          stats.summaries++;
          message = { role: "assistant", content: "Pages read so far hold filler words; every page's code is K-n." };
        } else {
          stats.lastBytes = body.length;
          const steps = Number(/steps=(\d+)/.exec(messages.find((m) => m.role === "user")?.content ?? "")?.[1] ?? 1);
          const system = String(messages.find((m) => m.role === "system")?.content ?? "");
          const k = Number(/Recursion (\d+) of at most/.exec(system)?.[1] ?? 1);
          message =
            k < steps
              ? {
                  role: "assistant",
                  content: reactContent("CALL_TOOL", {}, { observe: `page ${k}`, thought: "read the next page" }),
                  tool_calls: [{ id: `c${k}`, type: "function", function: { name: "read_page", arguments: JSON.stringify({ n: k }) } }],
                }
              : { role: "assistant", content: reactContent("ANSWER", { answer: "done" }, { observe: "all pages read", thought: "answer" }) };
        }
        // Usage as a server counts it (about 4 characters a token), which the runtime's count is checked against.
        const prompt_tokens = Math.ceil(JSON.stringify(messages).length / 4);
        sendCompletion(res, request.model, message, message.tool_calls ? "tool_calls" : "stop", {
          prompt_tokens,
          completion_tokens: 20,
          total_tokens: prompt_tokens + 20,
        });
      });
    }),
  );
} else {
  await bench();
}

async function bench() {
  const root = join(dirname(fileURLToPath(import.meta.url)), "..");
  const { loadTeam, runTeam } = await import(pathToFileURL(join(root, "dist/index.js")).href);
  const steps = Number(values.steps);
  const child = spawn(process.execPath, [fileURLToPath(import.meta.url), "--serve"], { stdio: ["pipe", "pipe", "inherit"] });
  const port = await new Promise((resolve) => child.stdout.once("data", (d) => resolve(Number(String(d).trim()))));
  const url = `http://127.0.0.1:${port}/v1`;
  const dir = mkdtempSync(join(tmpdir(), "bench-compaction-"));
  try {
    writeFileSync(
      join(dir, "page.mjs"),
      `export const description = "Read one page of the report.";
export const parameters = { type: "object", properties: { n: { type: "integer" } }, required: ["n"] };
export const effect = "read";
export function execute({ n }) {
  return { page: n, code: "K-" + n, text: Array.from({ length: 1100 }, (_, i) => "word" + ((i * 7 + n) % 97)).join(" ") };
}
`,
    );
    const teamOf = async (window) => {
      const file = join(dir, `team-${window ?? "off"}.yaml`);
      writeFileSync(
        file,
        `version: 1
name: long-reader
models:
  default: { provider: openai, model: gpt-4o-mini, base_url: "${url}", api_key: bench-key, max_retries: 0, timeout_ms: 600000${window ? `, context_window: ${window}` : ""} }
tools:
  read_page: { module: ./page.mjs }
agents:
  reader: { kind: react, tools: [read_page], max_iteration: ${steps + 5} }
`,
      );
      return loadTeam(file);
    };
    console.log(`compaction: a ${steps}-step react run, a ~1,200-token page per step; ${loadLine()}`);
    const variants = [
      { name: "off (no context_window)", team: await teamOf(undefined) },
      { name: `on (context_window ${values.window})`, team: await teamOf(Number(values.window)) },
    ];
    const rows = [];
    // One run each first: the tokenizer's ranks load once per process (about a second), not per step.
    for (const v of variants) await once(v.team);
    for (const v of variants) {
      const cpu = [];
      let last;
      for (let r = 0; r < Number(values.rounds); r++) {
        last = await once(v.team);
        cpu.push(last.cpuMs / last.calls);
      }
      rows.push({ ...v, cpuPerStep: median(cpu), ...last });
    }
    for (const r of rows) {
      console.log(
        `  ${r.name.padEnd(28)} CPU/step ${fixed(r.cpuPerStep)} ms · last request ${fixed(r.lastBytes / 1024)} KB · ${r.compacted} compactions · ${r.summaries} summary requests · ${r.answer}`,
      );
    }
  } finally {
    child.kill("SIGTERM");
    rmSync(dir, { recursive: true, force: true });
  }

  async function once(team) {
    const events = [];
    const before = process.cpuUsage();
    const result = await runTeam(team, { input: `Read every page. steps=${steps}`, trace: false, sinks: [(e) => events.push(e)] }).result;
    const used = process.cpuUsage(before);
    const stats = await (await fetch(url.replace("/v1", "/stats"))).json();
    return {
      cpuMs: (used.user + used.system) / 1000,
      calls: events.filter((e) => e.type === "llm.response").length - stats.summaries,
      compacted: events.filter((e) => e.type === "context.compacted").length,
      summaries: stats.summaries,
      lastBytes: stats.lastBytes,
      answer: result.result_type === "answer" ? `answer: ${result.answer}` : `error: ${result.error?.message}`,
    };
  }
}
