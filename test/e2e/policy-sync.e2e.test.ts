// Issue 31 on the rig: an edit through Wave's API goes down the agent stream and the agent
// server-side applies the SpotPolicy on the real apiserver (field manager wave-console, the
// caller's identity in wave.sh/changed-by); a field another manager owns (Argo CD's
// argocd-controller) is refused with 409 "managed by argocd-controller: change it in Git" and the
// CR is unchanged; with force=true the edit takes the field. Own namespace; core and the agent run
// in this process (the shared components are not touched).
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { clientFromKubeconfig } from "../../src/kube/clientnode/kubeconfig.ts";
import type { SpotPolicyResource } from "../../src/objects/policy-crds.ts";
import { createNamespace, deleteNamespace, kubeconfigPath, requireRig, waitFor } from "./harness.ts";
import { ADMIN_TOKEN, ensurePolicyCrds, startCoreAndAgent } from "./policy-crs.ts";

const REPO = new URL("../../", import.meta.url).pathname;
const A = { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" };
const kube = clientFromKubeconfig(kubeconfigPath);
let ns = "";
let rig: Awaited<ReturnType<typeof startCoreAndAgent>>;

before(async () => {
  await requireRig();
  await ensurePolicyCrds();
  ns = await createNamespace("crdsync");
  rig = await startCoreAndAgent(`crdsync-${ns.slice(-6)}`);
});

after(async () => {
  await rig.stop();
  if (ns) await deleteNamespace(ns);
});

const managers = (cr: SpotPolicyResource): string[] =>
  (cr.metadata.managedFields ?? []).filter((m) => !m.subresource).map((m) => `${m.manager}/${m.operation}`);

describe("policy edits become SpotPolicy CRs on the rig", () => {
  it("an API edit applies the CR with field manager wave-console and the caller's identity; core shows it", async () => {
    const res = await rig.app.inject({
      method: "PUT",
      url: `/api/v1/clusters/${rig.clusterId}/policies/spot/Deployment/${ns}/web`,
      headers: { ...A, "x-wave-client": "ui" },
      payload: { threshold: 2, strategy: "Prefer", percentAboveBase: 20 },
    });
    assert.equal(res.statusCode, 200, res.body);
    const cr = await kube.get("SpotPolicy", "web", ns);
    assert.deepEqual(
      [cr.spec.targetRef.name, cr.spec.threshold, cr.spec.strategy, cr.spec.percentAboveBase],
      ["web", 2, "Prefer", 20],
    );
    assert.deepEqual(managers(cr), ["wave-console/Apply"]);
    assert.equal(cr.metadata.annotations?.["wave.sh/changed-by"], "token:admin");
    assert.equal(cr.metadata.annotations["wave.sh/changed-via"], "ui");
    // The agent streams it back; the policy API reads core's copy.
    await waitFor("the CR in core's state", () =>
      Promise.resolve(
        rig.hub
          .state(rig.clusterId)
          .spotPolicies(ns)
          .some((c) => c.metadata.name === "web"),
      ),
    );
  });

  it("a field owned by argocd-controller: 409 naming it and the CR unchanged; with force the edit takes it", async () => {
    await kube.patch(
      "SpotPolicy",
      "api",
      {
        apiVersion: "wave.sh/v1alpha1",
        kind: "SpotPolicy",
        metadata: { name: "api", namespace: ns },
        spec: { targetRef: { kind: "Deployment", name: "api" }, threshold: 1, strategy: "Require" },
      },
      { namespace: ns, type: "apply", fieldManager: "argocd-controller" },
    );
    await waitFor("the Argo CD CR in core's state", () =>
      Promise.resolve(
        rig.hub
          .state(rig.clusterId)
          .spotPolicies(ns)
          .some((c) => c.metadata.name === "api"),
      ),
    );
    const before = await kube.get("SpotPolicy", "api", ns);
    const url = `/api/v1/clusters/${rig.clusterId}/policies/spot/Deployment/${ns}/api`;
    const refused = await rig.app.inject({
      method: "PUT",
      url,
      headers: A,
      payload: { threshold: 5, strategy: "Require" },
    });
    assert.equal(refused.statusCode, 409, refused.body);
    assert.match(
      refused.json<{ message: string }>().message,
      /\.spec\.threshold.* managed by argocd-controller: change it in Git/,
    );
    const unchanged = await kube.get("SpotPolicy", "api", ns);
    assert.equal(unchanged.metadata.resourceVersion, before.metadata.resourceVersion);
    assert.equal(unchanged.spec.threshold, 1);

    const forced = await rig.app.inject({
      method: "PUT",
      url: `${url}?force=true`,
      headers: A,
      payload: { threshold: 5, strategy: "Require" },
    });
    assert.equal(forced.statusCode, 200, forced.body);
    const after = await kube.get("SpotPolicy", "api", ns);
    assert.equal(after.spec.threshold, 5);
    assert.ok(managers(after).includes("wave-console/Apply"), managers(after).join(", "));
  });

  it("wave spot set --kubeconfig without a server applies the CR directly; a field Git owns is refused", async () => {
    const wave = (...args: string[]) =>
      spawnSync(process.execPath, ["bin/wave.ts", "spot", "set", ...args, "--kubeconfig", kubeconfigPath], {
        cwd: REPO,
        encoding: "utf8",
        env: { ...process.env, WAVE_DATA_DIR: "/nonexistent-wave-data" },
      });
    const ok = wave(`deployment/${ns}/cli`, "--threshold", "3", "--strategy", "require");
    assert.equal(ok.status, 0, ok.stderr + ok.stdout);
    const cr = await kube.get("SpotPolicy", "cli", ns);
    assert.deepEqual([cr.spec.threshold, cr.spec.strategy], [3, "Require"]);
    assert.deepEqual(managers(cr), ["wave-console/Apply"]);
    assert.equal(cr.metadata.annotations?.["wave.sh/changed-via"], "cli");

    await kube.patch(
      "SpotPolicy",
      "cli",
      {
        apiVersion: "wave.sh/v1alpha1",
        kind: "SpotPolicy",
        metadata: { name: "cli", namespace: ns },
        spec: { threshold: 4 },
      },
      { namespace: ns, type: "apply", fieldManager: "flux-kustomize-controller", force: true },
    );
    const refused = wave(`deployment/${ns}/cli`, "--threshold", "6", "--strategy", "require");
    assert.notEqual(refused.status, 0);
    assert.match(refused.stderr, /managed by flux-kustomize-controller: change it in Git/);
    assert.equal((await kube.get("SpotPolicy", "cli", ns)).spec.threshold, 4);
    const forced = wave(`deployment/${ns}/cli`, "--threshold", "6", "--strategy", "require", "--force");
    assert.equal(forced.status, 0, forced.stderr);
    assert.equal((await kube.get("SpotPolicy", "cli", ns)).spec.threshold, 6);
  });
});
