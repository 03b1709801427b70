import { readFileSync } from "node:fs";
import type { ServerResponse } from "node:http";
import { unreachable } from "../errors.js";
import type { Route } from "./app.js";
import { BASE_HEADERS, HttpError } from "./http.js";

/** The page's files: one HTML file and its scripts, served from memory. */
export interface PageFiles {
  html: string;
  script: string;
  /** The tree and the timeline of a run (page/timeline.js), shared with `runtime trace --html`. */
  timeline: string;
  /**
   * The run's projection (src/events/projection.ts) and the one line of an
   * event (src/events/describe.ts) as compiled, and the sibling modules they
   * import, by name (`projection`, `usage`, ...), dependencies first: the
   * page folds and tells events with the runtime's own code.
   * Served at `/events/<name>.js`, and only these.
   */
  events: ReadonlyMap<string, string>;
}

/**
 * Read the page from `src/server/page/`. The files are plain HTML and JS with
 * no build step, so the compiled server (dist/server) reads them from the
 * source tree; `undefined` when they are missing (the API still works).
 */
export function loadPage(): PageFiles | undefined {
  const candidates = [new URL("./page/", import.meta.url), new URL("../../src/server/page/", import.meta.url)];
  const events = compiledProjection();
  if (events === undefined) return undefined;
  for (const dir of candidates) {
    try {
      return {
        html: readFileSync(new URL("index.html", dir), "utf8"),
        script: readFileSync(new URL("app.js", dir), "utf8"),
        timeline: readFileSync(new URL("timeline.js", dir), "utf8"),
        events,
      };
    } catch {
      // try the next place
    }
  }
  return undefined;
}

/**
 * The projection's JavaScript and that of the modules it imports, which
 * import nothing but each other so they run in the page as tsc wrote them
 * (docs/design/projection.md): beside this module in dist/, or, for a server
 * run from the sources (the tests), in the build's dist/. Dependencies first.
 */
function compiledProjection(): Map<string, string> | undefined {
  for (const dir of [new URL("../events/", import.meta.url), new URL("../../dist/events/", import.meta.url)]) {
    const modules = new Map<string, string>();
    try {
      for (const name of ["projection", "describe"]) readModule(dir, name, modules);
      return modules;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
      // try the next place
    }
  }
  return undefined;
}

/** A compiled module's static imports and re-exports (`import { a } from "./b.js"`, `import "./c.js"`): their specifiers. */
const IMPORT = /^(?:import|export)\b[^;"]*?\bfrom\s*"([^"]+)"|^import\s*"([^"]+)"/gm;

function readModule(dir: URL, name: string, modules: Map<string, string>): void {
  if (modules.has(name)) return;
  const source = readFileSync(new URL(`${name}.js`, dir), "utf8");
  modules.set(name, ""); // seen, so a cycle ends (test/architecture/cycles.test.ts forbids one anyway)
  for (const [, from, bare] of source.matchAll(IMPORT)) {
    const specifier = from ?? bare;
    const sibling = /^\.\/([\w-]+)\.js$/.exec(specifier ?? "")?.[1];
    // A bug of the source, not of the installation: the page could not load the module.
    if (sibling === undefined) unreachable(`src/events/${name}.ts imports ${specifier}: the page runs it, where only src/events/ modules are served`);
    readModule(dir, sibling, modules);
  }
  modules.delete(name);
  modules.set(name, source);
}

// Scripts only from this origin and no inline script, so text from a model can never run as code.
const PAGE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "connect-src 'self'",
  "style-src 'unsafe-inline'",
  "img-src 'self' data:",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

/** Serve one of the page's files. */
export function sendPageFile(res: ServerResponse, body: string, type: "text/html" | "text/javascript"): void {
  res.writeHead(200, {
    ...BASE_HEADERS,
    "content-type": `${type}; charset=utf-8`,
    "content-length": Buffer.byteLength(body),
    "content-security-policy": PAGE_CSP,
    "x-frame-options": "DENY",
  });
  res.end(body);
}

/**
 * The page's routes: `/` (and `/index.html`), its scripts, and the
 * projection's modules at `/events/<name>.js` and no other file of dist/
 * (docs/design/projection.md). The page's link carries the token once
 * (`?token=`): it becomes an HttpOnly cookie and leaves the address bar.
 */
export function pageRoutes(page: PageFiles | undefined, cookie: () => string, secure: boolean): Route[] {
  const files = (): PageFiles => {
    if (!page) throw new HttpError(404, "the page's files (src/server/page) are missing");
    return page;
  };
  const index: Route["handle"] = (req, res) => {
    const url = new URL(req.url ?? "/", "http://localhost");
    const token = url.searchParams.get("token");
    if (token === null) return sendPageFile(res, files().html, "text/html");
    url.searchParams.delete("token");
    const set = `${cookie()}=${token}; HttpOnly; SameSite=Strict; Path=/${secure ? "; Secure" : ""}`;
    res.writeHead(303, { ...BASE_HEADERS, location: `${url.pathname}${url.search}`, "set-cookie": set }).end();
  };
  return [
    { method: "GET", path: "/", page: true, handle: index },
    { method: "GET", path: "/index.html", page: true, handle: index },
    { method: "GET", path: "/app.js", handle: (_req, res) => sendPageFile(res, files().script, "text/javascript") },
    { method: "GET", path: "/timeline.js", handle: (_req, res) => sendPageFile(res, files().timeline, "text/javascript") },
    {
      method: "GET",
      path: "/events/:module{[\\w-]{1,100}\\.js}",
      handle: (_req, res, c) => {
        const source = files().events.get((c.req.param("module") ?? "").slice(0, -3));
        if (source === undefined) throw new HttpError(404, `no such endpoint: ${c.req.path}`);
        sendPageFile(res, source, "text/javascript");
      },
    },
  ];
}
