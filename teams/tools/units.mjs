// convert_units: a tool written in code (docs/code-tools.md), loaded once by the
// runtime and run in-process. The runtime checks the arguments against
// `parameters` before execute runs, and bounds each call by the team file's
// timeout_ms and max_output_bytes.

const LINEAR = {
  // length, in metres
  m: ["length", 1],
  km: ["length", 1000],
  mi: ["length", 1609.344],
  ft: ["length", 0.3048],
  // mass, in kilograms
  kg: ["mass", 1],
  lb: ["mass", 0.45359237],
};

const TEMPERATURE = {
  C: { toK: (v) => v + 273.15, fromK: (k) => k - 273.15 },
  F: { toK: (v) => ((v - 32) * 5) / 9 + 273.15, fromK: (k) => ((k - 273.15) * 9) / 5 + 32 },
  K: { toK: (v) => v, fromK: (k) => k },
};

const UNITS = [...Object.keys(LINEAR), ...Object.keys(TEMPERATURE)];

export const description = `Convert a value between units (${UNITS.join(", ")}); the result is rounded to two decimals.`;

export const parameters = {
  type: "object",
  properties: {
    value: { type: "number" },
    from: { enum: UNITS },
    to: { enum: UNITS },
  },
  required: ["value", "from", "to"],
  additionalProperties: false,
};

// Converting changes nothing in the world: a resumed run may reuse or repeat it.
export const effect = "read";

export async function execute({ value, from, to }, ctx) {
  ctx.signal.throwIfAborted();
  const round = (x) => Math.round(x * 100) / 100;
  if (from in TEMPERATURE && to in TEMPERATURE) {
    return { value: round(TEMPERATURE[to].fromK(TEMPERATURE[from].toK(value))), unit: to };
  }
  const [a, b] = [LINEAR[from], LINEAR[to]];
  if (!a || !b || a[0] !== b[0]) throw new Error(`cannot convert ${from} to ${to}: not the same kind of quantity`);
  return { value: round((value * a[1]) / b[1]), unit: to };
}
