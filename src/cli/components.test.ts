import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { parseConfig } from "../config/config.ts";
import { MemoryKube } from "../kube/memory/memory.ts";
import type { KindName } from "../kube/kinds.ts";
import { DO_NOT_DISRUPT_ANNOTATION, NODE_POOL_LABEL } from "../objects/karpenter.ts";
import { FakeClock, flushMicrotasks } from "../shared/clock.ts";
import { silentLogger } from "../shared/log.ts";
import {
  CREATED_AT_ANNOTATION,
  DEADLINE_ANNOTATION,
  DO_NOT_DISRUPT_NAMESPACE_ANNOTATION,
  DO_NOT_DISRUPT_OWNER_ANNOTATION,
  DO_NOT_DISRUPT_OWNER_VALUE,
  LAST_WARMUP_AT_ANNOTATION,
  LAST_WARMUP_NAMESPACE_ANNOTATION,
  LEDGER_LABEL,
  MANAGED_BY_LABEL,
  MANAGED_BY_VALUE,
  PREPULL_LABEL,
  WARMUP_LABEL,
} from "../objects/wave.ts";
import { makePki, SERVER_EXT } from "../../test/support/pki.ts";
import { suiteDir } from "../../test/support/suite-dir.ts";
import { config, CORE_AGENT_PKI, TOKEN_FLAGS } from "./config.test-helper.ts";
import { isWarmupPod } from "../objects/wave.ts";
import { node, nodePool, pod } from "../warmup/testing/fixtures.ts";
import { createServer as createHttpServer } from "node:http";
import { Agent as HttpsAgent } from "node:https";
import { readFileSync } from "node:fs";
import type { KubeClient } from "../kube/port.ts";
import { httpsRequest, reviewFor } from "../webhook/test-helpers.ts";
import { createSpotMetrics } from "../webhook/metrics.ts";
import { InMemoryPolicySource } from "../webhook/policy-source.ts";
import type { CommandContext } from "./commands.ts";
import {
  cleanup,
  cleanupCommand,
  cooldownMark,
  startAgentComponent,
  startCoreComponent,
  startWebhookComponent,
  SPOT_REPAIR_LEASE,
  waveProtection,
  WARMUP_LEASE,
} from "./components.ts";

const NS = "wave";
const ours = (extra: Record<string, string> = {}): Record<string, string> => ({
  [DO_NOT_DISRUPT_ANNOTATION]: "true",
  [DO_NOT_DISRUPT_OWNER_ANNOTATION]: DO_NOT_DISRUPT_OWNER_VALUE,
  [DO_NOT_DISRUPT_NAMESPACE_ANNOTATION]: NS,
  [DEADLINE_ANNOTATION]: "2026-01-01T00:10:00Z",
  [CREATED_AT_ANNOTATION]: "2026-01-01T00:00:00Z",
  ...extra,
});

function kubeWith(): MemoryKube {
  return new MemoryKube({ clock: new FakeClock() });
}

async function put(
  kube: MemoryKube,
  kind: KindName,
  name: string,
  o: { namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> } = {},
): Promise<void> {
  const apiVersion: Record<string, string> = {
    Pod: "v1",
    Node: "v1",
    Lease: "coordination.k8s.io/v1",
    NodeClaim: "karpenter.sh/v1",
    NodePool: "karpenter.sh/v1",
  };
  const metadata = {
    name,
    ...(o.namespace === undefined ? {} : { namespace: o.namespace }),
    ...(o.labels === undefined ? {} : { labels: o.labels }),
    ...(o.annotations === undefined ? {} : { annotations: o.annotations }),
  };
  const body = kind === "Pod" ? { spec: { containers: [{ name: "c", image: "pause" }] } } : {};
  await kube.create(
    kind,
    { apiVersion: apiVersion[kind], kind, metadata, ...body },
    o.namespace === undefined ? {} : { namespace: o.namespace },
  );
}

async function annotationsOf(kube: MemoryKube, kind: "Node" | "NodeClaim" | "NodePool", name: string) {
  return (await kube.get(kind, name)).metadata.annotations ?? {};
}

