/** Picks the ChatClient implementation for a resolved model config. */
import type { ModelConfig, OpenAIModelConfig } from "../config/types.js";
import { createScriptedChatClient } from "./scripted-client.js";
import type { ChatClient, ChatRequest, ChatResponse } from "./types.js";

/** Creates the client for one model; a scripted model's script is read and validated here. */
export function createChatClient(config: ModelConfig): ChatClient {
  switch (config.provider) {
    case "openai":
      return lazyOpenAIClient(config);
    case "scripted":
      return createScriptedChatClient(config);
  }
}

/**
 * The `openai`-backed client, whose module (and the `openai` package, 150
 * modules) is imported on the model's first call, not when the library is:
 * a scripted run, `validate` or `--help` never load it.
 */
function lazyOpenAIClient(config: OpenAIModelConfig): ChatClient {
  let client: ChatClient | undefined;
  let loading: Promise<ChatClient> | undefined;
  return {
    model: config.model,
    async chat(request: ChatRequest): Promise<ChatResponse> {
      if (!client) {
        loading ??= import("./openai-client.js").then(({ createOpenAIChatClient }) => createOpenAIChatClient(config));
        client = await loading;
      }
      return client.chat(request);
    },
  };
}
