// The node drawer (pure): one node or NodeClaim with its lifecycle timeline (durations between
// steps), pods, price and its source, labels, taints and who set do-not-disrupt.
import type { LifecycleEventDto, NodeDetailDto, NodeDto } from "../dashboard/dto.ts";
import type { LifecycleEvent } from "../core/store/store.ts";
import { CPU, MEMORY, podRequests } from "../karpenter/resources.ts";
import { DO_NOT_DISRUPT_ANNOTATION, type NodeClaim } from "../objects/karpenter.ts";
import { machinePrice } from "../dashboard/figures/price.ts";
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

  // Priced as the overview prices the machine (the NodeClaim joined to its Node).
  const q = node || nodeClaim ? machinePrice(input.prices, machineOf(nodeClaim, node)) : undefined;
  const dnd = annotations[DO_NOT_DISRUPT_ANNOTATION] === "true";
  const byWave = annotations[DO_NOT_DISRUPT_OWNER_ANNOTATION] === DO_NOT_DISRUPT_OWNER_VALUE;

  return {
    node: input.row ?? null,
    nodeClaim: nodeClaim?.metadata.name ?? input.row?.nodeClaim ?? null,
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
    price: { usdPerHour: q?.usdPerHour ?? null, source: q?.source ?? "unknown", asOf: q?.asOf ?? null },
    labels,
    taints: (node?.spec?.taints ?? nodeClaim?.spec.taints ?? []).map((t) => ({
      key: t.key,
      value: t.value ?? null,
      effect: t.effect,
    })),
    doNotDisruptBy: !dnd ? null : byWave ? "wave-warmup" : "user",
    annotations,
  };
}
