// The warmup controller, shaped like a Karpenter controller: a name and `reconcile(pool)` that
// returns when to run again. It keeps no state of its own — everything lives on Kubernetes
// objects (labels/annotations on warmup pods, pre-pull pods, Nodes, NodeClaims, the NodePool),
// so a restarted or newly elected instance resumes mid-warmup without orphans.
//
// One warmup, end to end:
//   detect: no Ready node of the pool fits the pool's largest pod (fit/detect.ts)
//   admit:  policy, warm node cap, cooldown, spec.limits, cost cap (fit/limits.ts)
//   create: a negative-priority pause pod with the largest pod's requests, pinned to the pool;
//           Karpenter launches a node for it
//   bound:  the node and its NodeClaim get karpenter.sh/do-not-disrupt (owned by Wave), and one
//           pull pod per missing workload image is created on it, all at once
//   end:    hit  = a real pod created after the warmup landed on the node;
//           miss = the TTL deadline passed first (or the node vanished)
//           → warmup pod and pull pods deleted, Wave's do-not-disrupt removed, so consolidation
//             may reclaim the node if it stays empty.
import type { Node, Pod } from "../objects/kube.ts";
import { isConflict, isNotFound, type KubeClient } from "../kube/port.ts";
import {
  DO_NOT_DISRUPT_ANNOTATION,
  NODE_POOL_LABEL,
  type NodeClaim,
  type NodePool,
} from "../objects/karpenter.ts";
import type { Clock } from "../shared/clock.ts";
import { silentLogger, type Logger } from "../shared/log.ts";
import { detect, isNodeReady } from "./fit/detect.ts";
import { admit, likelyOffering, newNodeEstimate, warmCost, type PriceOf } from "./fit/limits.ts";
import { poolOfPod } from "../karpenter/pool-of-pod.ts";
import { createdSince, startSeconds } from "../karpenter/pod-start.ts";
import { isActivePod, isDaemonSetPod, nodeRoom } from "../karpenter/room.ts";
import {
  isPrepullPod,
  isWarmupPod,
  isWavePod,
  MIRROR_POD_ANNOTATION,
  parseTime,
  CREATED_AT_ANNOTATION,
  DEADLINE_ANNOTATION,
  DO_NOT_DISRUPT_NAMESPACE_ANNOTATION,
  DO_NOT_DISRUPT_OWNER_ANNOTATION,
  DO_NOT_DISRUPT_OWNER_VALUE,
  LAST_WARMUP_AT_ANNOTATION,
  LAST_WARMUP_NAMESPACE_ANNOTATION,
  PREPULLED_ANNOTATION,
  PREPULL_IMAGE_ANNOTATION,
  PREPULL_IMAGE_HASH_LABEL,
  PREPULL_LABEL,
  WARMUP_POOL_LABEL,
  WARMUP_PRIORITY_CLASS_NAME,
  WARMUP_UNUSED_STREAK_ANNOTATION,
} from "../objects/wave.ts";
import { imageHash, prepullPod, warmupPod, warmupPriorityClass } from "./manifests.ts";
import type { WarmupPolicy } from "../policy/warmup.ts";
import { planPulls, pullOutcome, workloadImages } from "./prepull.ts";
import type { WarmupEvent } from "./stats.ts";
import { nextStreak, unusedStreak, type WarmupEnd } from "./backoff.ts";
import { nominatedNames } from "./nominated.ts";
import type { WarmupView } from "./view.ts";
import { staticRefusal } from "./static-pool.ts";

export interface ReconcileResult {
  requeueAfter: number;
}

/** What a pool's last pass found (a WarmupPolicy's status: src/warmup/policy-status.ts). */
export interface PoolOutcome {
  state: "idle" | "warming" | "warm" | "blocked" | "disabled";
  /** Why no warmup could start (admission's refusal, or the NodePool missing). */
  blocker?: string;
  /** Warm nodes held for the pool now. */
  warmNodes: number;
}

export interface WarmupControllerOptions {
  client: KubeClient;
  view: WarmupView;
  clock: Clock;
  /** Wave's namespace: its marks on Nodes, NodeClaims and NodePools name it as their owner. */
  namespace: string;
  /** Where warmup and pull pods live (default: namespace); one without Secrets (docs/security.md). */
  podNamespace?: string;
  policyOf: (pool: string) => WarmupPolicy;
  priceOf?: PriceOf;
  log?: Logger;
  onEvent?: (e: WarmupEvent) => void;
  /** Requeue when nothing is in flight (ms). */
  idleRequeueMs?: number;
  /** Requeue while a warmup waits for its node or pulls run (ms). */
  activeRequeueMs?: number;
}

/** Pending pods are bound to no node: poolOfPod never looks one up for them. */
const NO_NODES: ReadonlyMap<string, Node> = new Map();

const sameItems = <T>(a: readonly T[], b: readonly T[]): boolean =>
  a.length === b.length && a.every((x, i) => x === b[i]);

