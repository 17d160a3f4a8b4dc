// Why Karpenter does not consolidate a node, per node (pure over the cluster's state, its kept
// Karpenter Events and a price lookup): each blocker with the object that causes it and the fix,
// and what consolidating the node would save. One definition for the API (GET …/consolidation,
// the node drawer) and /metrics. docs/consolidation.md describes each reason.
import type { BlockerDto, KarpenterEventDto, NodeDisruptionDto, ObjectRefDto } from "../dto.ts";
import type { ClusterState } from "../../state/cluster.ts";
import type { Event, Node, Pod, PodDisruptionBudget } from "../../objects/kube.ts";
import { DO_NOT_DISRUPT_ANNOTATION, type NodeClaim, type NodePool } from "../../objects/karpenter.ts";
import {
  DO_NOT_DISRUPT_OWNER_ANNOTATION,
  DO_NOT_DISRUPT_OWNER_VALUE,
  isWarmupPod,
  MIRROR_POD_ANNOTATION,
} from "../../objects/wave.ts";
import { bindingBudget, budgetsNow, selectorMatches } from "../../karpenter/budgets.ts";
import { parseDuration } from "../../karpenter/duration.ts";
import { DISRUPTION_EVENT_REASONS, eventTime, parseDisruptionMessage } from "../../karpenter/events/parse.ts";
import { conditionOf, isInitialized, isTerminating } from "../../karpenter/node.ts";
import { isActivePod, isDaemonSetPod } from "../../karpenter/room.ts";
import { nodePoolOf } from "../../karpenter/labels.ts";
import { staticReplicas } from "../../karpenter/static-pool.ts";
import { machinePrice } from "../figures/price.ts";
import { machineOf } from "../machines.ts";
import type { PriceProvider } from "../../pricing/types.ts";
import { blockerFix, noGainFix } from "./fixes.ts";
import { NO_SAVING, staticBlocker } from "./static-blocker.ts";
import { catalogOf, nodeSaving, planSavings, roomsOf, type PlanNode, type Saving } from "./plan.ts";

export interface ExplainInput {
  state: ClusterState;
  prices: PriceProvider;
  /** Karpenter's Events the cluster's core kept (any order; older than their hour included). */
  events: readonly Event[];
  karpenterVersion: string | undefined;
  now: number;
}

const REASONS = new Set<string>(DISRUPTION_EVENT_REASONS);
/** Karpenter's own Events on a node older than this are shown, but no longer read as blockers. */
export const EVENT_BLOCKER_MAX_AGE_MS = 15 * 60_000;
const EVENTS_PER_NODE = 20;

const ref = (kind: string, name: string, namespace: string | null = null): ObjectRefDto => ({
  kind,
  namespace,
  name,
});
const podKey = (p: Pod): string => `${p.metadata.namespace ?? ""}/${p.metadata.name ?? ""}`;

/** Pods Karpenter would evict to consolidate the node (not DaemonSet, mirror or finished pods). */
function evictable(pods: readonly Pod[]): Pod[] {
  return pods.filter(
    (p) =>
      isActivePod(p) && !isDaemonSetPod(p) && p.metadata.annotations?.[MIRROR_POD_ANNOTATION] === undefined,
  );
}

function hasController(p: Pod): boolean {
  return (p.metadata.ownerReferences ?? []).some((o) => o.controller === true);
}

/** Karpenter Events per involved Node/NodeClaim/NodePool name, newest first. */
export function eventsByObject(events: readonly Event[]): Map<string, Event[]> {
  const out = new Map<string, Event[]>();
  for (const e of events) {
    const k = `${e.involvedObject.kind ?? ""}/${e.involvedObject.namespace ?? ""}/${e.involvedObject.name ?? ""}`;
    const list = out.get(k);
    if (list) list.push(e);
    else out.set(k, [e]);
  }
  for (const list of out.values()) list.sort((a, b) => eventTime(b) - eventTime(a));
  return out;
}

export function eventDto(e: Event): KarpenterEventDto {
  return {
    at: eventTime(e),
    reason: e.reason ?? "",
    message: e.message ?? "",
    count: e.count ?? 1,
    object: ref(e.involvedObject.kind ?? "", e.involvedObject.name ?? "", e.involvedObject.namespace ?? null),
  };
}

/**
 * Explains every Karpenter node of the cluster (a node with a NodeClaim or a NodePool label; nodes
 * being deleted are left out: Karpenter is already disrupting them). The blocked nodes' savings are
 * one plan (plan.ts): what lifting every blocker could save together; the others' each alone.
 */
