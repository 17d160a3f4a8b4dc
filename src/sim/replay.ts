// The replay engine behind `wave whatif`: runs a workload on the simulated cluster under one
// policy (spot thresholds through Wave's real admission logic, warmup through Wave's real
// warmup controller) on a FakeClock, so an hour of cluster time takes seconds, and measures
// what the policy costs and how fast pods start.
import { MemoryKube } from "../kube/memory/memory.ts";
import type { Pod } from "../objects/kube.ts";
import {
  CAPACITY_TYPE_LABEL,
  INSTANCE_TYPE_LABEL,
  NODE_POOL_LABEL,
  TOPOLOGY_ZONE_LABEL,
  type NodeClaim,
  type NodeOverlay,
} from "../objects/karpenter.ts";
import { orderByWeight, overlaidPrice } from "../karpenter/overlay.ts";
import { CompositePriceProvider } from "../pricing/composite.ts";
import { StaticPriceProvider, loadStaticPriceTable } from "../pricing/static.ts";
import { FakeClock } from "../shared/clock.ts";
import { seeded } from "../shared/random.ts";
import { WarmupController } from "../warmup/controller.ts";
import { isWavePod } from "../objects/wave.ts";
import { DEFAULT_POLICY, type WarmupPolicy } from "../policy/warmup.ts";
import { mirrorMemoryKube } from "../state/follow.ts";
import { SlotAllocator } from "../webhook/allocator.ts";
import { InMemoryPolicySource } from "../webhook/policy-source.ts";
import { POLICY_SET_API_VERSION, workloadKey, type SpotPolicy } from "../policy/spot.ts";
import { PodCache } from "../webhook/pod-cache.ts";
import { NodeCapacity, SpotRepair } from "../webhook/repair.ts";
import { webhookAdmission } from "./admission.ts";
import {
  buildCatalog,
  buildKwokOfferings,
  buildOfferings,
  type CatalogName,
  type Offering,
} from "./catalog.ts";
import { INTERRUPTION_REASONS, Simulator, poolAllows } from "./simulator.ts";
import { WorkloadError, type WorkloadSeed } from "./workload.ts";

export interface ReplayPolicy {
  spot: SpotPolicy[];
  /** Warmup policy per NodePool; pools not listed use DEFAULT_POLICY (disabled). */
  warmup: Record<string, WarmupPolicy>;
}

export interface ReplayOptions {
  workload: WorkloadSeed;
  policy: ReplayPolicy;
  durationMs: number;
  /** Simulated time per tick (Karpenter's 1 s batch idle window needs 1 s resolution). */
  stepMs?: number;
  /** PRNG seed: both sides of a comparison use the same one, so only the policy differs. */
  seed?: number;
  catalog?: CatalogName;
  /** Launch → node Ready. A real EC2 node takes about a minute. */
  bootDelayMs?: number;
  /** The same per NodePool (the recorded cluster's own boots), else bootDelayMs. */
  poolBootMs?: Readonly<Record<string, number>>;
  /** Per NodePool, a pod's wait for an image its node has not pulled yet (default 0: no pulls). */
  poolPullMs?: Readonly<Record<string, number>>;
  /** Expected spot interruptions per spot node per hour. */
  spotInterruptionRate?: number;
  /** How often the warmup controller reconciles every pool. */
  warmupEveryMs?: number;
  startMs?: number;
  /**
   * Simulated time before measuring: the workload's starting pods get their nodes first, so a
   * replay of a running cluster does not count a cold start of everything (default 0).
   */
  settleMs?: number;
  /**
   * While nothing is in flight (Simulator.quiet) the clock may jump up to this far at once,
   * never past the workload's next change (default: stepMs, i.e. no jumps). Long replays of a
   * steady cluster take seconds instead of minutes; consolidation acts up to this much later.
   */
  quietStepMs?: number;
  /** Called every step with the share of simulated time done (0–1): what a progress bar shows. */
  onProgress?: (fraction: number) => void;
  /**
   * How often the recorded cluster's controllers acted, from each span's start (epoch ms of the
   * simulated clock, ascending): the replay ticks at that period where it is longer than stepMs,
   * so it launches, scales and consolidates no sooner than the cluster it replays did. Before the
   * first span, the first span's period.
   */
  cadence?: readonly CadenceSpan[];
  /**
   * The cluster's Karpenter NodeOverlays: each NodeClaim (and the warmup cost cap's node) priced
   * as Karpenter sees it, by the rules core's machinePrice applies (src/karpenter/overlay.ts).
   */
  overlays?: readonly NodeOverlay[];
}