/** How a warmup ended; a hit names its pod and, once it ran, that pod's measured start. */
type End = WarmupEnd & { pod?: string; seconds?: number };

/** A hit's pod: its key and start, or "starting" while it is placed but not running yet. */
type HitPod = { pod: string; seconds?: number } | "starting" | undefined;

/**
 * How long a hit waits for its pod to run before it is counted without a measured start: the node
 * stays protected meanwhile (it has a real pod), so the wait costs nothing.
 */
const HIT_START_WAIT_MS = 10 * 60_000;

/** How soon a warm node whose real pod is only nominated (not yet bound) is looked at again. */
const NOMINATION_RECHECK_MS = 1_000;

/** Whether a real pod created since `since` is nominated to `node` by a preemption, not yet bound. */
function nominatedTo(pending: readonly Pod[], node: string, since: number): boolean {
  return pending.some(
    (p) => p.status?.nominatedNodeName === node && p.spec.nodeName === undefined && isRealPodSince(p, since),
  );
}

/** A pod that is not Wave's, not a DaemonSet's, not a static pod, created at or after `since`. */
function isRealPodSince(p: Pod, since: number): boolean {
  if (!isActivePod(p) || isWavePod(p) || isDaemonSetPod(p)) return false;
  if (p.metadata.annotations?.[MIRROR_POD_ANNOTATION] !== undefined) return false;
  const created = parseTime(p.metadata.creationTimestamp);
  // creationTimestamp has whole-second precision: compare at that granularity.
  return created !== undefined && created >= Math.floor(since / 1000) * 1000;
}

/**
 * Wave's mark set by the instance living in `namespace` (or by a version that did not record
 * one). Another instance's marks are left alone: releasing them as "orphans" would strip a
 * live warm node of its protection.
 */
const ownedBy = (a: Record<string, string>, namespace: string): boolean => {
  if (a[DO_NOT_DISRUPT_OWNER_ANNOTATION] !== DO_NOT_DISRUPT_OWNER_VALUE) return false;
  const ns = a[DO_NOT_DISRUPT_NAMESPACE_ANNOTATION];
  return ns === undefined || ns === namespace;
};

export class WarmupController {
  readonly name = "warmup";
  readonly #o: Required<Omit<WarmupControllerOptions, "onEvent">> & Pick<WarmupControllerOptions, "onEvent">;
  /** Warmup ends reported during the current pass, per pool (they move its back-off streak). */
  readonly #ends = new Map<string, End[]>();
  readonly #poolOfCache = new WeakMap<Pod, { pools: readonly NodePool[]; pool: string | undefined }>();
  #priorityClassReady = false;
  readonly #outcomes = new Map<string, PoolOutcome>();

  /** What the pool's last pass found (undefined before its first). */
  outcome(pool: string): PoolOutcome | undefined {
    return this.#outcomes.get(pool);
  }