export function explainNodes(input: ExplainInput): NodeDisruptionDto[] {
  const { state, now } = input;
  const byObject = eventsByObject(input.events);
  const pdbs = state.podDisruptionBudgets();
  const nodes = state.nodes();
  // Nodes per pool (budgets count them) and how many are being disrupted now.
  const poolNodes = new Map<string, number>();
  const poolDisrupting = new Map<string, number>();
  for (const nc of state.nodeClaims()) {
    const pool = nodePoolOf(nc);
    if (!pool) continue;
    poolNodes.set(pool, (poolNodes.get(pool) ?? 0) + 1);
    const st = state.nodeClaimState(nc.metadata.name ?? "");
    if (isTerminating(nc) || st?.phase === "Disrupting" || st?.phase === "Terminating")
      poolDisrupting.set(pool, (poolDisrupting.get(pool) ?? 0) + 1);
  }

  const explained: { dto: Explained; plan: PlanNode }[] = [];
  for (const node of nodes) {
    const name = node.metadata.name ?? "";
    const nc = state.nodeClaimForNode(name);
    const poolName = nodePoolOf(node) ?? (nc && nodePoolOf(nc));
    if (!nc && !poolName) continue;
    if (isTerminating(node) || (nc && isTerminating(nc))) continue;
    const pool = poolName ? state.nodePool(poolName) : undefined;
    const pods = state.podsOnNode(name, { includeTerminal: false });
    explained.push(
      explainNode({
        input,
        node,
        nc,
        poolName,
        pool,
        pods,
        pdbs,
        events: [
          ...(byObject.get(`Node//${name}`) ?? []),
          ...(nc ? (byObject.get(`NodeClaim//${nc.metadata.name ?? ""}`) ?? []) : []),
        ].sort((a, b) => eventTime(b) - eventTime(a)),
        poolNodes: poolName ? (poolNodes.get(poolName) ?? 0) : 0,
        poolDisrupting: poolName ? (poolDisrupting.get(poolName) ?? 0) : 0,
        now,
      }),
    );
  }
  const rooms = roomsOf(state, nodes);
  const catalog = catalogOf(state, input.prices);
  const held = explained.filter((e) => e.dto.blockers.some((b) => b.blocking));
  const plan = planSavings(
    held.map((e) => e.plan),
    rooms,
    catalog,
  );
  return explained.map(({ dto, plan: p }) => {
    // A static pool's node: Karpenter keeps it whatever it would save (so no saving is worked out).
    if (dto.static) return { ...dto, ...NO_SAVING, blocked: false, disruptable: false };
    const saving: Saving = plan.get(p.name) ?? nodeSaving(p, rooms, catalog);
    const blocking = dto.blockers.some((b) => b.blocking);
    const gain = saving.savingsPerHour > 0;
    return {
      ...dto,
      ...saving,
      blockers: gain ? dto.blockers : dto.blockers.map((b) => ({ ...b, fix: noGainFix(b.fix) })),
      blocked: blocking && gain,
      disruptable: !blocking && !dto.waiting,
    };
  });
}

/** A node explained but not priced yet (the plan prices the blocked ones together). */
type Explained = Omit<NodeDisruptionDto, keyof Saving | "blocked" | "disruptable">;

interface NodeCtx {
  input: ExplainInput;
  node: Node;
  nc: NodeClaim | undefined;
  poolName: string | undefined;
  pool: NodePool | undefined;
  pods: readonly Pod[];
  pdbs: readonly PodDisruptionBudget[];
  events: readonly Event[];
  poolNodes: number;
  poolDisrupting: number;
  now: number;
}

/** The node's entry from its blockers and workload: its price, events and plan input. */
function entryOf(
  c: NodeCtx,
  blockers: BlockerDto[],
  workload: Pod[],
  isStatic: boolean,
): { dto: Explained; plan: PlanNode } {
  const name = c.node.metadata.name ?? "";
  const m = machineOf(c.nc, c.node);
  const q = machinePrice(c.input.prices, m);
  return {
    dto: {
      node: name,
      nodeClaim: c.nc?.metadata.name ?? null,
      nodePool: c.poolName ?? null,
      waiting: blockers.some((b) => b.waiting),
      static: isStatic,
      empty: workload.length === 0,
      costPerHour: q?.usdPerHour ?? null,
      blockers,
      events: c.events.slice(0, EVENTS_PER_NODE).map(eventDto),
    },
    plan: {
      name,
      pool: c.poolName,
      workload,
      pods: c.pods.filter(isActivePod),
      usdPerHour: q?.usdPerHour,
      capacityType: m.capacityType ?? "on-demand",
    },
  };
}

