// The node drawer (pure): one node or NodeClaim with its lifecycle timeline (durations between
// steps), pods, price and its source, labels, taints and who set do-not-disrupt.
import type { LifecycleEventDto, NodeDetailDto, NodeDisruptionDto, NodeDto } from "../dashboard/dto.ts";
import type { LifecycleEvent } from "../core/store/store.ts";
import { CPU, MEMORY, podRequests } from "../karpenter/resources.ts";
import {
  CAPACITY_TYPE_LABEL,
  DO_NOT_DISRUPT_ANNOTATION,
  INSTANCE_TYPE_LABEL,
  NODE_POOL_LABEL,
  TOPOLOGY_ZONE_LABEL,
  type NodeClaim,
} from "../objects/karpenter.ts";
import { isCapacityType } from "../karpenter/labels.ts";
import { machinePrice, priceSourceOf, type Priced } from "../dashboard/figures/price.ts";
import { machineOf } from "../dashboard/machines.ts";
import type { Node, Pod } from "../objects/kube.ts";
import type { PriceProvider } from "../pricing/types.ts";
import {
  ASSIGNMENT_LABEL,
  DO_NOT_DISRUPT_OWNER_ANNOTATION,
  DO_NOT_DISRUPT_OWNER_VALUE,
  isPrepullPod,
  isWarmupPod,
} from "../objects/wave.ts";

const ORDER: LifecycleEventDto["phase"][] = [
  "Launched",
  "Registered",
  "Initialized",
  "Disrupted",
  "Terminated",
];

export interface NodeDetailInput {
  row: NodeDto | undefined;
  node: Node | undefined;
  nodeClaim: NodeClaim | undefined;
  pods: readonly Pod[];
  /** Lifecycle rows of this NodeClaim (any order). */
  lifecycle: readonly LifecycleEvent[];
  prices: PriceProvider;
  /** Can Karpenter disrupt it (src/dashboard/consolidation): null when gone or no Karpenter node. */
  disruption?: NodeDisruptionDto | null;
}

/** What the stored lifecycle of a NodeClaim that is gone says of its machine. */
function pastMachine(
  rows: readonly LifecycleEvent[],
): (Priced & { nodeClaim: string; nodePool: string }) | undefined {
  const first = rows[0];
  if (!first) return undefined;
  const pick = (f: "instanceType" | "capacityType" | "zone" | "nodeName"): string | undefined =>
    rows.find((r) => r[f] !== undefined)?.[f];
  const ct = pick("capacityType");
  return {
    nodeClaim: first.nodeClaim,
    nodePool: first.nodePool,
    instanceType: pick("instanceType"),
    capacityType: isCapacityType(ct) ? ct : undefined,
    zone: pick("zone"),
  };
}

/** The well-known labels the NodeClaim carried, as far as its lifecycle rows recorded them. */
function pastLabels(m: { nodePool: string } & Priced): Record<string, string> {
  const out: Record<string, string> = { [NODE_POOL_LABEL]: m.nodePool };
  if (m.instanceType) out[INSTANCE_TYPE_LABEL] = m.instanceType;
  if (m.capacityType) out[CAPACITY_TYPE_LABEL] = m.capacityType;
  if (m.zone) out[TOPOLOGY_ZONE_LABEL] = m.zone;
  return out;
}

export function buildNodeDetail(input: NodeDetailInput): NodeDetailDto {
  const { node, nodeClaim } = input;
  const meta = node?.metadata ?? nodeClaim?.metadata ?? {};
  const labels = { ...(nodeClaim?.metadata.labels ?? {}), ...(node?.metadata.labels ?? {}) };
  const annotations = { ...(nodeClaim?.metadata.annotations ?? {}), ...(meta.annotations ?? {}) };

  // First time of each phase, in lifecycle order, with the time since the step before.
  const first = new Map<LifecycleEventDto["phase"], LifecycleEvent>();
  for (const e of input.lifecycle) {
    const cur = first.get(e.phase);
    if (!cur || e.at < cur.at) first.set(e.phase, e);
  }
  const timeline: NodeDetailDto["timeline"] = [];
  let prev: number | undefined;
  for (const phase of ORDER) {
    const e = first.get(phase);
    if (!e) continue;
    timeline.push({
      phase,
      at: e.at,
      sincePreviousSeconds: prev === undefined ? null : Math.max(0, (e.at - prev) / 1000),
      reason: e.reason ?? null,
    });
    prev = e.at;
  }

  // Priced as the overview prices the machine (the NodeClaim joined to its Node); a NodeClaim that
  // is gone, as its stored lifecycle describes it.
  const gone = !node && !nodeClaim;
  const past = gone ? pastMachine(input.lifecycle) : undefined;
  const q = gone
    ? past && machinePrice(input.prices, past)
    : machinePrice(input.prices, machineOf(nodeClaim, node));
  if (past) Object.assign(labels, pastLabels(past));
  const dnd = annotations[DO_NOT_DISRUPT_ANNOTATION] === "true";
  const byWave = annotations[DO_NOT_DISRUPT_OWNER_ANNOTATION] === DO_NOT_DISRUPT_OWNER_VALUE;

  return {
    node: input.row ?? null,
    nodeClaim: nodeClaim?.metadata.name ?? input.row?.nodeClaim ?? past?.nodeClaim ?? null,
    gone,
    timeline,
    pods: input.pods.map((p) => {
      const r = podRequests(p);
      return {
        namespace: p.metadata.namespace ?? "",
        name: p.metadata.name ?? "",
        phase: p.status?.phase ?? null,
        cpu: (r[CPU] ?? 0) / 1000,
        memoryBytes: r[MEMORY] ?? 0,
        wave: isWarmupPod(p)
          ? "warmup"
          : isPrepullPod(p)
            ? "pre-pull"
            : (p.metadata.labels?.[ASSIGNMENT_LABEL] ?? null),
      };
    }),
    price: {
      usdPerHour: q?.usdPerHour ?? null,
      source: q?.source ?? "unknown",
      asOf: q?.asOf ?? null,
      pricedBy: priceSourceOf(q),
      listUsdPerHour: q?.overlay?.listUsdPerHour ?? null,
    },
    labels,
    taints: (node?.spec?.taints ?? nodeClaim?.spec.taints ?? []).map((t) => ({
      key: t.key,
      value: t.value ?? null,
      effect: t.effect,
    })),
    doNotDisruptBy: !dnd ? null : byWave ? "wave-warmup" : "user",
    annotations,
    disruption: input.disruption ?? null,
  };
}
