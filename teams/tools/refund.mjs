// A refund tool for teams/guarded-helpdesk.yaml (docs/code-tools.md): it records the refund it was asked for.
export const description = "Refunds an amount (in euros) of an order.";
export const parameters = {
  type: "object",
  properties: { order: { type: "string" }, amount: { type: "number", exclusiveMinimum: 0 } },
  required: ["order", "amount"],
  additionalProperties: false,
};
export const effect = "write";
export async function execute({ order, amount }) {
  return { refunded: amount, order, reference: `R-${order}` };
}
