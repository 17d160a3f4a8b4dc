import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { isDoNotDisrupt } from "../karpenter/labels.ts";
import { CPU, MEMORY } from "../karpenter/resources.ts";
import type { CapacityType, NodeClaim } from "../objects/karpenter.ts";
import type { KubeObject, Node, Pod } from "../objects/kube.ts";
import { KwokPriceProvider } from "../pricing/kwok.ts";
import { seeded } from "../shared/random.ts";
import { ClusterState } from "../state/cluster.ts";
import { DO_NOT_DISRUPT_OWNER_ANNOTATION, DO_NOT_DISRUPT_OWNER_VALUE } from "../objects/wave.ts";
import { aggregatePool, sizeOf, type MachineRow } from "./aggregates.ts";
import { nodeCosts, spotSavings, totalCost } from "./figures/cost.ts";
import { poolUsageVsLimits } from "./figures/limits.ts";
import { MachineIndex, machineIndex } from "./machine-index.ts";
import { machinesOf, NO_POOL, type Machine } from "./machines.ts";
import { nodePool, pod } from "./testkit.ts";
import { buildNodeList, buildNodePools, buildOverview, type ViewInput } from "./views.ts";

const prices = new KwokPriceProvider();
const collator = new Intl.Collator();
const close = (actual: number, expected: number, what: string): void =>
  assert.ok(
    Math.abs(actual - expected) <= 1e-9 * Math.max(1, Math.abs(expected)),
    `${what}: ${actual} ≠ ${expected}`,
  );

const NODES = 14;
const CLAIMS = 14;
const PODS = 40;
const POOLS = ["alpha", "beta", "gamma"];
const TYPES = ["c-4x-amd64-linux", "m-2x-amd64-linux", "s-8x-arm64-linux", "x9.unknown"];
const CTS: (CapacityType | undefined)[] = ["spot", "on-demand", "reserved", undefined];
const ZONES = ["test-zone-a", "test-zone-b", "elsewhere-1a"];
const pidOf = (node: number): string => `kwok://n${node}`;

/** Random Nodes, NodeClaims and Pods over small name spaces, so joins, moves and deletes collide. */
function generator(seed: number) {
  const random = seeded(seed);
  const int = (n: number): number => Math.floor(random() * n);
  const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)] as T;
  let rv = 0;
  const labels = (): Record<string, string> => {
    const l: Record<string, string> = {};
    if (random() < 0.85) l["karpenter.sh/nodepool"] = pick(POOLS);
    if (random() < 0.9) l["node.kubernetes.io/instance-type"] = pick(TYPES);
    const ct = pick(CTS);
    if (ct) l["karpenter.sh/capacity-type"] = ct;
    if (random() < 0.9) l["topology.kubernetes.io/zone"] = pick(ZONES);
    return l;
  };
  const annotations = (): Record<string, string> | undefined => {
    const r = random();
    if (r < 0.7) return undefined;
    if (r < 0.85) return { "karpenter.sh/do-not-disrupt": "true" };
    return {
      "karpenter.sh/do-not-disrupt": "true",
      [DO_NOT_DISRUPT_OWNER_ANNOTATION]: DO_NOT_DISRUPT_OWNER_VALUE,
    };
  };
  /** Random labels, a fresh resourceVersion and a creation time (in that order of draws). */
  const metadata = (name: string, ann: Record<string, string> | undefined) => ({
    name,
    labels: labels(),
    resourceVersion: String(++rv),
    creationTimestamp: new Date(Date.UTC(2026, 0, 1, 0, int(600))).toISOString(),
    ...(ann ? { annotations: ann } : {}),
  });
  const resources = () => ({
    cpu: `${1 + int(16)}${random() < 0.3 ? "500m" : ""}`.replace(/(\d+)500m/, "$1500m"),
    memory: `${1 + int(64)}Gi`,
    pods: "110",
  });
  const node = (i: number): Node => {
    const capacity = resources();
    const ann = annotations();
    return {
      metadata: metadata(`n${i}`, ann),
      spec: random() < 0.8 ? { providerID: pidOf(i) } : {},
      status: {
        capacity,
        allocatable: random() < 0.5 ? capacity : resources(),
        conditions: [{ type: "Ready", status: random() < 0.8 ? "True" : "False" }],
      },
    };
  };
  const claim = (i: number): NodeClaim => {
    const ann = annotations();
    const r = random();
    return {
      metadata: metadata(`c${i}`, ann),
      spec: {},
      status: {
        capacity: resources(),
        ...(random() < 0.6 ? { allocatable: resources() } : {}),
        // By name, by providerID, both (possibly disagreeing) or neither: every join rule runs.
        ...(r < 0.7 ? { nodeName: `n${int(NODES)}` } : {}),
        ...(r > 0.3 && r < 0.9 ? { providerID: pidOf(int(NODES)) } : {}),
      },
    };
  };
  const podOf = (i: number): Pod => {
    const p = pod(
      `p${i}`,
      random() < 0.85 ? `n${int(NODES + 2)}` : undefined, // some bound to Nodes that never exist
      `${100 * (1 + int(20))}m`,
      `${64 * (1 + int(32))}Mi`,
      random() < 0.15 ? "Succeeded" : "Running",
    );
    p.metadata.resourceVersion = String(++rv);
    return p;
  };
  /** One random change to the state. */
  const step = (s: ClusterState): void => {
    const r = random();
    if (r < 0.2) s.apply("Node", "add", node(int(NODES)));
    else if (r < 0.27) {
      const n = s.node(`n${int(NODES)}`);
      if (n) s.apply("Node", "delete", n);
    } else if (r < 0.47) s.apply("NodeClaim", "add", claim(int(CLAIMS)));
    else if (r < 0.54) {
      const c = s.nodeClaim(`c${int(CLAIMS)}`);
      if (c) s.apply("NodeClaim", "delete", c);
    } else if (r < 0.9) s.apply("Pod", "add", podOf(int(PODS)));
    else if (r < 0.97) {
      const p = s.pod("default", `p${int(PODS)}`);
      if (p) s.apply("Pod", "delete", p);
    } else if (random() < 0.5) {
      s.apply("NodePool", "add", nodePool(pick(POOLS), { limits: { cpu: "40", memory: "200Gi" } }));
    }
  };
  return { random, int, step };
}

