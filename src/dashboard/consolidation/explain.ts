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
import { isActivePod, isDaemonSetPod, nodeAllocatable } from "../../karpenter/room.ts";
import { podMatchesNodeLabels, untoleratedTaints } from "../../karpenter/scheduling.ts";
import { CPU, MEMORY, podRequests, type Resources } from "../../karpenter/resources.ts";
import { nodePoolOf } from "../../karpenter/labels.ts";
import { machinePrice } from "../figures/price.ts";
import { machineOf } from "../machines.ts";
import type { PriceProvider } from "../../pricing/types.ts";
import { parseKwokInstanceType } from "../../pricing/kwok.ts";

/** The sizes (vCPU) of the KWOK provider's generated instance types. */
const KWOK_SIZES = [1, 2, 4, 8, 16, 32, 48, 64, 96, 128, 192, 256];
import { blockerFix } from "./fixes.ts";

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

interface Room {
  node: Node;
  labels: Record<string, string>;
  free: Resources;
  slots: number;
}

/** Other nodes' free room, for "would its pods fit elsewhere" (first fit, largest room first). */
function roomsOf(state: ClusterState, nodes: readonly Node[]): Room[] {
  const out: Room[] = [];
  for (const n of nodes) {
    const name = n.metadata.name ?? "";
    if (isTerminating(n) || n.spec?.unschedulable) continue;
    const u = state.nodeUsage(name);
    const alloc = nodeAllocatable(n);
    const free: Resources = {};
    for (const [k, v] of Object.entries(alloc)) free[k] = v - (u?.requested[k] ?? 0);
    out.push({
      node: n,
      labels: n.metadata.labels ?? {},
      free,
      slots: (alloc.pods ?? 110) - (u?.pods.requested ?? 0),
    });
  }
  return out.sort((a, b) => (b.free[CPU] ?? 0) - (a.free[CPU] ?? 0));
}

function fitsElsewhere(pods: readonly Pod[], self: string, rooms: readonly Room[]): boolean {
  const taken = new Map<Room, Resources>();
  for (const p of pods) {
    const req = podRequests(p);
    const cpu = req[CPU] ?? 0;
    const room = firstRoom(rooms, (r) => {
      // Rooms are sorted by free CPU, largest first: past the first too small, none is larger.
      if (cpu > 0 && (r.free[CPU] ?? 0) < cpu) return "stop";
      if (r.node.metadata.name === self) return false;
      const used = taken.get(r) ?? {};
      if (r.slots - (used.pods ?? 0) < 1) return false;
      for (const [k, v] of Object.entries(req))
        if (v > 0 && (r.free[k] ?? 0) - (used[k] ?? 0) < v) return false;
      return (
        podMatchesNodeLabels(p, r.labels, r.node.metadata.name ?? "") &&
        untoleratedTaints(r.node.spec?.taints, p.spec.tolerations).length === 0
      );
    });
    if (!room) return false;
    const used = taken.get(room) ?? {};
    for (const [k, v] of Object.entries(req)) used[k] = (used[k] ?? 0) + v;
    used.pods = (used.pods ?? 0) + 1;
    taken.set(room, used);
  }
  return true;
}

/** The first room `fits` accepts; "stop" ends the search (nothing after it can fit). */
function firstRoom(rooms: readonly Room[], fits: (r: Room) => boolean | "stop"): Room | undefined {
  for (const r of rooms) {
    const f = fits(r);
    if (f === "stop") return undefined;
    if (f) return r;
  }
  return undefined;
}

interface Catalog {
  /** The NodePool that runs it: a replacement comes from the node's own pool (its requirements). */
  pool: string | undefined;
  instanceType: string;
  capacityType: "spot" | "on-demand" | "reserved";
  zone: string | undefined;
  region: string | undefined;
  cpu: number;
  memory: number;
  /** Its other allocatable resources (GPUs, …); a size only known by name offers none. */
  extended: Readonly<Record<string, number>>;
  usdPerHour: number;
}

/** Whether `k` offers what pods asking `need` (all resources summed) ask for. */
function offers(k: Catalog, need: Readonly<Record<string, number>>): boolean {
  for (const [r, q] of Object.entries(need)) {
    if (q <= 0 || r === "pods") continue;
    const has = r === CPU ? k.cpu : r === MEMORY ? k.memory : (k.extended[r] ?? 0);
    if (has < q) return false;
  }
  return true;
}

/**
 * The machines the cluster runs now, priced: the replacements consolidation could pick among (on
 * KWOK, every size of their families too). Karpenter may know cheaper types than these (its whole
 * catalog), so a replacement's savings here is a lower bound.
 */
