// The pending pods view (GET …/pending, the Overview's Pending section, /metrics): each pending pod
// with Karpenter's reasons per NodePool — the pool named even where Karpenter v1.15 leaves it out,
// the requirement that rules out every instance type named, and per reason a fix and its cost.
import type { PendingPodDto, PendingViewDto } from "../dto.ts";
import type { Event, Pod } from "../../objects/kube.ts";
import type { NodePool } from "../../objects/karpenter.ts";
import { nodePoolRequirements, wouldExceedLimits } from "../../karpenter/requirements.ts";
import { poolRejectsKey } from "../../karpenter/pool-of-pod.ts";
import { parseResources, podRequests, type Resources } from "../../karpenter/resources.ts";
import { eventTime, parsePodEvent, type PendingReason } from "../../karpenter/events/parse.ts";
import { eventsByObject } from "./explain.ts";
import type { Catalog } from "./plan.ts";
import { pendingFix, resourcesCause } from "./pending-fixes.ts";

/** A readable line per reason kind. */
export function pendingText(r: PendingReason): string {
  const pool = r.nodePool ? `NodePool ${r.nodePool}` : "a NodePool Karpenter did not name";
  switch (r.kind) {
    case "requirement":
      return `${pool}: its requirements conflict with the pod's${r.key ? ` on ${r.key}` : ""}`;
    case "taint":
      return `${pool}: the pod does not tolerate its taint${r.key ? ` ${r.key}` : ""}`;
    case "limit":
      return `${pool}: at its limits (every instance type would exceed spec.limits)`;
    case "resources":
      return `${pool}: no instance type has enough resources for the pod (with the DaemonSets)`;
    case "no-nodepool":
      return "no NodePool exists or is ready";
    case "other":
      return `${pool}: ${r.detail}`;
  }
}

export interface PendingInput {
  pods: readonly Pod[];
  events: readonly Event[];
  now: number;
  /** The cluster's NodePools: name the pool of a part Karpenter did not name (v1.15), spot limits. */
  pools?: readonly NodePool[];
  /** The machines the cluster runs, priced (plan.ts catalogOf): what a fix's node would cost. */
  catalog?: readonly Catalog[];
  /** Each pool's NodeClaims' capacity summed: its usage against spec.limits when its status has none. */
  poolUsage?: ReadonlyMap<string, Resources>;
}

const taintText = (t: { key: string; value?: string; effect: string }): string[] =>
  t.value ? [`${t.key}=${t.value}:${t.effect}`] : [`${t.key}:${t.effect}`, `${t.key}=:${t.effect}`];

/** The pools a part Karpenter left unnamed may be about, among those not named yet. */
function candidatesFor(r: PendingReason, left: readonly NodePool[], pod: Pod): NodePool[] {
  const key = r.key ?? "";
  if (r.kind === "taint")
    return left.filter((p) => (p.spec.template.spec.taints ?? []).some((t) => taintText(t).includes(key)));
  if (r.kind !== "requirement" || !key) return [];
  if (/does not have known values/.test(r.detail))
    return left.filter((p) => !nodePoolRequirements(p).some((q) => q.key === key));
  // "incompatible requirements, key K, K In [pod's] not in K In [pool's]": the pools whose K fails the pod.
  const have = /not in \S+ In \[([^\]]*)\]/.exec(r.detail)?.[1]?.split(" ").filter(Boolean);
  return left.filter((p) => {
    if (!poolRejectsKey(pod, p, key)) return false;
    if (!have) return true;
    const own = nodePoolRequirements(p).find((q) => q.key === key && q.operator === "In")?.values ?? [];
    const label = p.spec.template.metadata?.labels?.[key];
    const values = label !== undefined ? [label] : own;
    return values.length === have.length && have.every((v) => values.includes(v));
  });
}

/**
 * Names the NodePool of each part Karpenter left unnamed (its v1.15 messages give one part per
 * pool without the name): a taint part belongs to the pool with that taint; a requirement part on
 * key K to the pool whose K the pod's constraint fails (for "K In [a] not in K In [b]", the pool
 * whose K is b), "label K does not have known values" to the pool that offers no K; pools named by
 * other parts are taken out first, repeated while that settles more, and n identical parts are
 * matched to n such pools in order (their text being the same). A resources part of a pool whose
 * spec.limits the pod would exceed reads as "limit" (Karpenter drops the instance types beyond the
 * limits, then finds none); one whose instance types a requirement rules out names it.
 */
