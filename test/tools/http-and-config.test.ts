import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { HttpToolConfig, ToolConfig } from "../../src/config/types.js";
import { RuntimeError } from "../../src/errors.js";
import { toolFromConfig } from "../../src/tools/from-config.js";
import { httpTool } from "../../src/tools/http.js";
import { call, fixtureCommand, makeBox } from "./helpers.js";

let server: Server;
let base = "";
const seen: { method: string; url: string; body: string; auth?: string }[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c.toString()));
    req.on("end", () => {
      seen.push({ method: req.method ?? "", url: req.url ?? "", body, auth: req.headers.authorization });
      if (req.url?.startsWith("/slow")) return void setTimeout(() => res.end("{}"), 5000);
      if (req.url?.startsWith("/big")) return void res.end("y".repeat(50_000));
      if (req.url?.startsWith("/missing")) {
        res.statusCode = 404;
        return void res.end("no such thing");
      }
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify({ method: req.method, url: req.url, received: body ? JSON.parse(body) : null }));
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(() => {
  server.closeAllConnections();
  server.close();
});

function httpConfig(overrides: Partial<HttpToolConfig>): HttpToolConfig {
  return {
    type: "http",
    name: "web",
    description: "a web endpoint",
    parameters: { type: "object" },
    url: `${base}/echo`,
    method: "POST",
    headers: {},
    timeout_ms: 2000,
    max_output_bytes: 10_000,
    ...overrides,
  };
}

describe("http tools", () => {
  it("POST the JSON arguments, GET them as query parameters", async () => {
    const post = httpTool(httpConfig({ name: "post", headers: { authorization: "Bearer sk-test-secret" } }));
    const get = httpTool(httpConfig({ name: "get", method: "GET", url: `${base}/echo?fixed=1` }));
    const { box } = makeBox([post, get]);
    const [p, g] = await box.run([call("post", { q: "circle", n: 2 }), call("get", { q: "circle area", n: 2 })]);
    expect(p).toMatchObject({ ok: true, result: { method: "POST", received: { q: "circle", n: 2 } } });
    expect(g).toMatchObject({ ok: true, result: { method: "GET", url: "/echo?fixed=1&q=circle+area&n=2" } });
    expect(seen.find((s) => s.method === "POST")?.auth).toBe("Bearer sk-test-secret");
  });

  it("time out, cap the body, and report HTTP errors without headers", async () => {
    const tools = [
      httpTool(httpConfig({ name: "slow", url: `${base}/slow`, timeout_ms: 200, headers: { authorization: "Bearer sk-hidden" } })),
      httpTool(httpConfig({ name: "big", url: `${base}/big`, max_output_bytes: 1000 })),
      httpTool(httpConfig({ name: "missing", url: `${base}/missing`, headers: { authorization: "Bearer sk-hidden" } })),
      httpTool(httpConfig({ name: "dead", url: "http://127.0.0.1:1/x" })),
    ];
    const { box, events } = makeBox(tools);
    const [slow, big, missing, dead] = await box.run(tools.map((t) => call(t.name, {})));
    expect(slow).toMatchObject({ ok: false, error: "timed out after 200 ms" });
    expect(big).toMatchObject({ ok: false, error: "response exceeded 1000 bytes" });
    expect(missing).toMatchObject({ ok: false, error: "HTTP 404 Not Found: no such thing" });
    expect(dead!.ok).toBe(false);
    expect(dead!.error).toMatch(/^request to http:\/\/127\.0\.0\.1:1\/x failed/);
    expect(JSON.stringify(events)).not.toContain("sk-hidden");
  });
});

describe("toolFromConfig", () => {
  const base = { description: "", parameters: {}, timeout_ms: 1234, max_output_bytes: 500 };

  it("builds built-ins with the declared name and limits but their own schema", async () => {
    const tool = toolFromConfig({ ...base, type: "builtin", name: "calc", builtin: "calculator" });
    expect(tool).toMatchObject({ name: "calc", timeout_ms: 1234, max_output_bytes: 500 });
    expect(tool.description).toContain("arithmetic");
    expect(tool.parameters).toMatchObject({ required: ["expression"] });
    const { box } = makeBox([tool]);
    const [outcome] = await box.run([call("calc", { expression: "round(2*pi*5, 2)" })]);
    expect(outcome).toMatchObject({ ok: true, result: { result: 31.42 } });
  });

  it("refuses an unknown built-in with CONFIG_INVALID", () => {
    const config: ToolConfig = { ...base, type: "builtin", name: "magic", builtin: "magic" };
    expect(() => toolFromConfig(config)).toThrow(RuntimeError);
    expect(() => toolFromConfig(config)).toThrow(/unknown builtin "magic" \(this layer provides: calculator, terminate\)/);
    try {
      toolFromConfig(config);
    } catch (err) {
      expect((err as RuntimeError).code).toBe("CONFIG_INVALID");
    }
  });

  it("builds command tools, and mcp tools that fail clearly", async () => {
    const command = toolFromConfig(fixtureCommand("nap", "sleep.mjs"));
    const mcp = toolFromConfig({ ...base, type: "mcp", name: "remote", server: ["x"], tool: "y" });
    const { box } = makeBox([command, mcp]);
    const [nap, remote] = await box.run([call("nap", { ms: 1 }), call("remote", {})]);
    expect(nap).toMatchObject({ ok: true, result: { slept: 1 } });
    expect(remote).toMatchObject({ ok: false, error: 'tool "remote": mcp tools are not supported yet' });
  });
});
