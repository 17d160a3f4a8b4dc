// The Warmup page (pure): per NodePool the policy, what the controller is doing now, why it is
// not warming, and over a time range its hits, misses, cost and the start time it saved —
// measured from this cluster's own pods, not estimated. Reads core's state (as the agent
// forwards it), the controller's stored events and the lifecycle history.
import { backoffCooldownMs, unusedStreak } from "../warmup/backoff.ts";
import type { WarmupBlocker, WarmupPoolDto, WarmupViewDto, WarmNodeDto } from "../dashboard/dto.ts";
import type { LifecycleEvent, StoredWarmupEvent } from "../core/store/store.ts";
import { NODE_POOL_LABEL, type NodeOverlay, type NodePool } from "../objects/karpenter.ts";
import type { Node, Pod } from "../objects/kube.ts";
import type { PriceProvider } from "../pricing/types.ts";
import { clusterPrices, placesOf, priceLookup } from "../dashboard/figures/price.ts";
import { isWaveWarm, launches, warmCostByPool } from "./warm-cost.ts";
import { medianOf, timeSavedOf, type ColdStartSample } from "../warmup/time-saved.ts";
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
  LAST_WARMUP_AT_ANNOTATION,
  PREPULLED_ANNOTATION,
  PREPULL_IMAGE_ANNOTATION,
  WARMUP_POOL_LABEL,
} from "../objects/wave.ts";
import { imageHash } from "../warmup/manifests.ts";
import type { WarmupPolicy } from "../policy/warmup.ts";
import { workloadImages } from "../warmup/prepull.ts";
import { staticRefusal } from "../warmup/static-pool.ts";

export interface WarmupViewInput {
  clusterId: string;
  state: {
    nodePools(): readonly NodePool[];
    nodes(): readonly Node[];
    pods(): readonly Pod[];
    /** Karpenter's NodeOverlays in its order: nodes priced as Karpenter sees them. */
    nodeOverlays?(): readonly NodeOverlay[];
  };
  /** Stored policies by pool; pools without one run on `defaults`. */
  policies: ReadonlyMap<string, WarmupPolicy>;
  defaults: Readonly<WarmupPolicy>;
  /** The controller's events in [from, to). */
  events: readonly StoredWarmupEvent[];
  /** Lifecycle rows of [from − a day, to): when each warm node was launched. */
  lifecycle: readonly LifecycleEvent[];
  prices: PriceProvider;
  /** Core's cold starts in [from, to) (pods that waited for a new node): the page's cold median. */
  coldStarts: readonly ColdStartSample[];
  now: number;
  from: number;
  to: number;
}

/** The warmup price lookup over a cluster's state: new nodes priced where its nodes run. */
export function priceOfWith(prices: PriceProvider, nodes: () => readonly Node[] = () => []): PriceOf {
  return priceLookup(prices, () => placesOf(nodes()));
}

/** What every pool's row reads, built once per page. */
interface PageContext {
  input: WarmupViewInput;
  priceOf: PriceOf;
  pools: readonly NodePool[];
  nodes: readonly Node[];
  pods: readonly Pod[];
  nodesByName: ReadonlyMap<string, Node>;
  byNode: ReturnType<typeof podsByNodeName>;
  /** Nodes Wave held warm at some point in the range: the hits' and misses' nodes, and today's. */
  warmedNodes: ReadonlySet<string>;
  /** Warm cost over the range per pool (warm-cost.ts). */
  warmCost: ReadonlyMap<string, number>;
}

/** One pool's objects in the state. */
interface PoolObjects {
  name: string;
  poolObj: NodePool | undefined;
  poolNodes: Node[];
  warmupPods: Pod[];
  workload: Pod[];
  /** The images of the pool's workload (what a warm node pre-pulls). */
  images: string[];
  events: StoredWarmupEvent[];
}

function poolObjects(name: string, ctx: PageContext): PoolObjects {
  const { pools, pods } = ctx;
  const poolObj = pools.find((p) => p.metadata.name === name);
  const workload = poolObj
    ? pods.filter(
        (p) =>
          isActivePod(p) &&
          !isWavePod(p) &&
          !isDaemonSetPod(p) &&
          poolOfPod(p, pools, ctx.nodesByName) === name,
      )
    : [];
  return {
    name,
    poolObj,
    poolNodes: ctx.nodes.filter((n) => n.metadata.labels?.[NODE_POOL_LABEL] === name),
    warmupPods: pods.filter(
      (p) => isWarmupPod(p) && p.metadata.labels?.[WARMUP_POOL_LABEL] === name && isActivePod(p),
    ),
    workload,
    images: workloadImages(workload),
    events: ctx.input.events.filter((e) => e.pool === name),
  };
}