function catalogOf(state: ClusterState, prices: PriceProvider): Catalog[] {
  const seen = new Map<string, Catalog>();
  for (const nc of state.nodeClaims()) {
    const m = machineOf(nc, state.nodeForNodeClaim(nc.metadata.name ?? ""));
    if (!m.instanceType) continue;
    const q = machinePrice(prices, m);
    if (!q) continue;
    const ct = m.capacityType ?? "on-demand";
    const pool = nodePoolOf(nc);
    const k = `${pool ?? ""}/${m.instanceType}/${ct}/${m.zone ?? ""}`;
    if (seen.has(k)) continue;
    const { [CPU]: cpu, [MEMORY]: memory, ...extended } = m.allocatable;
    seen.set(k, {
      pool,
      instanceType: m.instanceType,
      capacityType: ct,
      zone: m.zone,
      region: m.region,
      cpu: cpu ?? 0,
      memory: memory ?? 0,
      extended,
      usdPerHour: q.usdPerHour,
    });
    // A KWOK cluster's catalog is known by name: the same family's other sizes.
    const kwok = parseKwokInstanceType(m.instanceType);
    if (!kwok) continue;
    for (const n of KWOK_SIZES) {
      const name = `${kwok.family}-${n}x-${kwok.arch}-${kwok.os}`;
      const sk = `${pool ?? ""}/${name}/${ct}/${m.zone ?? ""}`;
      const sq = seen.has(sk)
        ? undefined
        : machinePrice(prices, { instanceType: name, capacityType: ct, zone: m.zone, region: m.region });
      if (!sq) continue;
      const t = parseKwokInstanceType(name);
      if (!t) continue;
      seen.set(sk, {
        pool,
        instanceType: name,
        capacityType: ct,
        zone: m.zone,
        region: m.region,
        cpu: t.vcpu * 1000,
        memory: t.memoryBytes,
        extended: {},
        usdPerHour: sq.usdPerHour,
      });
    }
  }
  return [...seen.values()].sort((a, b) => a.usdPerHour - b.usdPerHour);
}

/**
 * Explains every Karpenter node of the cluster (a node with a NodeClaim or a NodePool label; nodes
 * being deleted are left out: Karpenter is already disrupting them).
 */
export function explainNodes(input: ExplainInput): NodeDisruptionDto[] {
  const { state, now } = input;
  const byObject = eventsByObject(input.events);
  const pdbs = state.podDisruptionBudgets();
  const nodes = state.nodes();
  const rooms = roomsOf(state, nodes);
  const catalog = catalogOf(state, input.prices);
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

  const out: NodeDisruptionDto[] = [];
  for (const node of nodes) {
    const name = node.metadata.name ?? "";
    const nc = state.nodeClaimForNode(name);
    const poolName = nodePoolOf(node) ?? (nc && nodePoolOf(nc));
    if (!nc && !poolName) continue;
    if (isTerminating(node) || (nc && isTerminating(nc))) continue;
    const pool = poolName ? state.nodePool(poolName) : undefined;
    const pods = state.podsOnNode(name, { includeTerminal: false });
    out.push(
      explainNode({
        input,
        node,
        nc,
        poolName,
        pool,
        pods,
        pdbs,
        rooms,
        catalog,
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
  return out;
}

interface NodeCtx {
  input: ExplainInput;
  node: Node;
  nc: NodeClaim | undefined;
  poolName: string | undefined;
  pool: NodePool | undefined;
  pods: readonly Pod[];
  pdbs: readonly PodDisruptionBudget[];
  rooms: readonly Room[];
  catalog: readonly Catalog[];
  events: readonly Event[];
  poolNodes: number;
  poolDisrupting: number;
  now: number;
}

function explainNode(c: NodeCtx): NodeDisruptionDto {
  const { node, nc, pool, poolName, now } = c;
  const name = node.metadata.name ?? "";
  const ncName = nc?.metadata.name ?? null;
  const version = c.input.karpenterVersion;
  const blockers: BlockerDto[] = [];
  const add = (
    b: Omit<BlockerDto, "fix" | "blocking" | "pods" | "until" | "source"> & Partial<BlockerDto>,
  ): void => {
    const full: BlockerDto = {
      blocking: true,
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

  // What consolidating it would save now.
  const m = machineOf(nc, node);
  const q = machinePrice(c.input.prices, m);
  let savings = 0;
  let action: NodeDisruptionDto["action"] = null;
  let replacement: NodeDisruptionDto["replacement"] = null;
  if (q) {
    if (empty || fitsElsewhere(workload, name, c.rooms)) {
      savings = q.usdPerHour;
      action = "delete";
    } else {
      // Every resource its pods ask for (a GPU node's pods need a GPU type), in the node's own pool.
      const need: Record<string, number> = {};
      for (const p of c.pods) {
        if (!isActivePod(p)) continue;
        for (const [r, v] of Object.entries(podRequests(p))) need[r] = (need[r] ?? 0) + v;
      }
      const ct = m.capacityType ?? "on-demand";
      const cheaper = c.catalog.find(
        (k) => k.capacityType === ct && k.pool === poolName && k.usdPerHour < q.usdPerHour && offers(k, need),
      );
      if (cheaper) {
        savings = q.usdPerHour - cheaper.usdPerHour;
        action = "replace";
        replacement = {
          instanceType: cheaper.instanceType,
          capacityType: cheaper.capacityType,
          usdPerHour: cheaper.usdPerHour,
        };
      }
    }
  }

  return {
    node: name,
    nodeClaim: ncName,
    nodePool: poolName ?? null,
    disruptable: !blockers.some((b) => b.blocking),
    empty,
    costPerHour: q?.usdPerHour ?? null,
    savingsPerHour: savings,
    action,
    replacement,
    blockers,
    events: c.events.slice(0, EVENTS_PER_NODE).map(eventDto),
  };
}
