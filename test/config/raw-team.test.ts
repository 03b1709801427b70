import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { generateRawTeamTypes } from "../../scripts/generate-raw-team.js";

const schema = JSON.parse(readFileSync("schemas/team.schema.json", "utf8")) as Record<string, unknown>;

describe("src/config/raw-team.ts", () => {
  // Stale after a schema change: `npx vitest run test/config/raw-team.test.ts -u` regenerates it.
  it("is generated from schemas/team.schema.json", async () => {
    await expect(generateRawTeamTypes(schema)).toMatchFileSnapshot("../../src/config/raw-team.ts");
  });

  it("the generator refuses a construct it has no rule for", () => {
    const withOneOf = { ...schema, $defs: { ...(schema.$defs as object), odd: { type: "object", oneOf: [] } } };
    expect(() => generateRawTeamTypes(withOneOf)).toThrow("unsupported keyword oneOf");
  });
});
