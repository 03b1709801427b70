/**
 * The programs of the machine that tests drive for real (docs/testing.md#what-the-tests-need).
 * A test that needs one and does not find it fails naming what is missing and what
 * installs it; it is never skipped, so a green run means every component was tested.
 * PostgreSQL is found by test/support/postgres.ts, which fails the same way.
 */
import { existsSync } from "node:fs";

/** Each component: where the tests look for it and the Debian package that provides it. */
export const COMPONENTS = {
  chromium: { path: "/usr/bin/chromium", debian: "chromium" },
  tmux: { path: "/usr/bin/tmux", debian: "tmux" },
  setsid: { path: "/usr/bin/setsid", debian: "util-linux" },
  bwrap: { path: "/usr/bin/bwrap", debian: "bubblewrap" },
} as const;

/** What a test says when a component is missing: the one script that installs them all. */
export function missingComponent(name: keyof typeof COMPONENTS): string {
  const { path, debian } = COMPONENTS[name];
  return `${path} is missing (Debian package ${debian}): run scripts/test.sh, which installs what the tests need`;
}

/** The component's path; throws with {@link missingComponent}'s message when it is not there. */
export function requireComponent(name: keyof typeof COMPONENTS): string {
  const { path } = COMPONENTS[name];
  if (!existsSync(path)) throw new Error(missingComponent(name));
  return path;
}