function explainNode(c: NodeCtx): { dto: Explained; plan: PlanNode } {
  const { node, nc, pool, poolName, now } = c;
  const name = node.metadata.name ?? "";
  const ncName = nc?.metadata.name ?? null;
  const version = c.input.karpenterVersion;
  const blockers: BlockerDto[] = [];
  const add = (
    b: Omit<BlockerDto, "fix" | "blocking" | "waiting" | "pods" | "until" | "source"> & Partial<BlockerDto>,
  ): void => {
    const full: BlockerDto = {
      blocking: true,
      waiting: false,
      pods: [],
      until: null,
      source: "state",
      fix: null,
      ...b,
    };
    full.fix = b.fix ?? blockerFix(full, { pool, node, version });
    blockers.push(full);
  };
  const nodeRef = ref("Node", name);
  const poolRef = ref("NodePool", poolName ?? "");

  const workload = evictable(c.pods).filter((p) => !isWarmupPod(p));
  const empty = workload.length === 0;
  // A static pool's node: its one "blocker" says why (static-blocker.ts); nothing else is read.
  const replicas = staticReplicas(pool);
  if (replicas !== undefined) return entryOf(c, [staticBlocker(poolName ?? "", replicas)], workload, true);

  // Not initialized yet: Karpenter does not disrupt it.
  if (!isInitialized(node))
    add({
      reason: "not-initialized",
      message: `node ${name} is not initialized yet`,
      object: nc ? ref("NodeClaim", ncName ?? "") : nodeRef,
    });

  // do-not-disrupt on the Node or NodeClaim: Wave's warm node, or a user's mark.
  const ann = { ...(nc?.metadata.annotations ?? {}), ...(node.metadata.annotations ?? {}) };
  if (ann[DO_NOT_DISRUPT_ANNOTATION] === "true") {
    if (ann[DO_NOT_DISRUPT_OWNER_ANNOTATION] === DO_NOT_DISRUPT_OWNER_VALUE)
      add({
        reason: "wave-warm-node",
        message: `Wave's warmup holds ${name} warm (karpenter.sh/do-not-disrupt)`,
        object: nodeRef,
      });
    else {
      const onNode = node.metadata.annotations?.[DO_NOT_DISRUPT_ANNOTATION] === "true";
      add({
        reason: "do-not-disrupt-node",
        message: `${onNode ? "node" : "NodeClaim"} carries karpenter.sh/do-not-disrupt`,
        object: onNode || !ncName ? nodeRef : ref("NodeClaim", ncName),
      });
    }
  }

  // Pods with do-not-disrupt (finished pods do not count).
  for (const p of c.pods) {
    if (!isActivePod(p) || p.metadata.annotations?.[DO_NOT_DISRUPT_ANNOTATION] !== "true") continue;
    add({
      reason: "do-not-disrupt-pod",
      message: `pod ${podKey(p)} carries karpenter.sh/do-not-disrupt`,
      object: ref("Pod", p.metadata.name ?? "", p.metadata.namespace ?? null),
      pods: [podKey(p)],
    });
  }

  // PDBs that allow no disruption, with the pods of this node they cover.
  for (const pdb of c.pdbs) {
    if ((pdb.status?.disruptionsAllowed ?? 1) > 0) continue;
    const ns = pdb.metadata.namespace ?? "";
    const covered = workload.filter(
      (p) => p.metadata.namespace === ns && selectorMatches(pdb.spec.selector, p.metadata.labels),
    );
    if (covered.length === 0) continue;
    add({
      reason: "pdb",
      message: `PodDisruptionBudget ${ns}/${pdb.metadata.name ?? ""} allows 0 disruptions (${covered.length} of its pods on this node)`,
      object: ref("PodDisruptionBudget", pdb.metadata.name ?? "", ns),
      pods: covered.map(podKey),
    });
  }

  if (pool) {
    const d = pool.spec.disruption ?? {};
    // WhenEmpty: only empty nodes are consolidated.
    if (d.consolidationPolicy === "WhenEmpty" && !empty)
      add({
        reason: "when-empty",
        message: `NodePool ${poolName ?? ""} consolidates only empty nodes (WhenEmpty); ${workload.length} pods run here`,
        object: poolRef,
        pods: workload.slice(0, 20).map(podKey),
      });
    // consolidateAfter: Never disables it; else the time since the last pod event.
    let after: number | null | undefined;
    try {
      after = d.consolidateAfter === undefined ? undefined : parseDuration(d.consolidateAfter);
    } catch {
      after = undefined;
    }
    const cond = nc ? conditionOf(nc.status?.conditions, "Consolidatable") : undefined;
    if (after === null)
      add({
        reason: "consolidation-disabled",
        message: `NodePool ${poolName ?? ""} has consolidateAfter: Never`,
        object: poolRef,
      });
    else if (after !== undefined && cond?.status !== "True") {
      const base =
        Date.parse(nc?.status?.lastPodEventTime ?? "") ||
        Date.parse(nc ? (conditionOf(nc.status?.conditions, "Initialized")?.lastTransitionTime ?? "") : "") ||
        Date.parse(node.metadata.creationTimestamp ?? "");
      const until = Number.isNaN(base) || !base ? null : base + after;
      if (cond?.status === "False" || (until !== null && until > now))
        add({
          reason: "consolidate-after",
          // A wait that ends by itself: not a blocker, nothing to change.
          blocking: false,
          waiting: true,
          message:
            until !== null && until > now
              ? `consolidateAfter ${d.consolidateAfter ?? ""} not elapsed: ${Math.ceil((until - now) / 1000)} s left`
              : `consolidateAfter ${d.consolidateAfter ?? ""}: Karpenter has not marked it consolidatable yet`,
          object: poolRef,
          until: until !== null && until > now ? until : null,
        });
    }
    // The pool's disruption budget for this node's consolidation reason.
    const budgets = budgetsNow(pool, empty ? "Empty" : "Underutilized", c.poolNodes, now);
    const bind = bindingBudget(budgets);
    if (bind && bind.allowed - c.poolDisrupting <= 0) {
      const nodesText = bind.budget.nodes;
      add({
        reason: "budget",
        message:
          `NodePool ${poolName ?? ""}'s disruption budget allows ${nodesText} node(s) now` +
          (bind.budget.schedule
            ? ` (schedule "${bind.budget.schedule}" for ${bind.budget.duration ?? "?"})`
            : "") +
          (c.poolDisrupting > 0 ? `, ${c.poolDisrupting} being disrupted` : ""),
        object: poolRef,
        until: bind.activeUntil ?? null,
      });
    }
  }

  // Pods without a controller: evicted, nothing recreates them (a caution, not a blocker).
  for (const p of workload) {
    if (hasController(p)) continue;
    add({
      reason: "no-controller",
      blocking: false,
      message: `pod ${podKey(p)} has no controller: consolidation evicts it and nothing recreates it`,
      object: ref("Pod", p.metadata.name ?? "", p.metadata.namespace ?? null),
      pods: [podKey(p)],
    });
  }

  // Karpenter's own word, recent enough to still hold: what the objects above do not show.
  const seen = new Set(blockers.map((b) => b.reason));
  for (const e of c.events.slice(0, EVENTS_PER_NODE)) {
    if (!REASONS.has(e.reason ?? "") || now - eventTime(e) > EVENT_BLOCKER_MAX_AGE_MS) continue;
    if (e.reason === "ConsolidationCandidate") continue;
    const p = parseDisruptionMessage(e.message ?? "");
    if (p.reason === "pods-fit-nowhere" && !seen.has("pods-fit-nowhere")) {
      seen.add("pods-fit-nowhere");
      const [ns = "", pn = ""] = (p.pod ?? "/").split("/");
      add({
        reason: "pods-fit-nowhere",
        message: `pod ${p.pod ?? "?"} would schedule on no other node: ${p.podError ?? p.message}`,
        object: ref("Pod", pn, ns),
        pods: p.pod ? [p.pod] : [],
        source: "event",
      });
    } else if (p.reason === "other" || p.reason === "spot-to-spot" || p.reason === "uninitialized-neighbor") {
      if (seen.has("karpenter")) continue;
      seen.add("karpenter");
      add({
        reason: "karpenter",
        message: `${e.reason ?? ""}: ${p.message}`,
        object: nodeRef,
        source: "event",
      });
    }
  }

  return entryOf(c, blockers, workload, false);
}
