import { eventJson, type EventSink } from "./bus.js";

/**
 * A sink writing one JSON event per line. `write` receives each line with its
 * trailing `\n`, ready for `process.stdout.write`. Events are already masked
 * by the bus (src/events/bus.ts), which also made their JSON text once.
 */
export function ndjsonSink(write: (line: string) => void): EventSink {
  return (event) => write(`${eventJson(event)}\n`);
}