/** The cluster's control-loop period from `from` on (1 s: it acted continuously, as Karpenter does). */
export interface CadenceSpan {
  from: number;
  stepMs: number;
}

/** The period of the span `at` falls in (the first span's before it; `fallback` without spans). */
export function cadenceAt(spans: readonly CadenceSpan[] | undefined, at: number, fallback: number): number {
  if (!spans || spans.length === 0) return fallback;
  let step = spans[0]?.stepMs ?? fallback;
  for (const s of spans) {
    if (s.from > at) break;
    step = s.stepMs;
  }
  return Math.max(fallback, step);
}

/** The candidate: the current policy with the changes' spot policies and warmup pools replacing theirs. */
export function candidatePolicy(current: ReplayPolicy, changes: ReplayPolicy): ReplayPolicy {
  const spot = new Map(current.spot.map((p) => [workloadKey(p.workload), p]));
  for (const p of changes.spot) spot.set(workloadKey(p.workload), p);
  return { spot: [...spot.values()], warmup: { ...current.warmup, ...changes.warmup } };
}

/** Pods of one Deployment by where they run when the replay ended. */
export interface EndPlacement {
  onDemand: number;
  spot: number;
  pending: number;
}

export interface ReplayResult {
  durationMs: number;
  /** Average cost of every NodeClaim alive over the run, USD per hour. */
  costPerHour: number;
  /** Node-hours by capacity type. */
  nodeHours: { spot: number; onDemand: number };
  /** Per NodePool, averages over the run: nodes and cost rate. */
  pools: Record<string, { nodes: number; costPerHour: number }>;
  /** The run in buckets (about 96): cost rate and workload pods by capacity type — the charts. */
  timeline: TimelineBucket[];
  /** Pod starts by latency: counts per bucket of START_BUCKETS_MS (the last: beyond it). */
  podStartHistogram: number[];
  nodeClaimsCreated: number;
  /** Pending → Running of workload pods (Wave's own pods excluded). */
  podStart: PodStartStats;
  /** The same per Deployment ("namespace/name"), to see which workloads a policy helps. */
  podStartByDeployment: Record<string, PodStartStats>;
  /** Workload pods still pending when the run ended. */
  pendingAtEnd: number;
  spotInterruptions: number;
  /** Pods evicted by higher-priority pods (real pods taking a warm node from a warmup pod). */
  preemptions: number;
  /** Spot node-hours / all node-hours. */
  spotShare: number;
  /** The cluster as the run left it: its cost rate, nodes and each Deployment's placement. */
  end: {
    costPerHour: number;
    nodes: { spot: number; onDemand: number };
    /** Per NodePool: its NodeClaims' cost rate and count. */
    pools: Record<string, { costPerHour: number; nodes: number }>;
    byDeployment: Record<string, EndPlacement>;
  };
}

export interface TimelineBucket {
  /** Bucket start, epoch ms (simulated clock). */
  t: number;
  /** Average cost rate over the bucket, USD per hour. */
  costPerHour: number;
  /** Workload pods running on on-demand and on spot nodes at the bucket's start. */
  onDemandPods: number;
  spotPods: number;
}

/** Upper bounds of the pod-start histogram's buckets (a last bucket counts the rest). */
export const START_BUCKETS_MS = [5_000, 15_000, 30_000, 60_000, 120_000, 300_000] as const;

/** Counts per START_BUCKETS_MS bucket, plus one for longer starts. */
export function startHistogram(latencies: readonly number[]): number[] {
  const out = new Array<number>(START_BUCKETS_MS.length + 1).fill(0);
  for (const l of latencies) {
    const i = START_BUCKETS_MS.findIndex((b) => l <= b);
    out[i < 0 ? START_BUCKETS_MS.length : i] = (out[i < 0 ? START_BUCKETS_MS.length : i] ?? 0) + 1;
  }
  return out;
}

export interface PodStartStats {
  count: number;
  p50Ms: number;
  p95Ms: number;
  maxMs: number;
}

const WAVE_NAMESPACE = "wave";

function stats(latencies: number[]): PodStartStats {
  const sorted = [...latencies].sort((a, b) => a - b);
  return {
    count: sorted.length,
    p50Ms: percentile(sorted, 50),
    p95Ms: percentile(sorted, 95),
    maxMs: sorted.at(-1) ?? 0,
  };
}

