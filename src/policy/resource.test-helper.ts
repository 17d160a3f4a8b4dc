// Shared by the CR conversion tests (spot-resource, warmup-resource).
import assert from "node:assert/strict";

/** The errors of a refused conversion; fails the test when it was accepted. */
export function errorsOf(r: { ok: true } | { ok: false; errors: string[] }): string[] {
  assert.ok(!r.ok, "expected the conversion to be refused");
  return r.errors;
}
