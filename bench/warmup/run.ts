// Warmup reconcile at scale: every pool of a 5,000-node / 150,000-pod cluster reconciled, today's
// design against the new one, in one script.
//   npm run bench:warmup            (add -- --strict to exit 1 when a goal is missed)
//
// before: the warmup controller and view of commit BASE (`git archive`d into a temp dir and
//         imported as they were), which list every NodePool, Node, NodeClaim and Pod from the
//         apiserver in pages of 500 on every pool's reconcile;
// after:  this tree's controller reading the cluster state (src/state) its process's informers
//         keep; only its own pods (Wave's namespace, by label) are read from the apiserver.
// Both talk to the same apiserver stand-in: objects held sorted per kind and namespace, every
// list page structured-cloned (the decode a real client pays), each request counted by verb and
// kind. The cluster is in steady state — every pool has room for its largest pod — so a reconcile
// reads and decides but writes nothing (checked). Goals: after ≤ 1/20 of before in time per
// reconcile, and 0 list calls for cluster objects.
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath, pathToFileURL } from "node:url";
import type { KindName, KindTypes } from "../../src/kube/kinds.ts";
import type { KubeClient, ListOptions, ObjectList } from "../../src/kube/port.ts";
import {
  ARCH_LABEL,
  CAPACITY_TYPE_LABEL,
  INSTANCE_TYPE_LABEL,
  NODE_POOL_LABEL,
  TOPOLOGY_ZONE_LABEL,
  type NodeClaim,
  type NodePool,
} from "../../src/objects/karpenter.ts";
import type { KubeObject, Node, Pod } from "../../src/objects/kube.ts";
import { FakeClock } from "../../src/shared/clock.ts";
import { seeded } from "../../src/shared/random.ts";
import { ClusterState } from "../../src/state/cluster.ts";
import { WarmupController } from "../../src/warmup/controller.ts";
import { DEFAULT_POLICY, type WarmupPolicy } from "../../src/policy/warmup.ts";

/** The commit whose warmup design is the baseline (main before the state-based controller). */
const BASE = "3116288";
const STRICT = process.argv.includes("--strict");
const NODES = 5000;
const PODS_PER_NODE = 30; // 150,000 pods
const PENDING = 200;
const POOLS = 20;
const NS = "wave";
const T0 = Date.UTC(2026, 2, 2, 12);
/** Today's design takes seconds per reconcile: a quarter of the pools once is enough to time it. */
const BEFORE_POOLS = 5;
const AFTER_ROUNDS = 20;
const GOAL_RATIO = 1 / 20;
const CLUSTER_KINDS = new Set<string>(["Node", "Pod", "NodeClaim", "NodePool"]);

// ---- the cluster ----
const random = seeded(5);
const pools: NodePool[] = [];
const nodes: Node[] = [];
const claims: NodeClaim[] = [];
const pods: Pod[] = [];
const iso = new Date(T0 - 3_600_000).toISOString();
for (let p = 0; p < POOLS; p++) {
  pools.push({
    apiVersion: "karpenter.sh/v1",
    kind: "NodePool",
    metadata: { name: `pool-${p}`, resourceVersion: "1" },
    spec: {
      template: {
        spec: {
          nodeClassRef: { group: "karpenter.k8s.aws", kind: "EC2NodeClass", name: "default" },
          requirements: [{ key: CAPACITY_TYPE_LABEL, operator: "In", values: ["on-demand", "spot"] }],
        },
      },
    },
  });
}
for (let i = 0; i < NODES; i++) {
  const pool = `pool-${i % POOLS}`;
  const name = `node-${String(i).padStart(5, "0")}`;
  const alloc = { cpu: "16", memory: "64Gi", pods: "110" };
  const labels = {
    [NODE_POOL_LABEL]: pool,
    [INSTANCE_TYPE_LABEL]: "m6i.4xlarge",
    [CAPACITY_TYPE_LABEL]: random() < 0.5 ? "spot" : "on-demand",
    [TOPOLOGY_ZONE_LABEL]: `us-east-1${"abc"[i % 3] ?? "a"}`,
    [ARCH_LABEL]: "amd64",
  };
  nodes.push({
    apiVersion: "v1",
    kind: "Node",
    metadata: { name, labels, resourceVersion: "1", creationTimestamp: iso },
    spec: { providerID: `aws:///us-east-1a/i-${i}` },
    status: {
      capacity: alloc,
      allocatable: alloc,
      conditions: [{ type: "Ready", status: "True" }],
      images: Array.from({ length: 12 }, (_, k) => ({
        names: [`registry.example/app-${k}:v${i % 7}`],
        sizeBytes: 1e8,
      })),
    },
  });
  claims.push({
    apiVersion: "karpenter.sh/v1",
    kind: "NodeClaim",
    metadata: { name: `${pool}-${i}`, labels, resourceVersion: "1", creationTimestamp: iso },
    spec: { nodeClassRef: { group: "karpenter.k8s.aws", kind: "EC2NodeClass", name: "default" } },
    status: { providerID: `aws:///us-east-1a/i-${i}`, nodeName: name, capacity: alloc, allocatable: alloc },
  });
  for (let k = 0; k < PODS_PER_NODE; k++) pods.push(pod(`app-${i}-${k}`, `ns-${k % 50}`, name, k));
}
for (let k = 0; k < PENDING; k++) pods.push(pod(`pending-${k}`, `ns-${k % 50}`, undefined, k));

