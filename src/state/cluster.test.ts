import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { fixtures } from "../../test/fixtures/karpenter/load.ts";
import type { DaemonSet, Node, Pod } from "../objects/kube.ts";
import type { NodeClaim } from "../objects/karpenter.ts";
import { ClusterState, nodeSize, stateHandlers, type StateChange } from "./cluster.ts";

const MiB = 2 ** 20;
const GiB = 2 ** 30;
const NODE = "festive-hopper-2913848191";

/** A state holding the fixture pool, the spot claim+node, the drifted on-demand claim+node and pods. */
function loaded(): ClusterState {
  const s = new ClusterState();
  s.apply("NodePool", "add", fixtures.nodePool());
  s.apply("NodeClaim", "add", fixtures.nodeClaim("initialized"));
  s.apply("NodeClaim", "add", fixtures.nodeClaim("drifted"));
  s.apply("Node", "add", fixtures.node("initialized"));
  s.apply("Node", "add", fixtures.node("drifted"));
  for (const p of ["running", "daemonset", "pending", "succeeded"] as const)
    s.apply("Pod", "add", fixtures.pod(p));
  return s;
}

function pod(
  name: string,
  opts: { node?: string; cpu?: string; memory?: string; phase?: Pod["status"] } = {},
): Pod {
  const requests: Record<string, string> = {};
  if (opts.cpu) requests.cpu = opts.cpu;
  if (opts.memory) requests.memory = opts.memory;
  return {
    metadata: { name, namespace: "default", resourceVersion: "1" },
    spec: {
      ...(opts.node ? { nodeName: opts.node } : {}),
      containers: [{ name: "c", resources: { requests } }],
    },
    status: opts.phase ?? { phase: opts.node ? "Running" : "Pending" },
  };
}

function record(s: ClusterState, kinds?: Parameters<ClusterState["subscribe"]>[1]): StateChange[] {
  const seen: StateChange[] = [];
  s.subscribe((c) => seen.push(c), kinds);
  return seen;
}