describe("wave cleanup: which marks are Wave's", () => {
  it("releases a do-not-disrupt only when this install owns it", () => {
    const node = waveProtection("Node", NS);
    assert.deepEqual(node(ours({ [`wave.sh/prepulled`]: "abc" })).sort(), [
      DO_NOT_DISRUPT_ANNOTATION,
      CREATED_AT_ANNOTATION,
      DEADLINE_ANNOTATION,
      DO_NOT_DISRUPT_NAMESPACE_ANNOTATION,
      DO_NOT_DISRUPT_OWNER_ANNOTATION,
      "wave.sh/prepulled",
    ]);
    // A user's annotation, another install's, and a mark from before the namespace was recorded.
    assert.deepEqual(node({ [DO_NOT_DISRUPT_ANNOTATION]: "true" }), []);
    assert.deepEqual(node(ours({ [DO_NOT_DISRUPT_NAMESPACE_ANNOTATION]: "other" })), []);
    const legacy = Object.fromEntries(
      Object.entries(ours()).filter(([k]) => k !== DO_NOT_DISRUPT_NAMESPACE_ANNOTATION),
    );
    assert.equal(waveProtection("NodeClaim", NS)(legacy).length, 4);
    assert.ok(
      !waveProtection("NodeClaim", NS)(ours({ "wave.sh/prepulled": "x" })).includes("wave.sh/prepulled"),
    );
  });

  it("removes the pool cooldown unless another install wrote it last", () => {
    const mark = cooldownMark(NS);
    assert.deepEqual(mark({ [LAST_WARMUP_AT_ANNOTATION]: "t", [LAST_WARMUP_NAMESPACE_ANNOTATION]: NS }), [
      LAST_WARMUP_AT_ANNOTATION,
      LAST_WARMUP_NAMESPACE_ANNOTATION,
    ]);
    assert.deepEqual(mark({ [LAST_WARMUP_AT_ANNOTATION]: "t" }), [LAST_WARMUP_AT_ANNOTATION]);
    assert.deepEqual(
      mark({ [LAST_WARMUP_AT_ANNOTATION]: "t", [LAST_WARMUP_NAMESPACE_ANNOTATION]: "other" }),
      [],
    );
    assert.deepEqual(mark({ unrelated: "x" }), []);
  });
});