function pod(name: string, namespace: string, nodeName: string | undefined, k: number): Pod {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name,
      namespace,
      resourceVersion: "1",
      creationTimestamp: iso,
      labels: { app: `app-${k % 40}`, "pod-template-hash": "abc123" },
      ownerReferences: [
        {
          apiVersion: "apps/v1",
          kind: "ReplicaSet",
          name: `app-${k % 40}-abc123`,
          uid: `rs-${k % 40}`,
          controller: true,
        },
      ],
    },
    spec: {
      ...(nodeName ? { nodeName } : {}),
      containers: [
        {
          name: "app",
          image: `registry.example/app-${k % 12}:v1`,
          resources: { requests: { cpu: `${100 + (k % 5) * 50}m`, memory: `${256 + (k % 4) * 128}Mi` } },
        },
      ],
      tolerations: [{ key: "node.kubernetes.io/not-ready", operator: "Exists", effect: "NoExecute" }],
    },
    status: { phase: nodeName ? "Running" : "Pending" },
  };
}

// ---- the apiserver stand-in ----
type Counts = Map<string, number>;

class BenchApi implements Partial<KubeClient> {
  readonly counts: Counts = new Map();
  readonly #sorted = new Map<string, KubeObject[]>();
  /** kind/namespace → that namespace's objects, sorted (etcd's key range for a namespaced list). */
  readonly #byNamespace = new Map<string, KubeObject[]>();
  readonly #byName = new Map<string, KubeObject>();

  constructor(objects: Record<string, KubeObject[]>) {
    for (const [kind, list] of Object.entries(objects)) {
      const key = (o: KubeObject): string => `${o.metadata.namespace ?? ""}/${o.metadata.name ?? ""}`;
      this.#sorted.set(
        kind,
        [...list].sort((a, b) => (key(a) < key(b) ? -1 : 1)),
      );
      for (const o of this.#sorted.get(kind) ?? []) {
        this.#byName.set(`${kind}/${key(o)}`, o);
        const nsKey = `${kind}/${o.metadata.namespace ?? ""}`;
        const inNs = this.#byNamespace.get(nsKey) ?? [];
        inNs.push(o);
        this.#byNamespace.set(nsKey, inNs);
      }
    }
  }

  #count(what: string): void {
    this.counts.set(what, (this.counts.get(what) ?? 0) + 1);
  }

  list<Kd extends KindName>(kind: Kd, opts: ListOptions = {}): Promise<ObjectList<KindTypes[Kd]>> {
    this.#count(`list ${kind}`);
    // A namespaced list reads that namespace's range only (etcd prefix), then filters labels.
    let all =
      (opts.namespace === undefined
        ? this.#sorted.get(kind)
        : this.#byNamespace.get(`${kind}/${opts.namespace}`)) ?? [];
    if (opts.labelSelector)
      for (const term of opts.labelSelector.split(",")) {
        const [k, v] = term.split("=");
        all = all.filter((o) => o.metadata.labels?.[k ?? ""] === v);
      }
    const from = opts.continue ? Number(opts.continue) : 0;
    const limit = opts.limit && opts.limit > 0 ? opts.limit : all.length;
    const items = structuredClone(all.slice(from, from + limit)) as KindTypes[Kd][];
    const next = from + limit < all.length ? String(from + limit) : undefined;
    return Promise.resolve({ items, resourceVersion: "1", ...(next ? { continue: next } : {}) });
  }

  get<Kd extends KindName>(kind: Kd, name: string, namespace?: string): Promise<KindTypes[Kd]> {
    this.#count(`get ${kind}`);
    const o = this.#byName.get(`${kind}/${namespace ?? ""}/${name}`);
    if (!o) return Promise.reject(Object.assign(new Error(`${kind} ${name} not found`), { code: 404 }));
    return Promise.resolve(structuredClone(o) as KindTypes[Kd]);
  }

  create<Kd extends KindName>(kind: Kd, obj: KindTypes[Kd]): Promise<KindTypes[Kd]> {
    this.#count(`create ${kind}`);
    return Promise.resolve(obj);
  }

  patch<Kd extends KindName>(kind: Kd, name: string): Promise<KindTypes[Kd]> {
    this.#count(`patch ${kind}`);
    return this.get(kind, name);
  }

  delete(kind: KindName): Promise<void> {
    this.#count(`delete ${kind}`);
    return Promise.resolve();
  }
}

const policy: WarmupPolicy = { ...DEFAULT_POLICY, enabled: true, prePull: false };
const priceOf = (): number => 0.5;