describe("ClusterState queries on fixtures", () => {
  it("lists what was applied", () => {
    const s = loaded();
    assert.deepEqual(
      s
        .nodes()
        .map((n) => n.metadata.name)
        .sort(),
      [NODE, "jolly-lamport-1408203361"],
    );
    assert.deepEqual(
      s
        .nodeClaims()
        .map((n) => n.metadata.name)
        .sort(),
      ["default-8kzvq", "default-x7plm"],
    );
    assert.deepEqual(
      s.nodePools().map((n) => n.metadata.name),
      ["default"],
    );
    assert.deepEqual(s.counts(), { nodes: 2, nodeClaims: 2, nodePools: 1, pods: 4, pendingPods: 1 });
  });

  it("pods on a node exclude terminal ones unless asked", () => {
    const s = loaded();
    assert.deepEqual(
      s
        .podsOnNode(NODE)
        .map((p) => p.metadata.name)
        .sort(),
      ["node-exporter-5xq2m", "web-7c9f8d6b5-x2x4k"],
    );
    assert.equal(s.podsOnNode(NODE, { includeTerminal: true }).length, 3);
    assert.deepEqual(s.podsOnNode("nope"), []);
  });

  it("pending pods, and the unschedulable subset", () => {
    const s = loaded();
    assert.deepEqual(
      s.pendingPods().map((p) => p.metadata.name),
      ["batch-worker-0"],
    );
    assert.equal(s.pendingPods({ unschedulableOnly: true }).length, 1);
    s.apply("Pod", "add", pod("fresh"));
    assert.equal(s.pendingPods().length, 2);
    assert.equal(s.pendingPods({ unschedulableOnly: true }).length, 1);
  });

  it("node usage: requests of non-terminal pods vs allocatable, DaemonSet share apart", () => {
    const s = loaded();
    assert.deepEqual(s.nodeUsage(NODE), {
      node: NODE,
      requested: { cpu: 700, memory: 704 * MiB },
      daemonSetRequested: { cpu: 100, memory: 128 * MiB },
      allocatable: { cpu: 3900, "ephemeral-storage": 20 * GiB, memory: 8182 * MiB, pods: 64 },
      cpuMillis: { requested: 700, allocatable: 3900 },
      memoryBytes: { requested: 704 * MiB, allocatable: 8182 * MiB },
      pods: { requested: 2, allocatable: 64 },
    });
    assert.equal(s.nodeUsage("unknown-node"), undefined);
  });

  it("links claims and nodes by providerID", () => {
    const s = loaded();
    assert.equal(s.nodeForNodeClaim("default-8kzvq")?.metadata.name, NODE);
    assert.equal(s.nodeClaimForNode(NODE)?.metadata.name, "default-8kzvq");
    assert.equal(s.nodeClaimForNode("jolly-lamport-1408203361")?.metadata.name, "default-x7plm");
    assert.equal(s.nodeForNodeClaim("missing"), undefined);
    assert.equal(s.nodeClaimForNode("missing"), undefined);
  });

  it("links by status.nodeName when providerIDs do not match", () => {
    const s = new ClusterState();
    const nc = fixtures.nodeClaim("initialized");
    nc.status!.providerID = "kwok://something-else";
    s.apply("NodeClaim", "add", nc);
    s.apply("Node", "add", fixtures.node("initialized"));
    assert.equal(s.nodeClaimForNode(NODE)?.metadata.name, "default-8kzvq");
    assert.equal(s.nodeForNodeClaim("default-8kzvq")?.metadata.name, NODE);
  });

  it("a launched claim has no node until the node registers", () => {
    const s = new ClusterState();
    s.apply("NodeClaim", "add", fixtures.nodeClaim("launched"));
    assert.equal(s.nodeForNodeClaim("default-8kzvq"), undefined);
    s.apply("Node", "add", fixtures.node("unregistered"));
    assert.equal(s.nodeForNodeClaim("default-8kzvq")?.metadata.name, NODE);
    s.apply("Node", "delete", fixtures.node("unregistered"));
    assert.equal(s.nodeForNodeClaim("default-8kzvq"), undefined);
  });

  it("pool summary: nodes by capacity type, sizes, requests, claims by phase, limits", () => {
    const s = loaded();
    s.apply("NodeClaim", "add", fixtures.nodeClaim("launch-failed"));
    const sum = s.poolSummary("default");
    assert.equal(sum.exists, true);
    assert.equal(sum.nodes, 2);
    assert.equal(sum.readyNodes, 2);
    assert.deepEqual(sum.nodesByCapacityType, { spot: 1, "on-demand": 1, reserved: 0, unknown: 0 });
    // KWOK capacity echoes requests (2350m); size takes allocatable's 3900m.
    assert.equal(sum.cpuMillis, 2 * 3900);
    assert.equal(sum.memoryBytes, 2 * 8182 * MiB);
    assert.deepEqual(sum.requested, { cpu: 700, memory: 704 * MiB });
    assert.equal(sum.nodeClaims, 3);
    assert.deepEqual(sum.nodeClaimsByPhase, {
      Pending: 1,
      Launched: 0,
      Registered: 0,
      Initialized: 2,
      Disrupting: 0,
      Terminating: 0,
    });
    assert.deepEqual(sum.usage, { cpu: 4700, memory: 2 * 2660 * MiB, pods: 12 });
    assert.deepEqual(
      sum.limits.map((l) => [l.resource, l.usage, l.limit, l.exceeded]),
      [
        ["cpu", 4700, 1_000_000, false],
        ["memory", 2 * 2660 * MiB, 1000 * GiB, false],
      ],
    );
    assert.deepEqual(s.poolNames(), ["default"]);
    assert.equal(s.poolSummaries().length, 1);
  });

  it("a claim whose node carries the disruption taint counts as Disrupting", () => {
    const s = loaded();
    const tainted = fixtures.node("drifted");
    tainted.metadata.resourceVersion = "7000";
    tainted.spec = { ...tainted.spec, taints: [{ key: "karpenter.sh/disrupted", effect: "NoSchedule" }] };
    s.apply("Node", "update", tainted);
    assert.deepEqual(
      [s.nodeClaimState("default-x7plm")?.phase, s.nodeClaimState("default-x7plm")?.reason],
      ["Disrupting", "Drifted"],
    );
    assert.equal(s.poolSummary("default").nodeClaimsByPhase.Disrupting, 1);
    assert.equal(s.nodeClaimState("missing"), undefined);
  });

  it("a pool known only from node labels still summarises, marked as missing", () => {
    const s = new ClusterState();
    s.apply("Node", "add", fixtures.node("initialized"));
    const sum = s.poolSummary("default");
    assert.equal(sum.exists, false);
    assert.equal(sum.nodes, 1);
    assert.deepEqual(sum.limits, []);
    assert.equal(s.poolSummary("ghost").nodes, 0);
  });

  it("nodeSize takes the larger of capacity and allocatable", () => {
    assert.deepEqual(nodeSize({ cpu: 4000, memory: 10 }, { cpu: 3900, pods: 64 }), {
      cpu: 4000,
      memory: 10,
      pods: 64,
    });
  });
});

