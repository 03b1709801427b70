/**
 * A2A in `runtime serve` (docs/protocols.md#a2a), on the official SDK: its
 * `DefaultRequestHandler` over the runtime's executor and a task store that
 * reads the run store, its `JsonRpcTransportHandler` for the JSON-RPC
 * binding at `POST /a2a`, and the agent card at
 * `/.well-known/agent-card.json`. Only the HTTP glue is here (the SDK's own
 * is for Express).
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { A2A_PROTOCOL_VERSION, A2A_VERSION_HEADER, AgentCard } from "@a2a-js/sdk";
import { DefaultRequestHandler, JsonRpcTransportHandler, ServerCallContext, validateVersion, type A2ARequestHandler } from "@a2a-js/sdk/server";
import type { CancelTaskRequest, Task } from "@a2a-js/sdk";
import type { ResolvedTeam } from "../../config/types.js";
import { HttpError, readJsonBody, sendJson } from "../http.js";
import { EventStream } from "../sse.js";
import type { ServerContext } from "../runs-api.js";
import { checkRun } from "../access.js";
import { parseHost } from "../gate.js";
import type { Caller } from "../auth.js";
import { CallerUser, callerOf } from "./caller.js";
import { TaskNotFoundError } from "@a2a-js/sdk/errors";
import { RunBuses, RunExecutor } from "./executor.js";
import { RunTaskStore } from "./task-view.js";

/** Where the JSON-RPC endpoint is, under the server's base URL. */
export const A2A_PATH = "/a2a";

/** The agent card of a team: its name and description, one skill per agent, the JSON-RPC URL, and the serve token as bearer security. */
export function agentCard(team: ResolvedTeam, baseUrl: string): AgentCard {
  return {
    name: team.name,
    description: team.description || `The agents of team ${team.name}`,
    supportedInterfaces: [{ url: `${baseUrl}${A2A_PATH}`, protocolBinding: "JSONRPC", tenant: "", protocolVersion: A2A_PROTOCOL_VERSION }],
    provider: undefined,
    version: "1.0.0",
    capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
    securitySchemes: {
      bearer: {
        scheme: {
          $case: "httpAuthSecurityScheme",
          value: { scheme: "Bearer", bearerFormat: "", description: "The token runtime serve printed (--token or RUNTIME_SERVE_TOKEN)." },
        },
      },
    },
    securityRequirements: [{ schemes: { bearer: { list: [] } } }],
    defaultInputModes: ["text/plain"],
    defaultOutputModes: ["text/plain"],
    skills: Object.values(team.agents).map((a) => ({
      id: a.name,
      name: a.name,
      description: a.description || `Agent ${a.name} (${a.kind})`,
      tags: [a.kind, ...(a.name === team.entry ? ["entry"] : [])],
      examples: [],
      inputModes: [],
      outputModes: [],
      securityRequirements: [],
    })),
    signatures: [],
  };
}

/**
 * The SDK's request handler, with cancel going through the run: a run of
 * this server is cancelled and has stored its end before the SDK reads the
 * task back (as canceled) from the store.
 */
class RunRequestHandler extends DefaultRequestHandler {
  constructor(
    card: AgentCard,
    private readonly ctx: ServerContext,
    buses: RunBuses,
  ) {
    // A paused run's bus is not kept: the run may go on through the approvals API, with no one
    // publishing on it; a message in the task makes a new one.
    super(card, new RunTaskStore(ctx), new RunExecutor(ctx, buses), buses, undefined, undefined, undefined, undefined, { keepBusAliveStates: [] });
  }

  override async cancelTask(params: CancelTaskRequest, context: ServerCallContext): Promise<Task> {
    // Cancelling is the owner's, as continuing it is (src/server/access.ts); someone else's task is not found.
    await checkRun({ ...this.ctx, caller: callerOf(context) }, params.id, "run").catch(() => {
      throw new TaskNotFoundError(`Task not found: ${params.id}`);
    });
    const run = this.ctx.live.get(params.id);
    if (run) {
      run.cancel();
      await run.result.catch(() => undefined);
    }
    return super.cancelTask(params, context);
  }
}

/** The two A2A endpoints of a server. */
export interface A2AEndpoint {
  /** `GET /.well-known/agent-card.json`: answered without the token, as A2A clients fetch it. */
  card(req: IncomingMessage, res: ServerResponse): Promise<void>;
  /** `POST /a2a`: one JSON-RPC request of `caller` (behind the token); streaming methods answer Server-Sent Events. */
  rpc(req: IncomingMessage, res: ServerResponse, caller: Caller): Promise<void>;
}

