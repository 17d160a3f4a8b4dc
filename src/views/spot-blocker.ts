// What holds a workload's move to its spot target (issue 43, point 6): a row that stays
// "adopting … next in 0 s · 0 evictions done" for minutes names its blocker — a
// PodDisruptionBudget allowing no eviction, the NodePool its pods need at its limit, no NodePool
// offering the capacity, pods waiting for a node, a rollout, a pod starting, pods that run where
// the repair does not count them, or a repair that does not act at all. Pure, over core's state
// and the repair's stored actions; the checks follow the repair's own order (repair-plan.ts).
import type { SpotBlockerDto } from "../dashboard/dto.ts";
import type { SpotRepair } from "../core/store/store.ts";
import { parseResources, podRequests } from "../karpenter/resources.ts";
import { limitStatus } from "../karpenter/requirements.ts";
import { poolCanHost } from "../karpenter/pool-of-pod.ts";
import { selectorMatches } from "../karpenter/budgets.ts";
import { CAPACITY_TYPE_LABEL, type NodePool } from "../objects/karpenter.ts";
import type { Node, Pod, PodDisruptionBudget } from "../objects/kube.ts";
import { ASSIGNMENT_LABEL } from "../objects/wave.ts";
import { revisionOf } from "../webhook/constants.ts";
import { DEFAULT_REPAIR_TIMING } from "../webhook/repair-plan.ts";

/** How long past its announced next action a repair that did nothing counts as not acting. */
export const REPAIR_IDLE_MS = 60_000;
/** The repair leader's Lease (src/cli/component.ts SPOT_REPAIR_LEASE), for the message. */
const REPAIR_LEASE = "wave-spot-repair";

export interface BlockerInput {
  /** The workload's live pods. */
  pods: readonly Pod[];
  nodesByName: ReadonlyMap<string, Node>;
  pools: readonly NodePool[];
  pdbs: readonly PodDisruptionBudget[];
  /** The workload's repair actions since its policy last changed, oldest first. */
  rows: readonly SpotRepair[];
  /** When the repair was due to act next (spot-repair.ts dueAt, not clamped to now). */
  dueAt: number;
  now: number;
}

/** Whether the pod's own spec pins karpenter.sh/capacity-type (not through Wave's assignment). */
export function pinsCapacityType(p: Pod): boolean {
  if (p.metadata.labels?.[ASSIGNMENT_LABEL] !== undefined) return false;
  if (p.spec.nodeSelector?.[CAPACITY_TYPE_LABEL] !== undefined) return true;
  const terms =
    p.spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms ?? [];
  return terms.some((t) => (t.matchExpressions ?? []).some((e) => e.key === CAPACITY_TYPE_LABEL));
}

const created = (p: Pod): number => Date.parse(p.metadata.creationTimestamp ?? "") || 0;
const ready = (p: Pod): boolean =>
  (p.status?.conditions ?? []).some((c) => c.type === "Ready" && c.status === "True");
const seconds = (ms: number): string => `${String(Math.max(0, Math.round(ms / 1000)))} s`;

/** A PodDisruptionBudget over the workload's pods that allows no eviction now. */
function closedBudget(o: BlockerInput): SpotBlockerDto | null {
  for (const pdb of o.pdbs) {
    if ((pdb.status?.disruptionsAllowed ?? 1) > 0) continue;
    const ns = pdb.metadata.namespace;
    if (
      !o.pods.some(
        (p) => p.metadata.namespace === ns && selectorMatches(pdb.spec.selector, p.metadata.labels),
      )
    )
      continue;
    const healthy = pdb.status?.currentHealthy;
    const desired = pdb.status?.desiredHealthy;
    const counts =
      healthy === undefined || desired === undefined
        ? ""
        : ` (${String(healthy)} healthy, ${String(desired)} required)`;
    return {
      kind: "pdb",
      object: `${ns ?? ""}/${pdb.metadata.name ?? ""}`,
      message: `PodDisruptionBudget ${ns ?? ""}/${pdb.metadata.name ?? ""} allows 0 disruptions${counts}: the repair's evictions are refused until it allows one`,
    };
  }
  return null;
}

/** A limit of the pool a pod would go over: "cpu 16 of 16". */
function limitHit(pool: NodePool, pod: Pod): string | undefined {
  const need = podRequests(pod);
  const hit = limitStatus(pool.spec.limits, parseResources(pool.status?.resources)).find(
    (l) => l.remaining < (need[l.resource] ?? 0) || l.exceeded,
  );
  if (!hit) return undefined;
  const unit = (v: number): string =>
    hit.resource === "cpu"
      ? String(v / 1000)
      : hit.resource === "memory"
        ? `${(v / 2 ** 30).toFixed(1)}Gi`
        : String(v);
  return `${hit.resource} ${unit(hit.usage)} of ${unit(hit.limit)}`;
}

