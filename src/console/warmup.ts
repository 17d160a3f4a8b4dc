// The Warmup page (pure): per NodePool the policy, what the controller is doing now, why it is
// not warming, and over a time range its hits, misses, cost and the start time it saved —
// measured from this cluster's own pods, not estimated. Reads core's state (as the agent
// forwards it), the controller's stored events and the lifecycle history.
import { backoffCooldownMs, unusedStreak } from "../warmup/backoff.ts";
import type { WarmupBlocker, WarmupPoolDto, WarmupViewDto, WarmNodeDto } from "../dashboard/dto.ts";
import type { LifecycleEvent, StoredWarmupEvent } from "../core/store/store.ts";
import { NODE_POOL_LABEL, type CapacityType, type NodePool } from "../objects/karpenter.ts";
import type { Node, Pod } from "../objects/kube.ts";
import type { PriceProvider } from "../pricing/types.ts";
import { machinePrice, placesOf, priceLookup } from "../dashboard/figures/price.ts";
import { savedPerHit, type ColdStarts } from "../dashboard/figures/time-saved.ts";
import { detect, podsByNodeName } from "../warmup/fit/detect.ts";
import { admit, likelyOffering, newNodeEstimate, warmCost, type PriceOf } from "../warmup/fit/limits.ts";
import { poolOfPod } from "../karpenter/pool-of-pod.ts";
import { isActivePod, isDaemonSetPod } from "../karpenter/room.ts";
import {
  isPrepullPod,
  isWarmupPod,
  isWavePod,
  parseTime,
  CREATED_AT_ANNOTATION,
  DEADLINE_ANNOTATION,
  DO_NOT_DISRUPT_OWNER_ANNOTATION,
  DO_NOT_DISRUPT_OWNER_VALUE,
  LAST_WARMUP_AT_ANNOTATION,
  PREPULLED_ANNOTATION,
  PREPULL_IMAGE_ANNOTATION,
  WARMUP_POOL_LABEL,
} from "../objects/wave.ts";
import { imageHash } from "../warmup/manifests.ts";
import type { WarmupPolicy } from "../policy/warmup.ts";
import { workloadImages } from "../warmup/prepull.ts";

export interface WarmupViewInput {
  clusterId: string;
  state: {
    nodePools(): readonly NodePool[];
    nodes(): readonly Node[];
    pods(): readonly Pod[];
  };
  /** Stored policies by pool; pools without one run on `defaults`. */
  policies: ReadonlyMap<string, WarmupPolicy>;
  defaults: Readonly<WarmupPolicy>;
  /** The controller's events in [from, to). */
  events: readonly StoredWarmupEvent[];
  /** Lifecycle rows of [from − a day, to): when each warm node was launched. */
  lifecycle: readonly LifecycleEvent[];
  prices: PriceProvider;
  /** The cluster's measured cold starts now (dashboard/cold-starts.ts): what a hit saves. */
  coldStarts: ColdStarts;
  now: number;
  from: number;
  to: number;
}

const median = (xs: number[]): number | null => {
  if (xs.length === 0) return null;
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? (s[mid] ?? 0) : ((s[mid - 1] ?? 0) + (s[mid] ?? 0)) / 2;
};

const isWaveWarm = (o: { metadata: { annotations?: Record<string, string> } }): boolean =>
  o.metadata.annotations?.[DO_NOT_DISRUPT_OWNER_ANNOTATION] === DO_NOT_DISRUPT_OWNER_VALUE;

/** When a pod became Ready (its pending → Running), epoch ms; undefined when it has not. */
export function readyAt(p: Pod): number | undefined {
  const c = p.status?.conditions?.find((x) => x.type === "Ready" && x.status === "True");
  return parseTime(c?.lastTransitionTime);
}

/** The warmup price lookup over a cluster's state: new nodes priced where its nodes run. */
export function priceOfWith(prices: PriceProvider, nodes: () => readonly Node[] = () => []): PriceOf {
  return priceLookup(prices, () => placesOf(nodes()));
}