/**
 * `listening` is the server's own base URL. The card's URL is the one the
 * client reached this server by (its Host), as the card is read from there,
 * when the Host is a plain name or address and port (src/server/gate.ts);
 * any other Host (`127.0.0.1:1@evil.example`) gets the listening address.
 */
export function a2aEndpoint(ctx: ServerContext, listening: () => string): A2AEndpoint {
  const baseOf = (req: IncomingMessage) => {
    const host = parseHost(req.headers.host);
    const base = new URL(listening());
    return host ? `${base.protocol}//${host.hostname}${host.port !== undefined ? `:${host.port}` : ""}` : base.origin;
  };
  let served: { handler: A2ARequestHandler; transport: JsonRpcTransportHandler; buses: RunBuses } | undefined;
  const handlerFor = (req: IncomingMessage) => {
    if (!served) {
      const buses = new RunBuses();
      const handler = new RunRequestHandler(agentCard(ctx.team, baseOf(req)), ctx, buses);
      served = { handler, transport: new JsonRpcTransportHandler(handler), buses };
    }
    return served;
  };
  return {
    async card(req, res) {
      sendJson(res, 200, AgentCard.toJSON(agentCard(ctx.team, baseOf(req))));
    },
    async rpc(req, res, caller) {
      let body: unknown;
      try {
        body = await readJsonBody(req, ctx.maxBodyBytes);
      } catch (err) {
        // A body that is not JSON is JSON-RPC's parse error; a wrong content type or size stays an HTTP refusal.
        if (!(err instanceof HttpError) || err.status !== 400) throw err;
        return sendJson(res, 200, { jsonrpc: "2.0", id: null, error: { code: -32700, message: err.message } });
      }
      const id = typeof body === "object" && body !== null && "id" in body ? (body as { id: unknown }).id : null;
      const { handler, transport, buses } = handlerFor(req);
      const requestedVersion = header(req, A2A_VERSION_HEADER);
      let answer: Awaited<ReturnType<JsonRpcTransportHandler["handle"]>>;
      try {
        // The gate let the request in: the caller its token names is the call's user, and every task read or started is checked against it.
        const context = new ServerCallContext({ user: new CallerUser(caller), ...(requestedVersion ? { requestedVersion } : {}) });
        validateVersion(context.requestedVersion, await handler.getAgentCard(), "JSONRPC");
        answer = await transport.handle(body as Record<string, unknown>, context);
      } catch (err) {
        return sendJson(res, 200, { jsonrpc: "2.0", id, error: JsonRpcTransportHandler.mapToJSONRPCError(err) });
      }
      if (!(Symbol.asyncIterator in answer)) return sendJson(res, 200, answer);
      // A stream: its first answer decides between an error body and Server-Sent Events, as the SDK's Express binding does.
      const stream = answer[Symbol.asyncIterator]();
      let first: IteratorResult<unknown>;
      try {
        first = await stream.next();
      } catch (err) {
        return sendJson(res, 200, { jsonrpc: "2.0", id, error: JsonRpcTransportHandler.mapToJSONRPCError(err) });
      }
      // The server's one SSE writer: each answer once the client took the one before, a heartbeat, the stall limit.
      const sse = new EventStream(res, { stallLimitMs: ctx.stallLimitMs });
      const closed = new Promise<{ done: true; value: undefined }>((resolve) => sse.onClose(() => resolve({ done: true, value: undefined })));
      // The run is read on as this client takes its task's updates (RunBuses.reader).
      const reader = buses.reader(taskOfAnswer(first.value));
      try {
        for (let next = first; !next.done; next = await Promise.race([stream.next(), closed])) {
          if (!(await sse.sendData(next.value))) break;
          if (next !== first) reader?.took();
        }
      } catch (err) {
        await sse.sendData({ jsonrpc: "2.0", id, error: JsonRpcTransportHandler.mapToJSONRPCError(err) }, "error");
      } finally {
        reader?.close();
        void stream.return?.(undefined);
        sse.end();
      }
    },
  };
}

/** The task an answer of a stream is about (a JSON-RPC result holding a task or one of its updates). */
function taskOfAnswer(answer: unknown): string | undefined {
  const result = (answer as { result?: Record<string, { id?: unknown; taskId?: unknown } | undefined> } | undefined)?.result;
  const id = result?.["task"]?.id ?? result?.["statusUpdate"]?.taskId ?? result?.["artifactUpdate"]?.taskId;
  return typeof id === "string" ? id : undefined;
}

function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name.toLowerCase()];
  return Array.isArray(value) ? value[0] : value;
}
