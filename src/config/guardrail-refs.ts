/**
 * What the schema cannot say of guardrails (docs/guardrails.md): exactly one
 * check each, the keys that go with it, patterns and schemas that compile,
 * models, tools and module files that exist.
 */
import { resolve } from "node:path";
import { describeError } from "../errors.js";
import { isRecord, list, str, type RawObject } from "./raw.js";
import { didYouMean } from "./suggest.js";

const CHECKS = ["deny", "max_chars", "json_schema", "pii", "command", "module", "model"] as const;

export interface GuardrailContext {
  dir: string;
  report(at: string, message: string): void;
  /** Reports a file that is missing, too large or outside the team's folder. */
  file(path: string, at: string, what: string): void;
  /** Why a JSON schema does not compile, if it does not. */
  schemaProblem(schema: RawObject): string | undefined;
  models: ReadonlySet<string>;
  modelNames: string[];
  /** Models some part of the team uses: a judge's model is one. */
  used: Set<string>;
  knownTool(name: string): boolean;
}

/** Check a `guardrails:` list at `at` (a JSON pointer). */
export function checkGuardrails(value: unknown, at: string, ctx: GuardrailContext): void {
  for (const [index, item] of list(value).entries()) {
    if (isRecord(item)) checkGuardrail(item, `${at}/${index}`, ctx);
  }
}

function checkGuardrail(g: RawObject, at: string, ctx: GuardrailContext): void {
  const { report } = ctx;
  const given = CHECKS.filter((k) => g[k] !== undefined);
  if (given.length !== 1) {
    report(
      at,
      given.length === 0
        ? `a guardrail needs one check: one of ${CHECKS.join(", ")}`
        : `a guardrail has one check; this one gives ${given.join(" and ")}: split it in two`,
    );
    return;
  }
  const check = given[0]!;
  const on = str(g.on);
  const only = (key: string, allowed: boolean, what: string) => {
    if (g[key] !== undefined && !allowed) report(`${at}/${key}`, `'${key}' ${what}`);
  };
  only("rubric", check === "model", "goes with 'model' (the judge)");
  only("timeout_ms", check === "command", "goes with 'command'");
  only("sandbox", check === "command", "goes with 'command'");
  only("tools", on === "tool_input" || on === "tool_output", "names the tools of a tool_input or tool_output guardrail");
  only("max_retries", g.action === "retry", "goes with action: retry");
  if (check === "json_schema" && on !== "output") report(`${at}/json_schema`, "json_schema checks an answer: use it with on: output");
  if (g.action === "redact" && check !== "deny" && check !== "pii") report(`${at}/action`, "redact masks what matched: it needs a deny or pii check");
  if (g.action === "retry" && on === "input")
    report(`${at}/action`, "retry gives the reason back to the model, which has not been asked yet on input: use block");

  switch (check) {
    case "deny":
      for (const [i, pattern] of list(g.deny).entries()) {
        if (typeof pattern !== "string") continue;
        try {
          new RegExp(pattern, "iu");
        } catch (err) {
          report(`${at}/deny/${i}`, `not a regular expression: ${describeError(err)}`);
        }
      }
      break;
    case "json_schema": {
      const problem = isRecord(g.json_schema) ? ctx.schemaProblem(g.json_schema) : undefined;
      if (problem) report(`${at}/json_schema`, problem);
      break;
    }
    case "model": {
      const model = str(g.model);
      if (model === undefined) break;
      if (!ctx.models.has(model)) report(`${at}/model`, `unknown model '${model}'${didYouMean(model, ctx.modelNames)}`);
      else ctx.used.add(model);
      if (g.rubric === undefined) report(at, "a model guardrail needs a 'rubric': what the text must satisfy");
      break;
    }
    case "module": {
      const path = str(g.module);
      if (path !== undefined) ctx.file(resolve(ctx.dir, path), `${at}/module`, "guardrail module");
      break;
    }
    case "command": {
      const program = str(list(g.command)[0]);
      if (program?.startsWith(".")) ctx.file(resolve(ctx.dir, program), `${at}/command/0`, "guardrail program");
      break;
    }
    default:
      break;
  }
  for (const [i, tool] of list(g.tools).entries()) {
    if (typeof tool === "string" && !ctx.knownTool(tool)) report(`${at}/tools/${i}`, `unknown tool '${tool}'`);
  }
}
