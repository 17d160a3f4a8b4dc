// What consolidation would save, as a plan: where each node's pods would go and what replaces the
// node. Blocked nodes are planned together, the way Karpenter's consolidation simulates a batch
// (pkg/controllers/disruption helpers.go SimulateScheduling: the candidates are taken out of the
// cluster, their pods scheduled on the nodes left): every candidate's pods placed on the other,
// non-candidate nodes, each spare room used once. So the blocked cost is what lifting the blockers
// could really save — seven nodes cannot all move their pod into the same one spare GPU.
import type { NodeDisruptionDto } from "../dto.ts";
import type { ClusterState } from "../../state/cluster.ts";
import type { Node, Pod } from "../../objects/kube.ts";
import { isTerminating } from "../../karpenter/node.ts";
import { isActivePod, nodeAllocatable } from "../../karpenter/room.ts";
import { podMatchesNodeLabels, untoleratedTaints } from "../../karpenter/scheduling.ts";
import { CPU, MEMORY, podRequests, type Resources } from "../../karpenter/resources.ts";
import { nodePoolOf } from "../../karpenter/labels.ts";
import { clusterPrices, machinePrice } from "../figures/price.ts";
import { INSTANCE_TYPE_LABEL } from "../../objects/karpenter.ts";
import { machineOf } from "../machines.ts";
import type { PriceProvider } from "../../pricing/types.ts";
import { parseKwokInstanceType } from "../../pricing/kwok.ts";

/** The sizes (vCPU) of the KWOK provider's generated instance types. */
const KWOK_SIZES = [1, 2, 4, 8, 16, 32, 48, 64, 96, 128, 192, 256];

export interface Room {
  name: string;
  node: Node;
  labels: Record<string, string>;
  free: Resources;
  slots: number;
}

/** Other nodes' free room (largest free CPU first, then by name: the same plan for the same cluster). */
export function roomsOf(state: ClusterState, nodes: readonly Node[]): Room[] {
  const out: Room[] = [];
  for (const n of nodes) {
    const name = n.metadata.name ?? "";
    if (isTerminating(n) || n.spec?.unschedulable) continue;
    const u = state.nodeUsage(name);
    const alloc = nodeAllocatable(n);
    const free: Resources = {};
    for (const [k, v] of Object.entries(alloc)) free[k] = v - (u?.requested[k] ?? 0);
    out.push({
      name,
      node: n,
      labels: n.metadata.labels ?? {},
      free,
      slots: (alloc.pods ?? 110) - (u?.pods.requested ?? 0),
    });
  }
  return out.sort(
    (a, b) => (b.free[CPU] ?? 0) - (a.free[CPU] ?? 0) || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0),
  );
}

/** What the plan has already put on each room (its spare room is used once). */
export type Ledger = Map<Room, Resources>;

/**
 * Places `pods` on `rooms` (first fit), skipping the rooms `excluded` names, on top of what
 * `ledger` holds. Returns the ledger with them placed, or undefined when one fits nowhere.
 */
export function placePods(
  pods: readonly Pod[],
  rooms: readonly Room[],
  excluded: ReadonlySet<string>,
  ledger: Ledger,
): Ledger | undefined {
  const taken: Ledger = new Map([...ledger].map(([r, u]) => [r, { ...u }]));
  for (const p of pods) {
    const req = podRequests(p);
    const cpu = req[CPU] ?? 0;
    let room: Room | undefined;
    for (const r of rooms) {
      // Sorted by free CPU before any placement: past the first too small, none is larger.
      if (cpu > 0 && (r.free[CPU] ?? 0) < cpu) break;
      if (excluded.has(r.name)) continue;
      const used = taken.get(r) ?? {};
      if (r.slots - (used.pods ?? 0) < 1) continue;
      if (Object.entries(req).some(([k, v]) => v > 0 && (r.free[k] ?? 0) - (used[k] ?? 0) < v)) continue;
      if (!podMatchesNodeLabels(p, r.labels, r.name)) continue;
      if (untoleratedTaints(r.node.spec?.taints, p.spec.tolerations).length > 0) continue;
      room = r;
      break;
    }
    if (!room) return undefined;
    const used = taken.get(room) ?? {};
    for (const [k, v] of Object.entries(req)) used[k] = (used[k] ?? 0) + v;
    used.pods = (used.pods ?? 0) + 1;
    taken.set(room, used);
  }
  return taken;
}

export interface Catalog {
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
export function offers(k: Catalog, need: Readonly<Record<string, number>>): boolean {
  for (const [r, q] of Object.entries(need)) {
    if (q <= 0 || r === "pods") continue;
    const has = r === CPU ? k.cpu : r === MEMORY ? k.memory : (k.extended[r] ?? 0);
    if (has < q) return false;
  }
  return true;
}

/** A KWOK sibling size's offering labels: the node's, its type renamed, its size labels dropped. */
function siblingLabels(
  labels: Readonly<Record<string, string>> | undefined,
  instanceType: string,
): Readonly<Record<string, string>> | undefined {
  if (!labels) return undefined;
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(labels)) if (!KWOK_SIZE_LABEL.test(k)) out[k] = v;
  out[INSTANCE_TYPE_LABEL] = instanceType;
  return out;
}