/** Pods that wait for a node: no NodePool can host them, their pools are at a limit, or just waiting. */
function waitingForNodes(o: BlockerInput): SpotBlockerDto | null {
  const pending = o.pods.filter((p) => (p.spec.nodeName ?? "") === "");
  const first = pending.sort((a, b) => created(a) - created(b))[0];
  if (!first) return null;
  const n = pending.length;
  const name = first.metadata.name ?? "";
  const wants = first.metadata.labels?.[ASSIGNMENT_LABEL];
  const hosts = o.pools.filter((pool) => poolCanHost(first, pool));
  if (hosts.length === 0)
    return {
      kind: "no-capacity",
      object: `${first.metadata.namespace ?? ""}/${name}`,
      message: `no NodePool can launch a node for pod ${name}${wants ? ` (assigned ${wants})` : ""}: ${String(n)} pod(s) wait`,
    };
  const limits = hosts.map((pool) => ({ pool: pool.metadata.name ?? "", hit: limitHit(pool, first) }));
  if (limits.every((l) => l.hit !== undefined))
    return {
      kind: "pool-limit",
      object: limits[0]?.pool ?? "",
      message: `NodePool ${limits.map((l) => `${l.pool} at its limit (${l.hit ?? ""})`).join(", ")}: no node for ${String(n)} pending pod(s)`,
    };
  const why = (first.status?.conditions ?? []).find((c) => c.type === "PodScheduled" && c.status === "False");
  return {
    kind: "pending",
    object: `${first.metadata.namespace ?? ""}/${name}`,
    message: `${String(n)} pod(s) wait for a node, ${name} for ${seconds(o.now - created(first))}${why?.message ? `: ${why.message}` : ""}`,
  };
}

/** Placed pods running on capacity other than their assignment: the repair counts the assignment. */
function misplaced(o: BlockerInput): SpotBlockerDto | null {
  let wrong = 0;
  let unplaced = 0;
  for (const p of o.pods) {
    const node = o.nodesByName.get(p.spec.nodeName ?? "");
    if (!node) continue;
    const assigned = p.metadata.labels?.[ASSIGNMENT_LABEL];
    const runs = node.metadata.labels?.[CAPACITY_TYPE_LABEL];
    if (assigned === undefined) {
      if (!pinsCapacityType(p)) unplaced++;
    } else if (runs !== undefined && runs !== assigned) wrong++;
  }
  if (wrong > 0)
    return {
      kind: "misplaced",
      object: null,
      message: `${String(wrong)} pod(s) run on capacity other than Wave assigned (Prefer's fallback, or placed before the policy changed): the repair counts their assignment, so it evicts none; they move at the next rollout`,
    };
  if (unplaced > 0)
    return {
      kind: "misplaced",
      object: null,
      message: `${String(unplaced)} pod(s) were not placed by Wave (admitted without its webhook, or on nodes without ${CAPACITY_TYPE_LABEL}): the repair does not count them`,
    };
  return null;
}

/** Why the repair makes no progress on a workload off its target; null when nothing holds it. */
export function spotBlocker(o: BlockerInput): SpotBlockerDto | null {
  const closed = closedBudget(o);
  if (closed) return closed;
  const waiting = waitingForNodes(o);
  if (waiting) return waiting;
  const revisions = new Set(o.pods.filter((p) => p.metadata.labels?.[ASSIGNMENT_LABEL]).map(revisionOf));
  if (revisions.size > 1)
    return {
      kind: "rollout",
      object: null,
      message: `a rollout is in progress (${String(revisions.size)} revisions): each counts its own on-demand pods, the repair waits for it to end`,
    };
  const starting = o.pods.find((p) => !ready(p) && o.now - created(p) < DEFAULT_REPAIR_TIMING.startingMs);
  if (starting)
    return {
      kind: "starting",
      object: `${starting.metadata.namespace ?? ""}/${starting.metadata.name ?? ""}`,
      message: `pod ${starting.metadata.name ?? ""} is not Ready yet (${seconds(o.now - created(starting))} old): the next eviction waits for it`,
    };
  const wrong = misplaced(o);
  if (wrong) return wrong;
  const last = o.rows.at(-1);
  if (last?.action === "EvictBlocked")
    return { kind: "eviction-refused", object: last.pod, message: `eviction refused: ${last.message}` };
  if (o.now - o.dueAt > REPAIR_IDLE_MS)
    return {
      kind: "repair-idle",
      object: null,
      message: `no repair action for ${seconds(o.now - o.dueAt)} past its due time: is the webhook's repair running? (its leader holds the Lease ${REPAIR_LEASE} in Wave's namespace)`,
    };
  return null;
}
