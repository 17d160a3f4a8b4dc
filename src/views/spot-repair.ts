// The Spot page's repair figures (pure): per workload the repair's actions over the range, and
// its progress on a workload with a policy — what is left to move and when it may act next.
import type { SpotProgressDto, SpotRepairDto, SpotWorkloadDto } from "../dashboard/dto.ts";
import type { SpotRepair } from "../core/store/store.ts";
import type { SpotPolicy } from "../policy/spot.ts";
import { DEFAULT_REPAIR_TIMING } from "../webhook/repair-plan.ts";
import { spotBlocker, type BlockerInput } from "./spot-blocker.ts";

/** The repair's action (its Event's `action`) when it moved a pod to Prefer's on-demand fallback. */
export const FALLBACK_ACTION = "Fallback";

/** Newest repairs listed per workload (the counts cover the whole range). */
export const MAX_REPAIRS_LISTED = 20;

export type Repairs = SpotWorkloadDto["repairs"];

/** Per workload key: how many repairs of each action, and the newest few. */
export function repairsByWorkload(rows: readonly SpotRepair[]): Map<string, Repairs> {
  const out = new Map<string, Repairs>();
  for (const r of rows) {
    let w = out.get(r.workload);
    if (!w) out.set(r.workload, (w = { total: 0, byAction: {}, recent: [] }));
    w.total++;
    const action = r.action || "other";
    w.byAction[action] = (w.byAction[action] ?? 0) + 1;
    const dto: SpotRepairDto = { at: r.at, action: r.action, pod: r.pod, type: r.type, message: r.message };
    w.recent.unshift(dto);
    if (w.recent.length > MAX_REPAIRS_LISTED) w.recent.pop();
  }
  return out;
}

/**
 * The repair's progress on a workload with a policy (issue 28): what is left to move, the
 * evictions done since the policy last changed, and when it may evict next — the last action plus
 * the repair's cooldown, or the retry a refused eviction announced; before any action, the policy
 * change plus the repair's grace — and, while pods are off target, what holds the move (`world`:
 * the workload's pods and what they need, spot-blocker.ts). Pure; `rows` are the workload's repair
 * rows, oldest first.
 */
export function spotProgress(o: {
  policy: SpotPolicy;
  actualOnDemand: number;
  targetOnDemand: number;
  rows: readonly SpotRepair[];
  since: number;
  now: number;
  world?: Omit<BlockerInput, "rows" | "dueAt" | "now">;
}): SpotProgressDto {
  const mode = o.policy.repair === false ? "off" : o.policy.repair === "dry-run" ? "dry-run" : "on";
  const mine = o.rows.filter((r) => r.at >= o.since);
  const toMove = Math.abs(o.actualOnDemand - o.targetOnDemand);
  const done = mine.filter((r) => r.action === "Evict").length;
  const planned = mine.filter((r) => r.action === "PlanEvict").length;
  const due = mode === "on" && toMove > 0 ? dueAt(mine, o.since) : null;
  const blocker =
    due === null || !o.world ? null : spotBlocker({ ...o.world, rows: mine, dueAt: due, now: o.now });
  return { mode, toMove, done, planned, nextAt: due === null ? null : Math.max(o.now, due), blocker };
}

/**
 * When the repair is due to act next on a workload: its last action plus the cooldown, or the retry
 * a refused eviction announced; before any action, the policy change plus the grace. Not clamped to
 * now: how long ago it was due says whether the repair acts at all (spot-blocker.ts).
 */
export function dueAt(rows: readonly SpotRepair[], since: number): number {
  const last = rows.findLast(
    (r) => r.action === "Evict" || r.action === "EvictBlocked" || r.action === "Fallback",
  );
  const retry = last?.action === "EvictBlocked" ? /will retry in (\d+) s/.exec(last.message)?.[1] : undefined;
  return last
    ? last.at + (retry !== undefined ? Number(retry) * 1000 : DEFAULT_REPAIR_TIMING.cooldownMs)
    : since + DEFAULT_REPAIR_TIMING.graceMs;
}