const isWarm = (objs: KubeObject[]): boolean =>
  objs.some((o) => o.metadata.annotations?.[DO_NOT_DISRUPT_OWNER_ANNOTATION] === DO_NOT_DISRUPT_OWNER_VALUE);

/** The full recompute: machinesOf and per-machine figures over the whole state. */
function reference(s: ClusterState) {
  const machines = machinesOf(s.nodes(), s.nodeClaims());
  const rows: MachineRow[] = machines.map((m) => {
    const objs: KubeObject[] = [];
    const node = m.node === undefined ? undefined : s.node(m.node);
    const nc = m.nodeClaim === undefined ? undefined : s.nodeClaim(m.nodeClaim);
    if (node) objs.push(node);
    if (nc) objs.push(nc);
    return { machine: m, warm: isWarm(objs), doNotDisrupt: objs.some((o) => isDoNotDisrupt(o)) };
  });
  let reqCpu = 0;
  let reqMem = 0;
  let allocCpu = 0;
  let allocMem = 0;
  for (const n of s.nodes()) {
    const u = s.nodeUsage(n.metadata.name ?? "");
    reqCpu += u?.cpuMillis.requested ?? 0;
    reqMem += u?.memoryBytes.requested ?? 0;
    allocCpu += u?.cpuMillis.allocatable ?? 0;
    allocMem += u?.memoryBytes.allocatable ?? 0;
  }
  return {
    machines,
    rows,
    usage: {
      requested: { cpu: reqCpu / 1000, memoryBytes: reqMem },
      allocatable: { cpu: allocCpu / 1000, memoryBytes: allocMem },
    },
  };
}

