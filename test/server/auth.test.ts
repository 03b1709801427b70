/**
 * `runtime serve` is secure by default (docs/server.md#authentication): a
 * token on every endpoint and the page, no non-loopback address without a
 * token of one's own, rate and run limits per token, optional TLS.
 */
import { readFileSync } from "node:fs";
import { request as httpsRequest } from "node:https";
import { afterEach, describe, expect, it } from "vitest";
import { loadTeam } from "../../src/config/load.js";
import { startServer, type RunningServer } from "../../src/server/server.js";
import { runCli, ROOT } from "../support/cli.js";
import { startOpenAIServer, type OpenAIServer } from "../support/openai-server.js";
import { modelTeam, reactReply, tempDir } from "../support/team.js";
import { authedFetch, spawnServe } from "../support/runtime-server.js";

const closers: { close(): Promise<void> }[] = [];
afterEach(async () => {
  while (closers.length) await closers.pop()?.close();
});

async function serve(options: Partial<Parameters<typeof startServer>[0]> = {}, file = `${ROOT}teams/circle-react.yaml`): Promise<RunningServer> {
  const server = await startServer({ team: await loadTeam(file), traceDir: tempDir("auth-trace-"), port: 0, ...options });
  closers.push(server);
  return server;
}

describe("the token", () => {
  it("is required by every endpoint and the page: without it, or with a wrong one, 401 and nothing runs", async () => {
    const model: OpenAIServer = await startOpenAIServer({ respond: () => ({ content: reactReply("ANSWER", { answer: "ran" }) }) });
    closers.push(model);
    const file = modelTeam("guarded", model.url);
    const server = await serve({}, file);
    const endpoints: [string, RequestInit?][] = [
      ["/"],
      ["/app.js"],
      ["/events/projection.js"],
      ["/v1/team"],
      ["/v1/runs"],
      ["/v1/runs/x"],
      ["/v1/runs/x/events"],
      ["/v1/traces/x"],
      ["/v1/runs", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ input: "spend the key" }) }],
    ];
    for (const [path, init] of endpoints) {
      const wrong: Record<string, string>[] = [
        {},
        { authorization: "Bearer wrong-token-of-the-right-size-0000000" },
        { cookie: `runtime_token_${server.port}=nope` },
      ];
      for (const headers of wrong) {
        const res = await fetch(`${server.url}${path}`, { ...init, headers: { ...(init?.headers as object), ...headers } });
        expect(res.status, `${init?.method ?? "GET"} ${path} ${JSON.stringify(headers)}`).toBe(401);
        expect(res.headers.get("www-authenticate")).toMatch(/^Bearer/);
        expect(await res.text()).not.toContain(server.token);
      }
    }
    expect(model.chatRequests).toHaveLength(0);
    const ok = await authedFetch(server.token)(`${server.url}/v1/team`);
    expect(ok.status).toBe(200);
  });

  it("logs the page in once: ?token= becomes an HttpOnly SameSite cookie and leaves the address", async () => {
    const server = await serve();
    expect(server.pageUrl).toBe(`${server.url}/?token=${server.token}`);
    const first = await fetch(`${server.pageUrl}&task=abc`, { redirect: "manual" });
    expect(first.status).toBe(303);
    expect(first.headers.get("location")).toBe("/?task=abc");
    const cookie = first.headers.get("set-cookie") ?? "";
    expect(cookie).toMatch(new RegExp(`^runtime_token_${server.port}=${server.token}; HttpOnly; SameSite=Strict; Path=/$`));
    const page = await fetch(`${server.url}/?task=abc`, { headers: { cookie: cookie.split(";")[0]! } });
    expect(page.status).toBe(200);
    expect(await page.text()).toContain("<script");
  });

  it("limits the token's request rate with 429 and retry-after", async () => {
    const server = await serve({ rate: 2 });
    const f = authedFetch(server.token);
    const statuses: number[] = [];
    let retryAfter: string | null = null;
    for (let i = 0; i < 8; i++) {
      const res = await f(`${server.url}/v1/team`);
      statuses.push(res.status);
      if (res.status === 429) retryAfter ??= res.headers.get("retry-after");
      await res.text();
    }
    expect(statuses.slice(0, 4)).toEqual([200, 200, 200, 200]);
    expect(statuses).toContain(429);
    expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
  });

  it("refuses runs past --max-runs with 429 and retry-after", async () => {
    const model = await startOpenAIServer({ respond: () => ({ content: reactReply("ANSWER", { answer: "slow" }), delay_ms: 3000 }) });
    closers.push(model);
    const file = modelTeam("busy", model.url);
    const server = await serve({ maxLiveRuns: 1 }, file);
    const f = authedFetch(server.token);
    const post = () => f(`${server.url}/v1/runs`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ input: "x" }) });
    const first = await post();
    expect(first.status).toBe(200);
    const second = await post();
    expect(second.status).toBe(429);
    expect(second.headers.get("retry-after")).toBe("1");
    await first.body?.cancel();
  });

  it("serves HTTPS with --tls-cert and --tls-key", async () => {
    const dir = new URL("./fixtures/", import.meta.url);
    const server = await serve({ tls: { cert: readFileSync(new URL("tls-cert.pem", dir)), key: readFileSync(new URL("tls-key.pem", dir)) } });
    expect(server.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    const body = await new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = httpsRequest(
        `${server.url}/v1/team`,
        { ca: readFileSync(new URL("tls-cert.pem", dir)), headers: { authorization: `Bearer ${server.token}` } },
        (res) => {
          let text = "";
          res.on("data", (d: Buffer) => (text += d.toString()));
          res.on("end", () => resolve({ status: res.statusCode ?? 0, text }));
        },
      );
      req.on("error", reject);
      req.end();
    });
    expect(body.status).toBe(200);
    expect(JSON.parse(body.text)).toMatchObject({ name: "circle-react" });
  });
});

describe("runtime serve beyond loopback", () => {
  it("refuses --host 0.0.0.0 without a token of one's own, exit 2, before listening", async () => {
    const run = await runCli(["serve", "teams/circle-react.yaml", "--host", "0.0.0.0", "--port", "0"], { env: { RUNTIME_SERVE_TOKEN: undefined } });
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/refusing to listen on 0\.0\.0\.0 without a token of your own: give one with --token or RUNTIME_SERVE_TOKEN/);
    expect(run.stderr).not.toMatch(/listening/);
  });

  it("refuses a short token", async () => {
    const run = await runCli(["serve", "teams/circle-react.yaml", "--token", "short", "--port", "0"]);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/at least 16 characters/);
  });

  it("takes the token from RUNTIME_SERVE_TOKEN and never prints it", async () => {
    const token = "env-token-0123456789abcdef";
    const { child, url, exited, output } = await spawnServe(["teams/circle-react.yaml"], { env: { RUNTIME_SERVE_TOKEN: token } });
    try {
      expect(output()).not.toContain(token);
      expect(output()).toContain("?token=<your token>");
      expect((await fetch(`${url}/v1/team`)).status).toBe(401);
      expect((await authedFetch(token)(`${url}/v1/team`)).status).toBe(200);
    } finally {
      child.kill("SIGTERM");
    }
    expect(await exited).toBe(0);
    expect(output()).not.toContain(token);
  });
});