/** Nearest-rank percentile of an ascending list (0 when empty). */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return 0;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1] ?? 0;
}

export function offeringsFor(catalog: CatalogName): Offering[] {
  if (catalog === "kwok") return buildKwokOfferings();
  const prices = new CompositePriceProvider({ static: new StaticPriceProvider(loadStaticPriceTable()) });
  return buildOfferings(buildCatalog(), prices);
}

const ms = (t: string | undefined): number | undefined => {
  const v = t === undefined ? NaN : Date.parse(t);
  return Number.isNaN(v) ? undefined : v;
};

/** Runs one workload under one policy for `durationMs` of simulated time. */
export async function replay(opts: ReplayOptions): Promise<ReplayResult> {
  const stepMs = opts.stepMs ?? 1000;
  if (!(opts.durationMs > 0)) throw new RangeError("replay: durationMs must be > 0");
  if (!(stepMs > 0)) throw new RangeError("replay: stepMs must be > 0");
  const clock = new FakeClock(opts.startMs ?? Date.UTC(2026, 0, 5, 8));
  const random = seeded(opts.seed ?? 7);
  // Wave's components never change what they list (frozen: they would throw): shared, not copied.
  // Names per generateName prefix (common random numbers): a warm node's pods do not rename, and
  // so reorder, every pod created after them.
  const kube = new MemoryKube({
    clock,
    random,
    randomFor: (prefix) => seeded(hashOf(`${opts.seed ?? 7}|${prefix}`)),
    historyLimit: 2000,
    sharedLists: true,
  });
  // The state warmup reads, kept in step with the simulated apiserver like informers would.
  const { state } = await mirrorMemoryKube(kube);
  const offerings = offeringsFor(opts.catalog ?? "aws");
  const listPrice = new Map(
    offerings.map((o) => [`${o.type.name}|${o.capacityType}|${o.zone}`, o.usdPerHour]),
  );
  const overlays = orderByWeight(opts.overlays ?? []);
  // A machine's price from its labels: the list price, changed by the NodeOverlay that selects it.
  const priceOfLabels = (l: Readonly<Record<string, string>>): number | undefined => {
    const list = listPrice.get(
      `${l[INSTANCE_TYPE_LABEL] ?? ""}|${l[CAPACITY_TYPE_LABEL] ?? ""}|${l[TOPOLOGY_ZONE_LABEL] ?? ""}`,
    );
    if (list === undefined || overlays.length === 0) return list;
    return overlaidPrice(overlays, l, list)?.usdPerHour ?? list;
  };
  await kube.create("Namespace", { metadata: { name: WAVE_NAMESPACE } });

  const policies = new InMemoryPolicySource({
    apiVersion: POLICY_SET_API_VERSION,
    kind: "SpotPolicySet",
    policies: opts.policy.spot,
  });
  const allocator = new SlotAllocator({
    kube,
    namespace: WAVE_NAMESPACE,
    clock,
    token: tokens(seeded((opts.seed ?? 7) + 1)),
  });
  const sim = new Simulator({
    kube,
    clock,
    offerings,
    random,
    ...(opts.policy.spot.length > 0
      ? { admit: webhookAdmission({ policies, allocator, clock, deadlineMs: 60_000 }) }
      : {}),
    bootDelayMs: opts.bootDelayMs ?? 60_000,
    ...(opts.poolBootMs ? { poolBootMs: opts.poolBootMs } : {}),
    ...(opts.poolPullMs ? { poolPullMs: opts.poolPullMs } : {}),
    spotInterruptionRate: opts.spotInterruptionRate ?? 0.02,
    // Both sides of a comparison interrupt the same launches at the same moments.
    interruptionSeed: (opts.seed ?? 7) + 2,
  });
  // Wave's spot repair (ADR 0006) beside the webhook, as `wave webhook` runs it: part of what a
  // spot policy does (a workload scaled down below its on-demand base gets its slots back).
  const watching = new AbortController();
  const repair =
    opts.policy.spot.length > 0
      ? new SpotRepair({
          kube,
          pods: new PodCache({ kube, clock }).start(watching.signal),
          nodes: new NodeCapacity(kube, clock).start(watching.signal),
          policies,
          allocator,
          clock,
          identity: "whatif",
          token: tokens(seeded((opts.seed ?? 7) + 3)),
        })
      : undefined;
  const warmupPolicies = Object.entries(opts.policy.warmup);
  const warmup =
    warmupPolicies.length > 0
      ? new WarmupController({
          client: kube,
          view: state,
          clock,
          namespace: WAVE_NAMESPACE,
          policyOf: (pool) => opts.policy.warmup[pool] ?? DEFAULT_POLICY,
          priceOf: (what, ct) => {
            if (typeof what !== "string" && overlays.length > 0)
              return priceOfLabels({ ...what.metadata.labels, [CAPACITY_TYPE_LABEL]: ct });
            const type =
              typeof what === "string" ? what : (what.metadata.labels?.[INSTANCE_TYPE_LABEL] ?? "");
            return offerings.find((o) => o.type.name === type && o.capacityType === ct)?.usdPerHour;
          },
        })
      : undefined;

  const settleMs = opts.settleMs ?? 0;
  const measureFrom = clock.now() + settleMs;
  const drive = await opts.workload(kube, measureFrom);
  // A pool no offering satisfies (an AWS-only pool on the KWOK catalog, say) would leave its pods
  // pending all run long and the report would look like a cheap cluster: refuse instead.
  const unsatisfiable = (await kube.list("NodePool")).items
    .filter((pool) => !offerings.some((o) => poolAllows(pool, o)))
    .map((pool) => pool.metadata.name ?? "");
  if (unsatisfiable.length > 0)
    throw new WorkloadError(
      `NodePool${unsatisfiable.length > 1 ? "s" : ""} ${unsatisfiable.join(", ")}: no instance type of the ` +
        `${opts.catalog ?? "aws"} catalog satisfies ${unsatisfiable.length > 1 ? "their" : "its"} requirements`,
    );
  const created = new Map<string, Created>();
  const started = new Map<string, number>();
  const claimsSeen = new Set<string>();
  let usdMs = 0;
  const nodeMs = { spot: 0, onDemand: 0 };
  const poolMs = new Map<string, { nodeMs: number; usdMs: number }>();
  let nextWarmup = clock.now();
  let warmupStarted = false;
  const end = measureFrom + opts.durationMs;
  const quietStepMs = Math.max(stepMs, opts.quietStepMs ?? stepMs);
  // Once per stored NodeClaim version (every step prices every claim; a write replaces the object).
  const claimPrices = new WeakMap<NodeClaim, number>();
  const claimPrice = (c: NodeClaim): number => {
    let usd = claimPrices.get(c);
    if (usd === undefined) {
      usd = priceOfLabels(c.metadata.labels ?? {}) ?? 0;
      claimPrices.set(c, usd);
    }
    return usd;
  };

  // The charts' buckets: about 96 over the run, at least a minute each.
  const bucketMs = Math.max(60_000, Math.ceil(opts.durationMs / 96 / 60_000) * 60_000);
  const timeline: TimelineBucket[] = [];
  const bucketUsd: number[] = [];
  const startAt = clock.now();
  // The pods and claims a step last looked at (peeked arrays: the same while nothing changed).
  let observed: readonly Pod[] | undefined;
  let counted: readonly NodeClaim[] | undefined;
  // The time since the last tick: spot interruptions are drawn over it.
  let elapsed = stepMs;
  while (clock.now() < end) {
    const now = clock.now();
    opts.onProgress?.((now - startAt) / (end - startAt));
    const before = kube.resourceVersion;
    await drive(now);
    await sim.tick(elapsed);
    if (repair) {
      // The repair reads the webhook's pod watch: let it see this tick's changes first.
      for (let i = 0; i < 20 && kube.watchBacklog() > 0; i++) await new Promise((r) => setImmediate(r));
      await repair.tick();
    }
    if (warmup && clock.now() >= nextWarmup) {
      if (!warmupStarted) await warmup.start();
      else await warmup.reconcileAll();
      warmupStarted = true;
      nextWarmup = clock.now() + (opts.warmupEveryMs ?? 5000);
    }
    // How far this step goes: one tick, or further while the cluster is steady.
    // A step that changed nothing jumps to when a controller is next due (a node's boot, a
    // batch window, a validation) instead of ticking through the wait second by second.
    // The recorded cluster's period here: where it acted in coarse steps, so does the replay.
    const period = cadenceAt(opts.cadence, now, stepMs);
    let dt = period;
    if (quietStepMs > period) {
      const due = sim.quiet() ? Infinity : kube.resourceVersion === before ? sim.nextDue() : now;
      const nextChange = drive.nextAt?.() ?? Infinity;
      const limit = Math.min(now + quietStepMs, due, nextChange, end, warmup ? nextWarmup : Infinity);
      dt = Math.max(period, limit - now);
    }
    elapsed = dt;
    const measuring = now >= measureFrom;
    // Each bucket boundary crossed: where the workload's pods run now.
    while (
      measuring &&
      measureFrom + timeline.length * bucketMs <= now &&
      timeline.length * bucketMs < opts.durationMs
    ) {
      timeline.push({ t: measureFrom + timeline.length * bucketMs, costPerHour: 0, ...podsByCapacity(kube) });
    }
    // The same pods (peek's array is the same while none changed) have nothing new to tell.
    const pods = kube.peek("Pod");
    if (measuring && pods !== observed) {
      for (const p of pods) observePod(p, created, started, measureFrom);
      observed = pods;
    }
    const claims = kube.peek("NodeClaim");
    for (const c of claims) {
      if (measuring && claims !== counted) claimsSeen.add(c.metadata.name ?? "");
      // A deleting NodeClaim still runs until drained and terminated: billed, and counted by core.
      if (!measuring) continue;
      const span = Math.min(dt, end - now);
      usdMs += claimPrice(c) * span;
      spread(bucketUsd, claimPrice(c), now - measureFrom, span, bucketMs);
      const poolName = c.metadata.labels?.[NODE_POOL_LABEL] ?? "";
      let pm = poolMs.get(poolName);
      if (!pm) poolMs.set(poolName, (pm = { nodeMs: 0, usdMs: 0 }));
      pm.nodeMs += span;
      pm.usdMs += claimPrice(c) * span;
      if (c.metadata.labels?.[CAPACITY_TYPE_LABEL] === "spot") nodeMs.spot += span;
      else nodeMs.onDemand += span;
    }
    if (measuring) counted = claims;
    await clock.advance(dt);
  }
  watching.abort();
  let interruptions = 0;
  let preemptions = 0;
  for (const e of kube.peek("Event")) {
    const at = ms(e.lastTimestamp ?? e.eventTime ?? e.metadata.creationTimestamp);
    if (at !== undefined && at < measureFrom) continue;
    if (INTERRUPTION_REASONS.has(e.reason ?? "")) interruptions++;
    if (e.reason === "Preempted") preemptions++;
  }

  const all: number[] = [];
  const byDeployment = new Map<string, number[]>();
  for (const [uid, at] of started) {
    const c = created.get(uid);
    if (c === undefined) continue;
    const latency = Math.max(0, at - c.at);
    all.push(latency);
    if (c.deployment !== undefined)
      byDeployment.set(c.deployment, [...(byDeployment.get(c.deployment) ?? []), latency]);
  }
  const pods = (await kube.list("Pod")).items.filter(
    (p) => !isWavePod(p) && !p.metadata.deletionTimestamp && p.status?.phase === "Pending",
  );
  const hour = 3_600_000;
  const endState = endOf(kube, claimPrice);
  return {
    durationMs: opts.durationMs,
    costPerHour: usdMs / opts.durationMs,
    nodeHours: { spot: nodeMs.spot / hour, onDemand: nodeMs.onDemand / hour },
    timeline: timeline.map((b, i) => ({
      ...b,
      costPerHour: (bucketUsd[i] ?? 0) / Math.min(bucketMs, opts.durationMs - i * bucketMs),
    })),
    podStartHistogram: startHistogram(all),
    pools: Object.fromEntries(
      [...poolMs]
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([name, m]) => [
          name,
          { nodes: m.nodeMs / opts.durationMs, costPerHour: m.usdMs / opts.durationMs },
        ]),
    ),
    nodeClaimsCreated: claimsSeen.size,
    podStart: stats(all),
    podStartByDeployment: Object.fromEntries(
      [...byDeployment].sort(([a], [b]) => a.localeCompare(b)).map(([d, l]) => [d, stats(l)]),
    ),
    pendingAtEnd: pods.length,
    spotInterruptions: interruptions,
    preemptions,
    spotShare: nodeMs.spot + nodeMs.onDemand > 0 ? nodeMs.spot / (nodeMs.spot + nodeMs.onDemand) : 0,
    end: endState,
  };
}

