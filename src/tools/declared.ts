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

/** A built-in under its declared name, limits and (when given) description; its parameters stay its own. */
export function withDeclaredLimits(tool: Tool, config: SingleToolConfig): Tool {
  return {
    ...tool,
    name: config.name,
    description: config.description || tool.description,
    timeout_ms: config.timeout_ms,
    max_output_bytes: config.max_output_bytes,
    ...(config.effect ? { effect: config.effect } : {}),
    ...(config.approval ? { approval: config.approval } : {}),
  };
}