describe("ClusterState writes", () => {
  it("a pod binding moves it from pending to its node's requests", () => {
    const s = new ClusterState();
    s.apply("Node", "add", fixtures.node("initialized"));
    s.apply("Pod", "add", pod("a", { cpu: "1", memory: "1Gi" }));
    assert.equal(s.pendingPods().length, 1);
    assert.equal(s.nodeUsage(NODE)?.cpuMillis.requested, 0);
    s.apply("Pod", "update", {
      ...pod("a", { node: NODE, cpu: "1", memory: "1Gi" }),
      metadata: { name: "a", namespace: "default", resourceVersion: "2" },
    });
    assert.equal(s.pendingPods().length, 0);
    assert.deepEqual(s.nodeUsage(NODE)?.requested, { cpu: 1000, memory: GiB });
    assert.equal(s.nodeUsage(NODE)?.pods.requested, 1);
  });

  it("a pod going terminal stops counting; deleting it removes it", () => {
    const s = new ClusterState();
    s.apply("Pod", "add", pod("a", { node: NODE, cpu: "500m" }));
    s.apply("Pod", "add", pod("b", { node: NODE, cpu: "250m" }));
    assert.equal(s.nodeUsage(NODE)?.cpuMillis.requested, 750);
    s.apply("Pod", "update", pod("a", { node: NODE, cpu: "500m", phase: { phase: "Failed" } }));
    assert.equal(s.nodeUsage(NODE)?.cpuMillis.requested, 250);
    assert.equal(s.nodeUsage(NODE)?.pods.requested, 1);
    assert.equal(s.podsOnNode(NODE, { includeTerminal: true }).length, 2);
    s.apply("Pod", "delete", pod("b", { node: NODE, cpu: "250m" }));
    s.apply("Pod", "delete", pod("a", { node: NODE }));
    assert.equal(s.nodeUsage(NODE), undefined, "no node object and no pods: nothing left to report");
  });

  it("pods bound before their node is known are accounted once it arrives", () => {
    const s = new ClusterState();
    s.apply("Pod", "add", pod("early", { node: NODE, cpu: "2" }));
    assert.deepEqual(s.nodeUsage(NODE)?.cpuMillis, { requested: 2000, allocatable: 0 });
    s.apply("Node", "add", fixtures.node("initialized"));
    assert.deepEqual(s.nodeUsage(NODE)?.cpuMillis, { requested: 2000, allocatable: 3900 });
  });

  it("a node changing pool or capacity type is re-indexed", () => {
    const s = new ClusterState();
    const n = fixtures.node("initialized");
    s.apply("Node", "add", n);
    const moved: Node = structuredClone(n);
    moved.metadata.resourceVersion = "9999";
    moved.metadata.labels = {
      ...moved.metadata.labels,
      "karpenter.sh/nodepool": "batch",
      "karpenter.sh/capacity-type": "on-demand",
    };
    s.apply("Node", "update", moved);
    assert.equal(s.poolSummary("default").nodes, 0);
    assert.deepEqual(s.poolSummary("batch").nodesByCapacityType, {
      spot: 0,
      "on-demand": 1,
      reserved: 0,
      unknown: 0,
    });
    assert.deepEqual(s.poolNames(), ["batch"]);
  });

  it("a claim's lifecycle updates the pool's phase counts", () => {
    const s = new ClusterState();
    for (const stage of [
      "pending",
      "launched",
      "registered",
      "initialized",
      "disrupting",
      "terminating",
    ] as const) {
      s.apply("NodeClaim", "update", fixtures.nodeClaim(stage));
      const phases = s.poolSummary("default").nodeClaimsByPhase;
      assert.equal(
        Object.values(phases).reduce((a, b) => a + b, 0),
        1,
      );
    }
    assert.equal(s.poolSummary("default").nodeClaimsByPhase.Terminating, 1);
    s.apply("NodeClaim", "delete", fixtures.nodeClaim("terminating"));
    assert.equal(s.poolSummary("default").nodeClaims, 0);
  });

  it("DaemonSets are stored with the requests of one pod", () => {
    const s = new ClusterState();
    const ds: DaemonSet = {
      metadata: { name: "node-exporter", namespace: "monitoring" },
      spec: {
        selector: { matchLabels: { app: "node-exporter" } },
        template: {
          spec: { containers: [{ name: "e", resources: { requests: { cpu: "100m", memory: "128Mi" } } }] },
        },
      },
    };
    s.apply("DaemonSet", "add", ds);
    assert.deepEqual(
      s.daemonSets().map((d) => [d.key, d.requests]),
      [["monitoring/node-exporter", { cpu: 100, memory: 128 * MiB }]],
    );
    s.apply("DaemonSet", "delete", ds);
    assert.equal(s.daemonSets().length, 0);
  });

  it("an unparsable quantity keeps the object, counts nothing, and is reported", () => {
    const errors: string[] = [];
    const s = new ClusterState({
      onBadObject: (kind, key, err) => errors.push(`${kind} ${key}: ${err.message}`),
    });
    s.apply("Pod", "add", pod("bad", { node: NODE, cpu: "2 cores" }));
    assert.ok(s.pod("default", "bad"));
    assert.deepEqual(s.podRequests("default", "bad"), {});
    assert.equal(s.nodeUsage(NODE)?.cpuMillis.requested, 0);
    assert.match(errors[0] ?? "", /Pod default\/bad: .*cpu.*"2 cores"/);
    assert.deepEqual([...s.badObjects().keys()], ["Pod default/bad"]);
    s.apply("Pod", "update", pod("bad", { node: NODE, cpu: "2" }));
    assert.equal(s.badObjects().size, 0);
    assert.equal(s.nodeUsage(NODE)?.cpuMillis.requested, 2000);
  });

  it("rejects objects it cannot key", () => {
    const s = new ClusterState();
    assert.throws(() => s.apply("Node", "add", { metadata: {} }), /Node without metadata.name/);
    assert.throws(
      () => s.apply("Pod", "add", { metadata: { name: "x" }, spec: { containers: [] } }),
      /without metadata.namespace/,
    );
    assert.throws(
      () => s.apply("Lease" as "Node", "add", { metadata: { name: "x" } }),
      /does not track kind Lease/,
    );
  });
});