/** Adds price × time over [from, from + span) (ms since the measurement began) to the buckets it covers. */
function spread(buckets: number[], price: number, from: number, span: number, bucketMs: number): void {
  let at = from;
  const end = from + span;
  while (at < end) {
    const i = Math.floor(at / bucketMs);
    const upTo = Math.min(end, (i + 1) * bucketMs);
    while (buckets.length <= i) buckets.push(0);
    buckets[i] = (buckets[i] ?? 0) + price * (upTo - at);
    at = upTo;
  }
}

/** Workload pods (Wave's own excluded) bound to on-demand and to spot nodes. */
function podsByCapacity(kube: MemoryKube): { onDemandPods: number; spotPods: number } {
  const capacityOf = new Map(
    kube.peek("Node").map((n) => [n.metadata.name ?? "", n.metadata.labels?.[CAPACITY_TYPE_LABEL]]),
  );
  let onDemandPods = 0;
  let spotPods = 0;
  for (const p of kube.peek("Pod")) {
    if (!p.spec.nodeName || p.metadata.deletionTimestamp || isWavePod(p)) continue;
    const ct = capacityOf.get(p.spec.nodeName);
    if (ct === "spot") spotPods++;
    else if (ct !== undefined) onDemandPods++;
  }
  return { onDemandPods, spotPods };
}