function checkIndex(s: ClusterState, idx: MachineIndex, where: string): void {
  const ref = reference(s);
  assert.deepEqual(
    idx.rows().map((r) => r.machine),
    ref.machines,
    `${where}: machines`,
  );
  assert.deepEqual(
    idx.rows().map((r) => [r.warm, r.doNotDisrupt]),
    ref.rows.map((r) => [r.warm, r.doNotDisrupt]),
    `${where}: marks`,
  );
  assert.deepEqual(
    idx.rowsByCollatedName().map((r) => r.machine),
    [...ref.machines].sort((a, b) => collator.compare(a.name, b.name)),
    `${where}: node table order`,
  );
  const byPool = new Map<string, MachineRow[]>();
  for (const r of ref.rows) byPool.set(r.machine.nodePool, [...(byPool.get(r.machine.nodePool) ?? []), r]);
  assert.deepEqual(
    new Map([...idx.pools()].sort(([a], [b]) => (a < b ? -1 : 1))),
    new Map([...byPool].sort(([a], [b]) => (a < b ? -1 : 1)).map(([p, rs]) => [p, aggregatePool(p, rs)])),
    `${where}: pools`,
  );
  assert.deepEqual(idx.usage(), ref.usage, `${where}: usage`);
  for (const n of ["n0", "n3", "n7", `n${NODES}`]) {
    const u = s.node(n) ? s.nodeUsage(n) : undefined;
    assert.deepEqual(
      idx.nodeTotals(n),
      u && {
        reqCpu: u.cpuMillis.requested,
        reqMem: u.memoryBytes.requested,
        allocCpu: u.cpuMillis.allocatable,
        allocMem: u.memoryBytes.allocatable,
        pods: u.pods.requested,
      },
      `${where}: ${n} totals`,
    );
  }
}

/** The views over the index against the per-machine figure functions over a full recompute. */
function checkViews(s: ClusterState, where: string): void {
  const { machines, rows, usage } = reference(s);
  const input: ViewInput = { clusterId: "c", state: s, prices, now: Date.UTC(2026, 0, 1, 12) };
  const lines = nodeCosts(machines, prices);
  const total = totalCost(lines);
  const o = buildOverview(input);
  assert.equal(o.nodes, machines.length, where);
  close(o.costPerHour, total.usdPerHour, `${where}: cost/h`);
  assert.deepEqual(o.priceSources, total.sources, `${where}: price sources`);
  close(o.spotSavingsPerHour, spotSavings(machines, prices).savedUsdPerHour, `${where}: savings`);
  const spot = (f: (m: Machine, i: number) => number) => {
    let sp = 0;
    let all = 0;
    machines.forEach((m, i) => {
      const v = f(m, i);
      all += v;
      if (m.capacityType === "spot") sp += v;
    });
    return all > 0 ? sp / all : 0;
  };
  close(
    o.spotRatio.nodes,
    spot(() => 1),
    `${where}: spot by nodes`,
  );
  close(
    o.spotRatio.vcpu,
    spot((m) => Math.max(m.capacity[CPU] ?? 0, m.allocatable[CPU] ?? 0) / 1000),
    `${where}: spot by vCPU`,
  );
  close(
    o.spotRatio.cost,
    spot((_, i) => lines[i]?.usdPerHour ?? 0),
    `${where}: spot by cost`,
  );
  assert.deepEqual([o.requested, o.allocatable], [usage.requested, usage.allocatable], where);
  assert.equal(o.warmup.warmNodes, rows.filter((r) => r.warm).length, `${where}: warm`);
  close(
    o.warmup.costPerHour,
    rows.reduce((a, r, i) => a + (r.warm ? (lines[i]?.usdPerHour ?? 0) : 0), 0),
    `${where}: warm cost`,
  );

  const limits = new Map(poolUsageVsLimits(s.nodePools(), machines).map((l) => [l.nodePool, l]));
  for (const p of buildNodePools(input)) {
    const mine = machines.map((m, i) => ({ m, line: lines[i] })).filter(({ m }) => m.nodePool === p.name);
    assert.equal(p.nodes, mine.length, `${where}: ${p.name} nodes`);
    close(
      p.vcpu,
      mine.reduce((a, { m }) => a + sizeOf(m, CPU) / 1000, 0),
      `${where}: ${p.name} vcpu`,
    );
    assert.equal(
      p.memoryBytes,
      mine.reduce((a, { m }) => a + sizeOf(m, MEMORY), 0),
      where,
    );
    close(
      p.costPerHour,
      mine.reduce((a, { line }) => a + (line?.usdPerHour ?? 0), 0),
      `${where}: pool cost`,
    );
    const cpu = limits.get(p.name)?.limits.find((l) => l.resource === CPU);
    assert.equal(p.limitUsage.cpu, cpu && cpu.limit > 0 ? cpu.usage / cpu.limit : null, `${where}: limit`);
  }

  const list = buildNodeList(input, { limit: 5000 });
  const ordered = [...machines].sort((a, b) => collator.compare(a.name, b.name));
  assert.equal(list.total, machines.length);
  assert.deepEqual(
    list.items.map((n) => [n.name, n.nodeClaim]),
    ordered.map((m) => [m.name, m.nodeClaim ?? null]),
    `${where}: node table`,
  );
  const filtered = buildNodeList(input, { pool: "alpha", sort: "cost", desc: true, limit: 5000 });
  assert.equal(filtered.total, machines.filter((m) => m.nodePool === "alpha").length, where);
  assert.equal(buildNodeList(input, { pool: NO_POOL }).total, 0, where);
}

