import type { CallToolResult, Tool as McpToolSpec } from "@modelcontextprotocol/sdk/types.js";
import type { JsonSchema, McpToolConfig } from "../../config/types.js";
import type { Tool } from "../types.js";
import type { CallProgress, McpConnection } from "./connection.js";
import { RuntimeError } from "../../errors.js";

/**
 * One tool of an MCP server as a runtime Tool: the server's name,
 * description and input schema (checked by the ToolBox like any tool's
 * arguments), the entry's timeout, output cap, approval and effect, `write`
 * unless the entry says otherwise (a server's tool annotations are hints,
 * so they do not make a call safe to run twice).
 */
export function mcpTool(config: McpToolConfig, spec: McpToolSpec, connection: McpConnection): Tool {
  return {
    name: spec.name,
    description: spec.description ?? spec.title ?? "",
    parameters: inputSchema(spec.inputSchema),
    effect: config.effect ?? "write",
    ...(config.approval ? { approval: config.approval } : {}),
    timeout_ms: config.timeout_ms,
    max_output_bytes: config.max_output_bytes,
    async execute(args, ctx) {
      const onProgress = (p: CallProgress): void => ctx.emit({ type: "tool.progress", tool: spec.name, call_id: ctx.call_id, ...p });
      return resultForModel(await connection.call(spec, args, ctx.signal, config.timeout_ms, onProgress));
    },
  };
}

/**
 * The server's input schema, less `$schema`: the ToolBox's ajv reads the
 * keywords and would refuse a draft it does not carry; what the schema
 * requires stays the same.
 */
function inputSchema(schema: McpToolSpec["inputSchema"]): JsonSchema {
  const { $schema: _dialect, ...rest } = schema as JsonSchema;
  return rest;
}

/**
 * What the model gets back: the structured content when the server sent
 * some (the text beside it is, by the protocol, its serialisation), else the
 * text of the content parts joined; parts that are not text (an image, a
 * binary resource) are described, not pasted. A result marked `isError`
 * throws, so it reaches the model as the call's error.
 */
export function resultForModel(result: CallToolResult): unknown {
  const text = result.content
    .map(describePart)
    .filter((t) => t !== "")
    .join("\n");
  if (result.isError) throw new RuntimeError("TOOL_FAILED", text.replace(/\s*\n\s*/g, " ") || "the tool reported an error without a message");
  if (result.structuredContent !== undefined) return result.structuredContent;
  return text;
}

function describePart(part: CallToolResult["content"][number]): string {
  switch (part.type) {
    case "text":
      return part.text;
    case "image":
    case "audio":
      return `[${part.type} ${part.mimeType}, ${Math.floor((part.data.length * 3) / 4)} bytes]`;
    case "resource":
      return "text" in part.resource ? part.resource.text : `[resource ${part.resource.uri}${part.resource.mimeType ? ` (${part.resource.mimeType})` : ""}]`;
    case "resource_link":
      return `[resource link ${part.uri}${part.description ? `: ${part.description}` : ""}]`;
    default:
      return "";
  }
}
