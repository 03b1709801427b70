/** The library: load a team file, run it, consume its events. The CLI is a thin shell over this. */
export { loadTeam } from "./config/load.js";
export { runTeam, type RunOptions, type RunResult, type TeamRun } from "./engine/run-team.js";
export { resumeRun, replayRun, decideApprovals, type ResumeOptions, type ReplayOptions, type Decided } from "./engine/resume.js";
export type { Approver, Decision } from "./engine/approvals.js";
export type * from "./config/types.js";
export type * from "./events/types.js";
export type { EventSink } from "./events/bus.js";
export type { ChatClient, ChatMessage, ChatRequest, ChatResponse, ToolSpec, ToolCallRequest } from "./models/types.js";
export type { Tool, ToolContext, ToolEffect, ToolOutcome } from "./tools/types.js";
export { defineTool, type ToolDefinition, type CodeToolContext } from "./tools/code-tool.js";
export type { AgentContext, AgentResult, AgentRunner, ToolBox } from "./kinds/types.js";
export { startTelemetry, telemetryRequested, type Telemetry, type TelemetryOptions } from "./telemetry/telemetry.js";
export { RuntimeError, ConfigError, ERROR_CODES, type ConfigProblem, type ErrorCode, type RunError } from "./errors.js";
export { machineToMermaid } from "./graph/mermaid.js";
export { createStore, type StoreOptions } from "./store/create.js";
export type { Store } from "./store/store.js";
export type { RunStore, RunQuery, RunStatus } from "./store/runs.js";
export { startWorker, type RunWorker, type WorkerOptions } from "./queue/start.js";