describe("wave cleanup against a cluster", () => {
  async function seeded(): Promise<MemoryKube> {
    const kube = kubeWith();
    await put(kube, "Pod", "warm-0", { namespace: NS, labels: { [WARMUP_LABEL]: "true" } });
    await put(kube, "Pod", "pull-0", { namespace: NS, labels: { [PREPULL_LABEL]: "true" } });
    await put(kube, "Pod", "core-0", { namespace: NS, labels: { app: "core" } });
    await put(kube, "Pod", "warm-elsewhere", { namespace: "other", labels: { [WARMUP_LABEL]: "true" } });
    await put(kube, "Node", "n-ours", { annotations: ours({ "wave.sh/prepulled": "h1", keep: "me" }) });
    await put(kube, "Node", "n-user", { annotations: { [DO_NOT_DISRUPT_ANNOTATION]: "true" } });
    await put(kube, "Node", "n-other", {
      annotations: ours({ [DO_NOT_DISRUPT_NAMESPACE_ANNOTATION]: "other" }),
    });
    await put(kube, "NodeClaim", "c-ours", { annotations: ours() });
    await put(kube, "NodePool", "p-ours", {
      annotations: {
        [LAST_WARMUP_AT_ANNOTATION]: "2026-01-01T00:00:00Z",
        [LAST_WARMUP_NAMESPACE_ANNOTATION]: NS,
      },
    });
    await put(kube, "NodePool", "p-other", {
      annotations: {
        [LAST_WARMUP_AT_ANNOTATION]: "2026-01-01T00:00:00Z",
        [LAST_WARMUP_NAMESPACE_ANNOTATION]: "other",
      },
    });
    await put(kube, "NodePool", "p-plain");
    const ledger = { [MANAGED_BY_LABEL]: MANAGED_BY_VALUE, [LEDGER_LABEL]: "abc" };
    await put(kube, "Lease", WARMUP_LEASE, { namespace: NS });
    await put(kube, "Lease", "wave-agent", { namespace: NS });
    await put(kube, "Lease", SPOT_REPAIR_LEASE, { namespace: NS });
    await put(kube, "Lease", "wave-ledger-abc", { namespace: NS, labels: ledger });
    await put(kube, "Lease", "someone-elses", { namespace: NS });
    await put(kube, "Lease", WARMUP_LEASE, { namespace: "other" });
    return kube;
  }

  it("removes warmup and pull pods, this install's marks and Leases, and nothing else", async () => {
    const kube = await seeded();
    const report = await cleanup(kube, { namespace: NS, log: silentLogger });
    assert.deepEqual(report, {
      pods: ["warm-0", "pull-0"],
      nodes: ["n-ours"],
      nodeClaims: ["c-ours"],
      nodePools: ["p-ours"],
      leases: [WARMUP_LEASE, SPOT_REPAIR_LEASE, "wave-agent", "wave-ledger-abc"].sort(),
      errors: [],
    });
    const names = async (kind: "Pod" | "Lease", namespace: string): Promise<string[]> =>
      (await kube.list(kind, { namespace })).items.map((o) => o.metadata.name ?? "").sort();
    assert.deepEqual(await names("Pod", NS), ["core-0"]);
    assert.deepEqual(await names("Pod", "other"), ["warm-elsewhere"]);
    assert.deepEqual(await names("Lease", NS), ["someone-elses"]);
    assert.deepEqual(await names("Lease", "other"), [WARMUP_LEASE]);
    assert.deepEqual(await annotationsOf(kube, "Node", "n-ours"), { keep: "me" });
    assert.deepEqual(await annotationsOf(kube, "Node", "n-user"), { [DO_NOT_DISRUPT_ANNOTATION]: "true" });
    assert.equal((await annotationsOf(kube, "Node", "n-other"))[DO_NOT_DISRUPT_ANNOTATION], "true");
    assert.deepEqual(await annotationsOf(kube, "NodeClaim", "c-ours"), {});
    assert.deepEqual(await annotationsOf(kube, "NodePool", "p-ours"), {});
    assert.equal(
      (await annotationsOf(kube, "NodePool", "p-other"))[LAST_WARMUP_NAMESPACE_ANNOTATION],
      "other",
    );

    // Running it again finds nothing left to do.
    const again = await cleanup(kube, { namespace: NS, log: silentLogger });
    assert.deepEqual(
      [again.pods, again.nodes, again.nodeClaims, again.nodePools, again.leases, again.errors].flat(),
      [],
    );
  });

  it("removes the ledgers and the repair Lease from the ledger namespace too, and only those", async () => {
    const kube = await seeded();
    const LEDGERS = "wave-spot-ledgers";
    const ledger = { [MANAGED_BY_LABEL]: MANAGED_BY_VALUE, [LEDGER_LABEL]: "def" };
    await put(kube, "Lease", SPOT_REPAIR_LEASE, { namespace: LEDGERS });
    await put(kube, "Lease", "wave-spot-def", { namespace: LEDGERS, labels: ledger });
    // Leader names of Wave's namespace are not the webhook's: kept in the ledger namespace.
    await put(kube, "Lease", WARMUP_LEASE, { namespace: LEDGERS });
    const report = await cleanup(kube, { namespace: NS, ledgerNamespace: LEDGERS, log: silentLogger });
    assert.deepEqual(report.leases.sort(), [
      // Ledgers and the repair Lease an older install kept in Wave's namespace go as well.
      "wave-agent",
      "wave-ledger-abc",
      `${LEDGERS}/wave-spot-def`,
      `${LEDGERS}/${SPOT_REPAIR_LEASE}`,
      SPOT_REPAIR_LEASE,
      WARMUP_LEASE,
    ]);
    assert.deepEqual(report.errors, []);
    const left = (await kube.list("Lease", { namespace: LEDGERS })).items.map((l) => l.metadata.name);
    assert.deepEqual(left, [WARMUP_LEASE]);

    // From the command: --spot-ledger-namespace (WAVE_SPOT_LEDGER_NAMESPACE in the chart's hook).
    await put(kube, "Lease", "wave-spot-ghi", { namespace: LEDGERS, labels: ledger });
    const out: string[] = [];
    const ctx: CommandContext = {
      config: parseConfig(["--namespace", NS], { WAVE_SPOT_LEDGER_NAMESPACE: LEDGERS }).config,
      positionals: [],
      flags: {},
      io: { out: (t) => out.push(t), err: () => undefined, env: {}, signal: new AbortController().signal },
    };
    assert.equal(await cleanupCommand(ctx, { kube, log: silentLogger }), 0);
    assert.match(out.join(""), /, 1 leases\n$/);
    assert.equal(await kube.get("Lease", "wave-spot-ghi", LEDGERS).catch(() => undefined), undefined);
  });

  it("re-reads and retries an annotation patch that lost a race", async () => {
    const kube = await seeded();
    kube.failNext(
      "patch",
      { code: 409, reason: "Conflict", message: "the object has been modified" },
      {
        kind: "Node",
      },
    );
    const report = await cleanup(kube, { namespace: NS, log: silentLogger });
    assert.deepEqual(report.nodes, ["n-ours"]);
    assert.deepEqual(report.errors, []);
    assert.deepEqual(await annotationsOf(kube, "Node", "n-ours"), { keep: "me" });
  });

  it("attempts every object, reports each failure, and the command exits 1", async () => {
    const kube = await seeded();
    kube.failNext(
      "patch",
      { code: 500, reason: "InternalError", message: "etcd hiccup" },
      { kind: "NodeClaim" },
    );
    const out: string[] = [];
    const err: string[] = [];
    const ctx: CommandContext = {
      config: parseConfig(["--namespace", NS], {}).config,
      positionals: [],
      flags: {},
      io: { out: (t) => out.push(t), err: (t) => err.push(t), env: {}, signal: new AbortController().signal },
    };
    assert.equal(await cleanupCommand(ctx, { kube, log: silentLogger }), 1);
    assert.deepEqual(out, [
      `cleaned up in namespace ${NS}: 2 pods, 1 nodes, 0 nodeClaims, 1 nodePools, 4 leases\n`,
    ]);
    assert.equal(err.length, 1);
    assert.match(err[0] ?? "", /^wave cleanup: NodeClaim c-ours: .*etcd hiccup/);
    // Fixed: a second run finishes the job and exits 0.
    out.length = 0;
    assert.equal(await cleanupCommand(ctx, { kube, log: silentLogger }), 0);
    assert.deepEqual(out, [
      `cleaned up in namespace ${NS}: 0 pods, 0 nodes, 1 nodeClaims, 0 nodePools, 0 leases\n`,
    ]);
  });

  it("waits for core's pods to be gone before touching anything", async () => {
    const kube = await seeded();
    const clock = new FakeClock();
    let done = false;
    const run = cleanup(kube, {
      namespace: NS,
      waitForPods: "app=core",
      clock,
      log: silentLogger,
      pollMs: 2000,
    }).then((r) => {
      done = true;
      return r;
    });
    await flushMicrotasks();
    await clock.advance(2000);
    await clock.advance(2000);
    assert.equal(done, false);
    assert.equal(
      (await kube.list("Pod", { namespace: NS })).items.length,
      3,
      "nothing deleted while core runs",
    );
    await kube.delete("Pod", "core-0", { namespace: NS });
    await clock.advance(2000);
    const report = await run;
    assert.deepEqual(report.pods, ["warm-0", "pull-0"]);
  });
});

