import type { SingleToolConfig } from "../config/types.js";
import { RuntimeError } from "../errors.js";
import { BUILTIN_TOOL_NAMES, builtinTool } from "./builtin/index.js";
import { commandTool } from "./command.js";
import { httpTool } from "./http.js";
import { withDeclaredLimits } from "./declared.js";
import type { Tool } from "./types.js";

/**
 * The runnable tool for a resolved tool declaration. A built-in keeps its own
 * parameter schema (its code depends on that shape) but takes the declared
 * name, limits and, when given, description. (An `mcp` entry is many tools,
 * known once its server runs: src/tools/mcp/servers.ts.)
 */
export function toolFromConfig(config: SingleToolConfig): Tool {
  switch (config.type) {
    case "builtin": {
      const tool = builtinTool(config.builtin);
      if (!tool) {
        throw new RuntimeError(
          "CONFIG_INVALID",
          `tool "${config.name}": unknown builtin "${config.builtin}" (this layer provides: ${BUILTIN_TOOL_NAMES.join(", ")})`,
        );
      }
      return withDeclaredLimits(tool, config);
    }
    case "command":
      return commandTool(config);
    case "http":
      return httpTool(config);
    case "module":
      // Its module is imported asynchronously, before the step starts: prepareTools (src/engine/resolve-tools.ts).
      throw new Error(`internal error: the module of tool "${config.name}" was not loaded before use`);
  }
}
