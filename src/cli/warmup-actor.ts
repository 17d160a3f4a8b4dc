// The warmup controller as it runs beside a cluster's agent (ADR 0014), in `wave agent` and in
// `wave start`: it reads the state the agent's informers fill, takes its policies from the
// WarmupPolicy resources in that state (issue 31; `wave agent`) or from what core sends over the
// agent stream (`wave start`, and a cluster without the CRD) — remembered either way, so it keeps
// acting on the last known good set — reports what it did through the stream, and writes each
// WarmupPolicy's status.
import type { KubeClient } from "../kube/port.ts";
import { clusterPrices, placesOf, priceLookup } from "../dashboard/figures/price.ts";
import type { NodeOverlay } from "../objects/karpenter.ts";
import type { PriceProvider } from "../pricing/types.ts";
import type { Clock } from "../shared/clock.ts";
import type { Logger } from "../shared/log.ts";
import { WarmupController } from "../warmup/controller.ts";
import { PolicySet, type PolicyMemory } from "../warmup/policy-set.ts";
import { WarmupStatusWriter } from "../warmup/policy-status.ts";
import type { ClusterState } from "../state/cluster.ts";
import { ownWarmupPolicy, type WarmupPolicyResource } from "../objects/policy-crds.ts";
import type { WarmupEvent } from "../warmup/stats.ts";
import { warmupTriggers } from "../warmup/triggers.ts";
import type { WarmupView } from "../warmup/view.ts";
import type { WireWarmupEvent } from "../wire/warmup.ts";

/** The name of the ConfigMap (in Wave's namespace) that remembers the last policies core sent. */
export const WARMUP_POLICIES_CONFIGMAP = "wave-warmup-policies";

export interface WarmupActor {
  controller: WarmupController;
  policies: PolicySet;
  /** For runController: state changes and policy changes reconcile a pool before its requeue. */
  triggers: (poke: (pool: string) => void) => () => void;
  /** Core sent the cluster's set (Agent's onWarmupPolicies); ignored once the resources decide. */
  setPolicies(next: readonly { pool: string; value: unknown }[]): void;
  /** Writes the WarmupPolicies' status (with `resources` only). */
  statuses: WarmupStatusWriter | undefined;
}

/** A warmup event as the agent stream carries it. */
export function toWire(e: WarmupEvent): WireWarmupEvent {
  switch (e.type) {
    case "created":
      return { type: "created", pool: e.pool, at: e.at, pod: e.pod };
    case "hit":
      return {
        type: "hit",
        pool: e.pool,
        at: e.at,
        node: e.node,
        pod: e.pod,
        since: e.since,
        seconds: e.seconds,
      };
    case "miss":
      return {
        type: "miss",
        pool: e.pool,
        at: e.at,
        node: e.node,
        pod: e.pod,
        reason: e.reason,
        since: e.since,
      };
    case "prepull":
      return { type: "prepull", pool: e.pool, at: e.at, node: e.node, image: e.image, reason: e.outcome };
  }
}

/** The WarmupPolicy resources of a state its informers fill (createWarmupActor's `resources`). */
export function policyResources(
  state: ClusterState,
  synced: Promise<unknown>,
  /** This install's namespace: WarmupPolicies another install applied are not its own. */
  namespace: string,
): NonNullable<Parameters<typeof createWarmupActor>[0]["resources"]> {
  return {
    list: () => state.warmupPolicies().filter((cr) => ownWarmupPolicy(cr, namespace)),
    onChange: (fn) => state.on("WarmupPolicy", () => fn()),
    synced,
  };
}

/** Not started: run `controller` with runController while leading, after `policies.restore()`. */
export function createWarmupActor(o: {
  kube: KubeClient;
  /** The cluster state the agent's informers fill; only Wave's own pods are read from `kube`. */
  view: WarmupView;
  prices: PriceProvider;
  /** The cluster's NodeOverlays in Karpenter's order (`ClusterState.nodeOverlays`): the cost cap's prices. */
  overlays?: () => readonly NodeOverlay[];
  clock: Clock;
  log: Logger;
  namespace: string;
  /** Where warmup and pull pods go (default: namespace). */
  podNamespace?: string | undefined;
  memory: PolicyMemory;
  /** Every event the controller reports (to the agent's warmup outbox). */
  report: (e: WarmupEvent) => void;
  /**
   * The WarmupPolicy resources: the state the agent's informers fill, and when their first list
   * is in (never, while the CRD is missing: core's set and the remembered one stay in force).
   */
  resources?: {
    /** The WarmupPolicies as the state holds them now. */
    list: () => readonly WarmupPolicyResource[];
    /** Calls `fn` after each change of them; returns the unsubscriber. */
    onChange: (fn: () => void) => () => void;
    synced: Promise<unknown>;
  };
}): WarmupActor {
  const { prices } = o;
  const policies = new PolicySet({ memory: o.memory, log: o.log });
  const statuses = o.resources
    ? new WarmupStatusWriter({
        kube: o.kube,
        resources: () => o.resources?.list() ?? [],
        outcome: (pool) => controller.outcome(pool),
        poolExists: (pool) => o.view.nodePool(pool) !== undefined,
        clock: o.clock,
        log: o.log,
      })
    : undefined;
  const controller = new WarmupController({
    client: o.kube,
    view: o.view,
    clock: o.clock,
    namespace: o.namespace,
    ...(o.podNamespace ? { podNamespace: o.podNamespace } : {}),
    policyOf: policies.get,
    // A new node is priced where the pool's nodes run, else where the cluster's do (the lookup
    // has no region without a place, and the cost cap must not count the node as free).
    // Priced as core prices the node (machinePrice): the cluster's NodeOverlays as they are now.
    priceOf: (what, ct, places, labels) =>
      priceLookup(clusterPrices(prices, o.overlays?.() ?? []), () => placesOf(o.view.nodes()))(
        what,
        ct,
        places,
        labels,
      ),
    log: o.log,
    onEvent: (e) => {
      o.report(e);
      statuses?.record(e);
    },
  });
  const pokes = new Set<(pool: string) => void>();
  const stateTriggers = warmupTriggers(o.view);
  if (o.resources) {
    const { list, onChange, synced } = o.resources;
    const apply = (): void => {
      for (const pool of policies.fromResources(list())) for (const poke of pokes) poke(pool);
    };
    synced.then(
      () => {
        apply();
        onChange(apply);
      },
      () => undefined,
    );
  }
  return {
    statuses,
    controller,
    policies,
    triggers: (poke) => {
      pokes.add(poke);
      const unsubscribe = stateTriggers(poke);
      return () => {
        pokes.delete(poke);
        unsubscribe();
      };
    },
    setPolicies: (next) => {
      for (const pool of policies.replace(next)) for (const poke of pokes) poke(pool);
    },
  };
}
