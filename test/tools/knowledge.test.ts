import { mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ConfigError } from "../../src/errors.js";
import { loadTeam, runTeam, type RunEvent } from "../../src/index.js";
import { passagesOf, MAX_PASSAGE_CHARS } from "../../src/tools/knowledge/passages.js";
import { ROOT } from "../support/cli.js";
import { startOpenAIServer, type ChatBody, type OpenAIServer } from "../support/openai-server.js";
import { reactReply, tempDir, writeTeam } from "../support/team.js";

const servers: OpenAIServer[] = [];
afterEach(async () => {
  while (servers.length) await servers.pop()?.close();
});

const FORMULAS = join(ROOT, "teams/knowledge/formulas.md");

function knowledgeTeam(url: string, knowledge: string, files: Record<string, string> = {}, dir = tempDir()): string {
  return writeTeam(
    `version: 1
name: knowledge
models:
  default: { provider: openai, model: m, base_url: "${url}", api_key: sk-knowledge-0123456789, max_retries: 0 }
${knowledge}
tools:
  formulas: { builtin: knowledge_lookup, description: Look up geometry formulas. }
agents:
  solver:
    kind: react
    tools: [formulas, calculator]
`,
    files,
    dir,
  );
}

/** The tool results the runtime reported back in the last assistant message. */
function lastToolResults(body: ChatBody): Array<{ call_id: string; ok: boolean; result?: unknown; error?: string }> {
  const last = body.messages?.at(-1);
  if (last?.role !== "assistant") return [];
  return (JSON.parse(String(last.content)) as { tool_results?: [] }).tool_results ?? [];
}

async function runAll(file: string, input: string) {
  const run = runTeam(await loadTeam(file), { input, traceDir: tempDir() });
  const events: RunEvent[] = [];
  for await (const e of run.events) events.push(e);
  return { events, result: await run.result };
}

describe("passages", () => {
  it("are paragraphs under their headings, with their lines; fenced code stays whole", () => {
    const text = "# Book\n\nIntro line.\n\n## Circle\n### Area\n\narea = pi * r^2\nsecond line\n\n```\n# not a heading\n\nstill code\n```\n";
    expect(passagesOf(text)).toEqual([
      { heading: "Book", text: "Intro line.", line: 3, end_line: 3 },
      { heading: "Book > Circle > Area", text: "area = pi * r^2\nsecond line", line: 8, end_line: 9 },
      { heading: "Book > Circle > Area", text: "```\n# not a heading\n\nstill code\n```", line: 11, end_line: 15 },
    ]);
  });

  it("cuts a long paragraph at line ends, and one long line hard", () => {
    const line = "x".repeat(700);
    const cut = passagesOf(`${line}\n${line}\n${line}\n\n${"y".repeat(MAX_PASSAGE_CHARS + 5)}`);
    expect(cut.map((p) => [p.line, p.end_line, p.text.length])).toEqual([
      [1, 1, 700],
      [2, 2, 700],
      [3, 3, 700],
      [5, 5, MAX_PASSAGE_CHARS],
      [5, 5, 5],
    ]);
  });
});

describe("knowledge_lookup over the OpenAI-compatible test server", () => {
  it("finds the circle formulas in the team's document, with source and lines, and the model uses them", async () => {
    const server = await startOpenAIServer({
      respond(body, index) {
        if (index === 0) {
          return {
            content: reactReply("CALL_TOOL", {}, "", "look the formula up"),
            tool_calls: [{ id: "look", name: "formulas", arguments: { query: "area of a circle" } }],
          };
        }
        if (index === 1) {
          const [found] = lastToolResults(body);
          const text = (found!.result as { passages: Array<{ text: string }> }).passages[0]?.text ?? "";
          const formula = /`area = (.*?)`/.exec(text)?.[1]?.replace("r", "5") ?? "none";
          return { content: reactReply("CALL_TOOL", {}), tool_calls: [{ id: "calc", name: "calculator", arguments: { expression: `round(${formula}, 2)` } }] };
        }
        const [calc] = lastToolResults(body);
        return { content: reactReply("ANSWER", { answer: `area ${(calc!.result as { result: number }).result} m²` }) };
      },
    });
    servers.push(server);
    const dir = tempDir();
    mkdirSync(join(dir, "docs"));
    writeFileSync(join(dir, "docs", "formulas.md"), await import("node:fs").then((fs) => fs.readFileSync(FORMULAS, "utf8")));
    writeFileSync(join(dir, "docs", "notes.txt"), "Unrelated notes about boilers and pressure.\n");
    writeFileSync(join(dir, "docs", "image.png"), "circle area circle area");
    const file = knowledgeTeam(server.url, "knowledge: { paths: [./docs] }", {}, dir);

    const { events, result } = await runAll(file, "Area of a circle of radius 5?");
    expect(result).toMatchObject({ result_type: "answer", answer: "area 78.54 m²" });
    const lookup = events.find((e): e is Extract<RunEvent, { type: "tool.finished" }> => e.type === "tool.finished" && e.tool === "formulas");
    const found = lookup?.result as { query: string; passages: Array<Record<string, unknown>> };
    expect(found.query).toBe("area of a circle");
    expect(found.passages).toHaveLength(3);
    expect(found.passages[0]).toMatchObject({
      source: join("docs", "formulas.md"),
      heading: "Geometry formulas > Circle > Area",
      line: 10,
      end_line: 10,
      text: "The area of a circle of radius r is `area = pi * r^2` (square units).",
    });
    // Only text files are read from a folder: the .png never appears.
    expect(found.passages.every((p) => p.source !== join("docs", "image.png"))).toBe(true);
    // The tool spec the model saw is the built-in's, under the declared name.
    const spec = (server.chatRequests[0]!.body!.tools as Array<{ function: { name: string; description: string; parameters: { required: string[] } } }>)[0];
    expect(spec?.function).toMatchObject({ name: "formulas", description: "Look up geometry formulas.", parameters: { required: ["query"] } });
  });

  it("answers nothing found with a note, and respects top_k from the call", async () => {
    const server = await startOpenAIServer({
      replies: [
        {
          content: reactReply("CALL_TOOL", {}),
          tool_calls: [
            { id: "none", name: "formulas", arguments: { query: "zzzqqq" } },
            { id: "one", name: "formulas", arguments: { query: "sphere", top_k: 1 } },
            { id: "bad", name: "formulas", arguments: { query: "sphere", top_k: 50 } },
          ],
        },
        { content: reactReply("ANSWER", { answer: "done" }) },
      ],
    });
    servers.push(server);
    const dir = tempDir();
    writeFileSync(join(dir, "formulas.md"), await import("node:fs").then((fs) => fs.readFileSync(FORMULAS, "utf8")));
    const { events } = await runAll(knowledgeTeam(server.url, "knowledge: { paths: [./formulas.md], top_k: 2 }", {}, dir), "q");
    const finished = events.filter((e): e is Extract<RunEvent, { type: "tool.finished" }> => e.type === "tool.finished");
    const byId = Object.fromEntries(finished.map((e) => [e.call_id, e]));
    expect(byId.none?.result).toMatchObject({ passages: [], note: "nothing matched in 1 file(s); try other words" });
    expect((byId.one!.result as { passages: unknown[] }).passages).toHaveLength(1);
    expect(byId.bad?.ok).toBe(false);
    expect(byId.bad?.error).toMatch(/top_k/);
  });
});

