import type { SingleToolConfig } from "../config/types.js";
import type { Tool } from "./types.js";

/** A tool declared under `tools:` in the team file, with its way of running. */
export function declaredTool(config: SingleToolConfig, execute: Tool["execute"]): Tool {
  return {
    name: config.name,
    description: config.description,
    parameters: config.parameters,
    effect: config.effect ?? "write",
    ...(config.approval ? { approval: config.approval } : {}),
    timeout_ms: config.timeout_ms,
    max_output_bytes: config.max_output_bytes,
    execute,
  };
}
