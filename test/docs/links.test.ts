/**
 * No dead link: every relative link in `docs/` and README.md names a file
 * that exists and, when it has one, a `#anchor` of a heading in that file as
 * GitHub slugs it; every `docs/...md#anchor` cited in `src/` (comments,
 * messages) does the same. A renamed heading or moved page fails here, not
 * in front of a reader.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

function files(dir: string, keep: (name: string) => boolean): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((d) => {
    const path = join(dir, d.name);
    if (d.isDirectory()) return files(path, keep);
    return keep(d.name) ? [path] : [];
  });
}

/** Fenced code blocks blanked line for line, so their `#` lines and `[x](y)` are not headings or links. */
function withoutFences(markdown: string): string[] {
  let fence: string | undefined;
  return markdown.split("\n").map((line) => {
    const [, marker, info = ""] = /^ {0,3}(`{3,}|~{3,})(.*)$/.exec(line) ?? [];
    if (fence === undefined) {
      // A backtick fence's info string has no backtick: "```` ```json ```` block" is inline code.
      if (marker === undefined || (marker[0] === "`" && info.includes("`"))) return line;
      fence = marker;
      return "";
    }
    if (marker !== undefined && marker[0] === fence[0] && marker.length >= fence.length && info.trim() === "") fence = undefined;
    return "";
  });
}

/** A heading's anchor as GitHub makes it: the rendered text, lower-cased, punctuation dropped, spaces to hyphens. */
function slug(heading: string): string {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1")
    .replace(/<[^>]+>/g, "")
    .replace(/[`*]/g, "")
    .replace(/(^|\s)_+|_+(\s|$)/g, "$1$2");
  return text
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, "")
    .replace(/ /g, "-");
}

const anchorCache = new Map<string, Set<string>>();

/** The anchors of a Markdown file's headings; a repeated heading gets `-1`, `-2`, as on GitHub. */
function anchors(file: string): Set<string> {
  const cached = anchorCache.get(file);
  if (cached) return cached;
  const found = new Set<string>();
  for (const line of withoutFences(readFileSync(file, "utf8"))) {
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)?.[1];
    if (heading === undefined) continue;
    const base = slug(heading);
    let anchor = base;
    for (let n = 1; found.has(anchor); n++) anchor = `${base}-${n}`;
    found.add(anchor);
  }
  anchorCache.set(file, found);
  return found;
}

/** Why a link from `fromDir` to `target` (`path`, `path#anchor` or `#anchor` in `self`) is dead, or undefined. */
function deadReason(target: string, fromDir: string, self: string | undefined): string | undefined {
  const hash = target.indexOf("#");
  const path = hash < 0 ? target : target.slice(0, hash);
  const anchor = hash < 0 ? undefined : decodeURIComponent(target.slice(hash + 1));
  const file = path === "" ? self : join(fromDir, decodeURI(path));
  if (file === undefined || !existsSync(file)) return "no such file";
  if (anchor === undefined || anchor === "") return undefined;
  if (statSync(file).isDirectory() || !file.endsWith(".md")) return "an anchor into a file that is not Markdown";
  return anchors(file).has(anchor) ? undefined : "no such heading";
}

/** The relative link targets of a Markdown file: inline `[x](target)` and reference `[x]: target`. */
function markdownLinks(file: string): { line: number; target: string }[] {
  const links: { line: number; target: string }[] = [];
  withoutFences(readFileSync(file, "utf8")).forEach((text, i) => {
    const prose = text.replace(/`[^`]*`/g, "");
    const inline = [...prose.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1] ?? "");
    const reference = /^\s*\[[^\]]+\]:\s*<?(\S+?)>?(?:\s.*)?$/.exec(prose)?.[1];
    for (const target of reference === undefined ? inline : [...inline, reference]) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith("//")) continue;
      links.push({ line: i + 1, target });
    }
  });
  return links;
}

function deadInMarkdown(file: string): string[] {
  return markdownLinks(file).flatMap(({ line, target }) => {
    const reason = deadReason(target, dirname(file), file);
    return reason === undefined ? [] : [`${relative(ROOT, file)}:${line}: ${target} (${reason})`];
  });
}

/** `docs/...md` and `docs/...md#anchor` cited anywhere in a source file, read from the repository's root. */
function deadInSource(file: string): string[] {
  return readFileSync(file, "utf8")
    .split("\n")
    .flatMap((text, i) =>
      [...text.matchAll(/\bdocs\/[\w./-]*?\.md(?:#[\w-]+)?/g)].flatMap(([target]) => {
        const reason = deadReason(target, ROOT, undefined);
        return reason === undefined ? [] : [`${relative(ROOT, file)}:${i + 1}: ${target} (${reason})`];
      }),
    );
}

describe("links", () => {
  const markdown = [join(ROOT, "README.md"), ...files(join(ROOT, "docs"), (n) => n.endsWith(".md"))];
  const sources = files(join(ROOT, "src"), (n) => /\.(ts|js|mjs|html|css)$/.test(n));

  it("GitHub's anchors: punctuation dropped, code and links rendered, repeats numbered", () => {
    expect(slug("`runtime exec`: run a team")).toBe("runtime-exec-run-a-team");
    expect(slug("When the database goes away")).toBe("when-the-database-goes-away");
    expect(slug("Tokens, scopes & [hosts](x.md)")).toBe("tokens-scopes--hosts");
    expect(slug("`max_iteration` (default 30)")).toBe("max_iteration-default-30");
  });

  it("every relative link in docs/ and README.md reaches a file and a heading", () => {
    // The walk sees links, so an empty result is not an empty walk.
    expect(markdown.flatMap(markdownLinks).length).toBeGreaterThan(100);
    expect(markdown.flatMap(deadInMarkdown)).toEqual([]);
  });

  it("every docs/...md#anchor cited in src/ reaches a file and a heading", () => {
    expect(sources.length).toBeGreaterThan(100);
    expect(sources.flatMap(deadInSource)).toEqual([]);
  });
});