describe("knowledge in the team file", () => {
  it("refuses paths outside the team's folder, missing files, and the tool without knowledge", async () => {
    const outside = tempDir();
    writeFileSync(join(outside, "secret.md"), "# secret\n");
    const dir = tempDir();
    symlinkSync(join(outside, "secret.md"), join(dir, "link.md"));
    const file = knowledgeTeam("http://127.0.0.1:9/v1", `knowledge: { paths: [./link.md, ./missing.md, ${join(outside, "secret.md")}] }`, {}, dir);
    const error = await loadTeam(file).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    const messages = (error as ConfigError).problems.map((p) => `${p.path} ${p.message}`);
    expect(messages).toEqual([
      expect.stringMatching(/^\/knowledge\/paths\/0 knowledge file .*link\.md is outside the team file's folder/),
      expect.stringMatching(/^\/knowledge\/paths\/1 knowledge file not found: .*missing\.md/),
      expect.stringMatching(/^\/knowledge\/paths\/2 knowledge file .*secret\.md is outside the team file's folder/),
    ]);

    const none = await loadTeam(knowledgeTeam("http://127.0.0.1:9/v1", "")).catch((e: unknown) => e);
    expect((none as ConfigError).problems.map((p) => `${p.path} ${p.message}`)).toEqual([
      "/agents/solver/tools/0 'formulas' searches the team's documents, but the team has none: add knowledge: {paths: [...]} at the top of the file",
    ]);
  });

  it("skips a file a folder gives through a link to outside the team's folder", async () => {
    const server = await startOpenAIServer({
      replies: [
        { content: reactReply("CALL_TOOL", {}), tool_calls: [{ id: "look", name: "formulas", arguments: { query: "secret" } }] },
        { content: reactReply("ANSWER", { answer: "done" }) },
      ],
    });
    servers.push(server);
    const outside = tempDir();
    writeFileSync(join(outside, "secret.md"), "# secret\n\nthe secret passage\n");
    const dir = tempDir();
    mkdirSync(join(dir, "docs"));
    writeFileSync(join(dir, "docs", "a.md"), "# public\n\nnothing secret here\n");
    symlinkSync(join(outside, "secret.md"), join(dir, "docs", "b.md"));
    const { events } = await runAll(knowledgeTeam(server.url, "knowledge: { paths: [./docs] }", {}, dir), "q");
    const found = events.find((e): e is Extract<RunEvent, { type: "tool.finished" }> => e.type === "tool.finished")?.result as {
      passages: Array<{ source: string; text: string }>;
      skipped: unknown[];
    };
    expect(found.passages.map((p) => p.text)).toEqual(["nothing secret here"]);
    expect(found.skipped).toEqual([{ source: join("docs", "b.md"), reason: "outside the team file's folder" }]);
  });
});

describe("the circle-plan example", () => {
  it("looks the formulas up in teams/knowledge/formulas.md", async () => {
    const { events, result } = await runAll(join(ROOT, "teams/circle-plan.yaml"), "What are the area and circumference of a circle with radius 5 meters?");
    expect(result.answer).toBe("A circle of radius 5 m has an area of 78.54 m² and a circumference of 31.42 m.");
    const lookup = events.find((e): e is Extract<RunEvent, { type: "tool.finished" }> => e.type === "tool.finished" && e.tool === "knowledge_lookup");
    const found = lookup?.result as { passages: Array<{ source: string; heading: string }> };
    expect(found.passages.map((p) => `${p.source} ${p.heading}`).sort()).toEqual([
      "knowledge/formulas.md Geometry formulas > Circle > Area",
      "knowledge/formulas.md Geometry formulas > Circle > Circumference",
    ]);
  });
});
