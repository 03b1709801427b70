import { describe, expect, test } from "vitest";
import { isSecretKey, redact, redactString, redactWithJson, REDACTED } from "../../src/redact.js";

describe("redact", () => {
  test("masks values under secret-named keys at any depth, in any spelling", () => {
    const input = {
      api_key: "a1",
      deep: { list: [{ apiKey: "a2" }, { headers: { authorization: "Basic Zm9vOmJhcg==", "x-api-key": "a3" } }] },
      PASSWORD: "a4",
      Secret: { any: "shape" },
      token: "a5",
      refresh_token: "a6",
      usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 },
      max_tokens: 10,
      keep: "plain text",
    };
    expect(redact(input)).toEqual({
      api_key: REDACTED,
      deep: { list: [{ apiKey: REDACTED }, { headers: { authorization: REDACTED, "x-api-key": REDACTED } }] },
      PASSWORD: REDACTED,
      Secret: REDACTED,
      token: REDACTED,
      refresh_token: REDACTED,
      usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 },
      max_tokens: 10,
      keep: "plain text",
    });
    expect(input.api_key).toBe("a1"); // the caller's object is untouched
  });

  test("masks secret-looking strings wherever they are", () => {
    expect(redactString("Authorization: Bearer eyJhbGciOi.abc-def_123")).toBe(`Authorization: Bearer ${REDACTED}`);
    expect(redactString("key sk-proj-abcDEF123456_xyz used")).toBe(`key sk-${REDACTED} used`);
    expect(redactString('{"api_key": "live-123456", "x": 1}')).toBe(`{"api_key": "${REDACTED}", "x": 1}`);
    expect(redactString("password=hunter22&user=bob")).toBe(`password=${REDACTED}&user=bob`);
    expect(redactString("the sky is blue; tokens used: 12")).toBe("the sky is blue; tokens used: 12");
    expect(redactString("uses my-configured-key!", ["my-configured-key"])).toBe(`uses ${REDACTED}!`);
    expect(redactString("connect to https://bob:pw-123@proxy.example:8080/v1 failed")).toBe(`connect to https://${REDACTED}@proxy.example:8080/v1 failed`);
    expect(redactString("see https://example.org/a@b and mailto:ada@example.org")).toBe("see https://example.org/a@b and mailto:ada@example.org");
  });

  test("redactWithJson finds credentials in a URL", () => {
    const event = { type: "tool.finished", result: { url: "postgres://app:s3cr3t-pass@db:5432/x" } };
    expect(redactWithJson(event).json).toBe(`{"type":"tool.finished","result":{"url":"postgres://${REDACTED}@db:5432/x"}}`);
  });

  test("leaves unchanged values as they are (same object)", () => {
    const clean = { a: [1, "two", { b: null }], c: true };
    expect(redact(clean)).toBe(clean);
  });

  test("recognises secret keys by name only", () => {
    for (const k of [
      "api_key",
      "apiKey",
      "API-KEY",
      "X-Api-Key",
      "Authorization",
      "proxy-authorization",
      "password",
      "client_secret",
      "access_token",
      "openai_api_key",
    ]) {
      expect(isSecretKey(k), k).toBe(true);
    }
    for (const k of ["total_tokens", "max_tokens", "tokenizer", "keyboard", "author", "input"]) {
      expect(isSecretKey(k), k).toBe(false);
    }
  });

  test("redactWithJson agrees with redact, and skips the copy only for values with nothing secret-looking", () => {
    const secrets = ['conf"key-123456'];
    const risky: unknown[] = [
      { api__key: "v1" },
      { Pass_Word: "v2" },
      { accessToken: "v3" },
      { note: "Bearer\nabc123" },
      { note: "x access_token=abc" },
      { headers: [{ "X-API-KEY": "v4" }] },
      { text: 'uses conf"key-123456 here' },
      { text: "jwt eyJhbGciOiJI.eyJzdWIiOiIx.c2lnbmF0dXJl" },
      // `-`/`_` anywhere in a key's name, and a Kelvin sign (lower-cased to k) in it.
      { "a-p_i--k_e-y": "v5" },
      { "api\u212Aey": "v6" },
      { "Pass-W_o-r-d": "v7" },
      { SECRET_: "v8" },
      { tok_en: "v9" },
    ];
    for (const value of risky) {
      const out = redactWithJson(value, secrets);
      expect(out.json, JSON.stringify(value)).toBe(JSON.stringify(redact(value, secrets)));
      expect(out.json).toContain(REDACTED);
      expect(out.value).not.toBe(value);
    }
    const clean = { type: "llm.response", usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3, "token-s": 4 }, thought: "skip the basics" };
    const out = redactWithJson(clean, secrets);
    expect(out.value).toBe(clean);
    expect(out.json).toBe(JSON.stringify(clean));
  });
});