/** What the cluster looks like when the run ends (what the dashboard would show then). */
function endOf(kube: MemoryKube, claimPrice: (c: NodeClaim) => number): ReplayResult["end"] {
  const claims = kube.peek("NodeClaim").filter((c) => !c.metadata.deletionTimestamp);
  const nodes = { spot: 0, onDemand: 0 };
  const pools: ReplayResult["end"]["pools"] = {};
  let costPerHour = 0;
  for (const c of claims) {
    costPerHour += claimPrice(c);
    const pool = (pools[c.metadata.labels?.[NODE_POOL_LABEL] ?? ""] ??= { costPerHour: 0, nodes: 0 });
    pool.costPerHour += claimPrice(c);
    pool.nodes++;
    if (c.metadata.labels?.[CAPACITY_TYPE_LABEL] === "spot") nodes.spot++;
    else nodes.onDemand++;
  }
  const capacityOf = new Map(
    kube.peek("Node").map((n) => [n.metadata.name ?? "", n.metadata.labels?.[CAPACITY_TYPE_LABEL]]),
  );
  const byDeployment: Record<string, EndPlacement> = {};
  for (const p of kube.peek("Pod")) {
    if (isWavePod(p) || p.metadata.deletionTimestamp) continue;
    const d = deploymentOf(p);
    if (d === undefined) continue;
    const e = (byDeployment[d] ??= { onDemand: 0, spot: 0, pending: 0 });
    const ct = p.spec.nodeName ? capacityOf.get(p.spec.nodeName) : undefined;
    if (ct === undefined) e.pending++;
    else if (ct === "spot") e.spot++;
    else e.onDemand++;
  }
  return { costPerHour, nodes, pools, byDeployment };
}

