import { readFileSync } from "node:fs";
import type { ServerResponse } from "node:http";
import { BASE_HEADERS } from "./http.js";

/** The page's files: one HTML file and three scripts, served from memory. */
export interface PageFiles {
  html: string;
  script: string;
  /** The tree and the timeline of a run (page/timeline.js), shared with `runtime trace --html`. */
  timeline: string;
  /** The run's projection (src/events/projection.ts) as compiled: the page folds events with the runtime's own code. */
  projection: string;
}

/**
 * Read the page from `src/server/page/`. The files are plain HTML and JS with
 * no build step, so the compiled server (dist/server) reads them from the
 * source tree; `undefined` when they are missing (the API still works).
 */
export function loadPage(): PageFiles | undefined {
  const candidates = [new URL("./page/", import.meta.url), new URL("../../src/server/page/", import.meta.url)];
  const projection = compiledProjection();
  if (projection === undefined) return undefined;
  for (const dir of candidates) {
    try {
      return {
        html: readFileSync(new URL("index.html", dir), "utf8"),
        script: readFileSync(new URL("app.js", dir), "utf8"),
        timeline: readFileSync(new URL("timeline.js", dir), "utf8"),
        projection,
      };
    } catch {
      // try the next place
    }
  }
  return undefined;
}

/**
 * The projection's JavaScript, which imports no value so it runs in the page
 * as tsc wrote it (docs/design/projection.md): beside this module in dist/,
 * or, for a server run from the sources (the tests), in the build's dist/.
 */
function compiledProjection(): string | undefined {
  for (const file of [new URL("../events/projection.js", import.meta.url), new URL("../../dist/events/projection.js", import.meta.url)]) {
    try {
      return readFileSync(file, "utf8");
    } catch {
      // try the next place
    }
  }
  return undefined;
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