describe("wave agent|core|webhook: what they need before they start", () => {
  const kube = kubeWith();
  let dir = "";
  suiteDir("wave-components-", (d) => {
    dir = d;
    mkdirSync(join(dir, "empty"));
  });

  it("names the missing setting with its environment variable and flag", async () => {
    await assert.rejects(
      startAgentComponent(config([]), {}, { kube }),
      /WAVE_CORE_ADDRESS or --core-address/,
    );
    await assert.rejects(
      startAgentComponent(config(["--core-address", "https://core:8081"]), {}, { kube }),
      /WAVE_AGENT_TOKEN or --agent-token/,
    );
    await assert.rejects(startCoreComponent(config([]), {}, { kube }), /WAVE_AGENT_TOKEN/);
    await assert.rejects(
      startCoreComponent(
        config(["--agent-token", "a".repeat(20), "--admin-token", "b".repeat(20)]),
        {},
        { kube },
      ),
      /WAVE_VIEWER_TOKEN or --viewer-token/,
    );
    // SpotPolicies come from the CRDs by default (issue 31): no core URL or token needed for them.
    await assert.rejects(startWebhookComponent(config([]), {}, { kube }), /WAVE_WEBHOOK_TLS_DIR/);
    await assert.rejects(
      startWebhookComponent(config(["--spot-policy-source", "core"]), {}, { kube }),
      /WAVE_SPOT_POLICIES_URL/,
    );
  });

  it("refuses a TLS directory without the certificate, and a non-http policies URL", async () => {
    const tokens = TOKEN_FLAGS;
    await assert.rejects(
      startCoreComponent(config([...tokens, "--grpc-tls-dir", join(dir, "empty")]), {}, { kube }),
      (err: Error & { userFacing?: boolean }) =>
        /core gRPC TLS: .*tls\.crt is missing \(is the certificate issued\?\)/.test(err.message) &&
        err.userFacing === true,
    );
    await assert.rejects(
      startAgentComponent(
        config([
          "--core-address",
          "https://core:8081",
          "--agent-token",
          "a".repeat(20),
          "--agent-tls-dir",
          dir,
        ]),
        {},
        { kube },
      ),
      /agent TLS: .*tls\.crt is missing/,
    );
    await assert.rejects(
      startWebhookComponent(
        config(["--spot-policies-url", "file:///etc/policies.json", "--viewer-token", "c".repeat(20)]),
        {},
        { kube },
      ),
      /must be http\(s\):\/\/…, got file:/,
    );
  });
});