const KWOK_SIZE_LABEL = /^karpenter\.kwok\.sh\/instance-(cpu|memory|size)$/;

/**
 * The machines the cluster runs now, priced, cheapest first: the replacements consolidation could
 * pick among (on KWOK, every size of their families too). Karpenter may know cheaper types than
 * these (its whole catalog), so a replacement's saving here is a lower bound.
 */
export function catalogOf(state: ClusterState, list: PriceProvider): Catalog[] {
  const prices = clusterPrices(list, state.nodeOverlays());
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
    const base = { pool, capacityType: ct, zone: m.zone, region: m.region };
    seen.set(k, {
      ...base,
      instanceType: m.instanceType,
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
        : machinePrice(prices, {
            instanceType: name,
            capacityType: ct,
            zone: m.zone,
            region: m.region,
            labels: siblingLabels(m.labels, name),
          });
      const t = sq && parseKwokInstanceType(name);
      if (!sq || !t) continue;
      const size = { cpu: t.vcpu * 1000, memory: t.memoryBytes, extended: {} };
      seen.set(sk, { ...base, instanceType: name, ...size, usdPerHour: sq.usdPerHour });
    }
  }
  return [...seen.values()].sort(
    (a, b) => a.usdPerHour - b.usdPerHour || a.instanceType.localeCompare(b.instanceType),
  );
}

/** Each pool's NodeClaims' capacity summed (what Karpenter counts against the pool's spec.limits). */
export function poolCapacity(state: ClusterState): Map<string, Resources> {
  const out = new Map<string, Resources>();
  for (const nc of state.nodeClaims()) {
    const pool = nodePoolOf(nc);
    if (!pool || isTerminating(nc)) continue;
    const sum = out.get(pool) ?? {};
    for (const [k, v] of Object.entries(machineOf(nc, undefined).capacity)) sum[k] = (sum[k] ?? 0) + v;
    out.set(pool, sum);
  }
  return out;
}

/** One node as the plan sees it. */
export interface PlanNode {
  name: string;
  pool: string | undefined;
  /** The pods consolidation would evict (not DaemonSet, mirror, finished or Wave's warmup pods). */
  workload: readonly Pod[];
  /** Every active pod (what a replacement must hold). */
  pods: readonly Pod[];
  usdPerHour: number | undefined;
  capacityType: string;
}

export type Saving = Pick<NodeDisruptionDto, "savingsPerHour" | "action" | "replacement">;

const NONE: Saving = { savingsPerHour: 0, action: null, replacement: null };

/** The node replaced by the cheapest machine of its pool and capacity type that holds its pods. */
function replacementSaving(n: PlanNode, catalog: readonly Catalog[]): Saving {
  const price = n.usdPerHour;
  if (price === undefined) return NONE;
  const need: Record<string, number> = {};
  for (const p of n.pods) {
    if (!isActivePod(p)) continue;
    for (const [r, v] of Object.entries(podRequests(p))) need[r] = (need[r] ?? 0) + v;
  }
  const cheaper = catalog.find(
    (k) => k.capacityType === n.capacityType && k.pool === n.pool && k.usdPerHour < price && offers(k, need),
  );
  if (!cheaper) return NONE;
  return {
    savingsPerHour: price - cheaper.usdPerHour,
    action: "replace",
    replacement: {
      instanceType: cheaper.instanceType,
      capacityType: cheaper.capacityType,
      usdPerHour: cheaper.usdPerHour,
    },
  };
}

/** One node alone: deleted when its pods fit in the other nodes' room, else replaced if cheaper. */
export function nodeSaving(n: PlanNode, rooms: readonly Room[], catalog: readonly Catalog[]): Saving {
  if (n.usdPerHour === undefined) return NONE;
  if (n.workload.length === 0 || placePods(n.workload, rooms, new Set([n.name]), new Map()))
    return { savingsPerHour: n.usdPerHour, action: "delete", replacement: null };
  return replacementSaving(n, catalog);
}

/**
 * The candidates planned together: taken out of the cluster (none receives another's pods), in
 * Karpenter's order — cheapest to disrupt first (fewest pods to evict), then the costlier node,
 * then by name — each deleted when its pods fit in the room the earlier ones left, else replaced.
 */
export function planSavings(
  candidates: readonly PlanNode[],
  rooms: readonly Room[],
  catalog: readonly Catalog[],
): Map<string, Saving> {
  const out = new Map<string, Saving>();
  const excluded = new Set(candidates.map((c) => c.name));
  const order = [...candidates].sort(
    (a, b) =>
      a.workload.length - b.workload.length ||
      (b.usdPerHour ?? 0) - (a.usdPerHour ?? 0) ||
      (a.name < b.name ? -1 : a.name > b.name ? 1 : 0),
  );
  let ledger: Ledger = new Map();
  for (const c of order) {
    if (c.usdPerHour === undefined) {
      out.set(c.name, NONE);
      continue;
    }
    const placed = c.workload.length === 0 ? ledger : placePods(c.workload, rooms, excluded, ledger);
    if (placed) {
      ledger = placed;
      out.set(c.name, { savingsPerHour: c.usdPerHour, action: "delete", replacement: null });
    } else out.set(c.name, replacementSaving(c, catalog));
  }
  return out;
}
