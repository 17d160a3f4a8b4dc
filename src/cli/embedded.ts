// The embedded simulated cluster behind `npm start` without a kubeconfig: the in-memory apiserver,
// the simulated Karpenter/scheduler/kubelets, the living scenario (src/sim/living.ts), Wave's
// admission in the apiserver's admission path (the same review() as `wave webhook`) and the spot
// repair beside it. It starts `historyMs` in the past and fast-forwards to now, so the dashboard
// opens on hours of real history; then it runs in real time.
import type { MemoryKube } from "../kube/memory/memory.ts";
import type { Clock } from "../shared/clock.ts";
import type { Logger } from "../shared/log.ts";
import { seeded } from "../shared/random.ts";
import type { PriceProvider } from "../pricing/types.ts";
import { webhookAdmission } from "../sim/admission.ts";
import { buildCatalog, buildOfferings } from "../sim/catalog.ts";
import { fastForwardStepMs, type LaggingClock } from "../sim/clock.ts";
import { LIVING_SPOT_POLICIES, LIVING_WARMUP, seedLivingCluster } from "../sim/living.ts";
import { Simulator } from "../sim/simulator.ts";
import type { SlotAllocator } from "../webhook/allocator.ts";
import type { SpotMetrics } from "../webhook/metrics.ts";
import type { PodCache } from "../webhook/pod-cache.ts";
import type { PolicySource } from "../webhook/policy-source.ts";
import { workloadKey, type SpotPolicy } from "../policy/spot.ts";
import { NodeCapacity, SpotRepair } from "../webhook/repair.ts";
import type { Store } from "../core/store/store.ts";
import type { Prehistory } from "./prehistory.ts";

/** Real-time step once caught up. */
const STEP_MS = 1000;
/** Real time each fast-forward step yields, so the agent streams and core keeps up. */
const YIELD_MS = 2;
/** Watch events the watchers may be behind by before a fast-forward step waits (pipelining). */
const WATCH_SLACK = 0;
/** Longest real wait for the watchers per fast-forward step. */
const MAX_WAIT_MS = 2000;
/** Longest real wait for core to read the cluster before the fast-forward starts anyway. */
const LIVE_WAIT_MS = 60_000;
/** The prehistory's first minutes, stepped finely: the empty cluster launching its first nodes. */
const BOOT_MS = 2 * 60_000;
const BOOT_STEP_MS = 5000;
/** Expected spot interruptions per spot node per hour: a few an hour across the spot pools. */
export const LIVING_SPOT_INTERRUPTION_RATE = 0.15;

export interface EmbeddedClusterOptions {
  kube: MemoryKube;
  /** The cluster's clock: lags real time by the history to generate, fast-forwards it away. */
  simClock: LaggingClock;
  /** Real time (paces the loop once caught up). */
  clock: Clock;
  prices: PriceProvider;
  policies: PolicySource;
  allocator: SlotAllocator;
  pods: PodCache;
  metrics?: SpotMetrics;
  log: Logger;
  signal: AbortSignal;
  /**
   * Whether everything downstream has taken in the changes so far (the agent's unacked deltas);
   * a fast-forward step waits for it, so core's history follows the cluster instead of lagging.
   */
  drained?: () => boolean;
  /**
   * Whether core reads the cluster (the agent's first snapshot is in its state). The fast-forward
   * waits for it: minutes it jumped over before that never reach core's history, and the first
   * screen would show the present with no past (no history chart, no savings).
   */
  live?: () => boolean;

  /**
   * Stores a spot policy the scenario sets during its day (on a running Deployment: adoption) the
   * way a user's lands: core's store, then the webhook's set. Without it the scenario sets none.
   */
  setSpotPolicy?: (policy: SpotPolicy) => Promise<void>;

  /**
   * Largest simulated step while fast-forwarding (coarser = faster start, rougher history). The
   * scenario's warmup ramps hit only at LIVING_MAX_STEP_MS (30 s), which doubles the start-up; the
   * default stays the fast-forward's own until the simulator converges within a step (issue 38).
   */
  maxStepMs?: number;
  /**
   * The far past generated in process (prehistory.ts) until the clock lags by `tailMs` only; then
   * `streamed()` runs (the agent starts) and the rest streams through the agent and core as above.
   */
  prehistory?: {
    feed: Prehistory;
    tailMs: number;
    streamed: () => void;
  };
}

export interface EmbeddedCluster {
  /** Resolves once the simulated clock has caught up with real time. */
  caughtUp: Promise<void>;
  /** Resolves when the loop has ended (after `signal` aborts). */
  done: Promise<void>;
}

/** Stores the scenario's spot and warmup policies, unless the cluster already has its own. */
export async function seedLivingPolicies(store: Store, clusterId: string, now: number): Promise<void> {
  if ((await store.listPolicies(clusterId, "spot")).length === 0) {
    for (const p of LIVING_SPOT_POLICIES) {
      const w = p.workload;
      await store.putPolicy(clusterId, "spot", `${w.namespace}/${w.kind}/${w.name}`, p, now);
    }
  }
  if ((await store.listPolicies(clusterId, "warmup")).length === 0) {
    for (const [pool, policy] of Object.entries(LIVING_WARMUP))
      await store.putPolicy(clusterId, "warmup", pool, policy, now);
  }
}

