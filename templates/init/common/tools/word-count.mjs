// word_count: a tool written in code (an ES module the runtime runs in-process;
// see the runtime's docs/code-tools.md). The runtime checks the arguments
// against `parameters` before execute runs, and bounds each call by the team
// file's timeout_ms. Change it, or add tools beside it, and list them in team.yaml.

export const description = "Count the words and characters of a text.";

export const parameters = {
  type: "object",
  properties: { text: { type: "string", description: "The text to count." } },
  required: ["text"],
  additionalProperties: false,
};

// Counting changes nothing in the world: a resumed run may repeat it.
export const effect = "read";

export async function execute({ text }, ctx) {
  ctx.signal.throwIfAborted();
  const words = text.split(/\s+/).filter(Boolean).length;
  return { words, characters: text.length };
}