  get #podNamespace(): string {
    return this.#o.podNamespace;
  }

  constructor(opts: WarmupControllerOptions) {
    this.#o = {
      priceOf: () => undefined,
      log: silentLogger,
      idleRequeueMs: 30_000,
      activeRequeueMs: 5_000,
      ...opts,
      podNamespace: opts.podNamespace ?? opts.namespace,
    };
  }

  /**
   * Run once on start (and on gaining leadership): makes sure the PriorityClass exists and
   * reconciles every pool that has a NodePool or any Wave object — adopting live warmups,
   * re-enforcing their deadlines and removing what belongs to deleted pools.
   */
  async start(): Promise<Map<string, ReconcileResult>> {
    await this.#ensurePriorityClass();
    return this.reconcileAll();
  }

  async reconcileAll(): Promise<Map<string, ReconcileResult>> {
    const { client, view } = this.#o;
    const namespace = this.#podNamespace;
    const own = (await client.list("Pod", { namespace })).items.filter(isWavePod);
    const names = new Set<string>(view.nodePools().map((p) => p.metadata.name ?? ""));
    for (const p of own) {
      const pool = p.metadata.labels?.[WARMUP_POOL_LABEL];
      if (pool === undefined || pool === "") await this.#deletePod(p);
      else names.add(pool);
    }
    // Wave's marks on the nodes and claims of pools that may be gone: a pass over the state,
    // once per full resync (not per pool).
    for (const o of [...view.nodes(), ...view.nodeClaims()]) {
      const pool = o.metadata.labels?.[NODE_POOL_LABEL];
      if (this.#mine(o) && pool !== undefined) names.add(pool);
    }
    const out = new Map<string, ReconcileResult>();
    for (const name of [...names].filter((n) => n !== "").sort()) out.set(name, await this.reconcile(name));
    return out;
  }

  async reconcile(pool: string): Promise<ReconcileResult> {
    const { client, view, clock, log } = this.#o;
    const namespace = this.#podNamespace;
    const now = clock.now();
    // From the state: the pool, its nodes and claims, the pods on those nodes and the pending
    // pods — each an index lookup, never a list of the cluster.
    const poolObj = view.nodePool(pool);
    const policy = poolObj === undefined ? undefined : this.#o.policyOf(pool);
    // Wave's own pods come from a consistent read, never a possibly stale cache: acting on a
    // stale list could create a second warmup.
    const own = (
      await client.list("Pod", { namespace, labelSelector: `${WARMUP_POOL_LABEL}=${pool}` })
    ).items.filter((p) => isWavePod(p) && p.metadata.deletionTimestamp === undefined);
    const poolNodes = view.nodesInPool(pool);
    const nodeOf = (name: string | undefined): Node | undefined =>
      name === undefined || name === "" ? undefined : view.node(name);
    const onNode = new Map<string, readonly Pod[]>();
    const podsOn = (name: string): readonly Pod[] => {
      let pods = onNode.get(name);
      if (pods === undefined) {
        pods = view.podsOnNode(name, { includeTerminal: true });
        onNode.set(name, pods);
      }
      return pods;
    };
    const claimOf = (node: string): NodeClaim | undefined => view.nodeClaimForNode(node);
    const wake: number[] = [];
    let active = false;

    // 1. Decide each warmup pod's fate.
    const live: Pod[] = [];
    const ended = new Set<string>();
    for (const wp of own.filter(isWarmupPod)) {
      const created = parseTime(wp.metadata.annotations?.[CREATED_AT_ANNOTATION]);
      const deadline = parseTime(wp.metadata.annotations?.[DEADLINE_ANNOTATION]);
      const nodeName = wp.spec.nodeName;
      let node = nodeOf(nodeName);
      let end: End | undefined;
      if (poolObj === undefined) end = { kind: "miss", reason: "pool-deleted" };
      else if (policy?.enabled !== true) end = { kind: "miss", reason: "disabled" };
      else if (created === undefined || deadline === undefined) end = { kind: "miss", reason: "invalid" };
      else if (nodeName !== undefined && node === undefined) {
        // The state may not have the node the pod was just bound to yet: gone only if the
        // apiserver says so; otherwise the warmup is live and this pool is looked at again soon.
        if ((await this.#freshNode(nodeName)) === undefined) end = { kind: "miss", reason: "node-gone" };
      } else if (node !== undefined && !createdSince(node, created)) {
        // Not a warm node: the warmup pod took room on a node that ran before the warmup began.
        // Removed at once, counted nothing (issue 38: a hit is a pod on a node launched for it).
        log.info("warmup pod on an existing node removed", { pool, pod: wp.metadata.name, node: nodeName });
        await this.#deletePod(wp);
        if (this.#mine(node)) await this.#release(pool, node, claimOf(nodeName ?? ""), undefined, now, false);
        ended.add(nodeName ?? "");
        continue;
      } else {
        // Bound: its node; pending: the node launched for it that a real pod took first.
        const taken =
          node === undefined ? await this.#takenNomination(pool, wp, created, now, podsOn) : undefined;
        node ??= taken?.node;
        const hit =
          node === undefined
            ? undefined
            : (taken?.hit ?? (await this.#hitOf(podsOn(nodeName ?? ""), created, now)));
        if (node !== undefined && hit === "starting") {
          // The slot is taken: the warmup pod goes now (so the next warmup need not wait for this
          // pod's start); the node keeps Wave's mark, and the pass over marked nodes below counts
          // the hit once the pod runs.
          log.info("warm node taken; its pod is starting", {
            pool,
            pod: wp.metadata.name,
            node: node.metadata.name,
          });
          this.#taken(pool);
          await this.#protect("Node", node, deadline, created);
          const claim = claimOf(node.metadata.name ?? "");
          if (claim !== undefined) await this.#protect("NodeClaim", claim, deadline, created);
          await this.#deletePod(wp);
          continue;
        } else if (hit !== undefined && hit !== "starting") end = { kind: "hit", ...hit };
        else if (now >= deadline) end = { kind: "miss", reason: "ttl" };
      }
      if (end !== undefined) {
        log.info("warmup ended", { pool, pod: wp.metadata.name, node: nodeName, outcome: end.kind });
        await this.#deletePod(wp);
        if (node !== undefined) {
          ended.add(node.metadata.name ?? "");
          await this.#release(pool, node, claimOf(node.metadata.name ?? ""), end, now, true, created);
        } else this.#emit(end, pool, now, undefined, wp.metadata.name, created);
        continue;
      }
      live.push(wp);
      wake.push(deadline ?? now);
      if (node === undefined) active = true;
    }

    // 2. Protect live warm nodes and pre-pull onto them.
    const liveNodes = new Map<string, { node: Node; deadline: number; created: number }>();
    for (const wp of live) {
      const node = nodeOf(wp.spec.nodeName);
      if (node === undefined) continue;
      const name = node.metadata.name ?? "";
      const deadline = parseTime(wp.metadata.annotations?.[DEADLINE_ANNOTATION]) ?? now;
      const created = parseTime(wp.metadata.annotations?.[CREATED_AT_ANNOTATION]) ?? now;
      const prev = liveNodes.get(name);
      // Several warmup pods may share one big node: protect it until the last deadline.
      liveNodes.set(name, {
        node,
        deadline: Math.max(deadline, prev?.deadline ?? 0),
        created: Math.min(created, prev?.created ?? Infinity),
      });
    }
    const pulls = own.filter(isPrepullPod);
    // Read only by pre-pulls and detection (a pool with warmup off needs neither).
    let workloadPods: Pod[] | undefined;
    const workload = (): Pod[] =>
      (workloadPods ??= poolObj === undefined ? [] : this.#workload(pool, poolNodes, podsOn));
    for (const [name, w] of liveNodes) {
      await this.#protect("Node", w.node, w.deadline, w.created);
      const claim = claimOf(name);
      if (claim !== undefined) await this.#protect("NodeClaim", claim, w.deadline, w.created);
      if (policy?.prePull === true) {
        const r = await this.#prepull(
          pool,
          w.node,
          pulls.filter((p) => p.spec.nodeName === name),
          podsOn(name),
          workload(),
          policy,
          now,
        );
        if (r.active) active = true;
        wake.push(...r.wake);
      }
    }

    // 3. Pull pods on nodes that are no longer warm are of no use.
    for (const p of pulls) {
      if (!liveNodes.has(p.spec.nodeName ?? "") || policy?.prePull !== true) await this.#deletePod(p);
    }

    // 4. Wave-owned protection without a live warmup: a crash between deleting a warmup pod and
    //    releasing its node, or a warmup pod preempted by a real pod. Resolve it now.
    for (const node of poolNodes) {
      const name = node.metadata.name ?? "";
      if (!this.#mine(node)) continue;
      if (liveNodes.has(name) || ended.has(name)) continue;
      const since = parseTime(node.metadata.annotations?.[CREATED_AT_ANNOTATION]) ?? 0;
      if (!createdSince(node, since)) {
        // Wave's mark on a node that ran before its warmup (an older build marked such nodes):
        // never a warm node, so released without counting anything.
        log.info("released a node that was never warm", { pool, node: name });
        await this.#release(pool, node, claimOf(name), undefined, now, false);
        continue;
      }
      // The state may lag the apiserver: a real pod bound in place of a preempted warmup pod is
      // read from the apiserver before the warm node is called lost.
      let hit = await this.#hitOf(podsOn(name), since, now);
      if (hit === undefined)
        hit = await this.#hitOf(
          (await client.list("Pod", { fieldSelector: `spec.nodeName=${name}` })).items,
          since,
          now,
        );
      if (hit === "starting") {
        this.#taken(pool);
        active = true;
        wake.push(now + this.#o.activeRequeueMs);
        continue;
      }
      const deadline = parseTime(node.metadata.annotations?.[DEADLINE_ANNOTATION]) ?? 0;
      // Preemption can delete the warmup pod before the scheduler binds the real pod that takes
      // its place (kube-scheduler 1.36 preempts asynchronously): while a real pod is nominated to
      // this node, wait for its binding instead of calling the warm node lost.
      if (!hit && now < deadline && nominatedTo(view.pendingPods(), name, since)) {
        active = true;
        wake.push(now + NOMINATION_RECHECK_MS);
        continue;
      }
      const end: End = hit
        ? { kind: "hit", ...hit }
        : { kind: "miss", reason: now >= deadline ? "ttl" : "lost" };
      log.info("released orphaned warm node", { pool, node: name, outcome: end.kind });
      await this.#release(pool, node, claimOf(name), end, now, false, since);
    }
    for (const claim of view.nodeClaimsInPool(pool)) {
      const nodeName = claim.status?.nodeName ?? "";
      if (!this.#mine(claim)) continue;
      if (liveNodes.has(nodeName) || ended.has(nodeName)) continue;
      // Released with its node above, unless a crash left the node released and the claim not.
      const n = nodeOf(nodeName);
      if (n !== undefined && this.#mine(n) && n.metadata.labels?.[NODE_POOL_LABEL] === pool) continue;
      await this.#unprotect("NodeClaim", claim);
    }

    // 4b. This pass's outcomes move the pool's back-off streak (kept on the NodePool, read fresh:
    //     the state may not have our last write yet).
    let admitPool = poolObj;
    const ends = this.#ends.get(pool) ?? [];
    this.#ends.delete(pool);
    if (poolObj !== undefined && ends.length > 0) {
      const fresh = await client.get("NodePool", pool).catch(() => poolObj);
      const before = unusedStreak(fresh);
      const after = ends.reduce(nextStreak, before);
      admitPool = fresh;
      if (after !== before) {
        admitPool = await client.patch("NodePool", pool, {
          metadata: { annotations: { [WARMUP_UNUSED_STREAK_ANNOTATION]: String(after) } },
        });
        log.info("warmup back-off", { pool, unusedStreak: after });
      }
    }

    // 5. Detection and admission of a new warmup.
    let retryAfter: number | undefined;
    let blocker: string | undefined;
    const refusal = staticRefusal(poolObj);
    if (refusal !== undefined && policy?.enabled === true) {
      blocker = `${refusal.reason}: ${refusal.detail}`;
      log.debug("warmup refused", { pool, reason: refusal.reason });
    } else if (poolObj !== undefined && policy?.enabled === true) {
      // Warmup pods as they are now (the consistent list, minus those ended above), not as
      // the possibly stale state has them.
      const podsByNode = new Map<string, Pod[]>();
      for (const n of poolNodes) {
        const name = n.metadata.name ?? "";
        podsByNode.set(
          name,
          podsOn(name).filter((p) => !isWarmupPod(p)),
        );
      }
      for (const wp of live) podsByNode.get(wp.spec.nodeName ?? "")?.push(wp);
      const detection = detect(
        { pool: poolObj, nodes: poolNodes, podsByNode, workload: workload() },
        live.length,
        policy.maxWarmNodes,
      );
      if (detection.warmup) {
        const lastWarmupAt = Math.max(
          parseTime(poolObj.metadata.annotations?.[LAST_WARMUP_AT_ANNOTATION]) ?? -Infinity,
          ...live.map((p) => parseTime(p.metadata.annotations?.[CREATED_AT_ANNOTATION]) ?? -Infinity),
        );
        const offering = likelyOffering(poolObj, poolNodes);
        const admission = admit({
          policy,
          now,
          pool: admitPool ?? poolObj,
          warmups: live.length,
          pendingWarmups: live.filter((p) => p.spec.nodeName === undefined).length,
          lastWarmupAt: Number.isFinite(lastWarmupAt) ? lastWarmupAt : undefined,
          estimate: newNodeEstimate(poolNodes, detection.largest.requests),
          warmCostPerHour: warmCost(
            [...liveNodes.values()].map((w) => w.node),
            this.#o.priceOf,
          ),
          newNodeCostPerHour:
            offering.instanceType === undefined
              ? undefined
              : this.#o.priceOf(
                  offering.instanceType,
                  offering.capacityType,
                  offering.places,
                  offering.labels,
                ),
        });
        if (admission.ok) {
          await this.#createWarmup(
            poolObj,
            detection.largest.pod,
            detection.largest.requests,
            policy,
            now,
            live.length,
          );
          active = true;
        } else {
          log.debug("warmup not admitted", { pool, reason: admission.reason, detail: admission.detail });
          // In flight and cooldown are the normal rhythm, not a blocker.
          if (admission.reason !== "in-flight" && admission.reason !== "cooldown")
            blocker = `${admission.reason}: ${admission.detail}`;
          retryAfter = admission.retryAfterMs;
        }
      } else
        log.debug("no warmup needed", {
          pool,
          reason: detection.reason,
          warmups: live.length,
          ...(detection.reason === "fits"
            ? { fitting: detection.nodes, largest: detection.largest.pod.metadata.name }
            : {}),
        });
    } else if (poolObj !== undefined) log.debug("warmup off for the pool", { pool });
    const warming = live.some((p) => p.spec.nodeName === undefined || p.spec.nodeName === "");
    this.#outcomes.set(
      pool,
      poolObj === undefined
        ? { state: "blocked", blocker: `NodePool ${pool} not found`, warmNodes: liveNodes.size }
        : policy?.enabled !== true
          ? { state: "disabled", warmNodes: liveNodes.size }
          : blocker !== undefined
            ? { state: "blocked", blocker, warmNodes: liveNodes.size }
            : {
                state: warming ? "warming" : liveNodes.size > 0 ? "warm" : "idle",
                warmNodes: liveNodes.size,
              },
    );

    let requeue = active ? this.#o.activeRequeueMs : this.#o.idleRequeueMs;
    for (const t of wake) requeue = Math.min(requeue, t - now);
    if (retryAfter !== undefined) requeue = Math.min(requeue, retryAfter);
    return { requeueAfter: Math.max(1000, requeue) };
  }

  /**
   * Pods tied to the pool that count as its workload (not Wave's, not DaemonSets', not done):
   * those bound to its nodes, and the pending pods it would host (poolOfPod), in apiserver list
   * order (namespace/name) so ties resolve as they always did.
   */
  #workload(pool: string, poolNodes: readonly Node[], podsOn: (node: string) => readonly Pod[]): Pod[] {
    const counts = (p: Pod): boolean => isActivePod(p) && !isWavePod(p) && !isDaemonSetPod(p);
    const out: Pod[] = [];
    for (const n of poolNodes) for (const p of podsOn(n.metadata.name ?? "")) if (counts(p)) out.push(p);
    const pools = this.#o.view.nodePools();
    for (const p of this.#o.view.pendingPods()) if (counts(p) && this.#poolOf(p, pools) === pool) out.push(p);
    return out
      .map((p) => ({ p, key: `${p.metadata.namespace ?? ""}/${p.metadata.name ?? ""}` }))
      .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
      .map((x) => x.p);
  }

  /**
   * poolOfPod for a pending pod, once per version of the pod and of the pools (the state replaces
   * an object on change): each pool's pass asks it of every pending pod.
   */
  #poolOf(pod: Pod, pools: readonly NodePool[]): string | undefined {
    const hit = this.#poolOfCache.get(pod);
    if (hit !== undefined && sameItems(hit.pools, pools)) return hit.pool;
    const pool = poolOfPod(pod, pools, NO_NODES);
    this.#poolOfCache.set(pod, { pools, pool });
    return pool;
  }

  async #createWarmup(
    pool: NodePool,
    largest: Pod,
    requests: Record<string, number>,
    policy: WarmupPolicy,
    now: number,
    slot: number,
  ): Promise<void> {
    const { client, log } = this.#o;
    const namespace = this.#podNamespace;
    await this.#ensurePriorityClass();
    const pod = warmupPod({
      pool,
      namespace,
      largest,
      requests,
      now,
      ttlSeconds: policy.ttlSeconds,
      slot,
    });
    try {
      await client.create("Pod", pod, { namespace });
    } catch (err) {
      if (!isConflict(err)) throw err; // same name = this very warmup already exists
    }
    const name = pool.metadata.name ?? "";
    // Cooldown survives restarts and the warmup pod's deletion.
    await client.patch("NodePool", name, {
      metadata: {
        annotations: {
          [LAST_WARMUP_AT_ANNOTATION]: new Date(now).toISOString(),
          [LAST_WARMUP_NAMESPACE_ANNOTATION]: this.#o.namespace,
        },
      },
    });
    log.info("warmup started", { pool: name, pod: pod.metadata.name, largest: largest.metadata.name });
    this.#o.onEvent?.({ type: "created", pool: name, at: now, pod: pod.metadata.name ?? "" });
  }

  async #prepull(
    pool: string,
    node: Node,
    pulls: readonly Pod[],
    podsOnNode: readonly Pod[],
    workload: readonly Pod[],
    policy: WarmupPolicy,
    now: number,
  ): Promise<{ active: boolean; wake: number[] }> {
    const { client, log } = this.#o;
    const namespace = this.#podNamespace;
    const name = node.metadata.name ?? "";
    const wake: number[] = [];
    const done = new Set(
      (node.metadata.annotations?.[PREPULLED_ANNOTATION] ?? "").split(",").filter((h) => h !== ""),
    );
    const finished: Pod[] = [];
    const running: Pod[] = [];
    for (const p of pulls) {
      const outcome = pullOutcome(p);
      const deadline = parseTime(p.metadata.annotations?.[DEADLINE_ANNOTATION]);
      if (outcome !== "pulling" || deadline === undefined || now >= deadline) finished.push(p);
      else {
        running.push(p);
        wake.push(deadline);
      }
    }
    if (finished.length > 0) {
      for (const p of finished) done.add(p.metadata.labels?.[PREPULL_IMAGE_HASH_LABEL] ?? "");
      // Record first, delete second: a crash in between re-deletes, never re-pulls.
      await client.patch("Node", name, {
        metadata: {
          annotations: {
            [PREPULLED_ANNOTATION]: [...done]
              .filter((h) => h !== "")
              .sort()
              .join(","),
          },
        },
      });
      for (const p of finished) {
        const outcome = pullOutcome(p) === "pulled" ? "pulled" : "failed";
        await this.#deletePod(p);
        this.#o.onEvent?.({
          type: "prepull",
          pool,
          at: now,
          node: name,
          image: p.metadata.annotations?.[PREPULL_IMAGE_ANNOTATION] ?? "",
          outcome,
        });
      }
    }
    if (!isNodeReady(node)) return { active: true, wake };
    const images = workloadImages(workload).filter((i) => !done.has(imageHash(i)));
    // Pull pods already finished this round are deleted: their slots are free again.
    const slots = nodeRoom(
      node,
      podsOnNode.filter((p) => !finished.some((f) => f.metadata.name === p.metadata.name)),
    ).podSlots;
    // The node's image list is not in the state (informers drop it: it is most of a Node's
    // size): read this warm node itself, and only when there is something to plan.
    const current = images.length === 0 ? node : await this.#fresh("Node", node);
    if (current === undefined) return { active: false, wake };
    const plan = planPulls(images, current, running, slots);
    if (plan.pull.length > 0) {
      log.info("pre-pulling images", { pool, node: name, images: plan.pull, deferred: plan.deferred.length });
      // All at once: the kubelet pulls them in parallel when serializeImagePulls is false.
      const results = await Promise.allSettled(
        plan.pull.map((image) =>
          client.create(
            "Pod",
            prepullPod({
              pool,
              node: name,
              image,
              namespace,
              now,
              deadlineSeconds: policy.prePullDeadlineSeconds,
            }),
            { namespace },
          ),
        ),
      );
      const failed = results.filter(
        (r): r is PromiseRejectedResult => r.status === "rejected" && !isConflict(r.reason),
      );
      if (failed.length > 0)
        throw failed[0]?.reason instanceof Error ? failed[0].reason : new Error(String(failed[0]?.reason));
    }
    return { active: running.length > 0 || plan.pull.length > 0 || plan.deferred.length > 0, wake };
  }

  /** Adds Wave's do-not-disrupt unless the object already carries one (then it is the user's). */
  async #protect(
    kind: "Node" | "NodeClaim",
    obj: Node | NodeClaim,
    deadline: number,
    created: number,
  ): Promise<void> {
    const want = {
      [DO_NOT_DISRUPT_ANNOTATION]: "true",
      [DO_NOT_DISRUPT_OWNER_ANNOTATION]: DO_NOT_DISRUPT_OWNER_VALUE,
      [DO_NOT_DISRUPT_NAMESPACE_ANNOTATION]: this.#o.namespace,
      [DEADLINE_ANNOTATION]: new Date(deadline).toISOString(),
      [CREATED_AT_ANNOTATION]: new Date(created).toISOString(),
    };
    await this.#annotate(kind, obj, (a) => {
      // The user's annotation, or another Wave instance's: not ours to manage.
      if (a[DO_NOT_DISRUPT_ANNOTATION] !== undefined && !ownedBy(a, this.#o.namespace)) return undefined;
      return Object.entries(want).every(([k, v]) => a[k] === v) ? undefined : want;
    });
  }

  /** Removes Wave's do-not-disrupt (and its bookkeeping); a user's annotation is never touched. */
  async #unprotect(kind: "Node" | "NodeClaim", obj: Node | NodeClaim): Promise<boolean> {
    return this.#annotate(kind, obj, (a) => {
      if (!ownedBy(a, this.#o.namespace)) return undefined;
      const remove: Record<string, null> = {
        [DO_NOT_DISRUPT_ANNOTATION]: null,
        [DO_NOT_DISRUPT_OWNER_ANNOTATION]: null,
        [DO_NOT_DISRUPT_NAMESPACE_ANNOTATION]: null,
        [DEADLINE_ANNOTATION]: null,
        [CREATED_AT_ANNOTATION]: null,
      };
      if (kind === "Node") remove[PREPULLED_ANNOTATION] = null;
      return remove;
    });
  }

  /**
   * Merge-patches annotations computed from the current ones, with a resourceVersion
   * precondition so a concurrent edit (say, a user adding their own do-not-disrupt) is never
   * overwritten; on conflict the object is re-read once and the change recomputed.
   */
  async #annotate(
    kind: "Node" | "NodeClaim",
    obj: Node | NodeClaim,
    change: (a: Record<string, string>) => Record<string, string | null> | undefined,
  ): Promise<boolean> {
    const { client } = this.#o;
    const name = obj.metadata.name ?? "";
    let cur: Node | NodeClaim = obj;
    for (let attempt = 0; ; attempt++) {
      const patch = change(cur.metadata.annotations ?? {});
      if (patch === undefined) return false;
      try {
        await client.patch(kind, name, {
          metadata: { resourceVersion: cur.metadata.resourceVersion, annotations: patch },
        });
        return true;
      } catch (err) {
        if (isNotFound(err)) return false;
        if (!isConflict(err) || attempt > 0) throw err;
        try {
          cur = await client.get(kind, name);
        } catch (e) {
          if (isNotFound(e)) return false;
          throw e;
        }
      }
    }
  }

  /** Ends a warmup on a node: removes Wave's protection from Node and NodeClaim, then reports. */
  async #release(
    pool: string,
    node: Node,
    claim: NodeClaim | undefined,
    /** undefined: the node was never warm — released, nothing reported. */
    end: End | undefined,
    now: number,
    /** Report even if the node carried no protection (the warmup pod's end is the transition). */
    always: boolean,
    /** When the warmup began (its warm time's start). */
    since?: number,
  ): Promise<void> {
    const name = node.metadata.name ?? "";
    const pulls = (
      await this.#o.client.list("Pod", {
        namespace: this.#podNamespace,
        labelSelector: `${PREPULL_LABEL}=true`,
      })
    ).items;
    for (const p of pulls.filter((p) => p.spec.nodeName === name)) await this.#deletePod(p);
    const released = await this.#unprotect("Node", node);
    if (claim !== undefined) await this.#unprotect("NodeClaim", claim);
    // Reported once: after the protection is gone, the orphan pass no longer sees this node.
    if (end !== undefined && (always || released)) this.#emit(end, pool, now, name, undefined, since);
  }

  /**
   * The first real pod placed on a warm node since `since`, with its measured start once it runs
   * (read fresh: the state does not keep a bound pod's conditions); "starting" while it has not
   * run for less than HIT_START_WAIT_MS; undefined when no real pod is there.
   */
  async #hitOf(pods: readonly Pod[], since: number, now: number): Promise<HitPod> {
    const first = pods
      .filter((p) => isRealPodSince(p, since))
      .map((p) => ({ p, key: `${p.metadata.namespace ?? ""}/${p.metadata.name ?? ""}` }))
      .sort(
        (a, b) =>
          (parseTime(a.p.metadata.creationTimestamp) ?? 0) -
            (parseTime(b.p.metadata.creationTimestamp) ?? 0) || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0),
      )[0];
    if (first === undefined) return undefined;
    // Gone already (a short job): placed, its start unknown.
    const fresh = await this.#o.client
      .get("Pod", first.p.metadata.name ?? "", first.p.metadata.namespace ?? "")
      .catch((err: unknown) => (isNotFound(err) ? undefined : Promise.reject(err as Error)));
    const seconds = fresh === undefined ? undefined : startSeconds(fresh);
    if (seconds !== undefined) return { pod: first.key, seconds };
    const created = parseTime(first.p.metadata.creationTimestamp) ?? now;
    if (fresh !== undefined && now - created < HIT_START_WAIT_MS) return "starting";
    return { pod: first.key };
  }

  /**
   * A pending warmup pod's warm node taken before it bound: a node of the pool launched since the
   * warmup began, that Karpenter nominated the pod to (its Events, read only when such a node
   * holds a real pod placed since), with the real pod's hit.
   */
  async #takenNomination(
    pool: string,
    wp: Pod,
    since: number,
    now: number,
    podsOn: (node: string) => readonly Pod[],
  ): Promise<{ node: Node; hit: Exclude<HitPod, undefined> } | undefined> {
    const fresh = this.#o.view
      .nodesInPool(pool)
      .filter(
        (n) => createdSince(n, since) && podsOn(n.metadata.name ?? "").some((p) => isRealPodSince(p, since)),
      );
    if (fresh.length === 0) return undefined;
    const events = await this.#o.client.list("Event", {
      namespace: wp.metadata.namespace ?? this.#podNamespace,
      fieldSelector: `involvedObject.name=${wp.metadata.name ?? ""}`,
    });
    const to = nominatedNames(events.items, wp);
    for (const node of fresh) {
      const name = node.metadata.name ?? "";
      const claim = this.#o.view.nodeClaimForNode(name)?.metadata.name;
      if (!to.has(name) && (claim === undefined || !to.has(claim))) continue;
      const hit = await this.#hitOf(podsOn(name), since, now);
      if (hit !== undefined) return { node, hit };
    }
    return undefined;
  }

  /** A consistent read of a Node by name; undefined once it is gone. */
  async #freshNode(name: string): Promise<Node | undefined> {
    try {
      return await this.#o.client.get("Node", name);
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  /** A consistent read of one object; undefined once it is gone. */
  async #fresh<T extends Node | NodeClaim>(kind: "Node" | "NodeClaim", obj: T): Promise<T | undefined> {
    try {
      return (await this.#o.client.get(kind, obj.metadata.name ?? "")) as T;
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  #mine(o: { metadata: { annotations?: Record<string, string> } }): boolean {
    return ownedBy(o.metadata.annotations ?? {}, this.#o.namespace);
  }

  /**
   * A warm node was taken (its pod placed, its start still to be measured): a hit as far as the
   * back-off goes, now — the next warmup need not wait for that pod to run.
   */
  #taken(pool: string): void {
    this.#ends.set(pool, [...(this.#ends.get(pool) ?? []), { kind: "hit" }]);
  }

  #emit(end: End, pool: string, now: number, node: string | undefined, pod?: string, since?: number): void {
    this.#ends.set(pool, [...(this.#ends.get(pool) ?? []), end]);
    const warmSince = since === undefined ? {} : { since };
    if (end.kind === "hit")
      this.#o.onEvent?.({
        type: "hit",
        pool,
        at: now,
        node: node ?? "",
        ...(end.pod === undefined ? {} : { pod: end.pod }),
        ...(end.seconds === undefined ? {} : { seconds: end.seconds }),
        ...warmSince,
      });
    else
      this.#o.onEvent?.({
        type: "miss",
        pool,
        at: now,
        reason: end.reason,
        ...(node === undefined ? {} : { node }),
        // The stored event's key: two node-less misses of one pool may share an instant.
        ...(node === undefined && pod !== undefined ? { pod } : {}),
        ...warmSince,
      });
  }

  async #deletePod(p: Pod): Promise<void> {
    try {
      await this.#o.client.delete("Pod", p.metadata.name ?? "", {
        namespace: p.metadata.namespace ?? this.#podNamespace,
        gracePeriodSeconds: 0,
        ...(p.metadata.uid === undefined ? {} : { uid: p.metadata.uid }),
      });
    } catch (err) {
      if (!isNotFound(err) && !isConflict(err)) throw err;
    }
  }

  async #ensurePriorityClass(): Promise<void> {
    if (this.#priorityClassReady) return;
    const { client } = this.#o;
    try {
      await client.get("PriorityClass", WARMUP_PRIORITY_CLASS_NAME);
    } catch (err) {
      if (!isNotFound(err)) throw err;
      try {
        await client.create("PriorityClass", warmupPriorityClass());
      } catch (e) {
        if (!isConflict(e)) throw e;
      }
    }
    this.#priorityClassReady = true;
  }
}
