/** Picks the ChatClient implementation for a resolved model config. */
import type { ModelConfig } from "../config/types.js";
import { createOpenAIChatClient } from "./openai-client.js";
import { createScriptedChatClient } from "./scripted-client.js";
import type { ChatClient } from "./types.js";

/** Creates the client for one model; a scripted model's script is read and validated here. */
export function createChatClient(config: ModelConfig): ChatClient {
  switch (config.provider) {
    case "openai":
      return createOpenAIChatClient(config);
    case "scripted":
      return createScriptedChatClient(config);
  }
}
