import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { RequestOptions } from "@modelcontextprotocol/sdk/shared/protocol.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { RuntimeError } from "../../errors.js";

/** How long a cancelled task's tasks/cancel may take before the call gives up on it. */
const CANCEL_MS = 2000;

/**
 * Call a tool that requires MCP tasks (docs/mcp.md#tools-that-require-tasks)
 * through the SDK's task stream: tools/call creates the task, the SDK polls
 * tasks/get at the server's pollInterval and fetches tasks/result when it
 * completes. Each new status message is reported as progress; a failed or
 * cancelled task is the call's error; a call aborted (timeout, interrupt)
 * asks the server to cancel the task.
 */
export async function callAsTask(
  client: Client,
  params: { name: string; arguments: Record<string, unknown> },
  options: RequestOptions & { signal: AbortSignal },
  onProgress: (progress: { message: string }) => void,
): Promise<CallToolResult> {
  let taskId: string | undefined;
  let last: string | undefined;
  try {
    // `task: {}` asks for a task whatever the SDK's cache of the tool list says (it keeps only the last page's).
    for await (const message of client.experimental.tasks.callToolStream(params, undefined, { ...options, task: {} })) {
      switch (message.type) {
        case "taskCreated":
          taskId = message.task.taskId;
          onProgress({ message: `task ${taskId} ${message.task.status}` });
          break;
        case "taskStatus": {
          // Each poll answers with the status: only a change is news.
          const said = message.task.statusMessage ?? `task ${message.task.status}`;
          if (said !== last) onProgress({ message: said });
          last = said;
          break;
        }
        case "result":
          return message.result as CallToolResult;
        case "error":
          throw message.error;
      }
    }
    throw new RuntimeError("TOOL_FAILED", "the task ended without a result");
  } finally {
    if (taskId !== undefined && options.signal.aborted) {
      const id = taskId;
      await client.experimental.tasks.cancelTask(id, { timeout: CANCEL_MS }).catch(() => undefined);
    }
  }
}
