/**
 * The answer shown as it is written (docs/cli.md#watching-a-run): `runtime
 * exec` spawned, its model the real `openai` client (streaming, the default)
 * against the project's test server, which drips the reply slowly. With
 * --progress the log on stderr shows the answer's beginning while the model
 * is still writing it; stdout gets the answer once, whole, at the end, and a
 * pipe without --progress gets nothing else. In a terminal (tmux) the live
 * view shows it under the agents while it is written, then gives way to the
 * summary and the answer printed once. The tool call's reply before it is
 * never shown as text.
 */
import { spawn } from "node:child_process";
import { afterEach, describe, expect, it } from "vitest";
import { BIN, ROOT, runCli } from "../support/cli.js";
import { startOpenAIServer, type OpenAIServer, type Reply } from "../support/openai-server.js";
import { reactReply, tempDir, writeTeam } from "../support/team.js";
import { TmuxTerminal } from "../support/tmux.js";

const ANSWER = "A circle of radius 5 m has an area of 78.54 m² and a circumference of 31.42 m.\nBoth follow from πr² and 2πr.";

const servers: OpenAIServer[] = [];
const terminals: TmuxTerminal[] = [];
afterEach(async () => {
  for (const t of terminals.splice(0)) t.kill();
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

/** A react agent that calls the calculator once, then answers ANSWER, each reply dripped `drip_ms` a chunk. */
async function slowTeam(drip_ms: number): Promise<string> {
  const replies: Reply[] = [
    {
      content: reactReply("CALL_TOOL", {}, "", "I compute the area."),
      tool_calls: [{ id: "c1", name: "calculator", arguments: { expression: "round(pi * 5^2, 2)" } }],
      drip_ms,
    },
    { content: reactReply("ANSWER", { answer: ANSWER }), drip_ms },
  ];
  const server = await startOpenAIServer({ replies, chunk_size: 4 });
  servers.push(server);
  return writeTeam(`version: 1
name: slow
models:
  default:
    provider: openai
    model: test-model
    base_url: ${server.url}
    api_key: sk-slow
    max_retries: 0
agents:
  solver:
    kind: react
    tools: [calculator]
`);
}

/** The answer's text in the log: its `  ┆ ` lines, joined. */
const shownAnswer = (log: string) =>
  log
    .split("\n")
    .filter((l) => l.startsWith("  ┆ "))
    .map((l) => l.slice(4))
    .join("\n");

describe("runtime exec shows the answer as the model writes it", () => {
  it("--progress: the answer's beginning on stderr while the stream goes on, the answer once on stdout at the end", async () => {
    const team = await slowTeam(40);
    const child = spawn(process.execPath, [BIN, "exec", team, "Area and circumference of a circle of radius 5 m?", "--progress", "--trace-dir", tempDir()], {
      cwd: ROOT,
      env: { ...process.env, NO_COLOR: "1" },
    });
    let stdout = "";
    let stderr = "";
    let partial: { shown: string; stdout: string; exited: boolean } | undefined;
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => {
      stderr += d.toString();
      // The first moment the log shows some of the answer.
      const shown = shownAnswer(stderr);
      if (partial === undefined && shown !== "") partial = { shown, stdout, exited: child.exitCode !== null };
    });
    const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
    expect(code, stderr).toBe(0);
    // Seen before the end: a beginning of the answer, not all of it, with nothing on stdout yet.
    expect(partial, stderr).toBeDefined();
    expect(ANSWER.startsWith(partial!.shown)).toBe(true);
    expect(partial!.shown.length).toBeLessThan(ANSWER.length);
    expect(partial!.stdout).toBe("");
    expect(partial!.exited).toBe(false);
    // The whole answer in the log, and nothing of the tool call's reply shown as text.
    expect(shownAnswer(stderr)).toBe(ANSWER);
    expect(stderr.indexOf("  ┆ ")).toBeGreaterThan(stderr.search(/^tool calculator ✓/m));
    // The answer ends its lines before the log goes on.
    expect(stderr).toMatch(/ {2}┆ Both follow from πr² and 2πr\.\n/);
    // stdout: the answer, once.
    expect(stdout).toBe(`${ANSWER}\n`);
  });

  it("a pipe without --progress: stdout is the answer alone, stderr nothing, as before", async () => {
    const team = await slowTeam(0);
    const r = await runCli(["exec", team, "Area?", "--trace-dir", tempDir()]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe(`${ANSWER}\n`);
    expect(r.stderr).toBe("");
  });

  it("in a terminal: the live view shows the answer's beginning under the agents while it is written; then the summary and the answer, once", async () => {
    const team = await slowTeam(40);
    const sh = (v: string) => `'${v.replace(/'/g, `'\\''`)}'`;
    const term = TmuxTerminal.start(`node ${sh(BIN)} exec ${sh(team)} ${sh("Area?")} --trace-dir ${sh(tempDir())}`, { width: 60, height: 20 });
    terminals.push(term);
    // A frame (its header) with a row of the answer, while the run goes on.
    const during = await term.waitFor((screen) => screen.some((l) => /^● \d/.test(l)) && screen.some((l) => l.startsWith("┆ A circle")));
    expect(term.exited()).toBe(false);
    const rows = during.filter((l) => l.startsWith("┆ ")).map((l) => l.slice(2).trimEnd());
    expect(ANSWER.replace("\n", "").startsWith(rows.join(""))).toBe(true);
    expect(rows.join("").length).toBeLessThan(ANSWER.length - 1);
    expect(during.findIndex((l) => l.startsWith("┆ "))).toBeGreaterThan(during.findIndex((l) => l.startsWith("▸ solver")));
    await term.waitFor(() => term.exited(), 30_000);
    expect(term.exitStatus()).toBe(0);
    // What stays: the summary, then the answer once (stdout), nothing of the frame.
    const history = term.history().filter((l) => l.trim() !== "");
    expect(history[0]).toMatch(/^✓ answered in /);
    expect(history.slice(1)).toEqual(ANSWER.split("\n"));
  });
});
