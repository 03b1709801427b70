#!/usr/bin/env node
/**
 * The Chat Completions server of bench/plan-solver.mjs, run as its own
 * process (as bench/lib/chat-server.mjs is for the react loop) so that its
 * work does not share the runtime's event loop, as a model's server never
 * does. The role comes from the system prompt (`ROLE:planner`, `ROLE:solver`,
 * `ROLE:aggregator`): the planner gets BENCH_TASKS steps, each solver's reply
 * is delayed BENCH_DELAY_MS.
 *
 *   BENCH_TASKS=16 BENCH_DELAY_MS=200 node bench/lib/solver-server.mjs   → prints the port on stdout
 */
import { createServer } from "node:http";
import { reactContent, sendCompletion, serveAsChild } from "./serve-child.mjs";

const TASKS = Number(process.env.BENCH_TASKS ?? 16);
const DELAY = Number(process.env.BENCH_DELAY_MS ?? 200);

/** The react protocol's ANSWER reply. */
const answer = (text) => reactContent("ANSWER", { answer: text });

const server = createServer((req, res) => {
  let text = "";
  req.on("data", (chunk) => (text += chunk));
  req.on("end", () => {
    const body = JSON.parse(text || "{}");
    const system = body.messages?.find((m) => m.role === "system")?.content ?? "";
    const user = body.messages?.find((m) => m.role === "user")?.content ?? "";
    const role = /^ROLE:(\w+)/.exec(system)?.[1];
    let content;
    let delay = 0;
    if (role === "planner") content = answer({ steps: Array.from({ length: TASKS }, (_, i) => `task ${i + 1}`) });
    else if (role === "solver") {
      content = answer(`solved ${/Your task is task (\d+)/.exec(user)?.[1] ?? "?"}`);
      delay = DELAY;
    } else content = answer("aggregated");
    setTimeout(() => sendCompletion(res, body.model, { role: "assistant", content }, "stop"), delay);
  });
});
serveAsChild(server);