/**
 * The scenario's policy set during the day, as a user's: stored in core unless the cluster already
 * has one for that workload (the user's own stays), then loaded into the webhook's set.
 */
export async function putScenarioSpotPolicy(
  store: Store,
  clusterId: string,
  policy: SpotPolicy,
  now: number,
  reload: () => Promise<void>,
): Promise<void> {
  const key = workloadKey(policy.workload);
  if (await store.getPolicy(clusterId, "spot", key)) return;
  await store.putPolicy(clusterId, "spot", key, policy, now);
  await reload();
}

/** Seeds the scenario and runs the cluster until `signal` aborts. */
export async function runEmbeddedCluster(o: EmbeddedClusterOptions): Promise<EmbeddedCluster> {
  const { kube, simClock, log, signal } = o;
  const sim = new Simulator({
    kube,
    clock: simClock,
    offerings: buildOfferings(buildCatalog(), o.prices),
    random: seeded(7),
    spotInterruptionRate: LIVING_SPOT_INTERRUPTION_RATE,
    // Wave's admission in the apiserver's path: the webhook's own review(), applied in process.
    admit: webhookAdmission({
      policies: o.policies,
      allocator: o.allocator,
      clock: simClock,
      // In process, nothing times out an admission; fast-forward must not trip the deadline.
      deadlineMs: 60_000,
      logger: log,
      ...(o.metrics ? { metrics: o.metrics } : {}),
    }),
    log,
  });
  // Self-heal beside the webhook (ADR 0006), as `wave webhook` runs it: one pass per step.
  // Node capacity types, for adoption of pods that ran before their policy (living.ts sets one).
  const nodes = new NodeCapacity(kube, simClock, log).start(signal);
  const repair = new SpotRepair({
    kube,
    nodes,
    pods: o.pods,
    policies: o.policies,
    allocator: o.allocator,
    clock: simClock,
    logger: log,
    ...(o.metrics ? { metrics: o.metrics } : {}),
    identity: "embedded",
  });
  const drive = await seedLivingCluster(kube, undefined, o.setSpotPolicy);
  let caught: () => void = () => undefined;
  const caughtUp = new Promise<void>((resolve) => (caught = resolve));
  const step = async (dtMs: number): Promise<void> => {
    try {
      await drive(simClock.now());
      await sim.tick(dtMs);
      await repair.tick();
    } catch (err) {
      log.warn("simulated cluster step failed", { err });
    }
  };
  const aborted = (): boolean => signal.aborted;
  const done = (async () => {
    let lastStep = STEP_MS;
    const pre = o.prehistory;
    if (pre) {
      await pre.feed.begin();
      const bootUntil = simClock.now() + BOOT_MS;
      while (simClock.lag > pre.tailMs && !signal.aborted) {
        const from = simClock.now();
        await step(lastStep);
        // Fine steps while the empty cluster gets its first nodes, so history starts with them.
        const maxStepMs = from < bootUntil ? BOOT_STEP_MS : o.maxStepMs;
        lastStep = Math.min(fastForwardStepMs(simClock.lag, maxStepMs), simClock.lag - pre.tailMs);
        simClock.catchUp(lastStep);
        await pre.feed.stepped(from, simClock.now());
        // The pod cache (the webhook's ledgers) reads each step, and the warmup controller, poked
        // by core's state, takes its pass before the next one.
        do await new Promise((r) => setImmediate(r));
        while (kube.watchBacklog() > 0 && !aborted());
      }
      if (aborted()) {
        pre.feed.close();
        caught();
        return;
      }
      await pre.feed.end();
      pre.streamed();
    }
    const live = (): boolean | undefined => (pre ? o.live?.() !== false && pre.feed.streaming() : o.live?.());
    const liveBy = Date.now() + LIVE_WAIT_MS;
    while (live() === false && Date.now() < liveBy && !signal.aborted)
      await new Promise((r) => setTimeout(r, 10));
    if (live() === false) log.warn("core does not read the simulated cluster yet: fast-forwarding anyway");
    while (!signal.aborted) {
      await step(lastStep);
      if (simClock.lag > 0) {
        lastStep = fastForwardStepMs(simClock.lag, o.maxStepMs);
        simClock.catchUp(lastStep);
        // Back-pressure: the next step waits until the watchers (the agent, the pod cache) have
        // read this one's changes, so core's history follows the cluster instead of lagging it.
        const until = Date.now() + MAX_WAIT_MS;
        do await new Promise((r) => setTimeout(r, YIELD_MS));
        while ((kube.watchBacklog() > WATCH_SLACK || o.drained?.() === false) && Date.now() < until);
        if (simClock.lag === 0) caught();
      } else {
        caught();
        lastStep = STEP_MS;
        await o.clock.sleep(STEP_MS, signal).catch(() => undefined);
      }
    }
    caught();
  })();
  return { caughtUp, done };
}
