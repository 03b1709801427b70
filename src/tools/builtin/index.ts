import type { Tool } from "../types.js";
import { calculatorTool } from "./calculator.js";
import { terminateTool } from "./terminate.js";

/** Built-in tools this layer provides (todo and plan tools live with their agents). */
export const BUILTIN_TOOL_NAMES = ["calculator", "terminate"] as const;

export type BuiltinToolName = (typeof BUILTIN_TOOL_NAMES)[number];

const FACTORIES: Record<BuiltinToolName, () => Tool> = {
  calculator: calculatorTool,
  terminate: terminateTool,
};

/** A fresh instance of a built-in tool, or undefined for a name this layer does not provide. */
export function builtinTool(name: string): Tool | undefined {
  return Object.hasOwn(FACTORIES, name) ? FACTORIES[name as BuiltinToolName]() : undefined;
}