describe("ClusterState notifications", () => {
  it("add, update, delete with previous objects; version counts deliveries", () => {
    const s = new ClusterState();
    const seen = record(s);
    const launched = fixtures.nodeClaim("launched");
    s.apply("NodeClaim", "add", fixtures.nodeClaim("pending"));
    s.apply("NodeClaim", "update", launched);
    s.apply("NodeClaim", "delete", launched);
    assert.deepEqual(
      seen.map((c) => [
        c.kind,
        c.type,
        c.key,
        c.object.metadata.resourceVersion,
        c.previous?.metadata.resourceVersion,
      ]),
      [
        ["NodeClaim", "add", "default-8kzvq", "2001", undefined],
        ["NodeClaim", "update", "default-8kzvq", "2007", "2001"],
        ["NodeClaim", "delete", "default-8kzvq", "2007", "2007"],
      ],
    );
    assert.equal(s.version, 3);
  });

  it("add of a known object is an update; delete of an unknown one and resyncs are silent", () => {
    const s = new ClusterState();
    const seen = record(s);
    s.apply("Node", "add", fixtures.node("initialized"));
    s.apply("Node", "add", fixtures.node("initialized"));
    s.apply("Node", "update", fixtures.node("initialized"));
    s.apply("Node", "delete", fixtures.node("drifted"));
    s.apply("Node", "add", fixtures.node("disrupted"));
    assert.deepEqual(
      seen.map((c) => c.type),
      ["add", "update"],
    );
  });

  it("filters by kind, unsubscribes, and isolates a throwing listener", () => {
    const failures: unknown[] = [];
    const s = new ClusterState({ onListenerError: (err) => failures.push(err) });
    s.subscribe(() => {
      throw new Error("listener bug");
    });
    const pods = record(s, ["Pod"]);
    const all: string[] = [];
    const off = s.subscribe((c) => all.push(c.kind));
    s.apply("Node", "add", fixtures.node("initialized"));
    s.apply("Pod", "add", fixtures.pod("running"));
    off();
    s.apply("Pod", "add", fixtures.pod("pending"));
    assert.deepEqual(
      pods.map((c) => c.key),
      ["shop/web-7c9f8d6b5-x2x4k", "jobs/batch-worker-0"],
    );
    assert.deepEqual(all, ["Node", "Pod"]);
    assert.equal(failures.length, 3);
  });

  it("on(kind) delivers that kind's changes, typed", () => {
    const s = new ClusterState();
    const names: string[] = [];
    const off = s.on("Pod", (c) => names.push(`${c.type}:${c.object.spec.containers[0]?.name ?? ""}`));
    s.apply("Node", "add", fixtures.node("initialized"));
    s.apply("Pod", "add", fixtures.pod("running"));
    off();
    s.apply("Pod", "add", fixtures.pod("pending"));
    assert.deepEqual(names, ["add:web"]);
  });

  it("listeners see the state already updated", () => {
    const s = new ClusterState();
    let usage: number | undefined;
    s.subscribe(() => (usage = s.nodeUsage(NODE)?.cpuMillis.requested), ["Pod"]);
    s.apply("Pod", "add", pod("a", { node: NODE, cpu: "300m" }));
    assert.equal(usage, 300);
  });

  it("batch coalesces per object", () => {
    const s = new ClusterState();
    s.apply("Pod", "add", pod("kept"));
    s.apply("Pod", "add", pod("gone"));
    const seen = record(s);
    s.batch(() => {
      s.apply("Pod", "add", pod("temp"));
      s.apply("Pod", "delete", pod("temp"));
      s.apply("Pod", "add", pod("new", { cpu: "1" }));
      s.apply("Pod", "update", {
        ...pod("new", { cpu: "2" }),
        metadata: { name: "new", namespace: "default", resourceVersion: "2" },
      });
      s.apply("Pod", "update", {
        ...pod("kept", { cpu: "1" }),
        metadata: { name: "kept", namespace: "default", resourceVersion: "2" },
      });
      s.apply("Pod", "update", {
        ...pod("kept", { cpu: "2" }),
        metadata: { name: "kept", namespace: "default", resourceVersion: "3" },
      });
      s.apply("Pod", "delete", pod("gone"));
      s.apply("Pod", "add", {
        ...pod("gone"),
        metadata: { name: "gone", namespace: "default", resourceVersion: "5" },
      });
      assert.equal(seen.length, 0, "nothing delivered inside the batch");
    });
    assert.deepEqual(
      seen.map((c) => [
        c.key,
        c.type,
        c.object.metadata.resourceVersion,
        c.previous?.metadata.resourceVersion,
      ]),
      [
        ["default/new", "add", "2", undefined],
        ["default/kept", "update", "3", "1"],
        ["default/gone", "update", "5", "1"],
      ],
    );
    assert.deepEqual(s.podRequests("default", "new"), { cpu: 2000 });
  });

  it("batch coalesces per kind and object, in the order of each object's last change", () => {
    const s = new ClusterState();
    const seen = record(s);
    const named = <T>(o: T, name: string, rv: string): T => ({
      ...o,
      metadata: { ...(o as { metadata: object }).metadata, name, resourceVersion: rv },
    });
    const node = fixtures.node("initialized");
    const claim = fixtures.nodeClaim("initialized");
    s.batch(() => {
      // A Node and a NodeClaim may share a name: two objects, coalesced apart.
      s.apply("Node", "add", named(node, "x", "1"));
      s.apply("NodeClaim", "add", named(claim, "x", "1"));
      s.apply("Pod", "add", pod("p"));
      s.apply("Node", "delete", named(node, "x", "1"));
      s.apply("NodeClaim", "update", named(claim, "x", "2"));
    });
    assert.deepEqual(
      seen.map((c) => [c.kind, c.key, c.type, c.object.metadata.resourceVersion]),
      [
        ["Pod", "default/p", "add", "1"],
        ["NodeClaim", "x", "add", "2"],
      ],
    );
    assert.equal(s.version, 2);
  });

  it("the writer gets each change back, uncoalesced, with the object it replaced", () => {
    const s = new ClusterState();
    const v = (rv: string): Pod => ({
      ...pod("p"),
      metadata: { name: "p", namespace: "default", resourceVersion: rv },
    });
    const got: (StateChange | undefined)[] = [];
    s.batch(() => {
      got.push(s.apply("Pod", "add", v("1")));
      got.push(s.apply("Pod", "add", v("1"))); // a resync: no change
      got.push(s.apply("Pod", "update", v("2")));
      got.push(s.apply("Pod", "delete", v("2")));
      got.push(s.apply("Pod", "delete", v("2"))); // unknown now: no change
    });
    assert.deepEqual(
      got.map((c) => c && [c.type, c.object.metadata.resourceVersion, c.previous?.metadata.resourceVersion]),
      [["add", "1", undefined], undefined, ["update", "2", "1"], ["delete", "2", "2"], undefined],
    );
  });

  it("replaceAll adds, updates and deletes to match a relist", () => {
    const s = loaded();
    const seen = record(s, ["Pod"]);
    const running = fixtures.pod("running");
    running.metadata.resourceVersion = "9000";
    const returned = s.replaceAll("Pod", [running, fixtures.pod("daemonset"), pod("newcomer")]);
    assert.deepEqual(
      returned.map((c) => [c.type, c.key]).sort(),
      seen.map((c) => [c.type, c.key]).sort(),
      "the writer gets the changes listeners get",
    );
    assert.deepEqual(seen.map((c) => [c.type, c.key]).sort(), [
      ["add", "default/newcomer"],
      ["delete", "jobs/batch-worker-0"],
      ["delete", "shop/migrate-29012345-7vb2q"],
      ["update", "shop/web-7c9f8d6b5-x2x4k"],
    ]);
    assert.equal(s.counts().pods, 3);
    assert.deepEqual(
      s.pendingPods().map((p) => p.metadata.name),
      ["newcomer"],
    );
  });
});

