/**
 * Prometheus metrics of a worker or a server (docs/scale-out.md#operations),
 * in the text exposition format 0.0.4: counters of runs by result, model and
 * tool call latency histograms, tokens, and gauges the owner reports (runs
 * queued and running). Read from the run events, one sink per run.
 *
 * Written here rather than with a client library: the format is a few lines
 * of text, and nothing else of such a library is needed.
 */
import type { EventSink } from "../events/bus.js";
import type { RunEvent } from "../events/types.js";

/** Histogram buckets in seconds, from a fast tool to a slow model. */
const BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

class Histogram {
  private readonly counts = new Map<string, number[]>();
  private readonly sums = new Map<string, number>();

  observe(label: string, seconds: number): void {
    let counts = this.counts.get(label);
    if (!counts) {
      counts = new Array<number>(BUCKETS.length + 1).fill(0);
      this.counts.set(label, counts);
    }
    const i = BUCKETS.findIndex((b) => seconds <= b);
    counts[i === -1 ? BUCKETS.length : i]! += 1;
    this.sums.set(label, (this.sums.get(label) ?? 0) + seconds);
  }

  render(name: string, help: string, labelName: string): string[] {
    const lines = [`# HELP ${name} ${help}`, `# TYPE ${name} histogram`];
    for (const [label, counts] of this.counts) {
      const l = `${labelName}="${escapeLabel(label)}"`;
      let cumulative = 0;
      BUCKETS.forEach((b, i) => {
        cumulative += counts[i] ?? 0;
        lines.push(`${name}_bucket{${l},le="${b}"} ${cumulative}`);
      });
      cumulative += counts[BUCKETS.length] ?? 0;
      lines.push(`${name}_bucket{${l},le="+Inf"} ${cumulative}`, `${name}_sum{${l}} ${this.sums.get(label) ?? 0}`, `${name}_count{${l}} ${cumulative}`);
    }
    return lines;
  }
}

export class RunMetrics {
  private readonly finished = new Map<string, number>();
  private started = 0;
  private readonly model = new Histogram();
  private readonly tool = new Histogram();
  private readonly tokens = new Map<string, number>();

  /** A sink for one run's events. */
  readonly sink: EventSink = (event: RunEvent) => {
    switch (event.type) {
      case "run.started":
      case "run.resumed":
        this.started++;
        break;
      case "run.finished":
        this.finished.set(event.result_type, (this.finished.get(event.result_type) ?? 0) + 1);
        break;
      case "llm.response":
        this.model.observe(event.model, event.duration_ms / 1000);
        this.add(`prompt`, event.usage.prompt_tokens);
        this.add(`completion`, event.usage.completion_tokens);
        break;
      case "tool.finished":
        this.tool.observe(event.tool, event.duration_ms / 1000);
        break;
      default:
    }
  };

  /** The exposition text; `gauges` are the owner's current values (runs queued, running...), `counters` its own totals. */
  render(gauges: Record<string, { help: string; value: number }> = {}, counters: Record<string, { help: string; value: number }> = {}): string {
    const lines = [
      "# HELP runtime_runs_started_total Runs started or resumed in this process.",
      "# TYPE runtime_runs_started_total counter",
      `runtime_runs_started_total ${this.started}`,
      "# HELP runtime_runs_finished_total Runs that ended in this process, by result (answer, error, paused).",
      "# TYPE runtime_runs_finished_total counter",
      ...["answer", "error", "paused", "blocked"].map((r) => `runtime_runs_finished_total{result="${r}"} ${this.finished.get(r) ?? 0}`),
      ...this.model.render("runtime_model_call_seconds", "Model call latency, by model.", "model"),
      ...this.tool.render("runtime_tool_call_seconds", "Tool call latency, by tool.", "tool"),
      "# HELP runtime_tokens_total Tokens spent, by kind (prompt, completion).",
      "# TYPE runtime_tokens_total counter",
      ...["prompt", "completion"].map((k) => `runtime_tokens_total{kind="${k}"} ${this.tokens.get(k) ?? 0}`),
    ];
    for (const [name, { help, value }] of Object.entries(gauges)) {
      lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} gauge`, `${name} ${value}`);
    }
    for (const [name, { help, value }] of Object.entries(counters)) {
      lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} counter`, `${name} ${value}`);
    }
    return `${lines.join("\n")}\n`;
  }

  private add(kind: string, n: number): void {
    this.tokens.set(kind, (this.tokens.get(kind) ?? 0) + n);
  }
}

function escapeLabel(value: string): string {
  return value.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
}
