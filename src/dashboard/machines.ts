// One row per machine the cluster pays for: every NodeClaim (launched machines cost money before
// their Node registers) joined to its Node, plus Nodes no NodeClaim owns (managed node groups,
// hand-made nodes). Figures work over these rows, never over raw objects.
import type { Node } from "../objects/kube.ts";
import { capacityTypeOf, instanceTypeOf, nodePoolOf, regionOf, zoneOf } from "../karpenter/labels.ts";
import { isReady, providerIDOf } from "../karpenter/node.ts";
import { CPU, MEMORY, parseResources, type Resources } from "../karpenter/resources.ts";
import type { CapacityType, NodeClaim } from "../objects/karpenter.ts";
import { zoneOfProviderID } from "../pricing/types.ts";

/** Key used for machines without a karpenter.sh/nodepool label. */
export const NO_POOL = "(none)";

export interface Machine {
  /** The Node's name once registered, else the NodeClaim's. */
  name: string;
  nodeClaim?: string;
  node?: string;
  nodePool: string;
  instanceType?: string;
  /** spot | on-demand | reserved; undefined when no label says (priced as on-demand). */
  capacityType?: CapacityType;
  zone?: string;
  region?: string;
  /** The Node's labels once registered, else the NodeClaim's: which NodeOverlay prices it. */
  labels?: Readonly<Record<string, string>>;
  /** Capacity: cpu in millicores, memory in bytes. */
  capacity: Resources;
  allocatable: Resources;
  /** ms since epoch. */
  createdAt?: number;
  ready: boolean;
  terminating: boolean;
  /** Input problems (e.g. an unparsable quantity) that made a value fall back to 0. */
  problems: string[];
}

// EKS managed node groups label capacity this way.
const EKS_CAPACITY_LABEL = "eks.amazonaws.com/capacityType";

function capacityTypeOfAny(...objs: (Node | NodeClaim | undefined)[]): CapacityType | undefined {
  for (const o of objs) {
    if (!o) continue;
    const ct = capacityTypeOf(o);
    if (ct) return ct;
    const eks = o.metadata.labels?.[EKS_CAPACITY_LABEL];
    if (eks === "SPOT") return "spot";
    if (eks === "ON_DEMAND") return "on-demand";
  }
  return undefined;
}

function firstOf<T>(
  get: (o: Node | NodeClaim) => T | undefined,
  ...objs: (Node | NodeClaim | undefined)[]
): T | undefined {
  for (const o of objs) {
    const v = o && get(o);
    if (v !== undefined) return v;
  }
  return undefined;
}

function resourcesOf(list: Record<string, string> | undefined, what: string, problems: string[]): Resources {
  try {
    return parseResources(list);
  } catch (err) {
    problems.push(`${what}: ${err instanceof Error ? err.message : String(err)}`);
    return {};
  }
}

function timeOf(ts: string | undefined): number | undefined {
  if (ts === undefined) return undefined;
  const t = Date.parse(ts);
  return Number.isNaN(t) ? undefined : t;
}

/** One machine row: a NodeClaim joined to its Node (either may be absent, not both). */
export function machineOf(nc: NodeClaim | undefined, node: Node | undefined): Machine {
  const problems: string[] = [];
  const name = node?.metadata.name ?? nc?.metadata.name ?? "";
  // Node labels are authoritative once registered; the NodeClaim's fill the launch window.
  const capacity =
    node?.status?.capacity !== undefined
      ? resourcesOf(node.status.capacity, `${name} capacity`, problems)
      : resourcesOf(nc?.status?.capacity, `${name} capacity`, problems);
  const allocatable =
    node?.status?.allocatable !== undefined
      ? resourcesOf(node.status.allocatable, `${name} allocatable`, problems)
      : resourcesOf(nc?.status?.allocatable, `${name} allocatable`, problems);
  const m: Machine = {
    name,
    nodePool: firstOf(nodePoolOf, node, nc) ?? NO_POOL,
    capacity,
    allocatable,
    ready: node !== undefined && isReady(node),
    terminating: (nc ?? node)?.metadata.deletionTimestamp !== undefined,
    problems,
  };
  if (nc?.metadata.name) m.nodeClaim = nc.metadata.name;
  if (node?.metadata.name) m.node = node.metadata.name;
  const it = firstOf(instanceTypeOf, node, nc);
  if (it) m.instanceType = it;
  const ct = capacityTypeOfAny(node, nc);
  if (ct) m.capacityType = ct;
  // No zone label (e.g. a node some other provisioner made): an EC2 providerID names the zone.
  const pid = (node && providerIDOf(node)) ?? (nc && providerIDOf(nc));
  const zone = firstOf(zoneOf, node, nc) ?? zoneOfProviderID(pid);
  if (zone) m.zone = zone;
  const region = firstOf(regionOf, node, nc);
  if (region) m.region = region;
  const labels = node?.metadata.labels ?? nc?.metadata.labels;
  if (labels) m.labels = labels;
  const created = timeOf((nc ?? node)?.metadata.creationTimestamp);
  if (created !== undefined) m.createdAt = created;
  return m;
}

/**
 * The machines' order: by name (code units), and — for the rare rows sharing a name, e.g. two
 * NodeClaims naming one Node — NodeClaim rows first, by NodeClaim name. A total order, so an index
 * kept incrementally lists machines exactly as a full join does.
 */
export function compareMachines(a: Machine, b: Machine): number {
  if (a.name !== b.name) return a.name < b.name ? -1 : 1;
  if (a.nodeClaim === b.nodeClaim) return 0;
  if (a.nodeClaim === undefined) return 1;
  if (b.nodeClaim === undefined) return -1;
  return a.nodeClaim < b.nodeClaim ? -1 : 1;
}

/** Joins NodeClaims to Nodes by status.nodeName, then by provider ID. */
export function machinesOf(nodes: readonly Node[], nodeClaims: readonly NodeClaim[]): Machine[] {
  const byName = new Map<string, Node>();
  const byProvider = new Map<string, Node>();
  for (const n of nodes) {
    if (n.metadata.name) byName.set(n.metadata.name, n);
    const pid = providerIDOf(n);
    if (pid) byProvider.set(pid, n);
  }
  const claimed = new Set<Node>();
  const out: Machine[] = [];
  for (const nc of nodeClaims) {
    const nodeName = nc.status?.nodeName;
    const pid = providerIDOf(nc);
    const node = (nodeName ? byName.get(nodeName) : undefined) ?? (pid ? byProvider.get(pid) : undefined);
    if (node) claimed.add(node);
    out.push(machineOf(nc, node));
  }
  for (const n of nodes) if (!claimed.has(n)) out.push(machineOf(undefined, n));
  return out.sort(compareMachines);
}

/** A machine's size: the larger of capacity and allocatable (KWOK nodes under-report capacity). */
export function sizeOf(m: Machine, resource: string): number {
  return Math.max(m.capacity[resource] ?? 0, m.allocatable[resource] ?? 0);
}

/** A machine's cores by sizeOf: the pools' vCPU and the spot ratio's vCPU basis. */
export function vcpuOf(m: Machine): number {
  return sizeOf(m, CPU) / 1000;
}

export function memoryOf(m: Machine): number {
  return sizeOf(m, MEMORY);
}