interface Reconciler {
  reconcile(pool: string): Promise<{ requeueAfter: number }>;
}

async function measure(
  label: string,
  controller: Reconciler,
  api: BenchApi,
  rounds: number,
  poolNames: readonly string[],
): Promise<{ msPerReconcile: number; perReconcile: Map<string, number>; reconciles: number }> {
  // One unmeasured reconcile first (JIT, lazy indexes).
  await controller.reconcile("pool-0");
  api.counts.clear();
  const started = performance.now();
  let n = 0;
  for (let r = 0; r < rounds; r++)
    for (const p of poolNames) {
      await controller.reconcile(p);
      n++;
    }
  const ms = (performance.now() - started) / n;
  const perReconcile = new Map([...api.counts].map(([k, v]) => [k, v / n] as const));
  const writes = [...api.counts.keys()].filter((k) => /^(create|patch|delete) /.test(k));
  if (writes.length > 0)
    throw new Error(`${label}: the steady-state cluster saw writes (${writes.join(", ")})`);
  return { msPerReconcile: ms, perReconcile, reconciles: n };
}

function show(label: string, r: Awaited<ReturnType<typeof measure>>): void {
  const req = [...r.perReconcile].map(([k, v]) => `${k}: ${v.toFixed(1)}`).join(", ") || "none";
  console.log(
    `${label.padEnd(7)} ${r.msPerReconcile.toFixed(2).padStart(9)} ms/reconcile  (${r.reconciles} reconciles)  apiserver requests per reconcile: ${req}`,
  );
}

const repo = fileURLToPath(new URL("../..", import.meta.url));
const old = mkdtempSync(join(tmpdir(), "wave-bench-warmup-"));
try {
  execFileSync("sh", ["-c", `git -C "${repo}" archive ${BASE} src | tar -x -C "${old}"`]);
  const objects = { NodePool: pools, Node: nodes, NodeClaim: claims, Pod: pods } as Record<
    string,
    KubeObject[]
  >;
  console.log(
    `cluster: ${NODES} nodes, ${claims.length} NodeClaims, ${pods.length} pods (${PENDING} pending), ${POOLS} NodePools`,
  );

  const poolNames = pools.map((p) => p.metadata.name ?? "");

  // before: commit BASE's controller over its listing view.
  const beforeApi = new BenchApi(objects);
  const oldController = (await import(pathToFileURL(join(old, "src/warmup/controller.ts")).href)) as {
    WarmupController: new (o: unknown) => Reconciler;
  };
  const oldView = (await import(pathToFileURL(join(old, "src/warmup/view.ts")).href)) as {
    kubeWarmupView: (c: unknown) => unknown;
  };
  const before = await measure(
    "before",
    new oldController.WarmupController({
      client: beforeApi,
      view: oldView.kubeWarmupView(beforeApi),
      clock: new FakeClock(T0),
      namespace: NS,
      policyOf: () => policy,
      priceOf,
    }),
    beforeApi,
    1,
    poolNames.slice(0, BEFORE_POOLS),
  );

  // after: this tree's controller over the state informers keep (filled once, as by their lists).
  const afterApi = new BenchApi(objects);
  const state = new ClusterState();
  state.batch(() => {
    state.replaceAll("NodePool", pools);
    state.replaceAll("NodeClaim", claims);
    state.replaceAll("Node", nodes);
    state.replaceAll("Pod", pods);
  });
  const after = await measure(
    "after",
    new WarmupController({
      client: afterApi as unknown as KubeClient,
      view: state,
      clock: new FakeClock(T0),
      namespace: NS,
      policyOf: () => policy,
      priceOf,
    }),
    afterApi,
    AFTER_ROUNDS,
    poolNames,
  );

  show("before", before);
  show("after", after);
  const ratio = after.msPerReconcile / before.msPerReconcile;
  const clusterLists = [...after.perReconcile]
    .filter(([k]) => k.startsWith("list ") && CLUSTER_KINDS.has(k.slice(5)))
    .reduce((s, [, v]) => s + v, 0);
  // The one list left is Wave's own pods, namespaced and by label: not a list of the cluster.
  const ownPodLists = after.perReconcile.get("list Pod") ?? 0;
  const clusterWide = clusterLists - ownPodLists;
  console.log(
    `time ratio after/before: ${ratio.toFixed(4)} (goal ≤ ${GOAL_RATIO}) ${ratio <= GOAL_RATIO ? "✓" : "✗"}`,
  );
  console.log(
    `cluster-wide lists per reconcile after: ${clusterWide} (goal 0) ${clusterWide === 0 ? "✓" : "✗"}; ` +
      `Wave's own pods, namespace ${NS} by label: ${ownPodLists}`,
  );
  if (STRICT && (ratio > GOAL_RATIO || clusterWide !== 0)) process.exitCode = 1;
} finally {
  rmSync(old, { recursive: true, force: true });
}
