import { existsSync, statSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { basename, dirname, resolve } from "node:path";
import type { Command } from "commander";
import { describeError, RuntimeError } from "../../errors.js";
import { loadTeamOrReport } from "../load-team.js";
import type { RecordedReply } from "../../models/recorder.js";
import { EXIT, type SetExit } from "../exit.js";
import { STORE_OPTION_HELP, storeUrl } from "../store-option.js";
import type { Store } from "../../store/store.js";
import type { Attachment } from "../../models/attachment.js";

interface ExecOptions {
  agent?: string;
  inputFile?: string;
  events?: string;
  progress?: boolean;
  verbose?: boolean;
  traceDir?: string;
  record?: string;
  session?: string;
  otel?: boolean;
  store?: string;
  attach: string[];
}

/** `runtime exec FILE [INPUT...]`: run the entry agent (or --agent) and print the answer. */
export function registerExec(program: Command, setExit: SetExit): void {
  program
    .command("exec")
    .description("run a team's entry agent (or --agent) on an input and print the answer")
    .argument("<file>", "team file")
    .argument("[input...]", "the request (or --input-file)")
    .option("-a, --agent <name>", "agent to run instead of the team's entry")
    .option("-i, --input-file <file>", "read the request from a file, - for stdin")
    .option("--events <format>", "write events to stdout instead of the answer: ndjson")
    .option("--progress", "show live progress on stderr even when it is not a terminal")
    .option("--no-progress", "never show live progress")
    .option("--verbose", "in a terminal, log every state, thought and tool call instead of the live view")
    .option("--trace-dir <dir>", "trace directory (default $RUNTIME_TRACE_DIR or .runtime)")
    .option("--store <url>", STORE_OPTION_HELP)
    .option("--record <file>", "write what the models answered as a scripted-model file, to replay the run")
    .option("--session <id>", "session id: a follow-up in the same session continues its state")
    .option(
      "--attach <file>",
      "give the run a file: an image (png, jpeg, webp, gif) or a PDF; repeatable (docs/attachments.md)",
      (file: string, files: string[]) => [...files, file],
      [] as string[],
    )
    .option(
      "--otel",
      "export OpenTelemetry spans over OTLP/HTTP to $OTEL_EXPORTER_OTLP_ENDPOINT, else http://localhost:4318 (on by itself when that variable is set)",
    )
    .action(async (file: string, words: string[], opts: ExecOptions) => {
      setExit(await exec(file, words, opts));
    });
}

async function exec(file: string, words: string[], opts: ExecOptions): Promise<number> {
  const fail = (message: string, code: number) => {
    process.stderr.write(`runtime exec: ${message}\n`);
    return code;
  };
  if (opts.events !== undefined && opts.events !== "ndjson") return fail(`--events must be ndjson, not '${opts.events}'`, EXIT.USAGE);

  let input: string;
  try {
    input = await readInput(words, opts.inputFile);
  } catch (err) {
    return fail(describeError(err), EXIT.USAGE);
  }
  if (!input.trim()) return fail("no input: give the request as arguments or with --input-file", EXIT.USAGE);
  let attachments: Attachment[];
  try {
    attachments = await readAttachments(opts.attach);
  } catch (err) {
    return fail(describeError(err), EXIT.USAGE);
  }
  let url: string | undefined;
  try {
    url = storeUrl(opts.store);
  } catch (err) {
    return fail(describeError(err), EXIT.USAGE);
  }
  // Found out before the run, not after it has cost a model its tokens.
  if (opts.record) {
    const parent = dirname(resolve(opts.record));
    if (!existsSync(parent) || !statSync(parent).isDirectory()) {
      return fail(`cannot write --record ${opts.record}: directory ${parent} does not exist`, EXIT.USAGE);
    }
  }

  // The engine is loaded only when a command needs it, so `runtime --help` starts fast.
  const [{ runTeam }, { createChatClient }, { recordingClient, writeScript }, { runAndReport }] = await Promise.all([
    import("../../engine/run-team.js"),
    import("../../models/factory.js"),
    import("../../models/recorder.js"),
    import("../run-report.js"),
  ]);
  const team = await loadTeamOrReport(file, "exec");
  if (!team) return EXIT.USAGE;
  if (opts.agent !== undefined && !team.agents[opts.agent]) {
    return fail(`unknown agent '${opts.agent}' (agents: ${Object.keys(team.agents).join(", ")})`, EXIT.USAGE);
  }
  let store: Store | undefined;
  if (url !== undefined) {
    try {
      store = await (await import("../../store/create.js")).createStore(url);
    } catch (err) {
      return fail(describeError(err), EXIT.RUN_ERROR);
    }
  }
  const recorded: RecordedReply[] = [];
  const status = await runAndReport("exec", { ...opts, store }, team, (base) =>
    runTeam(team, {
      ...base,
      input,
      ...(attachments.length ? { attachments } : {}),
      ...(opts.agent !== undefined ? { agent: opts.agent } : {}),
      ...(opts.session !== undefined ? { sessionId: opts.session } : {}),
      ...(opts.record ? { createClient: (config) => recordingClient(createChatClient(config), recorded) } : {}),
    }),
  );
  await store?.close();
  if (opts.record) {
    try {
      await writeScript(opts.record, recorded);
    } catch (err) {
      process.stderr.write(`runtime exec: cannot write ${opts.record}: ${describeError(err)}\n`);
    }
  }
  return status;
}

/** The files of --attach, each refused (USAGE) past the size cap before it is read, or when it is not a type taken. */
async function readAttachments(files: readonly string[]): Promise<Attachment[]> {
  const { makeAttachment, checkAttachmentCaps, checkAttachmentSize } = await import("../../models/attachment.js");
  const out: Attachment[] = [];
  for (const file of files) {
    let data: Buffer;
    try {
      checkAttachmentSize(file, statSync(file).size);
      data = await readFile(file);
    } catch (err) {
      if (err instanceof RuntimeError) throw err;
      const code = (err as NodeJS.ErrnoException).code;
      const why = code === "ENOENT" ? "no such file" : code === "EISDIR" ? "it is a directory" : describeError(err);
      throw new RuntimeError("USAGE", `cannot attach ${file}: ${why}`);
    }
    out.push(makeAttachment(basename(file), data));
  }
  checkAttachmentCaps(out);
  return out;
}

async function readInput(words: string[], inputFile?: string): Promise<string> {
  if (inputFile === undefined) return words.join(" ");
  if (words.length) throw new RuntimeError("USAGE", "give the input either as arguments or with --input-file, not both");
  if (inputFile === "-") {
    const chunks: Buffer[] = [];
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks).toString("utf8");
  }
  try {
    return await readFile(inputFile, "utf8");
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why = code === "ENOENT" ? "no such file" : code === "EISDIR" ? "it is a directory" : describeError(err);
    throw new RuntimeError("USAGE", `cannot read --input-file ${inputFile}: ${why}`);
  }
}