describe("wave core + wave agent in process (mutual TLS, leader Leases)", { timeout: 60_000 }, () => {
  let dir = "";
  suiteDir("wave-components-tls-", (d) => {
    dir = d;
    makePki(dir, CORE_AGENT_PKI);
  });

  it("streams the cluster to core; warmup beside the agent takes core's policies, reports to core, and keeps them while core is away", async () => {
    const kube = new MemoryKube();
    await put(kube, "Node", "node-a", { labels: { [NODE_POOL_LABEL]: "general" } });
    // A full node: a 3-CPU pod on a 4-CPU node leaves no room for another, so warmup warms one.
    await kube.create("NodePool", nodePool("general"));
    await kube.create("Node", node("n1", "general", { cpu: "4", memory: "16Gi" }));
    await kube.create("Pod", pod("big", { cpu: "3", memory: "4Gi", node: "n1" }));
    const tokens = {
      agent: "agent-token-0123456789",
      admin: "admin-token-0123456789",
      viewer: "viewer-token-0123456789",
    };
    const common = [
      "--namespace",
      NS,
      "--cluster-id",
      "unit",
      "--host",
      "127.0.0.1",
      "--agent-token",
      tokens.agent,
    ];
    const coreConfig = parseConfig(
      [
        ...common,
        ...[
          "--port",
          "0",
          "--grpc-port",
          "0",
          "--grpc-tls-dir",
          join(dir, "grpc"),
          "--data-dir",
          join(dir, "data"),
        ],
        ...["--admin-token", tokens.admin, "--viewer-token", tokens.viewer, "--pod-name", "core-0"],
      ],
      {},
    ).config;
    let core = await startCoreComponent(coreConfig, {}, { log: silentLogger });
    try {
      const agentConfig = parseConfig(
        [
          ...common,
          ...["--core-address", `https://127.0.0.1:${core.grpcPort}`, "--agent-tls-dir", join(dir, "agent")],
          ...["--metrics-port", "0", "--pod-name", "agent-0"],
        ],
        {},
      ).config;
      // The API's edit becomes the WarmupPolicy (applied by this agent, ADR 0018), which the
      // agent's warmup reads from its state (src/warmup/policy-resources.test.ts).
      const agent = await startAgentComponent(agentConfig, {}, { kube, log: silentLogger });
      let agentStopped = false;
      try {
        const deadline = Date.now() + 30_000;
        while (!(
          core.hub
            .get("unit")
            ?.state.nodes()
            .some((n) => n.metadata.name === "node-a") ?? false
        )) {
          assert.ok(Date.now() < deadline, "node-a reached core within 30 s");
          await new Promise((r) => setTimeout(r, 50));
        }
        const leases = (await kube.list("Lease", { namespace: NS })).items;
        const holder = (name: string): string | undefined =>
          leases.find((l) => l.metadata.name === name)?.spec.holderIdentity;
        assert.equal(holder("wave-agent"), "agent-0");
        // Core no longer runs warmup: no second Lease, no apiserver access of its own.
        assert.equal(holder(WARMUP_LEASE), undefined);
        const metrics = await (await fetch(`http://127.0.0.1:${agent.metricsPort}/metrics`)).text();
        assert.match(metrics, /^wave_agent_leader 1$/m);
        // No policy yet: warmup is off.
        assert.equal((await kube.list("Pod", { namespace: NS })).items.filter(isWarmupPod).length, 0);

        // A policy set through core's API reaches the agent's warmup controller (the CR it applies)…
        const api = `http://127.0.0.1:${core.apiPort}/api/v1/clusters/unit`;
        const putPolicy = await fetch(`${api}/policies/warmup/general`, {
          method: "PUT",
          headers: { authorization: `Bearer ${tokens.admin}`, "content-type": "application/json" },
          body: JSON.stringify({ enabled: true, prePull: false }),
        });
        assert.equal(putPolicy.status, 200);
        // …which warms a node for the pool…
        while ((await kube.list("Pod", { namespace: NS })).items.filter(isWarmupPod).length === 0) {
          assert.ok(Date.now() < deadline, "a warmup pod within 30 s");
          await new Promise((r) => setTimeout(r, 50));
        }
        // …and reports it to core, whose API shows it for this cluster.
        const createdInCore = async (): Promise<number> => {
          const view = (await (
            await fetch(`${api}/warmup`, { headers: { authorization: `Bearer ${tokens.viewer}` } })
          ).json()) as { pools: { nodePool: string; created: number }[] };
          return view.pools.find((p) => p.nodePool === "general")?.created ?? 0;
        };
        while ((await createdInCore()) !== 1) {
          assert.ok(Date.now() < deadline, "the warmup event in core's API within 30 s");
          await new Promise((r) => setTimeout(r, 50));
        }

        // Core goes away, and the agent restarts meanwhile: its warmup keeps the policy (the CR).
        await core.stop();
        await agent.stop();
        agentStopped = true;
        const again = await startAgentComponent(agentConfig, {}, { kube, log: silentLogger });
        try {
          while (again.warmup()?.policies.get("general").enabled !== true) {
            assert.ok(Date.now() < deadline + 20_000, "the remembered policy within 20 s more");
            await new Promise((r) => setTimeout(r, 50));
          }
        } finally {
          await again.stop();
        }
        core = await startCoreComponent(coreConfig, {}, { log: silentLogger });
      } finally {
        if (!agentStopped) await agent.stop();
      }
    } finally {
      await core.stop();
    }
  });
});

