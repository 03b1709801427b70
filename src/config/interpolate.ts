/**
 * `${VAR}` and `${VAR:-default}` in string values, replaced from the
 * environment. `$${` stands for a literal `${`.
 */

const PATTERN = /\$\$\{|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g;

/** What interpolating one string gave: the text and the variables it lacked. */
export interface Interpolated {
  value: string;
  /** Names of `${VAR}` references (without a default) that are unset. */
  missing: string[];
}

/** Environment lookup; an empty variable counts as set. */
export type Env = Readonly<Record<string, string | undefined>>;

/** Replace `${VAR}` and `${VAR:-default}` in `text`; unset variables without a default are listed, not thrown. */
export function interpolate(text: string, env: Env): Interpolated {
  if (!text.includes("${")) return { value: text, missing: [] };
  const missing: string[] = [];
  const value = text.replace(PATTERN, (match, name: string | undefined, fallback: string | undefined) => {
    if (match === "$${") return "${";
    const key = name ?? "";
    const found = Object.prototype.hasOwnProperty.call(env, key) ? env[key] : undefined;
    if (found !== undefined && !(fallback !== undefined && found === "")) return found;
    if (fallback !== undefined) return fallback;
    missing.push(key);
    return match;
  });
  return { value, missing };
}
