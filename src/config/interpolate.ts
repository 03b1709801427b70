/**
 * `${VAR}` and `${VAR:-default}` in string values, replaced from the
 * environment. `$${` stands for a literal `${`.
 */

// The last alternative catches what looks like a reference but is not one (`${ VAR }`, `${A-B}`, an unclosed `${`).
const PATTERN = /\$\$\{|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}|\$\{[^}\n]{0,80}\}?/g;

/** What interpolating one string gave: the text and the variables it lacked. */
export interface Interpolated {
  value: string;
  /** Names of `${VAR}` references (without a default) that are unset. */
  missing: string[];
  /** `${...}` texts that are not a valid reference (a typo would otherwise stay in the value unnoticed). */
  malformed?: string[];
}

/** Environment lookup; an empty variable counts as set. */
export type Env = Readonly<Record<string, string | undefined>>;

/** Replace `${VAR}` and `${VAR:-default}` in `text`; unset variables without a default are listed, not thrown. */
export function interpolate(text: string, env: Env): Interpolated {
  if (!text.includes("${")) return { value: text, missing: [] };
  const missing: string[] = [];
  const malformed: string[] = [];
  const value = text.replace(PATTERN, (match, name: string | undefined, fallback: string | undefined) => {
    if (match === "$${") return "${";
    if (name === undefined) {
      malformed.push(match);
      return match;
    }
    const key = name ?? "";
    const found = Object.hasOwn(env, key) ? env[key] : undefined;
    if (found !== undefined && !(fallback !== undefined && found === "")) return found;
    if (fallback !== undefined) return fallback;
    missing.push(key);
    return match;
  });
  return malformed.length ? { value, missing, malformed } : { value, missing };
}