export function attributePools(
  reasons: readonly PendingReason[],
  pools: readonly NodePool[],
  pod: Pod,
): PendingReason[] {
  const out = reasons.map((r) => ({ ...r }));
  const taken = new Set(out.flatMap((r) => (r.nodePool ? [r.nodePool] : [])));
  for (let progress = true; progress;) {
    progress = false;
    for (const r of out) {
      if (r.nodePool || !r.key) continue;
      const candidates = candidatesFor(
        r,
        pools.filter((p) => !taken.has(p.metadata.name ?? "")),
        pod,
      );
      // Parts with the very same text are interchangeable: as many pools as such parts settle them.
      const same = out.filter((o) => !o.nodePool && o.kind === r.kind && o.detail === r.detail);
      if (candidates.length === 0 || candidates.length !== same.length) continue;
      same.forEach((o, i) => {
        const name = candidates[i]?.metadata.name;
        if (!name) return;
        o.nodePool = name;
        taken.add(name);
      });
      progress = true;
    }
  }
  const req = podRequests(pod);
  for (const r of out) {
    if (r.kind !== "resources" || !r.nodePool) continue;
    const pool = pools.find((p) => p.metadata.name === r.nodePool);
    if (pool?.spec.limits && wouldExceedLimits(pool.spec.limits, parseResources(pool.status?.resources), req))
      r.kind = "limit";
    else {
      const cause = resourcesCause(r.detail, pod, pool);
      if (cause) Object.assign(r, { kind: "requirement", key: cause.key });
    }
  }
  return out;
}

function podItem(p: Pod, input: PendingInput, byObject: Map<string, Event[]>): PendingPodDto {
  const ns = p.metadata.namespace ?? "";
  const name = p.metadata.name ?? "";
  const evs = byObject.get(`Pod/${ns}/${name}`) ?? [];
  const failed = evs.find((e) => e.reason === "FailedScheduling");
  const nominated = evs.find((e) => e.reason === "Nominated");
  const parsed = failed ? parsePodEvent(failed).reasons : [];
  const pools = input.pools ?? [];
  const reasons = input.pools ? attributePools(parsed, pools, p) : parsed;
  // A nomination after the last failure: a node is on its way.
  const nominatedTo =
    nominated && (!failed || eventTime(nominated) >= eventTime(failed))
      ? (parsePodEvent(nominated).nominatedTo ?? null)
      : null;
  const since = Date.parse(p.metadata.creationTimestamp ?? "") || input.now;
  const last = evs[0];
  return {
    namespace: ns,
    name,
    since,
    waitingSeconds: Math.max(0, (input.now - since) / 1000),
    // Cheapest fix first: the node that would take the pod for the least.
    reasons: reasons
      .map((r) => {
        const pool = pools.find((x) => x.metadata.name === r.nodePool);
        const used = r.nodePool ? input.poolUsage?.get(r.nodePool) : undefined;
        const f = pendingFix(r, p, pool, input.catalog ?? [], used);
        return { ...r, text: f.text ?? pendingText(r), fix: f.fix, costPerHour: f.costPerHour };
      })
      .sort((a, b) => (a.costPerHour ?? Infinity) - (b.costPerHour ?? Infinity)),
    nominatedTo,
    lastEvent: last ? { at: eventTime(last), reason: last.reason ?? "", message: last.message ?? "" } : null,
  };
}

export function pendingView(clusterId: string, input: PendingInput): PendingViewDto {
  const byObject = eventsByObject(input.events);
  const pods = input.pods.map((p) => podItem(p, input, byObject));
  const counts = new Map<string, PendingViewDto["byPoolReason"][number]>();
  for (const p of pods)
    for (const r of new Map(p.reasons.map((r) => [`${r.nodePool ?? ""}\u0000${r.kind}`, r])).values()) {
      const k = `${r.nodePool ?? ""}\u0000${r.kind}`;
      const c = counts.get(k) ?? { nodePool: r.nodePool, kind: r.kind, pods: 0 };
      c.pods++;
      counts.set(k, c);
    }
  pods.sort(
    (a, b) => a.since - b.since || `${a.namespace}/${a.name}`.localeCompare(`${b.namespace}/${b.name}`),
  );
  return {
    clusterId,
    at: input.now,
    pods,
    byPoolReason: [...counts.values()].sort(
      (a, b) => b.pods - a.pods || (a.nodePool ?? "").localeCompare(b.nodePool ?? ""),
    ),
  };
}
