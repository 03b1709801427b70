import { afterEach } from "vitest";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { CommandToolConfig } from "../../src/config/types.js";
import { EventBus } from "../../src/events/bus.js";
import type { EventScope, RunEvent } from "../../src/events/types.js";
import type { ToolBox } from "../../src/kinds/types.js";
import { createToolBox } from "../../src/tools/toolbox.js";
import type { Tool } from "../../src/tools/types.js";

export const FIXTURES = join(dirname(fileURLToPath(import.meta.url)), "..", "tools", "fixtures");

export const SCOPE: EventScope = { agent_id: "solver", step_id: "step-1" };

/** A ToolBox wired to a real EventBus; `events` is everything it emitted. */
export function makeBox(
  tools: Tool[],
  allow: string[] = tools.map((t) => t.name),
  signal: AbortSignal = new AbortController().signal,
): { box: ToolBox; events: RunEvent[] } {
  const bus = new EventBus("task-1");
  const events: RunEvent[] = [];
  bus.subscribe((e) => events.push(e));
  const box = createToolBox({ tools, allow, scope: SCOPE, emit: (body, scope) => bus.emit(body, scope), signal });
  return { box, events };
}

/** A resolved command tool running one of the fixtures with node. */
export function fixtureCommand(name: string, script: string, overrides: Partial<CommandToolConfig> = {}): CommandToolConfig {
  return {
    type: "command",
    name,
    description: `fixture ${script}`,
    parameters: { type: "object" },
    command: [process.execPath, join(FIXTURES, script)],
    cwd: FIXTURES,
    env: {},
    timeout_ms: 10_000,
    max_output_bytes: 65_536,
    ...overrides,
  };
}

export function call(name: string, args: unknown, id = `call-${name}`): { id: string; name: string; arguments: string } {
  return { id, name, arguments: typeof args === "string" ? args : JSON.stringify(args) };
}

/** True while the process exists and is not a zombie waiting to be reaped. */
export function isAlive(pid: number): boolean {
  const stat = `/proc/${pid}/stat`;
  if (existsSync("/proc/self/stat")) {
    if (!existsSync(stat)) return false;
    try {
      const state = readFileSync(stat, "utf8").replace(/^.*\) /s, "")[0];
      return state !== "Z" && state !== "X";
    } catch {
      return false;
    }
  }
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * Pids a test expects gone, killed after each test whatever happened (a
 * failing test must not leave sleepers behind). Call in a test file's top
 * level: it registers its own afterEach.
 */
export function leftoverPids(): number[] {
  const pids: number[] = [];
  afterEach(() => {
    for (const pid of pids.splice(0)) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // already gone, as it should be
      }
    }
  });
  return pids;
}