describe("machine index", () => {
  it("equals a full recompute after random sequences of upserts and deletes", () => {
    for (const seed of [1, 2, 3, 4, 5, 6]) {
      const g = generator(seed);
      const s = new ClusterState();
      const idx = new MachineIndex(s);
      for (let i = 0; i < 600; i++) {
        // Batches deliver coalesced changes (add+delete → nothing), as ingest batches do.
        if (g.random() < 0.2) s.batch(() => Array.from({ length: 1 + g.int(8) }, () => g.step(s)));
        else g.step(s);
        if (g.random() < 0.3) checkIndex(s, idx, `seed ${seed} step ${i}`);
      }
      checkIndex(s, idx, `seed ${seed} end`);
      idx.close();
    }
  });

  it("views equal the per-machine figures over a full recompute", () => {
    for (const seed of [11, 12, 13]) {
      const g = generator(seed);
      const s = new ClusterState();
      for (let i = 0; i < 400; i++) {
        g.step(s);
        if (i % 25 === 0) checkViews(s, `seed ${seed} step ${i}`);
      }
      checkViews(s, `seed ${seed} end`);
    }
  });

  it("is seeded from what the state already holds", () => {
    const g = generator(21);
    const s = new ClusterState();
    for (let i = 0; i < 300; i++) g.step(s);
    const idx = new MachineIndex(s);
    checkIndex(s, idx, "seeded");
    for (let i = 0; i < 100; i++) g.step(s);
    checkIndex(s, idx, "after more changes");
    idx.close();
  });

  it("a change shows in the next read, and a pod change leaves the machines alone", () => {
    const s = new ClusterState();
    const idx = machineIndex(s);
    assert.equal(machineIndex(s), idx, "one index per state");
    assert.equal(idx.rows().length, 0);
    const node: Node = {
      metadata: { name: "n1", labels: { "karpenter.sh/nodepool": "alpha" }, resourceVersion: "1" },
      spec: { providerID: "kwok://n1" },
      status: { capacity: { cpu: "4", memory: "8Gi" }, allocatable: { cpu: "4", memory: "8Gi" } },
    };
    s.apply("Node", "add", node);
    assert.deepEqual(
      idx.rows().map((r) => [r.machine.name, r.machine.nodeClaim]),
      [["n1", undefined]],
    );
    const claim: NodeClaim = {
      metadata: { name: "alpha-x", labels: { "karpenter.sh/nodepool": "alpha" }, resourceVersion: "1" },
      spec: {},
      status: { providerID: "kwok://n1" },
    };
    s.apply("NodeClaim", "add", claim);
    assert.deepEqual(
      idx.rows().map((r) => [r.machine.name, r.machine.nodeClaim]),
      [["n1", "alpha-x"]],
      "the claim joins its node by providerID",
    );
    const rows = idx.rows();
    const pools = idx.pools();
    const alpha = pools.get("alpha");
    s.apply("Pod", "add", pod("p1", "n1", "1500m", "1Gi"));
    assert.equal(idx.usage().requested.cpu, 1.5);
    assert.equal(idx.rows()[0], rows[0], "a pod change does not rebuild machine rows");
    assert.equal(idx.pools().get("alpha"), alpha, "nor pool aggregates");
    s.apply("Node", "delete", node);
    assert.deepEqual(
      idx.rows().map((r) => [r.machine.name, r.machine.node]),
      [["alpha-x", undefined]],
      "the claim is a launching machine again",
    );
    assert.deepEqual(idx.usage().requested, { cpu: 0, memoryBytes: 0 }, "pods on a gone node count nowhere");
  });
});
