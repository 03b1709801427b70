#!/usr/bin/env node
// knowledge_lookup: a small formula book for the demo teams.
// Reads {"topic": "..."} as JSON on stdin, writes {topic, formula, notes} as JSON on stdout;
// an unknown topic writes {error} and exits with status 1.

const FORMULAS = {
  "circle area": {
    formula: "area = pi * r^2",
    notes: "r is the radius; d = 2 * r is the diameter.",
  },
  "circle circumference": {
    formula: "circumference = 2 * pi * r",
    notes: "r is the radius; equivalently pi * d with d the diameter.",
  },
  circle: {
    formula: "area = pi * r^2; circumference = 2 * pi * r",
    notes: "r is the radius, d = 2 * r the diameter.",
  },
  "sphere volume": {
    formula: "volume = 4/3 * pi * r^3",
    notes: "r is the radius.",
  },
  "sphere surface area": {
    formula: "surface = 4 * pi * r^2",
    notes: "r is the radius.",
  },
  "rectangle area": { formula: "area = w * h", notes: "w is the width, h the height." },
  "rectangle perimeter": { formula: "perimeter = 2 * (w + h)", notes: "w is the width, h the height." },
  "triangle area": { formula: "area = b * h / 2", notes: "b is the base, h the height to it." },
  "cylinder volume": { formula: "volume = pi * r^2 * h", notes: "r is the radius, h the height." },
  "pythagorean theorem": { formula: "c = sqrt(a^2 + b^2)", notes: "c is the hypotenuse of a right triangle." },
};

const ALIASES = {
  "area of a circle": "circle area",
  "circumference of a circle": "circle circumference",
  "circle perimeter": "circle circumference",
  "volume of a sphere": "sphere volume",
  "area of a triangle": "triangle area",
  pythagoras: "pythagorean theorem",
};

function normalise(topic) {
  return topic.toLowerCase().replace(/[^a-z0-9 ]+/g, " ").replace(/\s+/g, " ").trim();
}

function fail(message) {
  process.stdout.write(JSON.stringify({ error: message }) + "\n");
  process.stderr.write(message + "\n");
  process.exit(1);
}

let input = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => (input += chunk));
process.stdin.on("end", () => {
  let args;
  try {
    args = JSON.parse(input);
  } catch {
    fail("expected JSON like {\"topic\": \"circle area\"} on stdin");
  }
  if (typeof args?.topic !== "string" || args.topic.trim() === "") fail("topic must be a non-empty string");
  const key = normalise(args.topic);
  const found = FORMULAS[key] ?? FORMULAS[ALIASES[key]];
  if (!found) fail(`unknown topic "${args.topic}"; known topics: ${Object.keys(FORMULAS).join(", ")}`);
  process.stdout.write(JSON.stringify({ topic: args.topic, ...found }) + "\n");
});
