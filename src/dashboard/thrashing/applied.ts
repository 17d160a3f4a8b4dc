// A fix Wave applied to a thrashing pool, and when the detector should stop flagging it (issue 43).
// The score counts the cycles of the last window; right after a fix every one of them is from
// before it, so the pool stays "high" for up to a window with nothing wrong. The page says so —
// the fix, its time, when the score is expected to clear — instead of advising on a score the fix
// has not had time to move.
import type { AuditRecord } from "../../core/store/store.ts";
import type { NodePool } from "../../objects/karpenter.ts";

export interface AppliedFix {
  title: string;
  /** When it was applied (the audit's time). */
  at: number;
  /** When the last cycle from before it leaves the detector's window: the score clears by then. */
  clearsBy: number;
}

/** Whether `patch` (a merge patch) is what `target` holds: every field it sets has that value. */
export function holds(target: unknown, patch: unknown): boolean {
  if (patch === null || typeof patch !== "object" || Array.isArray(patch))
    return JSON.stringify(target) === JSON.stringify(patch);
  if (target === null || typeof target !== "object" || Array.isArray(target)) return false;
  const t = target as Record<string, unknown>;
  return Object.entries(patch as Record<string, unknown>).every(([k, v]) =>
    v === null ? t[k] === undefined : holds(t[k], v),
  );
}

/**
 * The newest fix applied to `pool` through Wave (`thrashing.apply` in the audit) within the last
 * `windowMs` that the NodePool still holds; undefined when none (or it was changed back since).
 */
export function appliedFix(
  pool: string,
  nodePool: NodePool | undefined,
  audit: readonly Pick<AuditRecord, "id" | "action" | "object" | "at" | "after">[],
  now: number,
  windowMs: number,
): AppliedFix | undefined {
  const prefix = `NodePool ${pool}: `;
  const newest = audit
    .filter((a) => a.action === "thrashing.apply" && a.object.startsWith(prefix) && a.at > now - windowMs)
    .sort((a, b) => b.at - a.at || b.id - a.id)[0];
  if (!newest || !nodePool) return undefined;
  let patch: unknown;
  try {
    patch = JSON.parse(newest.after ?? "null");
  } catch {
    return undefined;
  }
  if (patch === null || !holds(nodePool, patch)) return undefined;
  return { title: newest.object.slice(prefix.length), at: newest.at, clearsBy: newest.at + windowMs };
}
