/**
 * `runtime validate` warns when a team asks prompt caching of Anthropic's
 * OpenAI-compatible endpoint, which drops `cache_control`
 * (docs/model-servers.md#prompt-caching); the native provider, or caching
 * left unasked, has no warning.
 */
import { describe, expect, it } from "vitest";
import { runCli } from "../support/cli.js";
import { writeTeam } from "../support/team.js";

const team = (model: string) => `version: 1
name: cached
budget: { max_cost_usd: 1 }
models:
  claude: ${model}
agents:
  solver: { kind: react, model: claude }
`;

describe("runtime validate: caching asked of a shim that drops it", () => {
  it("warns at the model's cache key for provider openai on api.anthropic.com with cache: true, and exits 0", async () => {
    const file = writeTeam(
      team(`{ provider: openai, model: claude-sonnet-4-5, base_url: "https://api.anthropic.com/v1/", api_key: "\${ANTHROPIC_API_KEY:-}", cache: true }`),
    );
    const result = await runCli(["validate", file]);
    expect(result.code).toBe(0);
    expect(result.stderr).toMatch(
      new RegExp(
        `^${file}:\\d+:\\d+ /models/claude/cache warning: model claude asks for prompt caching through Anthropic's OpenAI-compatible endpoint, which drops cache_control`,
      ),
    );
    expect(result.stderr).toContain("Use provider: anthropic");
  });

  it.each([
    ["the native provider", `{ provider: anthropic, model: claude-sonnet-4-5, api_key: "\${ANTHROPIC_API_KEY:-}", cache: true }`],
    [
      "the shim without cache asked",
      `{ provider: openai, model: claude-sonnet-4-5, base_url: "https://api.anthropic.com/v1/", api_key: "\${ANTHROPIC_API_KEY:-}" }`,
    ],
    ["cache asked of another server", `{ provider: openai, model: gpt-4o-mini, api_key: "\${OPENAI_API_KEY:-}", cache: true }`],
  ])("no warning for %s", async (_what, model) => {
    const file = writeTeam(team(model));
    const result = await runCli(["validate", file]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toBe("");
  });
});
