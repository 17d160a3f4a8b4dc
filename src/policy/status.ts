// What the SpotPolicy and WarmupPolicy status writers share (webhook/policy-status.ts,
// warmup/policy-status.ts): conditions whose transition time moves only when their status does,
// and a merge patch written only when the status would change.
import type { PolicyCondition } from "../objects/policy-crds.ts";

/** RFC 3339 at whole seconds, as the apiserver writes times. */
export const rfc3339 = (ms: number): string => new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");

/** A condition as a status builder decides it (the writer stamps time and generation). */
export type WantedCondition = Omit<PolicyCondition, "lastTransitionTime" | "observedGeneration">;

/** Conditions with their transition times kept where the status did not change. */
export function stampedConditions(
  wanted: readonly WantedCondition[],
  previous: readonly PolicyCondition[] | undefined,
  now: number,
  generation: number | undefined,
): PolicyCondition[] {
  return wanted.map((c) => {
    const before = previous?.find((p) => p.type === c.type);
    const at = before && before.status === c.status ? before.lastTransitionTime : rfc3339(now);
    return {
      ...c,
      lastTransitionTime: at,
      ...(generation === undefined ? {} : { observedGeneration: generation }),
    };
  });
}

/**
 * A merge patch that makes the status exactly `next`: fields the current status has and `next`
 * lacks are removed (null), or they would stay and the status never match.
 */
export function statusPatch(current: object | undefined, next: object): Record<string, unknown> {
  const out: Record<string, unknown> = { ...next };
  for (const k of Object.keys(current ?? {})) if (!(k in next)) out[k] = null;
  return out;
}

/** Whether writing `next` would change what the CR shows (key order aside). */
export function statusChanged(current: unknown, next: unknown): boolean {
  return canonical(current ?? {}) !== canonical(next);
}

function canonical(v: unknown): string {
  return JSON.stringify(v, (_k, x: unknown) =>
    x !== null && typeof x === "object" && !Array.isArray(x)
      ? Object.fromEntries(
          Object.entries(x as Record<string, unknown>).sort(([a], [b]) => a.localeCompare(b)),
        )
      : x,
  );
}
