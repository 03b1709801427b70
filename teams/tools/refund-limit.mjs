// A tool_input guardrail of teams/guarded-helpdesk.yaml (docs/guardrails.md#module):
// refunds above 100 euros are not for the helpdesk to make.
export default function check({ text }) {
  const { amount } = JSON.parse(text);
  return amount <= 100 ? { pass: true } : { pass: false, reason: `a refund of ${amount} EUR is above the helpdesk's limit of 100 EUR: offer at most 100 and say a person will review the rest` };
}
