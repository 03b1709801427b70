/**
 * The `parser:` module of a plan_and_solve_flow (docs/flows.md#parser): the
 * team's own reader of planner and replanner replies, for models that answer
 * in a format of their own (a numbered list, tagged text) rather than JSON.
 * It exports `parsePlan(text)` and/or `parseAction(text)`; what they return
 * is validated against the plan and action schemas like any parsed reply.
 */
import { loadTeamModule } from "../../tools/module.js";

/** A reader of one kind of reply: the reply's text in, the value to validate out. */
export type ReplyReader = (text: string) => unknown;

export interface ParserModule {
  plan?: ReplyReader;
  action?: ReplyReader;
}

/** The readers of the module at `path` (absolute), imported once per process; a CONFIG_INVALID error in one line otherwise. */
export function loadParser(path: string): Promise<ParserModule> {
  return loadTeamModule(path, "parser module", (exports) => {
    const { parsePlan, parseAction } = exports;
    if (parsePlan !== undefined && typeof parsePlan !== "function") return "parsePlan must be a function";
    if (parseAction !== undefined && typeof parseAction !== "function") return "parseAction must be a function";
    if (parsePlan === undefined && parseAction === undefined) return "it exports neither parsePlan nor parseAction";
    return {
      ...(typeof parsePlan === "function" ? { plan: (text: string) => parsePlan.call(exports, text) } : {}),
      ...(typeof parseAction === "function" ? { action: (text: string) => parseAction.call(exports, text) } : {}),
    };
  });
}
