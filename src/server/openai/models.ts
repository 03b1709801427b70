/**
 * The team's agents as OpenAI models (docs/protocols.md#openai-compatible):
 * each agent under its own name, and the entry agent under the team's name
 * too (unless an agent has that name: then that agent it is).
 */
import type { ResolvedTeam } from "../../config/types.js";
import { OpenAIRequestError } from "./errors.js";

/** A model as `GET /v1/models` lists it. */
export interface ModelObject {
  id: string;
  object: "model";
  created: number;
  owned_by: string;
}

/** Every name a client may give as `model`, with the agent it runs. */
function names(team: ResolvedTeam): [string, string][] {
  const agents = Object.keys(team.agents).map((name): [string, string] => [name, name]);
  return Object.hasOwn(team.agents, team.name) ? agents : [[team.name, team.entry], ...agents];
}

/** `GET /v1/models`. */
export function listModels(team: ResolvedTeam, created: number): { object: "list"; data: ModelObject[] } {
  return { object: "list", data: names(team).map(([id]) => modelObject(team, id, created)) };
}

/** `GET /v1/models/:id`. */
export function retrieveModel(team: ResolvedTeam, id: string, created: number): ModelObject {
  agentOf(team, id);
  return modelObject(team, id, created);
}

function modelObject(team: ResolvedTeam, id: string, created: number): ModelObject {
  return { id, object: "model", created, owned_by: team.name };
}

/** The agent a request's `model` names; an unknown one is OpenAI's 404 `model_not_found`. */
export function agentOf(team: ResolvedTeam, model: unknown): string {
  if (typeof model !== "string" || model === "") {
    throw new OpenAIRequestError(400, "model is required: the team's name or one of its agents' (GET /v1/models)", { param: "model" });
  }
  const found = names(team).find(([id]) => id === model);
  if (!found) {
    throw new OpenAIRequestError(
      404,
      `The model '${model}' does not exist: this server's models are ${names(team)
        .map(([id]) => id)
        .join(", ")}`,
      { param: "model", code: "model_not_found" },
    );
  }
  return found[1];
}