describe("wave webhook: late answers", { timeout: 30_000 }, () => {
  let dir = "";
  suiteDir("wave-webhook-late-", (d) => {
    dir = d;
    makePki(dir, [{ dir: "webhook", cn: "localhost", ext: SERVER_EXT }]);
  });

  it("records a late answer as an Event on the workload through its kube client, written at shutdown", async () => {
    const memory = new MemoryKube();
    await memory.create("Namespace", { metadata: { name: "shop" } });
    // The ledger's Lease requests wait until released: the admission misses its deadline, and
    // its slot is granted afterwards (a late answer).
    let release = (): void => undefined;
    const gate = new Promise<void>((res) => (release = res));
    const kube = new Proxy(memory, {
      get(target, prop, receiver) {
        const v = Reflect.get(target, prop, receiver) as unknown;
        if (typeof v !== "function") return v;
        return async (...args: unknown[]) => {
          if (args[0] === "Lease") await gate;
          return (v as (...a: unknown[]) => unknown).apply(target, args);
        };
      },
    }) as KubeClient;
    const set = {
      apiVersion: "wave.sh/v1alpha1",
      kind: "SpotPolicySet",
      revision: "1",
      policies: [
        {
          workload: { namespace: "shop", kind: "Deployment", name: "web" },
          threshold: 0,
          strategy: "Require",
        },
      ],
    };
    const core = createHttpServer((_req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify(set));
    });
    await new Promise<void>((r) => core.listen(0, "127.0.0.1", r));
    const corePort = (core.address() as { port: number }).port;
    const clock = new FakeClock(Date.parse("2026-12-04T12:00:00Z"));
    const config = parseConfig(
      [
        ...["--namespace", NS, "--host", "127.0.0.1", "--webhook-port", "0", "--pod-name", "webhook-0"],
        ...["--spot-policies-url", `http://127.0.0.1:${corePort}/api/v1/policies/spot`],
        ...["--viewer-token", "viewer-token-0123456789", "--webhook-tls-dir", join(dir, "webhook")],
        ...["--spot-policy-watch", "false", "--spot-repair", "false", "--webhook-deadline-ms", "500"],
      ],
      {},
    ).config;
    const webhook = await startWebhookComponent(config, {}, { kube, clock, log: silentLogger });
    const agent = new HttpsAgent({ ca: readFileSync(join(dir, "webhook", "ca.crt")) });
    try {
      // Its /metrics names the workloads with policies: the viewer token it pulls with (issue 32).
      const scrape = (headers: Record<string, string> = {}) =>
        httpsRequest(agent, webhook.port, "", { path: "/metrics", method: "GET", headers }).then(
          (r) => r.status,
        );
      assert.deepEqual(
        [await scrape(), await scrape({ authorization: "Bearer viewer-token-0123456789" })],
        [401, 200],
      );
      const parked = clock.pending;
      const answer = httpsRequest(
        agent,
        webhook.port,
        JSON.stringify(reviewFor("deployment-pod-generatename", 1)),
      );
      // The request reaches review() and parks on the ledger (its deadline's sleep); then it passes.
      for (let i = 0; i < 400 && clock.pending <= parked; i++) await new Promise((r) => setTimeout(r, 5));
      assert.ok(clock.pending > parked, "the admission waits on its deadline");
      await clock.advance(500);
      const res = await answer;
      assert.equal(res.status, 200);
      assert.doesNotMatch(
        Buffer.from(
          (JSON.parse(res.body) as { response: { patch?: string } }).response.patch ?? "",
          "base64",
        ).toString(),
        /karpenter\.sh\/capacity-type/,
        "answered at the deadline without Wave's affinity",
      );
      release();
      await new Promise((r) => setTimeout(r, 50));
      const lateEvents = async () =>
        (await memory.list("Event", { namespace: "shop" })).items.filter(
          (e) => e.reason === "WaveSpotLateAnswer",
        );
      assert.deepEqual(await lateEvents(), [], "aggregated: nothing written inside the minute");
      // Shutdown writes the minute's count.
      await webhook.stop();
      const events = await lateEvents();
      assert.deepEqual(
        events.map((e) => [e.involvedObject.kind, e.involvedObject.name, e.count, e.reportingInstance]),
        [["Deployment", "web", 1, "webhook-0"]],
      );
    } finally {
      agent.destroy();
      await webhook.stop();
      await new Promise<void>((r) => core.close(() => r()));
    }
  });
});

