/**
 * The team's documents as a full-text index (docs/knowledge.md). Built on the
 * first lookup of a loaded team and kept with it (one index per
 * `KnowledgeConfig` object), so a team that never looks anything up reads no
 * file and loads no search library. MiniSearch scores with BM25+.
 */
import { readdir, readFile, realpath, stat } from "node:fs/promises";
import { extname, isAbsolute, join, relative } from "node:path";
import type MiniSearch from "minisearch";
import type { KnowledgeConfig } from "../../config/types.js";
import { MAX_KNOWLEDGE_FILE_BYTES } from "../../config/references.js";
import { describeError, RuntimeError } from "../../errors.js";
import { passagesOf, type Passage } from "./passages.js";

/** Files a folder may give; others are not read. */
const TEXT_EXTENSIONS = new Set([".md", ".markdown", ".txt"]);
/** Most files and bytes one team's knowledge reads. */
export const MAX_KNOWLEDGE_FILES = 1000;
export const MAX_KNOWLEDGE_BYTES = 16 * 1024 * 1024;

/** One passage found, with its source. */
export interface Found {
  /** The file, relative to the team file's folder when inside it. */
  source: string;
  heading: string;
  line: number;
  end_line: number;
  text: string;
  /** BM25+ score, higher is better (comparable within one lookup only). */
  score: number;
}

interface Indexed extends Passage {
  id: number;
  source: string;
}

/** A team's documents, indexed. */
export interface Library {
  search(query: string, topK: number): Found[];
  /** Files left out (too large, unreadable, past the limits), with why. */
  skipped: Array<{ source: string; reason: string }>;
  files: number;
  passages: number;
}

const libraries = new WeakMap<KnowledgeConfig, Promise<Library>>();

/** The library of `config`, built on first use; a build that failed is tried again next time. */
export function openLibrary(config: KnowledgeConfig): Promise<Library> {
  let library = libraries.get(config);
  if (!library) {
    library = buildLibrary(config);
    libraries.set(config, library);
    library.catch(() => libraries.delete(config));
  }
  return library;
}

async function buildLibrary(config: KnowledgeConfig): Promise<Library> {
  const skipped: Library["skipped"] = [];
  const name = (path: string) => {
    const rel = relative(config.dir, path);
    return rel !== "" && !rel.startsWith("..") && !isAbsolute(rel) ? rel : path;
  };
  const files = await listFiles(config, skipped, name);
  const docs: Indexed[] = [];
  let bytes = 0;
  for (const { path, real } of files) {
    const file = path;
    const size = (await stat(real)).size;
    if (size > MAX_KNOWLEDGE_FILE_BYTES) {
      skipped.push({ source: name(file), reason: `${size} bytes: at most ${MAX_KNOWLEDGE_FILE_BYTES} are read` });
      continue;
    }
    if (bytes + size > MAX_KNOWLEDGE_BYTES) {
      skipped.push({ source: name(file), reason: `past ${MAX_KNOWLEDGE_BYTES} bytes of knowledge in all` });
      continue;
    }
    bytes += size;
    const text = await readFile(real, "utf8");
    for (const passage of passagesOf(text)) docs.push({ ...passage, id: docs.length, source: name(file) });
  }
  // Loaded here, not at start-up: only teams that look something up pay for it.
  const { default: MiniSearchClass } = await import("minisearch");
  const index: MiniSearch<Indexed> = new MiniSearchClass<Indexed>({
    fields: ["heading", "text", "source"],
    storeFields: [],
    searchOptions: { boost: { heading: 2, source: 0.5 }, prefix: true, fuzzy: 0.2, combineWith: "OR" },
  });
  index.addAll(docs);
  return {
    skipped,
    files: files.length,
    passages: docs.length,
    search(query, topK) {
      return index
        .search(query)
        .slice(0, topK)
        .map((hit) => {
          const doc = docs[hit.id as number]!;
          return {
            source: doc.source,
            heading: doc.heading,
            line: doc.line,
            end_line: doc.end_line,
            text: doc.text,
            score: Math.round(hit.score * 1000) / 1000,
          };
        });
    },
  };
}

/** The files the paths give, in order, folders walked in name order; each real path checked against the confinement. */
async function listFiles(config: KnowledgeConfig, skipped: Library["skipped"], name: (p: string) => string): Promise<Array<{ path: string; real: string }>> {
  const folder = config.confined_to === undefined ? undefined : await realpath(config.confined_to);
  const out: Array<{ path: string; real: string }> = [];
  const seen = new Set<string>();
  const add = async (path: string, fromFolder: boolean): Promise<void> => {
    let real: string;
    try {
      real = await realpath(path);
    } catch (err) {
      throw new RuntimeError("CONFIG_INVALID", `knowledge path ${name(path)}: ${describeError(err)}`);
    }
    if (folder !== undefined && real !== folder && !inside(real, folder)) {
      if (fromFolder) {
        skipped.push({ source: name(path), reason: "outside the team file's folder" });
        return;
      }
      throw new RuntimeError("CONFIG_INVALID", `knowledge path ${name(path)} is outside the team file's folder`);
    }
    const info = await stat(real);
    if (info.isDirectory()) {
      const entries = (await readdir(real, { withFileTypes: true })).map((e) => e.name).sort();
      for (const entry of entries) await add(join(path, entry), true);
      return;
    }
    if (!info.isFile() || (fromFolder && !TEXT_EXTENSIONS.has(extname(real).toLowerCase())) || seen.has(real)) return;
    seen.add(real);
    if (out.length >= MAX_KNOWLEDGE_FILES) skipped.push({ source: name(path), reason: `past ${MAX_KNOWLEDGE_FILES} files` });
    else out.push({ path, real });
  };
  for (const path of config.paths) await add(path, false);
  return out;
}

function inside(path: string, folder: string): boolean {
  const rel = relative(folder, path);
  return rel !== "" && !rel.startsWith("..") && !isAbsolute(rel);
}
