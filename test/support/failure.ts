import { expect } from "vitest";
import { RuntimeError } from "../../src/errors.js";

/** The RuntimeError `promise` rejects with; fails the test if it resolves or rejects with anything else. */
export async function failure(promise: Promise<unknown>): Promise<RuntimeError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(RuntimeError);
  return err as RuntimeError;
}