interface Created {
  at: number;
  /** "namespace/name" of the owning Deployment, if any. */
  deployment: string | undefined;
}

function observePod(
  p: Pod,
  created: Map<string, Created>,
  started: Map<string, number>,
  measureFrom: number,
): void {
  const uid = p.metadata.uid ?? "";
  // Seen and started: nothing left to learn (most pods, most steps; parsing dates was ~3 %).
  if (started.has(uid)) return;
  if (isWavePod(p)) return;
  const c = ms(p.metadata.creationTimestamp);
  // Pods from before the measurement (the settle period's starting pods) are not counted.
  if (c === undefined || c < measureFrom) return;
  if (!created.has(uid)) created.set(uid, { at: c, deployment: deploymentOf(p) });
  if (p.status?.phase === "Running" && !started.has(uid)) {
    const s = ms(p.status.startTime);
    if (s !== undefined) started.set(uid, s);
  }
}

/** A ReplicaSet named `<deployment>-<pod-template-hash>` belongs to that Deployment. */
function deploymentOf(p: Pod): string | undefined {
  const rs = p.metadata.ownerReferences?.find((o) => o.kind === "ReplicaSet")?.name;
  const hash = p.metadata.labels?.["pod-template-hash"];
  if (rs === undefined || hash === undefined || !rs.endsWith(`-${hash}`)) return undefined;
  return `${p.metadata.namespace ?? "default"}/${rs.slice(0, -hash.length - 1)}`;
}

/** Deterministic slot tokens, so both runs of a comparison draw identically. */
function tokens(random: () => number): () => string {
  return () => Array.from({ length: 20 }, () => Math.floor(random() * 16).toString(16)).join("");
}

/** FNV-1a of a text: a stream's seed. */
function hashOf(text: string): number {
  let h = 2166136261;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 16777619);
  return h >>> 0;
}
