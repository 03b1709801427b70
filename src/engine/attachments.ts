/**
 * A run's attachments (docs/attachments.md): checked before any request
 * (the caps, the entry agent's kind, every model its request may reach),
 * their bytes kept in the run's store by hash before the journal names
 * them, and read back from there by a resume or a replay.
 */
import type { ResolvedTeam } from "../config/types.js";
import { RuntimeError, describeError } from "../errors.js";
import { KINDS } from "../kinds/registry.js";
import { Attachment, MEDIA_TYPES, checkAttachmentCaps, type AttachmentRef } from "../models/attachment.js";
import type { AttachmentStore } from "../store/attachments.js";

/**
 * Throws a one-line USAGE error (exit 2, HTTP 400) when agent `agentName`
 * of `team` cannot be given `attachments`: past the caps, an agent kind that
 * sends none, or a model of its chain (its own, its fallbacks) that does not
 * list what they are in its `attachments` (PDFs only on the Responses API).
 */
export function checkAttachments(team: ResolvedTeam, agentName: string, attachments: readonly AttachmentRef[]): void {
  if (attachments.length === 0) return;
  checkAttachmentCaps(attachments);
  const agent = team.agents[agentName];
  if (!agent) return;
  if (!KINDS[agent.kind].attachments)
    throw new RuntimeError("USAGE", `agent ${agentName} (kind ${agent.kind}) takes no attachments: give them to a react or plan_and_solve agent`);
  const kinds = new Set(attachments.map((a) => MEDIA_TYPES[a.media_type] ?? "image"));
  const seen = new Set<string>();
  const visit = (name: string): void => {
    if (seen.has(name)) return;
    seen.add(name);
    const model = team.models[name];
    if (!model) return;
    const takes = model.provider !== "scripted" ? model.attachments : [];
    for (const kind of kinds) {
      const what = kind === "pdf" ? "PDF" : "image";
      if (!takes.includes(kind))
        throw new RuntimeError(
          "USAGE",
          `model ${name} of agent ${agentName} takes no ${what} attachments (its attachments: [${takes.join(", ")}]); list ${kind} in its attachments if it reads them`,
        );
      if (kind === "pdf" && model.provider === "openai" && model.api !== "responses")
        throw new RuntimeError("USAGE", `model ${name} of agent ${agentName} takes PDF attachments only with api: responses`);
    }
    if (model.provider !== "scripted") for (const next of model.fallback) visit(next);
  };
  visit(agent.model);
}

/** Keep the attachments' bytes in the run's store: before the journal names them, so a resume always finds them. */
export async function storeAttachments(open: () => AttachmentStore, attachments: readonly Attachment[]): Promise<void> {
  const store = open();
  try {
    await store.put(attachments.map((a) => ({ sha256: a.sha256, media_type: a.media_type, data: a.data })));
  } finally {
    await store.close();
  }
}

/** The attachments a stored run was given, their bytes read back from its store. Throws NOT_FOUND for bytes it lacks. */
export async function loadAttachments(open: () => AttachmentStore, refs: readonly AttachmentRef[], taskId: string): Promise<Attachment[]> {
  let store: AttachmentStore;
  try {
    store = open();
  } catch (err) {
    throw new RuntimeError("NOT_FOUND", `cannot read the attachments of run ${taskId}: ${describeError(err)}`);
  }
  try {
    const out: Attachment[] = [];
    for (const ref of refs) {
      const data = await store.get(ref.sha256);
      if (!data) throw new RuntimeError("NOT_FOUND", `attachment ${ref.name} (sha256 ${ref.sha256}) of run ${taskId} is not in the store`);
      out.push(new Attachment(ref.name, ref.media_type, Buffer.from(data)));
    }
    return out;
  } finally {
    await store.close();
  }
}
