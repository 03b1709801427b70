import type { ResolvedTeam } from "../config/types.js";

/** What `GET /v1/team` tells a client about an agent. */
export interface AgentInfo {
  name: string;
  kind: string;
  description: string;
  model: string;
  tools: string[];
  entry: boolean;
}

/** What `GET /v1/team` answers. */
export interface TeamInfo {
  name: string;
  description: string;
  entry: string;
  agents: AgentInfo[];
  /** Models by name, provider and model id only: never keys, base URLs or script paths. */
  models: { name: string; provider: string; model: string }[];
}

/** The public face of a team: enough to pick an agent, nothing that could hold a credential. */
export function teamInfo(team: ResolvedTeam): TeamInfo {
  return {
    name: team.name,
    description: team.description,
    entry: team.entry,
    agents: Object.values(team.agents).map((a) => ({
      name: a.name,
      kind: a.kind,
      description: a.description,
      model: a.model,
      tools: [...a.tools],
      entry: a.name === team.entry,
    })),
    models: Object.values(team.models).map((m) => ({ name: m.name, provider: m.provider, model: m.model })),
  };
}
