/**
 * Secrets never leave the process: every event is passed through `redact`
 * before it reaches the trace store, NDJSON or the terminal.
 */

/** What a masked value is replaced with. */
export const REDACTED = "[REDACTED]";

/**
 * Key names that hold secrets, compared after lower-casing and dropping `-`
 * and `_` (so `api_key`, `apiKey`, `X-API-Key` and `Authorization` all match).
 * A key that ends with one of the suffixes matches too (`access_token`,
 * `client_secret`); `total_tokens` does not, which keeps usage readable.
 */
const SECRET_KEYS = new Set(["apikey", "xapikey", "authorization", "proxyauthorization", "password", "passwd", "secret", "token"]);
const SECRET_SUFFIXES = ["apikey", "password", "secret", "token"];

/** Secret-looking substrings inside any string value, wherever they hide (headers, error texts, JSON in strings). */
const SECRET_PATTERNS: [RegExp, string][] = [
  [/\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]+/gi, `$1 ${REDACTED}`],
  [/\bsk-[A-Za-z0-9_-]{6,}/g, `sk-${REDACTED}`],
  // user:password@ in a URL (a proxy, a database, a base_url with credentials).
  [/\b([a-z][a-z0-9+.-]*:\/\/)[^\s/@:"']+:[^\s/@"']+@/gi, `$1${REDACTED}@`],
  [/\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/g, REDACTED],
  // `"api_key": "..."` or `password=...` written into free text.
  [
    /\b((?:x-)?api[_-]?key|authorization|password|secret|access[_-]?token)(["']?\s*[:=]\s*["']?)(?!\[REDACTED\])(?!Bearer\b|Basic\b)[^\s"',;}&]+/gi,
    `$1$2${REDACTED}`,
  ],
];

/** True when an object key names a secret. */
export function isSecretKey(key: string): boolean {
  const k = key.toLowerCase().replace(/[-_]/g, "");
  return SECRET_KEYS.has(k) || SECRET_SUFFIXES.some((s) => k.endsWith(s));
}

/** Mask secret-looking substrings of one string, plus any exact `secrets` given. */
export function redactString(text: string, secrets: readonly string[] = []): string {
  let out = text;
  for (const secret of secrets) {
    // Very short values would mask ordinary words; keys are never that short.
    if (secret.length >= 6) out = out.split(secret).join(REDACTED);
  }
  for (const [pattern, replacement] of SECRET_PATTERNS) out = out.replace(pattern, replacement);
  return out;
}

/**
 * A copy of `value` with secrets masked at any depth: values under secret keys
 * become `[REDACTED]`, secret-looking strings are masked. Unchanged subtrees
 * are shared, not copied. `secrets` are exact values to mask as well (e.g. the
 * configured API keys).
 */
export function redact<T>(value: T, secrets: readonly string[] = []): T {
  return redactValue(value, secrets, 0) as T;
}

/**
 * Anything `redact` could change leaves a trace in the value's JSON text: a
 * secret key name (as keys are compared: case aside, `-` and `_` anywhere in
 * it ignored, so each letter may be followed by any run of them), or a bearer
 * scheme, an `sk-` key, a JWT, credentials in a URL. One case-folding pass
 * over the text, with no lower-cased copy of it (`u`: a Kelvin sign folds to
 * `k`, as `toLowerCase` makes it).
 */
const spaced = (word: string) => [...word].join("[-_]*");
const MAYBE_SECRET = new RegExp(
  [
    String.raw`bearer(\s|\\[nrt])|basic(\s|\\[nrt])|sk-[A-Za-z0-9_-]{6}|eyJ[A-Za-z0-9_-]{8}|:\/\/[^\s/@:"']+:[^\s/@"']+@`,
    spaced("apikey"),
    spaced("authorization"),
    `${spaced("passw")}[-_]*(?:${spaced("or")}[-_]*)?d`,
    spaced("secret"),
    `${spaced("token")}(?![-_]*s)`,
  ].join("|"),
  "iu",
);

/**
 * `redact` and `JSON.stringify` in one, without copying the value when its
 * JSON text shows nothing that could be a secret (the common case, and the hot
 * path of every sink). Returns the redacted value and its JSON.
 */
export function redactWithJson<T>(value: T, secrets: readonly string[] = []): { value: T; json: string } {
  const json = JSON.stringify(value);
  if (!mayHoldSecret(json, secrets)) return { value, json };
  const safe = redact(value, secrets);
  return { value: safe, json: JSON.stringify(safe) };
}

function mayHoldSecret(json: string, secrets: readonly string[]): boolean {
  if (MAYBE_SECRET.test(json)) return true;
  return secrets.length > 0 && inJson(secrets).some((s) => json.includes(s));
}

/** Each secret long enough to mask, as it reads inside a JSON string; made once per list (a run's list is one array). */
const jsonForms = new WeakMap<readonly string[], string[]>();
function inJson(secrets: readonly string[]): string[] {
  let forms = jsonForms.get(secrets);
  if (forms === undefined) {
    forms = secrets.filter((s) => s.length >= 6).map((s) => JSON.stringify(s).slice(1, -1));
    jsonForms.set(secrets, forms);
  }
  return forms;
}

const MAX_DEPTH = 64;

function redactValue(value: unknown, secrets: readonly string[], depth: number): unknown {
  if (typeof value === "string") return redactString(value, secrets);
  if (value === null || typeof value !== "object") return value;
  if (depth > MAX_DEPTH) return REDACTED;
  if (Array.isArray(value)) {
    let changed = false;
    const out = value.map((item) => {
      const next = redactValue(item, secrets, depth + 1);
      if (next !== item) changed = true;
      return next;
    });
    return changed ? out : value;
  }
  let changed = false;
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) {
    const next = isSecretKey(key) && item !== undefined && item !== null ? REDACTED : redactValue(item, secrets, depth + 1);
    if (next !== item) changed = true;
    out[key] = next;
  }
  return changed ? out : value;
}
