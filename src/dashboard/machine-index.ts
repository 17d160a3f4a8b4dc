// The dashboard's view of a ClusterState kept current as objects change: machine rows (each
// NodeClaim joined to its Node, plus unclaimed Nodes), per-pool aggregates and requested /
// allocatable totals. A view at 5,000 nodes then does O(pools + changed objects) work instead of
// re-joining every NodeClaim and re-summing every node whenever the state's version moves.
//
// Thin and stateful on purpose: the listener only marks keys dirty (O(1) per change, so a
// 150k-pod snapshot ingests at full speed); the next read re-joins the marked keys with the same
// rules as machinesOf (machines.ts) and re-aggregates the pools they touched with the pure
// aggregatePool. Assumes providerIDs name one Node each, as they do in Kubernetes.
import { isDoNotDisrupt } from "../karpenter/labels.ts";
import { providerIDOf } from "../karpenter/node.ts";
import type { Resources } from "../karpenter/resources.ts";
import type { KubeObject } from "../objects/kube.ts";
import type { ClusterState } from "../state/cluster.ts";
import { DO_NOT_DISRUPT_OWNER_ANNOTATION, DO_NOT_DISRUPT_OWNER_VALUE } from "../objects/wave.ts";
import { aggregatePool, type MachineRow, type PoolAggregate } from "./aggregates.ts";
import { compareMachines, machineOf } from "./machines.ts";

export interface UsageTotals {
  /** Cores and bytes requested by the non-terminal pods bound to existing nodes. */
  requested: { cpu: number; memoryBytes: number };
  allocatable: { cpu: number; memoryBytes: number };
}

/** One node's requests and allocatable (as ClusterState.nodeUsage reports them). */
export interface NodeTotals {
  /** Millicores and bytes. */
  reqCpu: number;
  reqMem: number;
  allocCpu: number;
  allocMem: number;
  /** Non-terminal pods bound to the node. */
  pods: number;
}

/** Node-name order as the node table shows it (same order as String#localeCompare). */
const collator = new Intl.Collator();
const byCollatedName = (a: MachineRow, b: MachineRow): number =>
  collator.compare(a.machine.name, b.machine.name) || compareMachines(a.machine, b.machine);
const byMachine = (a: MachineRow, b: MachineRow): number => compareMachines(a.machine, b.machine);