/**
 * Start latencies of the pool's pods (creation → Ready), split into cold starts (the pod is older
 * than its node: it waited for a launch) and warm hits (it landed on a node Wave held warm when
 * it arrived). Pods that found room on an older node are neither.
 */
export function startSamples(
  pods: readonly Pod[],
  nodesByName: ReadonlyMap<string, Node>,
  warmedNodes: ReadonlySet<string>,
): { cold: number[]; warm: number[] } {
  const cold: number[] = [];
  const warm: number[] = [];
  for (const p of pods) {
    if (isWavePod(p) || isDaemonSetPod(p)) continue;
    const created = parseTime(p.metadata.creationTimestamp);
    const ready = readyAt(p);
    const node = nodesByName.get(p.spec.nodeName ?? "");
    if (created === undefined || ready === undefined || node === undefined || ready < created) continue;
    const nodeCreated = parseTime(node.metadata.creationTimestamp);
    const seconds = (ready - created) / 1000;
    if (warmedNodes.has(node.metadata.name ?? "")) {
      if (nodeCreated !== undefined && nodeCreated <= created) warm.push(seconds);
    } else if (nodeCreated !== undefined && nodeCreated > created) cold.push(seconds);
  }
  return { cold, warm };
}

export function buildWarmupView(input: WarmupViewInput): WarmupViewDto {
  const { state, now, from, to } = input;
  const priceOf = priceOfWith(input.prices, () => state.nodes());
  const pools = [...state.nodePools()].sort((a, b) =>
    (a.metadata.name ?? "").localeCompare(b.metadata.name ?? ""),
  );
  const nodes = state.nodes();
  const pods = state.pods();
  const nodesByName = new Map(nodes.map((n) => [n.metadata.name ?? "", n]));
  const byNode = podsByNodeName(pods);
  const names = new Set([...pools.map((p) => p.metadata.name ?? ""), ...input.policies.keys()]);
  for (const e of input.events) names.add(e.pool);

  // Nodes Wave held warm at some point in the range: the hits' and misses' nodes, and today's.
  const warmedNodes = new Set<string>();
  for (const e of input.events) if (e.node !== undefined && e.type !== "prepull") warmedNodes.add(e.node);
  for (const n of nodes) if (isWaveWarm(n)) warmedNodes.add(n.metadata.name ?? "");

  const launchedAt = new Map<
    string,
    { at: number; instanceType?: string; capacityType?: string; zone?: string }
  >();
  for (const l of input.lifecycle) {
    if (l.nodeName === undefined || (l.phase !== "Launched" && l.phase !== "Registered")) continue;
    const cur = launchedAt.get(l.nodeName);
    if (cur === undefined || l.at < cur.at)
      launchedAt.set(l.nodeName, {
        at: l.at,
        ...(l.instanceType ? { instanceType: l.instanceType } : {}),
        ...(l.capacityType ? { capacityType: l.capacityType } : {}),
        ...(l.zone ? { zone: l.zone } : {}),
      });
  }

  const out: WarmupPoolDto[] = [];
  for (const name of [...names].sort()) {
    const poolObj = pools.find((p) => p.metadata.name === name);
    const stored = input.policies.get(name);
    const policy = stored ?? input.defaults;
    const poolNodes = nodes.filter((n) => n.metadata.labels?.[NODE_POOL_LABEL] === name);
    const warmupPods = pods.filter(
      (p) => isWarmupPod(p) && p.metadata.labels?.[WARMUP_POOL_LABEL] === name && isActivePod(p),
    );
    const pullPods = pods.filter((p) => isPrepullPod(p) && p.metadata.labels?.[WARMUP_POOL_LABEL] === name);
    const workload = poolObj
      ? pods.filter(
          (p) =>
            isActivePod(p) &&
            !isWavePod(p) &&
            !isDaemonSetPod(p) &&
            poolOfPod(p, pools, nodesByName) === name,
        )
      : [];
    const images = workloadImages(workload);
    const events = input.events.filter((e) => e.pool === name);

    // Warm nodes now: Wave's mark on the Node.
    const warmNodes: WarmNodeDto[] = poolNodes.filter(isWaveWarm).map((n) => {
      const nodeName = n.metadata.name ?? "";
      const created = parseTime(n.metadata.annotations?.[CREATED_AT_ANNOTATION]);
      const deadline = parseTime(n.metadata.annotations?.[DEADLINE_ANNOTATION]);
      const done = new Set(
        (n.metadata.annotations?.[PREPULLED_ANNOTATION] ?? "").split(",").filter((h) => h !== ""),
      );
      const failed = new Set(
        events
          .filter((e) => e.type === "prepull" && e.node === nodeName && e.reason === "failed")
          .map((e) => e.image ?? ""),
      );
      const pulling = new Set(
        pullPods
          .filter((p) => p.spec.nodeName === nodeName)
          .map((p) => p.metadata.annotations?.[PREPULL_IMAGE_ANNOTATION] ?? ""),
      );
      return {
        name: nodeName,
        ageSeconds: created === undefined ? null : Math.max(0, Math.round((now - created) / 1000)),
        ttlLeftSeconds: deadline === undefined ? null : Math.round((deadline - now) / 1000),
        costPerHour: priceOf(n, "on-demand") ?? null,
        waiting: warmupPods.some((p) => p.spec.nodeName === nodeName),
        images: images.map((image) => ({
          image,
          status: failed.has(image)
            ? ("failed" as const)
            : done.has(imageHash(image))
              ? ("pulled" as const)
              : pulling.has(image)
                ? ("pulling" as const)
                : ("pending" as const),
        })),
      };
    });

    const pendingWarmups = warmupPods.filter((p) => !p.spec.nodeName).length;
    const prePulling = warmNodes.some((w) => w.images.some((i) => i.status === "pulling"));
    const waitingWarm = warmNodes.filter((w) => w.waiting).length;
    const state: WarmupPoolDto["state"] =
      pendingWarmups > 0 || prePulling
        ? "warming"
        : waitingWarm > 0
          ? "warm"
          : warmNodes.length > 0
            ? "protected"
            : "idle";

    // Why not (another) warmup now: the controller's own detection and admission, replayed.
    let blocker: WarmupBlocker | null = null;
    let blockerDetail: string | null = null;
    const offering = poolObj ? likelyOffering(poolObj, poolNodes) : undefined;
    const newNodeCostPerHour =
      offering?.instanceType === undefined
        ? null
        : (priceOf(offering.instanceType, offering.capacityType, offering.places) ?? null);
    if (!poolObj) {
      blocker = "pool-missing";
      blockerDetail = "no NodePool with this name in the cluster";
    } else if (!policy.enabled) {
      blocker = "disabled";
      blockerDetail = stored
        ? "warmup is disabled in this pool's policy"
        : "no warmup policy for this pool (off by default)";
    } else {
      const live = warmupPods;
      const detection = detect(
        { pool: poolObj, nodes: poolNodes, podsByNode: byNode, workload },
        live.length,
        policy.maxWarmNodes,
      );
      if (!detection.warmup) {
        blocker = detection.reason === "no-workload" ? "no-workload" : "fits-existing-node";
        blockerDetail =
          detection.reason === "no-workload"
            ? "no running or pending pod is tied to this pool"
            : `its largest pod (${detection.largest.pod.metadata.namespace ?? ""}/${detection.largest.pod.metadata.name ?? ""}) fits on ${detection.nodes.length} existing node(s)${live.length > 0 ? ` and ${live.length} warmup(s)` : ""}`;
      } else {
        const lastWarmupAt = Math.max(
          parseTime(poolObj.metadata.annotations?.[LAST_WARMUP_AT_ANNOTATION]) ?? -Infinity,
          ...live.map((p) => parseTime(p.metadata.annotations?.[CREATED_AT_ANNOTATION]) ?? -Infinity),
        );
        const admission = admit({
          policy,
          now,
          pool: poolObj,
          warmups: live.length,
          pendingWarmups,
          lastWarmupAt: Number.isFinite(lastWarmupAt) ? lastWarmupAt : undefined,
          estimate: newNodeEstimate(poolNodes, detection.largest.requests),
          warmCostPerHour: warmCost(poolNodes.filter(isWaveWarm), priceOf),
          newNodeCostPerHour: newNodeCostPerHour ?? undefined,
        });
        if (!admission.ok) {
          blocker = admission.reason;
          blockerDetail = admission.detail;
        }
      }
    }

    const count = (type: StoredWarmupEvent["type"]): number => events.filter((e) => e.type === type).length;
    const missesByReason: Record<string, number> = {};
    for (const e of events)
      if (e.type === "miss")
        missesByReason[e.reason ?? "unknown"] = (missesByReason[e.reason ?? "unknown"] ?? 0) + 1;

    // Measured pod start times (shown for reference); time saved is the one definition.
    const poolPods = pods.filter((p) => {
      const n = nodesByName.get(p.spec.nodeName ?? "");
      return n?.metadata.labels?.[NODE_POOL_LABEL] === name;
    });
    const inRange = poolPods.filter((p) => {
      const r = readyAt(p);
      return r !== undefined && r >= from && r < to;
    });
    const samples = startSamples(inRange, nodesByName, warmedNodes);
    const cold = median(samples.cold);

    // Warm capacity's cost over the range: each warm node from its launch to its release.
    let warmCostUsd = 0;
    const spans = new Map<string, { start: number; end: number }>();
    for (const e of events) {
      if ((e.type !== "hit" && e.type !== "miss") || e.node === undefined) continue;
      const start = launchedAt.get(e.node)?.at;
      if (start !== undefined) spans.set(e.node, { start, end: e.at });
    }
    for (const n of poolNodes.filter(isWaveWarm)) {
      const nodeName = n.metadata.name ?? "";
      const start = launchedAt.get(nodeName)?.at ?? parseTime(n.metadata.creationTimestamp);
      if (start !== undefined) spans.set(nodeName, { start, end: now });
    }
    for (const [nodeName, span] of spans) {
      const a = Math.max(span.start, from);
      const b = Math.min(span.end, to);
      if (b <= a) continue;
      const live = nodesByName.get(nodeName);
      const l = launchedAt.get(nodeName);
      const price = live
        ? priceOf(live, "on-demand")
        : machinePrice(input.prices, {
            instanceType: l?.instanceType,
            capacityType: l?.capacityType as CapacityType | undefined,
            zone: l?.zone,
          })?.usdPerHour;
      warmCostUsd += ((price ?? 0) * (b - a)) / 3_600_000;
    }

    out.push({
      nodePool: name,
      policy: { ...policy },
      configured: stored !== undefined,
      state,
      blocker,
      blockerDetail,
      warmupPods: warmupPods.map((p) => ({
        name: p.metadata.name ?? "",
        node: p.spec.nodeName ?? null,
        createdAt: parseTime(p.metadata.creationTimestamp) ?? null,
      })),
      warmNodes,
      created: count("created"),
      hits: count("hit"),
      misses: count("miss"),
      missesByReason,
      imagesPulled: events.filter((e) => e.type === "prepull" && e.reason === "pulled").length,
      pullFailures: events.filter((e) => e.type === "prepull" && e.reason === "failed").length,
      coldStartSeconds: cold,
      coldStartSamples: samples.cold.length,
      warmStartSeconds: median(samples.warm),
      warmStartSamples: samples.warm.length,
      timeSavedSeconds: count("hit") * savedPerHit(input.coldStarts, name),
      savedPerHitSeconds: savedPerHit(input.coldStarts, name),
      savedPerHitSamples: input.coldStarts.pools.get(name)?.samples ?? 0,
      warmCostUsd,
      warmCostPerHourNow: warmCost(poolNodes.filter(isWaveWarm), priceOf) ?? 0,
      newNodeCostPerHour,
      newNodeInstanceType: offering?.instanceType ?? null,
      unusedStreak: unusedStreak(poolObj),
      cooldownSecondsNow: Math.round(backoffCooldownMs(policy, unusedStreak(poolObj)) / 1000),
    });
  }
  return { clusterId: input.clusterId, at: now, from, to, pools: out };
}
