import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { HttpToolConfig } from "../../src/config/types.js";
import { httpTool } from "../../src/tools/http.js";
import { call, makeBox } from "../support/tools.js";

let server: Server;
let base = "";
const seen: { method: string; url: string; body: string; auth?: string }[] = [];
/** Another origin a redirect points to; what reaches it is stolen. */
let thief: Server;
let other = 0;
const stolen: string[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c.toString()));
    req.on("end", () => {
      seen.push({ method: req.method ?? "", url: req.url ?? "", body, auth: req.headers.authorization });
      if (req.url?.startsWith("/slow")) return void setTimeout(() => res.end("{}"), 5000);
      if (req.url?.startsWith("/big")) return void res.end("y".repeat(50_000));
      // A redirect within the origin, and one to another origin (the same host, another port).
      if (req.url?.startsWith("/hop")) return void res.writeHead(302, { location: "/echo?hopped=1" }).end();
      if (req.url?.startsWith("/away")) return void res.writeHead(302, { location: `http://localhost:${other}/steal` }).end();
      if (req.url?.startsWith("/missing")) {
        res.statusCode = 404;
        return void res.end("no such thing");
      }
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify({ method: req.method, url: req.url, received: body ? JSON.parse(body) : null }));
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  thief = createServer((req, res) => {
    stolen.push(String(req.headers["x-api-key"] ?? req.url));
    res.end("{}");
  });
  await new Promise<void>((r) => thief.listen(0, "127.0.0.1", r));
  other = (thief.address() as AddressInfo).port;
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(() => {
  server.closeAllConnections();
  server.close();
  thief.close();
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
    // The test server is on loopback, which http tools may not reach by default.
    allow_private: true,
    timeout_ms: 2000,
    max_output_bytes: 10_000,
    ...overrides,
  };
}

describe("http tools: where they may go", () => {
  it("refuses loopback, private and link-local targets unless allow_private, and the metadata address always", async () => {
    const run = async (url: string, allow_private = false) => {
      const [outcome] = await makeBox([httpTool(httpConfig({ name: "t", url, allow_private, timeout_ms: 1500 }))]).box.run([call("t", {})]);
      return outcome!;
    };
    const before = seen.length;
    for (const url of [`${base}/echo`, "http://10.1.2.3/x", "http://192.168.0.1/x", "http://[::1]:9/x", "http://localhost:9/x"]) {
      expect((await run(url)).error, url).toMatch(/refused: .* is a loopback, private or link-local address \(set allow_private: true/);
    }
    for (const allow of [false, true]) {
      expect((await run("http://169.254.169.254/latest/meta-data/", allow)).error).toMatch(/refused: 169\.254\.169\.254 is the cloud metadata address/);
    }
    expect(seen.length).toBe(before); // nothing reached the server
    expect((await run(`${base}/echo`, true)).ok).toBe(true);
  });

  it("follows a redirect within the origin only: headers never go to another one", async () => {
    const hop = await makeBox([httpTool(httpConfig({ name: "hop", url: `${base}/hop`, method: "GET" }))]).box.run([call("hop", {})]);
    expect(hop[0]).toMatchObject({ ok: true, result: { url: "/echo?hopped=1" } });
    const away = await makeBox([httpTool(httpConfig({ name: "away", url: `${base}/away`, headers: { "x-api-key": "opaque-key-123456" } }))]).box.run([
      call("away", {}),
    ]);
    expect(away[0]?.error).toMatch(/redirected to another origin \(http:\/\/localhost:\d+\): not followed/);
    expect(stolen).toEqual([]);
  });
});

describe("http tools", () => {
  it("POST the JSON arguments, GET them as query parameters", async () => {
    const post = httpTool(httpConfig({ name: "post", headers: { authorization: "Bearer sk-test-secret" } }));
    const get = httpTool(httpConfig({ name: "get", method: "GET", url: `${base}/echo?fixed=1` }));
    const { box } = makeBox([post, get]);
    const [p, g] = await box.run([call("post", { q: "circle", n: 2 }), call("get", { q: "circle area", n: 2 })]);
    expect(p).toMatchObject({ ok: true, result: { method: "POST", received: { q: "circle", n: 2 } } });
    expect(g).toMatchObject({ ok: true, result: { method: "GET", url: "/echo?fixed=1&q=circle+area&n=2" } });
    expect(seen.find((s) => s.method === "POST" && s.auth !== undefined)?.auth).toBe("Bearer sk-test-secret");
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
