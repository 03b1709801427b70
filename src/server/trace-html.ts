/**
 * One run as one self-contained HTML file (`runtime trace TASK_ID --html
 * FILE`, docs/server.md#run-history): the tree and the timeline of the
 * page, drawn by the page's own page/timeline.js inlined, from the run's
 * projection (the compiled src/events/projection.ts, inlined with the other
 * modules the page loads from src/events/, each in a scope of its own) of its
 * events embedded as JSON. No request leaves the file: its Content Security
 * Policy allows nothing but its own inline script and styles, and every
 * text from a model, a tool or a user is drawn with textContent.
 */
import type { RunEvent } from "../events/types.js";
import { RuntimeError, unreachable } from "../errors.js";
import { loadPage } from "./page.js";

/** JSON safe inside a <script> element: no `</script`, no `<!--`, no line separators that end a JS string. */
function scriptJson(value: unknown): string {
  return JSON.stringify(value)
    .replace(/</g, "\\u003c")
    .replace(/\u2028/g, "\\u2028")
    .replace(/\u2029/g, "\\u2029");
}

/** A module's import of a sibling, as tsc writes it: `import { a, b as c } from "./name.js";` (or `import "./name.js";`). */
const SIBLING_IMPORT = /^import (?:\{([^}]*)\} from )?"\.\/([\w-]+)\.js";$/gm;
/** A module's export: a declaration (`export function f`, `export class C`, `export const X`) or a list (`export { a, b as c };`). */
const EXPORT = /^export (?:(?:async )?function\*? ?|class |const |let |var )([\w$]+)|^export \{([^}]*)\};$/gm;

/**
 * Compiled ES modules (name → source, dependencies first) as one script that
 * runs them as the page's loader would: each in a function scope of its own,
 * so their top-level names never meet, given its imports as arguments from
 * the modules before it (`modules[name]`, the object of a module's exports).
 * The page and this file thus load the same modules, with no list kept here.
 */
function inlineModules(sources: ReadonlyMap<string, string>): string {
  const scopes = ["const modules = {};"];
  const done = new Set<string>();
  for (const [name, source] of sources) {
    const params: string[] = [];
    const args: string[] = [];
    const body = source.replace(SIBLING_IMPORT, (_all, names: string | undefined, from: string) => {
      if (!done.has(from)) unreachable(`${name}.js imports ./${from}.js, which is not inlined before it`);
      if (names !== undefined) {
        params.push(`{ ${names.replace(/\s+as\s+/g, ": ")} }`);
        args.push(`modules[${JSON.stringify(from)}]`);
      }
      return "";
    });
    if (/^(?:import|export)\b/m.test(body.replace(EXPORT, ""))) unreachable(`${name}.js imports or exports in a form the offline file cannot inline`);
    const exported: string[] = [];
    const code = body.replace(EXPORT, (all, declared: string | undefined, list: string | undefined) => {
      if (declared !== undefined) {
        exported.push(declared);
        return all.slice("export ".length);
      }
      for (const item of (list ?? "")
        .split(",")
        .map((s) => s.trim())
        .filter(Boolean)) {
        const [local = item, as = local] = item.split(/\s+as\s+/);
        exported.push(as === local ? local : `${as}: ${local}`);
      }
      return "";
    });
    scopes.push(`modules[${JSON.stringify(name)}] = ((${params.join(", ")}) => {\n${code}\nreturn { ${exported.join(", ")} };\n})(${args.join(", ")});`);
    done.add(name);
  }
  return scopes.join("\n");
}

export function traceHtml(events: readonly RunEvent[]): string {
  const page = loadPage();
  if (!page) throw new RuntimeError("USAGE", "the page's files (src/server/page) are missing from this installation");
  const taskId = events[0]?.task_id ?? "";
  // The modules' source, inlined. `</script` or `<!--` can only be inside their strings or comments, where
  // `<\/script` and `<\!--` mean the same and no longer end (or confuse) the element that holds them.
  const inline = (source: string) => source.replace(/<\/script/gi, "<\\/script").replace(/<!--/g, "<\\!--");
  // The page's modules, as it loads them: the runtime's (the projection, the line of an event, what they import) and the timeline.
  const scripts = inline(inlineModules(new Map([...page.events, ["timeline", page.timeline]])));
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>run ${taskId.replace(/[^\w-]/g, "")}</title>
<link rel="icon" href="data:,">
<style>
  body { margin: 0 auto; max-width: 1200px; padding: 16px 20px; font: 14px/1.45 system-ui, sans-serif; color: #1d2330; }
  h1 { font-size: 16px; } h2 { font-size: 12px; text-transform: uppercase; letter-spacing: .05em; color: #667085; }
  .muted { color: #667085; } .done { color: #137333; white-space: pre-wrap; } .bad { color: #b42318; white-space: pre-wrap; }
  #input { white-space: pre-wrap; border-left: 3px solid #e4e7ec; padding-left: 8px; }
</style>
</head>
<body>
<h1 id="title">run</h1>
<p id="summary" class="muted"></p>
<p id="input"></p>
<h2>Timeline</h2>
<div id="timeline"></div>
<h2>Trace</h2>
<div id="tree"></div>
<script type="application/json" id="events">${scriptJson(events)}</script>
<script type="module">
${scripts}
const { project } = modules.projection;
const { TIMELINE_CSS, barCount, duration, renderTimeline, renderTree, runView } = modules.timeline;
const events = JSON.parse(document.getElementById("events").textContent);
const style = document.createElement("style");
style.textContent = TIMELINE_CSS;
document.head.append(style);
const run = runView(project(events));
document.getElementById("title").textContent = \`run \${run.task_id} · \${run.agent_id}\`;
document.getElementById("summary").textContent = [
  run.status,
  new Date(run.start).toISOString(),
  duration(run.end - run.start),
  run.usage ? \`\${run.usage.total_tokens} tokens\` : "",
  \`\${barCount(run)} model and tool calls\`,
  \`\${events.length} events\`,
].filter(Boolean).join(" · ");
document.getElementById("input").textContent = run.input;
renderTimeline(document.getElementById("timeline"), run);
renderTree(document.getElementById("tree"), run);
</script>
</body>
</html>
`;
}
