import type { AgentKind } from "../config/types.js";
import type { KindDefinition, KindModule } from "./types.js";

/**
 * A kind whose code (`load`) is imported on its first step, once: the
 * registry names every kind, and a process loads only the ones it runs.
 */
export function lazyKind<K extends AgentKind>(
  kind: K,
  title: string,
  load: () => Promise<KindModule<K>>,
  options: { attachments?: true } = {},
): KindDefinition<K> {
  let loading: Promise<KindModule<K>> | undefined;
  const loaded = () => (loading ??= load());
  return {
    kind,
    title,
    ...options,
    load: loaded,
    run: async (ctx, input) => (await loaded()).run(ctx, input),
  };
}
