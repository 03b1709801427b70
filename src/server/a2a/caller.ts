/**
 * The caller of an A2A call (src/server/auth.ts) as the SDK's user of
 * its context: the endpoint makes every call's context with one, and the
 * executor and the task store read it to check what the call may reach
 * (src/server/access.ts).
 */
import type { ServerCallContext, User } from "@a2a-js/sdk/server";
import { unreachable } from "../../errors.js";
import type { Caller } from "../auth.js";

export class CallerUser implements User {
  constructor(readonly caller: Caller) {}
  get isAuthenticated(): boolean {
    return true;
  }
  get userName(): string {
    return this.caller.name;
  }
}

/** The caller of a call the gate let in. */
export function callerOf(context: ServerCallContext | undefined): Caller {
  const user = context?.user;
  // Every context is made by the endpoint, with its caller: one without is a bug.
  if (!(user instanceof CallerUser)) unreachable("an A2A call without its caller");
  return user.caller;
}
