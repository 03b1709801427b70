/** Picks the ChatClient implementation for a resolved model config. */
import type { ModelConfig, OpenAIModelConfig } from "../config/types.js";
import { createScriptedChatClient } from "./scripted-client.js";
import type { ChatClient, ChatRequest, ChatResponse } from "./types.js";

/** Creates the client for one model; a scripted model's script is read and validated here. */
export function createChatClient(config: ModelConfig): ChatClient {
  switch (config.provider) {
    case "openai":
      return lazyClient(config, () => import("./openai-client.js").then((m) => m.createOpenAIChatClient(config)));
    case "anthropic":
      return lazyClient(config, () => import("./anthropic-client.js").then((m) => m.createAnthropicChatClient(config)));
    case "scripted":
      return createScriptedChatClient(config);
  }
}

/**
 * A provider's client, whose module (and its SDK: the `openai` package is
 * 150 modules) is imported on the model's first call, not when the library
 * is: a scripted run, `validate` or `--help` never load it.
 */
function lazyClient(config: OpenAIModelConfig, make: () => Promise<ChatClient>): ChatClient {
  let client: ChatClient | undefined;
  let loading: Promise<ChatClient> | undefined;
  return {
    model: config.model,
    async chat(request: ChatRequest): Promise<ChatResponse> {
      if (!client) {
        loading ??= make();
        client = await loading;
      }
      return client.chat(request);
    },
  };
}
