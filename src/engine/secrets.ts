import type { ResolvedTeam, ToolConfig } from "../config/types.js";
import { isSecretKey } from "../redact.js";

/**
 * The team's own secrets, masked by value wherever they might appear (the
 * one list, read by the bus of every run and by the server): model API keys,
 * the values of secret-named model headers, and the values of secret-named command and MCP server env variables and http, A2A and MCP server headers
 * (`SERVICE_TOKEN`, `X-Api-Key`, `Authorization`), which a tool's output or
 * error could otherwise echo into events and the trace; and the `openai`
 * client's own OPENAI_API_KEY, used when a model names no key.
 */
export function teamSecrets(team: ResolvedTeam, env: NodeJS.ProcessEnv = process.env): string[] {
  const keys = Object.values(team.models).flatMap((m) => (m.provider !== "scripted" && m.api_key ? [m.api_key] : []));
  const modelHeaders = Object.values(team.models).flatMap((m) => (m.provider !== "scripted" ? Object.entries(m.headers) : []));
  const named = [...modelHeaders, ...Object.values(team.tools).flatMap((t) => Object.entries(toolSecrets(t)))].flatMap(([name, value]) =>
    isSecretKey(name) && value ? [value] : [],
  );
  const fromEnv = env["OPENAI_API_KEY"] ? [env["OPENAI_API_KEY"]] : [];
  return [...new Set([...keys, ...named, ...fromEnv])];
}

/** The named values of a tool that may hold credentials: its environment or its headers. */
function toolSecrets(tool: ToolConfig): Record<string, string> {
  switch (tool.type) {
    case "command":
      return tool.env;
    case "http":
    case "a2a":
      return tool.headers;
    case "mcp":
      return tool.server.transport === "stdio" ? tool.server.env : tool.server.headers;
    default:
      return {};
  }
}
