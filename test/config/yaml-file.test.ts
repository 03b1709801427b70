/**
 * src/config/yaml-file.ts, the one door of YAML files, as a new kind of file
 * would use it (a skill's front matter, say): its own noun, limit and schema,
 * and the same located, worded problems as the team file's.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import Ajv from "ajv";
import { describe, expect, it } from "vitest";
import { SCHEMA_OPTIONS } from "../../src/config/precompiled.js";
import { loadYamlFile, type YamlFileKind } from "../../src/config/yaml-file.js";
import { ConfigError } from "../../src/errors.js";
import { tempDir } from "../support/team.js";

const validate = new Ajv.default(SCHEMA_OPTIONS).compile({
  type: "object",
  additionalProperties: false,
  required: ["name"],
  properties: { name: { type: "string", minLength: 1 }, description: { type: "string" } },
});

const SKILL: YamlFileKind = {
  noun: "a skill",
  expected: "a mapping with name and description",
  maxBytes: 64,
  prefix: "skill: ",
  schema: { validate: () => validate, words: { name: "the skill schema" } },
};

/** The problems of a file holding `text`, as `LINE:COL /pointer message` lines. */
function problems(text: string): string[] {
  const file = join(tempDir("yaml-file-"), "SKILL.yaml");
  writeFileSync(file, text);
  try {
    loadYamlFile(file, SKILL);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    return err.problems.map((p) => `${p.line}:${p.col} ${p.path || "/"} ${p.message}`);
  }
  throw new Error("the file was accepted");
}

describe("loadYamlFile", () => {
  it("gives the value of a valid file", () => {
    const file = join(tempDir("yaml-file-"), "SKILL.yaml");
    writeFileSync(file, "\uFEFFname: weather\ndescription: the forecast\n");
    expect(loadYamlFile(file, SKILL).value).toEqual({ name: "weather", description: "the forecast" });
  });

  it("says every schema problem where it is, in the words of every YAML file", () => {
    expect(problems("name: ''\ndescripton: x\n")).toEqual([
      "1:7 /name skill: must not be empty",
      "2:1 /descripton skill: unknown key 'descripton' (did you mean 'description'?)",
    ]);
    expect(problems("description: x\n")).toEqual(["1:1 / skill: missing required key 'name'"]);
  });

  it("refuses what the parser refuses: duplicate and prototype keys, another top level, a syntax error", () => {
    expect(problems("name: a\nname: b\n")).toEqual(["2:1 /name skill: duplicate key 'name': each key may appear once in a mapping"]);
    expect(problems("name: a\n__proto__: b\n")).toEqual(["2:1 /__proto__ skill: key '__proto__' is not allowed"]);
    expect(problems("- name: a\n")).toEqual(["1:1 / skill: expected a mapping with name and description, got a list"]);
    expect(problems("name: [a\n")[0]).toMatch(/^\d+:\d+ \/ skill: YAML syntax: /);
  });

  it("refuses a file past its kind's limit before reading it, and names a missing one", () => {
    expect(problems(`name: ${"x".repeat(100)}\n`)).toEqual(["1:1 / skill: file is 0.1 KB: a skill may be at most 64 bytes"]);
    expect(() => loadYamlFile(join(tempDir("yaml-file-"), "none.yaml"), SKILL)).toThrow(/none\.yaml:1:1 \/ skill: file not found/);
  });
});
