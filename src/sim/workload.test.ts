import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { MemoryKube } from "../kube/memory/memory.ts";
import { FakeClock } from "../shared/clock.ts";
import { seeded } from "../shared/random.ts";
import { SCENARIO_DEPLOYMENTS, SCENARIO_POOLS } from "./scenario.ts";
import { nodePoolHash } from "./simulator.ts";
import { WorkloadError, generatedWorkload, parseRecordedWorkload, recordedWorkload } from "./workload.ts";

const deployment = (name: string, extra: Record<string, unknown> = {}): Record<string, unknown> => ({
  apiVersion: "apps/v1",
  kind: "Deployment",
  metadata: { name, namespace: "shop" },
  spec: {
    replicas: 1,
    selector: { matchLabels: { app: name } },
    template: {
      metadata: { labels: { app: name } },
      spec: { containers: [{ name, image: "x", resources: { requests: { cpu: "500m", memory: "1Gi" } } }] },
    },
    ...extra,
  },
});

const pool = (name: string): Record<string, unknown> => ({
  apiVersion: "karpenter.sh/v1",
  kind: "NodePool",
  metadata: { name },
  spec: { template: { spec: { requirements: [] } } },
});

/** Asserts a WorkloadError whose message contains `part`. */
function rejects(json: unknown, part: string): void {
  assert.throws(
    () => parseRecordedWorkload(json),
    (err: unknown) => {
      assert.ok(err instanceof WorkloadError, `a WorkloadError, got ${String(err)}`);
      assert.match(err.message, new RegExp(part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")));
      return true;
    },
  );
}

describe("parseRecordedWorkload", () => {
  it("parses pools, deployments and steps; steps sorted by time, durations in Go syntax or seconds", () => {
    const w = parseRecordedWorkload({
      nodePools: [pool("general")],
      deployments: [deployment("web"), deployment("api")],
      steps: [
        { at: "10m", deployment: "shop/web", replicas: 5 },
        { at: 90, deployment: "shop/api", replicas: 0 },
        { at: "1h30m", deployment: "shop/web", replicas: 2 },
      ],
    });
    assert.deepEqual(
      w.nodePools.map((p) => p.metadata.name),
      ["general"],
    );
    assert.equal(w.deployments.length, 2);
    assert.deepEqual(w.steps, [
      { atMs: 90_000, namespace: "shop", name: "api", replicas: 0 },
      { atMs: 600_000, namespace: "shop", name: "web", replicas: 5 },
      { atMs: 5_400_000, namespace: "shop", name: "web", replicas: 2 },
    ]);
  });

  it("defaults to the scenario's NodePools and no steps", () => {
    const w = parseRecordedWorkload({ deployments: [deployment("web")] });
    assert.deepEqual(
      w.nodePools.map((p) => p.metadata.name),
      SCENARIO_POOLS.map((p) => p.metadata.name),
    );
    assert.deepEqual(w.steps, []);
  });

  it("accepts the current policies key (read by wave whatif)", () => {
    assert.doesNotThrow(() => parseRecordedWorkload({ deployments: [deployment("web")], policies: {} }));
  });

  it("rejects bad input with the path of the problem", () => {
    rejects(null, "expected a JSON object");
    rejects([], "expected a JSON object");
    rejects({ deployments: [deployment("web")], step: [] }, 'unknown key "step"');
    rejects({}, "deployments: expected a non-empty array");
    rejects({ deployments: [] }, "deployments: expected a non-empty array");
    rejects({ deployments: [deployment("web")], nodePools: {} }, "nodePools: expected an array");
    rejects(
      { deployments: [deployment("web")], nodePools: [{ metadata: {} }] },
      "nodePools[0]: needs metadata.name",
    );
    rejects(
      { deployments: [deployment("web")], nodePools: [{ metadata: { name: "a" }, spec: {} }] },
      "nodePools[0] (a): needs spec.template.spec",
    );
    rejects(
      { deployments: [deployment("web")], nodePools: [pool("a"), pool("a")] },
      "nodePools[1]: a second NodePool named a",
    );
    rejects({ deployments: [{ metadata: { name: "x" } }] }, "deployments[0]: needs metadata.namespace");
    rejects({ deployments: [{ metadata: { namespace: "x" } }] }, "deployments[0]: needs metadata.name");
    rejects(
      { deployments: [{ metadata: { name: "x", namespace: "y" }, spec: {} }] },
      "deployments[0]: needs spec.template.spec",
    );
    rejects(
      { deployments: [deployment("web", { template: { spec: { containers: [] } } })] },
      "deployments[0]: needs at least one container",
    );
    rejects({ deployments: [deployment("web", { replicas: -1 })] }, "spec.replicas must be an integer >= 0");
    rejects({ deployments: [deployment("web", { replicas: 1.5 })] }, "spec.replicas must be an integer >= 0");
    rejects(
      { deployments: [deployment("web"), deployment("web")] },
      "deployments[1]: a second Deployment named shop/web",
    );
  });

  it("rejects resource quantities the simulator could not add up", () => {
    const withRequests = (requests: unknown): unknown => ({
      deployments: [
        deployment("web", {
          template: { spec: { containers: [{ name: "c", image: "x", resources: { requests } }] } },
        }),
      ],
    });
    rejects(
      withRequests({ cpu: "lots" }),
      'deployments[0].containers[0].resources.requests.cpu: "lots" is not a quantity',
    );
    rejects(withRequests({ cpu: 1 }), 'expected quantities as strings, like cpu: "500m"');
    rejects(withRequests(["1"]), "resources.requests: expected quantities as strings");
    assert.doesNotThrow(() => parseRecordedWorkload(withRequests({ cpu: "1500m", memory: "2Gi" })));
  });

  it("rejects bad steps", () => {
    const steps = (s: unknown): unknown => ({ deployments: [deployment("web")], steps: s });
    rejects(steps({}), "steps: expected an array");
    rejects(steps([1]), "steps[0]: expected an object");
    rejects(steps([{ at: "1m", deployment: "shop/nope", replicas: 1 }]), "steps[0]: deployment must name");
    rejects(steps([{ at: "1m", deployment: "web", replicas: 1 }]), "steps[0]: deployment must name");
    rejects(steps([{ at: "1m", deployment: "shop/web", replicas: -2 }]), "steps[0]: replicas must be");
    rejects(steps([{ at: "1m", deployment: "shop/web" }]), "steps[0]: replicas must be");
    rejects(steps([{ at: "soon", deployment: "shop/web", replicas: 1 }]), "steps[0].at: expected a duration");
    rejects(steps([{ at: "-5m", deployment: "shop/web", replicas: 1 }]), "steps[0].at: expected a duration");
    rejects(
      steps([{ at: "Never", deployment: "shop/web", replicas: 1 }]),
      "steps[0].at: expected a duration",
    );
    rejects(steps([{ at: -1, deployment: "shop/web", replicas: 1 }]), "steps[0].at: expected a duration");
    rejects(steps([{ deployment: "shop/web", replicas: 1 }]), "steps[0].at: expected a duration");
  });
});

describe("recordedWorkload", () => {
  it("creates namespaces, pools and deployments, then applies each step when its time comes", async () => {
    const clock = new FakeClock(Date.UTC(2026, 0, 5, 8));
    const kube = new MemoryKube({ clock, random: seeded(1) });
    const w = parseRecordedWorkload({
      nodePools: [pool("general")],
      deployments: [
        deployment("web"),
        { ...deployment("api"), metadata: { name: "api", namespace: "data" } },
      ],
      steps: [
        { at: "1m", deployment: "shop/web", replicas: 4 },
        { at: "2m", deployment: "data/api", replicas: 3 },
        { at: "2m", deployment: "shop/web", replicas: 0 },
      ],
    });
    const start = clock.now();
    const drive = await recordedWorkload(w)(kube, start);
    const replicas = async (ns: string, name: string): Promise<number | undefined> =>
      (await kube.get("Deployment", name, ns)).spec.replicas;

    assert.deepEqual((await kube.list("Namespace")).items.map((n) => n.metadata.name).sort(), [
      "data",
      "shop",
    ]);
    assert.deepEqual(
      (await kube.list("NodePool")).items.map((p) => p.metadata.name),
      ["general"],
    );
    await drive(start + 59_000);
    assert.equal(await replicas("shop", "web"), 1);
    await drive(start + 60_000);
    assert.equal(await replicas("shop", "web"), 4);
    assert.equal(await replicas("data", "api"), 1);
    await drive(start + 10 * 60_000);
    assert.equal(await replicas("shop", "web"), 0);
    assert.equal(await replicas("data", "api"), 3);
  });

  it("changes a NodePool's template at each recorded drift, so the simulator replaces its nodes then", async () => {
    const clock = new FakeClock(Date.UTC(2026, 0, 5, 8));
    const kube = new MemoryKube({ clock, random: seeded(1) });
    const w = {
      ...parseRecordedWorkload({
        nodePools: [pool("arm64"), pool("general")],
        deployments: [deployment("web")],
      }),
      drifts: [
        { atMs: 90_000, nodePool: "arm64" },
        { atMs: 200_000, nodePool: "arm64" },
      ],
    };
    const start = clock.now();
    const drive = await recordedWorkload(w)(kube, start);
    const hashOf = async (name: string): Promise<string> => nodePoolHash(await kube.get("NodePool", name));
    const before = await hashOf("arm64");
    const general = await hashOf("general");
    const next = (): number | undefined => drive.nextAt?.();
    assert.equal(next(), start + 90_000, "the drift is the next change");
    await drive(start + 89_000);
    assert.equal(await hashOf("arm64"), before);
    await drive(start + 90_000);
    const first = await hashOf("arm64");
    assert.notEqual(first, before, "the template changed: its nodes are drifted");
    assert.equal(next(), start + 200_000);
    await drive(start + 300_000);
    assert.notEqual(await hashOf("arm64"), first, "and again at the next change");
    assert.equal(await hashOf("general"), general, "other pools stay");
    assert.equal(next(), undefined);
  });

  it("rolls a Deployment at each recorded rollout, after the counts of the same moment", async () => {
    const clock = new FakeClock(Date.UTC(2026, 0, 5, 8));
    const kube = new MemoryKube({ clock, random: seeded(1) });
    const w = {
      ...parseRecordedWorkload({
        nodePools: [pool("general")],
        deployments: [deployment("web"), deployment("api")],
        steps: [{ at: "2m", deployment: "shop/web", replicas: 5 }],
      }),
      rollouts: [
        { atMs: 120_000, namespace: "shop", name: "web" },
        { atMs: 400_000, namespace: "shop", name: "web" },
      ],
    };
    const start = clock.now();
    const drive = await recordedWorkload(w)(kube, start);
    const template = async (name: string): Promise<string> =>
      JSON.stringify((await kube.get("Deployment", name, "shop")).spec.template);
    const next = (): number | undefined => drive.nextAt?.();
    const before = await template("web");
    const api = await template("api");
    assert.equal(next(), start + 120_000);
    await drive(start + 119_000);
    assert.equal(await template("web"), before);
    await drive(start + 120_000);
    const web = await kube.get("Deployment", "web", "shop");
    assert.equal(web.spec.replicas, 5, "scaled first: the rollout replaces the 5 pods wanted then");
    const first = JSON.stringify(web.spec.template);
    assert.notEqual(first, before, "a new pod template: a new ReplicaSet replaces the pods");
    assert.equal(next(), start + 400_000, "the next rollout is the next change");
    await drive(start + 400_000);
    assert.notEqual(await template("web"), first, "and again at the next one");
    assert.equal(await template("api"), api, "other Deployments stay");
    assert.equal(next(), undefined);
  });

  it("keeps the parsed workload intact, so both runs of a comparison start from the same objects", async () => {
    const w = parseRecordedWorkload({ nodePools: [pool("general")], deployments: [deployment("web")] });
    const before = structuredClone(w);
    for (let i = 0; i < 2; i++) {
      const clock = new FakeClock();
      await recordedWorkload(w)(new MemoryKube({ clock, random: seeded(1) }), clock.now());
    }
    assert.deepEqual(w, before);
  });
});

describe("generatedWorkload", () => {
  it("seeds the embedded scenario", async () => {
    const clock = new FakeClock();
    const kube = new MemoryKube({ clock, random: seeded(1) });
    await generatedWorkload()(kube, clock.now());
    assert.equal((await kube.list("Deployment")).items.length, SCENARIO_DEPLOYMENTS.length);
    assert.equal((await kube.list("NodePool")).items.length, SCENARIO_POOLS.length);
  });
});