describe("stateHandlers", () => {
  it("adapts informer add/update/delete callbacks to apply", () => {
    const s = new ClusterState();
    const seen = record(s);
    const h = stateHandlers(s, "NodeClaim");
    h.add(fixtures.nodeClaim("pending"));
    h.update(fixtures.nodeClaim("launched"));
    h.delete(fixtures.nodeClaim("launched"));
    assert.deepEqual(
      seen.map((c) => c.type),
      ["add", "update", "delete"],
    );
    assert.equal(s.counts().nodeClaims, 0);
  });
});

describe("ClusterState at scale", () => {
  it("5,000 nodes and 150,000 pods add up exactly, and churn keeps the totals right", () => {
    const s = new ClusterState();
    const N = 5000;
    const P = 150_000;
    const template = fixtures.node("initialized");
    for (let i = 0; i < N; i++) {
      const n: Node = {
        ...template,
        metadata: { ...template.metadata, name: `n${String(i)}` },
        spec: { providerID: `kwok://n${String(i)}` },
      };
      s.apply("Node", "add", n);
    }
    const claim = fixtures.nodeClaim("initialized");
    for (let i = 0; i < N; i++) {
      const nc: NodeClaim = {
        ...claim,
        metadata: { ...claim.metadata, name: `c${String(i)}` },
        status: { ...claim.status, providerID: `kwok://n${String(i)}`, nodeName: `n${String(i)}` },
      };
      s.apply("NodeClaim", "add", nc);
    }
    for (let i = 0; i < P; i++)
      s.apply("Pod", "add", pod(`p${String(i)}`, { node: `n${String(i % N)}`, cpu: "100m", memory: "64Mi" }));
    // Churn: a third of the pods finish, then are deleted and replaced on another node.
    for (let i = 0; i < P; i += 3) {
      s.apply(
        "Pod",
        "update",
        pod(`p${String(i)}`, {
          node: `n${String(i % N)}`,
          cpu: "100m",
          memory: "64Mi",
          phase: { phase: "Succeeded" },
        }),
      );
      s.apply("Pod", "delete", pod(`p${String(i)}`, { node: `n${String(i % N)}` }));
      s.apply(
        "Pod",
        "add",
        pod(`q${String(i)}`, { node: `n${String((i + 1) % N)}`, cpu: "200m", memory: "64Mi" }),
      );
    }
    const sum = s.poolSummary("default");
    assert.equal(sum.nodes, N);
    assert.equal(sum.nodeClaims, N);
    assert.equal(sum.requested.cpu, (P - P / 3) * 100 + (P / 3) * 200);
    assert.equal(sum.requested.memory, P * 64 * MiB);
    assert.equal(s.counts().pods, P);
    assert.equal(s.nodeClaimForNode("n4999")?.metadata.name, "c4999");
    assert.equal(s.nodeUsage("n0")?.pods.requested, 30);
  });
});

describe("ClusterState.derived", () => {
  it("builds a reader's index once per state and keeps it with that state", () => {
    const a = new ClusterState();
    const b = new ClusterState();
    const key = Symbol("index");
    let built = 0;
    const make = (): { n: number } => ({ n: ++built });
    assert.equal(a.derived(key, make), a.derived(key, make));
    assert.notEqual(a.derived(key, make), b.derived(key, make));
    assert.equal(built, 2);
  });
});
