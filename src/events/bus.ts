import type { EventScope, RunEvent, RunEventBody } from "./types.js";

/** A consumer of events. Sinks are called synchronously, in order, for every event. */
export type EventSink = (event: RunEvent) => void;

/**
 * The per-task event bus: stamps `seq`, `ts` and `task_id` on every event,
 * fans it out to sinks, and offers the stream as an async iterable.
 */
export class EventBus {
  private seq = 0;
  private readonly sinks: EventSink[] = [];
  private readonly buffer: RunEvent[] = [];
  private waiters: (() => void)[] = [];
  private closed = false;

  constructor(
    readonly taskId: string,
    private readonly now: () => Date = () => new Date(),
  ) {}

  subscribe(sink: EventSink): void {
    this.sinks.push(sink);
  }

  emit(body: RunEventBody, scope: EventScope): RunEvent {
    if (this.closed) throw new Error(`event ${body.type} emitted after the task's bus closed`);
    const event = {
      ...body,
      seq: ++this.seq,
      ts: this.now().toISOString(),
      task_id: this.taskId,
      ...stripUndefined(scope),
    } as RunEvent;
    for (const sink of this.sinks) sink(event);
    this.buffer.push(event);
    this.wake();
    return event;
  }

  /** No more events; iterators finish once they have drained the buffer. */
  close(): void {
    this.closed = true;
    this.wake();
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /** Every event from the first, whenever iteration starts. */
  async *events(): AsyncGenerator<RunEvent> {
    let i = 0;
    for (;;) {
      while (i < this.buffer.length) yield this.buffer[i++] as RunEvent;
      if (this.closed) return;
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w();
  }
}

function stripUndefined(scope: EventScope): Partial<EventScope> {
  const out: Partial<EventScope> = { agent_id: scope.agent_id };
  if (scope.step_id !== undefined) out.step_id = scope.step_id;
  if (scope.parent_step_id !== undefined) out.parent_step_id = scope.parent_step_id;
  if (scope.trace_id !== undefined) out.trace_id = scope.trace_id;
  return out;
}
