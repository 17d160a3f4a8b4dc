// The counting guarantee end to end over HTTPS: two webhook replicas (two servers, two allocators)
// share one apiserver (the in-memory KubeClient); 200 pods of one Deployment are admitted at once.
import assert from "node:assert/strict";
import { mkdtemp } from "node:fs/promises";
import { Agent } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { MemoryKube } from "../kube/memory/memory.ts";
import type { Pod } from "../objects/kube.ts";
import { FakeClock } from "../shared/clock.ts";
import type { AdmissionReviewResponse, JsonPatchOp } from "./admission.ts";
import { SlotAllocator } from "./allocator.ts";
import { generateDevCerts, type DevCerts } from "./certs.ts";
import { jsonPatch as applyJsonPatch } from "../kube/memory/patch.ts";
import { InMemoryPolicySource } from "./policy-source.ts";
import { startWebhookServer, type WebhookServer } from "./server.ts";
import { httpsRequest, reviewFor } from "./test-helpers.ts";
import { ASSIGNMENT_LABEL, SLOT_LABEL } from "../objects/wave.ts";

const N = 17;
const policies = new InMemoryPolicySource({
  apiVersion: "wave.sh/v1alpha1",
  kind: "SpotPolicySet",
  policies: [
    { workload: { namespace: "shop", kind: "Deployment", name: "web" }, threshold: N, strategy: "Prefer" },
  ],
});

describe("exact on-demand count across two webhook replicas", () => {
  const clock = new FakeClock(); // the internal deadline never fires: any miss is a counting bug
  const kube = new MemoryKube({ clock });
  let certs: DevCerts;
  const servers: WebhookServer[] = [];
  const agents: Agent[] = [];
  let seq = 0;

  const replica = async (): Promise<WebhookServer> => {
    const allocator = new SlotAllocator({ kube, namespace: "wave", clock });
    return startWebhookServer({
      certFile: certs.certFile,
      keyFile: certs.keyFile,
      host: "127.0.0.1",
      policies,
      allocator,
      clock,
    });
  };

  /** Admits `n` pods at once, alternating replicas; returns the patched pods. */
  const admitBurst = async (n: number): Promise<Pod[]> =>
    Promise.all(
      Array.from({ length: n }, async (_, i) => {
        const r = reviewFor("deployment-pod-generatename", seq++);
        const k = i % 2;
        const res = await httpsRequest(agents[k]!, servers[k]!.port, JSON.stringify(r));
        assert.equal(res.status, 200);
        const review = JSON.parse(res.body) as AdmissionReviewResponse;
        assert.equal(review.response.uid, r.request.uid);
        assert.equal(review.response.warnings, undefined, "no fallback");
        const ops = JSON.parse(
          Buffer.from(review.response.patch ?? "", "base64").toString(),
        ) as JsonPatchOp[];
        return applyJsonPatch(r.request.object as Pod, ops);
      }),
    );
  const onDemand = (pods: Pod[]): number =>
    pods.filter((p) => p.metadata.labels?.[ASSIGNMENT_LABEL] === "on-demand").length;

  before(async () => {
    certs = await generateDevCerts({
      dir: await mkdtemp(join(tmpdir(), "wave-exact-")),
      hosts: ["localhost", "127.0.0.1"],
    });
    servers.push(await replica(), await replica());
    agents.push(
      new Agent({ keepAlive: true, maxSockets: 64, ca: certs.caPem }),
      new Agent({ keepAlive: true, maxSockets: 64, ca: certs.caPem }),
    );
  });
  after(async () => {
    for (const a of agents) a.destroy();
    await Promise.all(servers.map((s) => s.close()));
  });

  let admitted: Pod[] = [];

  it(`200 pods at once → exactly ${N} on-demand`, async () => {
    admitted = await admitBurst(200);
    assert.equal(onDemand(admitted), N);
    assert.equal(
      new Set(admitted.map((p) => p.metadata.labels?.[SLOT_LABEL])).size,
      200,
      "unique slot tokens",
    );
  });

  it("stays exact after the pods exist, a replica restarts and on-demand pods die (refilled first)", async () => {
    for (const [i, pod] of admitted.entries()) {
      pod.metadata.name = `web-7d9c8b6f5d-${i}`;
      delete pod.metadata.generateName;
      await kube.create("Pod", pod, { namespace: "shop" });
    }
    await clock.advance(2000);
    assert.equal(onDemand(await admitBurst(20)), 0, "baseline full");

    const old = servers.shift()!;
    await old.close();
    servers.unshift(await replica());

    const victims = admitted.filter((p) => p.metadata.labels?.[ASSIGNMENT_LABEL] === "on-demand").slice(0, 3);
    for (const v of victims) await kube.delete("Pod", v.metadata.name!, { namespace: "shop" });
    await clock.advance(6000); // newer than the last confirmation + skew
    const refill = await admitBurst(40);
    assert.equal(onDemand(refill), 3);
  });
});