/** Where `row` stands (or would stand) in `arr`, sorted by `cmp`: the first place not before it. */
function lowerBound(
  arr: MachineRow[],
  row: MachineRow,
  cmp: (a: MachineRow, b: MachineRow) => number,
): number {
  let lo = 0;
  let hi = arr.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (cmp(arr[mid] as MachineRow, row) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function insertSorted(arr: MachineRow[], row: MachineRow, cmp: (a: MachineRow, b: MachineRow) => number) {
  arr.splice(lowerBound(arr, row, cmp), 0, row);
}

function removeSorted(arr: MachineRow[], row: MachineRow, cmp: (a: MachineRow, b: MachineRow) => number) {
  const lo = lowerBound(arr, row, cmp);
  if (arr[lo] === row) arr.splice(lo, 1);
  else throw new Error(`machine index out of order at ${row.machine.name}`);
}

function addTo<K, V>(index: Map<K, Set<V>>, key: K | undefined, member: V): void {
  if (key === undefined) return;
  let set = index.get(key);
  if (!set) index.set(key, (set = new Set()));
  set.add(member);
}

function removeFrom<K, V>(index: Map<K, Set<V>>, key: K | undefined, member: V): void {
  if (key === undefined) return;
  const set = index.get(key);
  if (!set) return;
  set.delete(member);
  if (set.size === 0) index.delete(key);
}

/**
 * name → names, for links that almost always have one member (a Node's NodeClaim): a plain
 * string until a second member arrives, so 5,000 nodes do not cost 15,000 Sets.
 */
type Links = Map<string, string | Set<string>>;

function link(m: Links, key: string | undefined, member: string): void {
  if (key === undefined) return;
  const cur = m.get(key);
  if (cur === undefined) m.set(key, member);
  else if (typeof cur === "string") {
    if (cur !== member) m.set(key, new Set([cur, member]));
  } else cur.add(member);
}

function unlink(m: Links, key: string | undefined, member: string): void {
  if (key === undefined) return;
  const cur = m.get(key);
  if (cur === undefined) return;
  if (typeof cur === "string") {
    if (cur === member) m.delete(key);
    return;
  }
  cur.delete(member);
  const [only] = cur;
  if (cur.size === 1 && only !== undefined) m.set(key, only);
  else if (cur.size === 0) m.delete(key);
}

function linked(m: Links, key: string | undefined): Iterable<string> {
  const cur = key === undefined ? undefined : m.get(key);
  return cur === undefined ? [] : typeof cur === "string" ? [cur] : cur;
}

const isWarm = (objs: readonly KubeObject[]): boolean =>
  objs.some((o) => o.metadata.annotations?.[DO_NOT_DISRUPT_OWNER_ANNOTATION] === DO_NOT_DISRUPT_OWNER_VALUE);

export class MachineIndex {
  readonly #state: ClusterState;
  readonly #unsubscribe: () => void;

  // Marked by the listener, handled by the next read.
  #pendingNodes = new Set<string>();
  #pendingClaims = new Set<string>();
  #pendingUsage = new Set<string>();

  // The join, as last computed.
  readonly #nodePid = new Map<string, string>();
  readonly #nodeByPid = new Map<string, string>();
  readonly #claimLink = new Map<string, { nodeName: string | undefined; pid: string | undefined }>();
  readonly #claimsByNodeName: Links = new Map();
  readonly #claimsByPid: Links = new Map();
  /** NodeClaim → the Node it joined (absent: none). */
  readonly #joined = new Map<string, string>();
  /** Node → the NodeClaims joined to it; a Node without any is a machine of its own. */
  readonly #claimedBy: Links = new Map();

  // Rows of NodeClaims (joined or not) and of unclaimed Nodes, and the same rows in two orders.
  readonly #claimRows = new Map<string, MachineRow>();
  readonly #nodeRows = new Map<string, MachineRow>();
  readonly #ordered: MachineRow[] = [];
  readonly #collated: MachineRow[] = [];
  readonly #poolMembers = new Map<string, Set<MachineRow>>();
  readonly #pools = new Map<string, PoolAggregate>();
  readonly #dirtyPools = new Set<string>();

  readonly #usage = new Map<string, NodeTotals>();
  #usageTotals: UsageTotals | undefined;

  constructor(state: ClusterState) {
    this.#state = state;
    this.#unsubscribe = state.subscribe(
      (c) => {
        if (c.kind === "Node") {
          this.#pendingNodes.add(c.key);
          this.#pendingUsage.add(c.key);
        } else if (c.kind === "NodeClaim") {
          this.#pendingClaims.add(c.key);
        } else if (c.kind === "Pod") {
          const now = c.object.spec.nodeName;
          const before = c.previous?.spec.nodeName;
          if (now) this.#pendingUsage.add(now);
          if (before && before !== now) this.#pendingUsage.add(before);
        }
      },
      ["Node", "NodeClaim", "Pod"],
    );
    // Seed: everything already stored counts as changed.
    for (const n of state.nodes()) if (n.metadata.name) this.#pendingNodes.add(n.metadata.name);
    for (const nc of state.nodeClaims()) if (nc.metadata.name) this.#pendingClaims.add(nc.metadata.name);
    for (const name of this.#pendingNodes) this.#pendingUsage.add(name);
  }

  /** Stops following the state. */
  close(): void {
    this.#unsubscribe();
  }

  /** Machine rows in machinesOf order (name, then NodeClaim rows first). Do not mutate. */
  rows(): readonly MachineRow[] {
    this.#sync();
    return this.#ordered;
  }

  /** The same rows in the node table's name order (Intl.Collator). Do not mutate. */
  rowsByCollatedName(): readonly MachineRow[] {
    this.#sync();
    return this.#collated;
  }

  /** Aggregates of every pool that has machines, by pool name. */
  pools(): ReadonlyMap<string, PoolAggregate> {
    this.#sync();
    for (const name of this.#dirtyPools) {
      const members = this.#poolMembers.get(name);
      if (!members || members.size === 0) {
        this.#pools.delete(name);
        continue;
      }
      // Machine order, so the sums are exactly those of one pass over machinesOf.
      this.#pools.set(name, aggregatePool(name, [...members].sort(byMachine)));
    }
    this.#dirtyPools.clear();
    return this.#pools;
  }

  /** Summed machine capacity per pool (what Karpenter counts against limits). */
  capacityByPool(): Map<string, Resources> {
    return new Map([...this.pools()].map(([name, p]) => [name, p.capacity]));
  }

  /** Requested and allocatable cores and memory summed over the nodes. */
  usage(): UsageTotals {
    this.#sync();
    if (this.#usageTotals) return this.#usageTotals;
    let reqCpu = 0;
    let reqMem = 0;
    let allocCpu = 0;
    let allocMem = 0;
    for (const c of this.#usage.values()) {
      reqCpu += c.reqCpu;
      reqMem += c.reqMem;
      allocCpu += c.allocCpu;
      allocMem += c.allocMem;
    }
    this.#usageTotals = {
      requested: { cpu: reqCpu / 1000, memoryBytes: reqMem },
      allocatable: { cpu: allocCpu / 1000, memoryBytes: allocMem },
    };
    return this.#usageTotals;
  }

  /** A stored node's requests and allocatable; undefined for a name no Node has. */
  nodeTotals(name: string): Readonly<NodeTotals> | undefined {
    this.#sync();
    return this.#usage.get(name);
  }

  // ---- the incremental join -------------------------------------------------------------------

  #sync(): void {
    if (this.#pendingNodes.size === 0 && this.#pendingClaims.size === 0 && this.#pendingUsage.size === 0)
      return;
    const rejoin = new Set<string>();
    const recheck = new Set<string>(); // nodes whose standalone row may appear, go or change
    const nodes = this.#pendingNodes;
    const claims = this.#pendingClaims;
    const usage = this.#pendingUsage;
    this.#pendingNodes = new Set();
    this.#pendingClaims = new Set();
    this.#pendingUsage = new Set();

    for (const name of nodes) {
      const node = this.#state.node(name);
      const oldPid = this.#nodePid.get(name);
      const pid = node ? providerIDOf(node) : undefined;
      if (oldPid !== undefined && this.#nodeByPid.get(oldPid) === name) this.#nodeByPid.delete(oldPid);
      if (pid === undefined) this.#nodePid.delete(name);
      else {
        this.#nodePid.set(name, pid);
        this.#nodeByPid.set(pid, name);
      }
      for (const c of linked(this.#claimsByNodeName, name)) rejoin.add(c);
      for (const p of [oldPid, pid]) for (const c of linked(this.#claimsByPid, p)) rejoin.add(c);
      recheck.add(name);
    }

    for (const name of claims) {
      const old = this.#claimLink.get(name);
      if (old) {
        unlink(this.#claimsByNodeName, old.nodeName, name);
        unlink(this.#claimsByPid, old.pid, name);
        this.#claimLink.delete(name);
      }
      const nc = this.#state.nodeClaim(name);
      if (nc) {
        const to = { nodeName: nc.status?.nodeName || undefined, pid: providerIDOf(nc) };
        this.#claimLink.set(name, to);
        link(this.#claimsByNodeName, to.nodeName, name);
        link(this.#claimsByPid, to.pid, name);
      }
      rejoin.add(name);
    }

    for (const name of rejoin) {
      const nc = this.#state.nodeClaim(name);
      const to = this.#claimLink.get(name);
      // machinesOf's rule: the Node named in status.nodeName, else the one with the providerID.
      let target: string | undefined;
      if (nc && to) {
        if (to.nodeName !== undefined && this.#state.node(to.nodeName)) target = to.nodeName;
        else if (to.pid !== undefined) target = this.#nodeByPid.get(to.pid);
      }
      const before = this.#joined.get(name);
      if (before !== target) {
        unlink(this.#claimedBy, before, name);
        if (before !== undefined) recheck.add(before);
        if (target === undefined) this.#joined.delete(name);
        else {
          this.#joined.set(name, target);
          link(this.#claimedBy, target, name);
          recheck.add(target);
        }
      }
      const node = target === undefined ? undefined : this.#state.node(target);
      this.#setRow(this.#claimRows, name, nc ? this.#row(nc, node) : undefined);
    }

    for (const name of recheck) {
      const node = this.#state.node(name);
      const standalone = node !== undefined && !this.#claimedBy.has(name);
      // A Node row is rebuilt only when the Node itself changed or it just became standalone.
      if (!standalone) this.#setRow(this.#nodeRows, name, undefined);
      else if (nodes.has(name) || !this.#nodeRows.has(name))
        this.#setRow(this.#nodeRows, name, this.#row(undefined, node));
    }

    for (const name of usage) {
      const u = this.#state.node(name) ? this.#state.nodeUsage(name) : undefined;
      if (u)
        this.#usage.set(name, {
          reqCpu: u.cpuMillis.requested,
          reqMem: u.memoryBytes.requested,
          allocCpu: u.cpuMillis.allocatable,
          allocMem: u.memoryBytes.allocatable,
          pods: u.pods.requested,
        });
      else this.#usage.delete(name);
    }
    if (usage.size > 0) this.#usageTotals = undefined;
  }

  #row(nc: Parameters<typeof machineOf>[0], node: Parameters<typeof machineOf>[1]): MachineRow {
    const objs: KubeObject[] = [];
    if (node) objs.push(node);
    if (nc) objs.push(nc);
    return {
      machine: machineOf(nc, node),
      warm: isWarm(objs),
      doNotDisrupt: objs.some((o) => isDoNotDisrupt(o)),
    };
  }

  #setRow(rows: Map<string, MachineRow>, key: string, row: MachineRow | undefined): void {
    const old = rows.get(key);
    if (old) {
      removeSorted(this.#ordered, old, byMachine);
      removeSorted(this.#collated, old, byCollatedName);
      removeFrom(this.#poolMembers, old.machine.nodePool, old);
      this.#dirtyPools.add(old.machine.nodePool);
      rows.delete(key);
    }
    if (!row) return;
    rows.set(key, row);
    insertSorted(this.#ordered, row, byMachine);
    insertSorted(this.#collated, row, byCollatedName);
    addTo(this.#poolMembers, row.machine.nodePool, row);
    this.#dirtyPools.add(row.machine.nodePool);
  }
}

/** The index following `state`, created (and seeded from its content) on first use; kept by the state. */
export function machineIndex(state: ClusterState): MachineIndex {
  return state.derived(MachineIndex, () => new MachineIndex(state));
}
