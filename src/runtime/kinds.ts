import type { AgentKind } from "../config/types.js";
import { runReact } from "../agents/react/run.js";
import type { AgentRunner } from "./types.js";

/** The runner of each agent kind. */
export const AGENT_RUNNERS: Partial<Record<AgentKind, AgentRunner>> = {
  react: runReact,
};
