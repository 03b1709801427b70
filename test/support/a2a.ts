import { Role, type Message, type SendMessageRequest, type StreamResponse, type Task } from "@a2a-js/sdk";
import { ClientFactory, ClientFactoryOptions, JsonRpcTransportFactory, type Client } from "@a2a-js/sdk/client";
import { authedFetch } from "./runtime-server.js";

/** The SDK's client of the agent at `url`, sending `token` as a bearer header (none: no header). */
export function a2aClient(url: string, token?: string): Promise<Client> {
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new JsonRpcTransportFactory(token === undefined ? {} : { fetchImpl: authedFetch(token) })],
    }),
  );
  return factory.createFromUrl(url);
}

/** A user message of text (or a data part), in a task or a context when given. */
export function userMessage(content: string | Record<string, unknown>, where: { taskId?: string; contextId?: string } = {}): SendMessageRequest {
  const message: Message = {
    messageId: crypto.randomUUID(),
    contextId: where.contextId ?? "",
    taskId: where.taskId ?? "",
    role: Role.ROLE_USER,
    parts: [
      typeof content === "string"
        ? { content: { $case: "text", value: content }, mediaType: "text/plain", filename: "", metadata: {} }
        : { content: { $case: "data", value: content }, mediaType: "application/json", filename: "", metadata: {} },
    ],
    metadata: {},
    extensions: [],
    referenceTaskIds: [],
  };
  return { tenant: "", message, configuration: undefined, metadata: {} };
}

/** The text of a task's artifacts. */
export function artifactText(task: Task): string {
  return task.artifacts
    .flatMap((a) => a.parts)
    .flatMap((p) => (p.content?.$case === "text" ? [p.content.value] : []))
    .join("\n");
}

/** Read a whole stream of the SDK's client. */
export async function collect(stream: AsyncGenerator<StreamResponse>): Promise<StreamResponse[]> {
  const out: StreamResponse[] = [];
  for await (const r of stream) out.push(r);
  return out;
}