describe("wave start's webhook: the spot repair (issue 28, Build 4)", { timeout: 30_000 }, () => {
  let dir = "";
  suiteDir("wave-webhook-repair-", (d) => {
    dir = d;
    makePki(dir, [{ dir: "webhook", cn: "localhost", ext: SERVER_EXT }]);
  });

  const started = async (tls: boolean): Promise<string[]> => {
    const kube = new MemoryKube();
    await kube.create("Namespace", { metadata: { name: NS } });
    const config = parseConfig(
      [...["--namespace", NS, "--host", "127.0.0.1", "--webhook-port", "0", "--pod-name", "start-0"]],
      {},
    ).config;
    const webhook = await startWebhookComponent(
      config,
      {},
      {
        kube,
        log: silentLogger,
        inProcess: {
          policies: new InMemoryPolicySource(),
          metrics: createSpotMetrics(),
          ...(tls
            ? { tls: { certFile: join(dir, "webhook", "tls.crt"), keyFile: join(dir, "webhook", "tls.key") } }
            : {}),
        },
      },
    );
    try {
      for (let i = 0; i < 200; i++) {
        const leases = (await kube.list("Lease", { namespace: NS })).items;
        if (leases.length > 0 || !tls) break;
        await new Promise((r) => setTimeout(r, 10));
      }
      return (await kube.list("Lease", { namespace: NS })).items.map((l) => l.metadata.name ?? "");
    } finally {
      await webhook.stop();
    }
  };

  it("on a real cluster (`wave start --kubeconfig`: in process, serving HTTPS) the repair runs, as in `wave webhook`", async () => {
    assert.deepEqual(await started(true), [SPOT_REPAIR_LEASE], "its leader takes the repair Lease");
  });

  it("on the simulator it runs none here (the embedded cluster steps its own)", async () => {
    assert.deepEqual(await started(false), []);
  });
});