/** Warm nodes now (Wave's mark on the Node): age, time left, cost, and each image's pre-pull. */
function warmNodesOf(o: PoolObjects, ctx: PageContext): WarmNodeDto[] {
  const { now } = ctx.input;
  const pullPods = ctx.pods.filter(
    (p) => isPrepullPod(p) && p.metadata.labels?.[WARMUP_POOL_LABEL] === o.name,
  );
  return o.poolNodes.filter(isWaveWarm).map((n) => {
    const nodeName = n.metadata.name ?? "";
    const created = parseTime(n.metadata.annotations?.[CREATED_AT_ANNOTATION]);
    const deadline = parseTime(n.metadata.annotations?.[DEADLINE_ANNOTATION]);
    const done = new Set(
      (n.metadata.annotations?.[PREPULLED_ANNOTATION] ?? "").split(",").filter((h) => h !== ""),
    );
    const failed = new Set(
      o.events
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
      costPerHour: ctx.priceOf(n, "on-demand") ?? null,
      waiting: o.warmupPods.some((p) => p.spec.nodeName === nodeName),
      images: o.images.map((image) => ({
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
}

/** Why not (another) warmup now: the controller's own detection and admission, replayed. */
function warmupBlocker(
  o: PoolObjects,
  ctx: PageContext,
  policy: WarmupPolicy,
  stored: boolean,
  newNodeCostPerHour: number | null,
): { blocker: WarmupBlocker | null; blockerDetail: string | null } {
  const { poolObj, warmupPods: live } = o;
  if (!poolObj)
    return { blocker: "pool-missing", blockerDetail: "no NodePool with this name in the cluster" };
  if (!policy.enabled)
    return {
      blocker: "disabled",
      blockerDetail: stored
        ? "warmup is disabled in this pool's policy"
        : "no warmup policy for this pool (off by default)",
    };
  const refusal = staticRefusal(poolObj);
  if (refusal) return { blocker: refusal.reason, blockerDetail: refusal.detail };
  const detection = detect(
    { pool: poolObj, nodes: o.poolNodes, podsByNode: ctx.byNode, workload: o.workload },
    live.length,
    policy.maxWarmNodes,
  );
  if (!detection.warmup) {
    if (detection.reason === "no-workload")
      return { blocker: "no-workload", blockerDetail: "no running or pending pod is tied to this pool" };
    const largest = `${detection.largest.pod.metadata.namespace ?? ""}/${detection.largest.pod.metadata.name ?? ""}`;
    // Its slots are Wave's own warm ones only: the pool is held warm, not served by a node it has.
    if (detection.nodes.length === 0)
      return {
        blocker: "max-warm-nodes",
        blockerDetail: `Wave holds ${live.length} of ${policy.maxWarmNodes} warm slot(s) for its largest pod (${largest})`,
      };
    return {
      blocker: "fits-existing-node",
      blockerDetail: `its largest pod (${largest}) fits on ${detection.nodes.length} existing node(s)${live.length > 0 ? `, and Wave holds ${live.length} warm slot(s)` : ""}`,
    };
  }
  const lastWarmupAt = Math.max(
    parseTime(poolObj.metadata.annotations?.[LAST_WARMUP_AT_ANNOTATION]) ?? -Infinity,
    ...live.map((p) => parseTime(p.metadata.annotations?.[CREATED_AT_ANNOTATION]) ?? -Infinity),
  );
  const admission = admit({
    policy,
    now: ctx.input.now,
    pool: poolObj,
    warmups: live.length,
    pendingWarmups: live.filter((p) => !p.spec.nodeName).length,
    lastWarmupAt: Number.isFinite(lastWarmupAt) ? lastWarmupAt : undefined,
    estimate: newNodeEstimate(o.poolNodes, detection.largest.requests),
    warmCostPerHour: warmCost(o.poolNodes.filter(isWaveWarm), ctx.priceOf),
    newNodeCostPerHour: newNodeCostPerHour ?? undefined,
  });
  return admission.ok
    ? { blocker: null, blockerDetail: null }
    : { blocker: admission.reason, blockerDetail: admission.detail };
}

/** How many of the range's hits the page lists one by one (the counts cover them all). */
const RECENT_HITS = 20;

/** Start times over the range: cold (core's cold starts) and warm (the hits' measured starts). */
function startTimes(o: PoolObjects, ctx: PageContext) {
  const hits = o.events.filter((e) => e.type === "hit");
  const warm = medianOf(hits.flatMap((h) => (h.seconds === undefined ? [] : [h.seconds])));
  const cold = medianOf(ctx.input.coldStarts.filter((c) => c.pool === o.name).map((c) => c.seconds));
  return {
    coldStartSeconds: cold?.seconds ?? null,
    coldStartSamples: cold?.samples ?? 0,
    warmStartSeconds: warm?.seconds ?? null,
    warmStartSamples: warm?.samples ?? 0,
    warmNotFaster: cold !== null && warm !== null && warm.seconds >= cold.seconds,
    timeSavedSeconds: timeSavedOf(hits),
    hitsCredited: hits.filter((h) => (h.saved ?? 0) > 0).length,
    recentHits: [...hits]
      .sort((a, b) => b.at - a.at)
      .slice(0, RECENT_HITS)
      .map((h) => ({
        at: h.at,
        node: h.node ?? "",
        pod: h.pod ?? null,
        since: h.since ?? null,
        seconds: h.seconds ?? null,
        saved: h.saved ?? null,
      })),
  };
}

function poolRow(name: string, ctx: PageContext): WarmupPoolDto {
  const { input } = ctx;
  const o = poolObjects(name, ctx);
  const stored = input.policies.get(name);
  const policy = stored ?? input.defaults;
  const warmNodes = warmNodesOf(o, ctx);
  const pendingWarmups = o.warmupPods.filter((p) => !p.spec.nodeName).length;
  const prePulling = warmNodes.some((w) => w.images.some((i) => i.status === "pulling"));
  const state: WarmupPoolDto["state"] =
    pendingWarmups > 0 || prePulling
      ? "warming"
      : warmNodes.some((w) => w.waiting)
        ? "warm"
        : warmNodes.length > 0
          ? "protected"
          : "idle";
  const offering = o.poolObj ? likelyOffering(o.poolObj, o.poolNodes) : undefined;
  // One state, one reason: while a warm node is being launched, that is why no other starts.
  const reason = (cost: number | null): ReturnType<typeof warmupBlocker> =>
    pendingWarmups > 0
      ? {
          blocker: "in-flight",
          blockerDetail: `Karpenter is launching a warm node for ${o.warmupPods.find((p) => !p.spec.nodeName)?.metadata.name ?? "a warmup pod"}`,
        }
      : warmupBlocker(o, ctx, policy, stored !== undefined, cost);
  const newNodeCostPerHour =
    offering?.instanceType === undefined
      ? null
      : (ctx.priceOf(offering.instanceType, offering.capacityType, offering.places, offering.labels) ?? null);
  const count = (type: StoredWarmupEvent["type"]): number => o.events.filter((e) => e.type === type).length;
  const missesByReason: Record<string, number> = {};
  for (const e of o.events)
    if (e.type === "miss")
      missesByReason[e.reason ?? "unknown"] = (missesByReason[e.reason ?? "unknown"] ?? 0) + 1;
  return {
    nodePool: name,
    policy: { ...policy },
    configured: stored !== undefined,
    state,
    ...reason(newNodeCostPerHour),
    warmupPods: o.warmupPods.map((p) => ({
      name: p.metadata.name ?? "",
      node: p.spec.nodeName ?? null,
      createdAt: parseTime(p.metadata.creationTimestamp) ?? null,
    })),
    warmNodes,
    created: count("created"),
    hits: count("hit"),
    misses: count("miss"),
    missesByReason,
    imagesPulled: o.events.filter((e) => e.type === "prepull" && e.reason === "pulled").length,
    pullFailures: o.events.filter((e) => e.type === "prepull" && e.reason === "failed").length,
    ...startTimes(o, ctx),
    warmCostUsd: ctx.warmCost.get(name) ?? 0,
    warmCostPerHourNow: warmCost(o.poolNodes.filter(isWaveWarm), ctx.priceOf) ?? 0,
    newNodeCostPerHour,
    newNodeInstanceType: offering?.instanceType ?? null,
    unusedStreak: unusedStreak(o.poolObj),
    cooldownSecondsNow: Math.round(backoffCooldownMs(policy, unusedStreak(o.poolObj)) / 1000),
  };
}

export function buildWarmupView(input: WarmupViewInput): WarmupViewDto {
  const { state, now, from, to } = input;
  const pools = [...state.nodePools()].sort((a, b) =>
    (a.metadata.name ?? "").localeCompare(b.metadata.name ?? ""),
  );
  const nodes = state.nodes();
  const pods = state.pods();
  const warmedNodes = new Set<string>();
  for (const e of input.events) if (e.node !== undefined && e.type !== "prepull") warmedNodes.add(e.node);
  for (const n of nodes) if (isWaveWarm(n)) warmedNodes.add(n.metadata.name ?? "");
  const priceOf = priceOfWith(clusterPrices(input.prices, state.nodeOverlays?.() ?? []), () => state.nodes());
  const ctx: PageContext = {
    input,
    priceOf,
    pools,
    nodes,
    pods,
    nodesByName: new Map(nodes.map((n) => [n.metadata.name ?? "", n])),
    byNode: podsByNodeName(pods),
    warmedNodes,
    warmCost: warmCostByPool({
      events: input.events,
      launchedAt: launches(input.lifecycle),
      nodes,
      priceOf,
      prices: input.prices,
      now,
      from,
      to,
    }),
  };
  const names = new Set([...pools.map((p) => p.metadata.name ?? ""), ...input.policies.keys()]);
  for (const e of input.events) names.add(e.pool);
  return {
    clusterId: input.clusterId,
    at: now,
    from,
    to,
    pools: [...names].sort().map((n) => poolRow(n, ctx)),
  };
}
