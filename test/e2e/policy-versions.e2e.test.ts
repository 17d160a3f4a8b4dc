// Issue 44, part 4, on the shared rig: wave.sh serves v1beta1 beside v1alpha1 (the storage
// version), conversion None (docs/crds.md, Versions). Wave's own clients stay on v1alpha1.
//   - the installed CRDs: both versions served, v1alpha1 stored, storedVersions [v1alpha1]
//   - a SpotPolicy created through v1beta1 reads back through v1alpha1 with the same spec and the
//     schema's defaults; Wave's webhook informer (v1alpha1) has it in force, its admission decision
//     places a Deployment's pod by it, and the status Wave writes (v1alpha1) reads through v1beta1
//   - the reverse: Wave's own edit path (the agent's server-side apply, v1alpha1) reads back through
//     v1beta1; an edit through v1beta1 reaches Wave's informer; field ownership holds across the
//     versions (Wave's unforced edit of a field a v1beta1 manager owns is a conflict naming it)
//   - a WarmupPolicy created through v1beta1 is read by Wave's client through v1alpha1
// Own namespace; the WarmupPolicy names a NodePool that does not exist (nothing warms).
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, test } from "node:test";
import { clientFromKubeconfig } from "../../src/kube/clientnode/kubeconfig.ts";
import { applyPolicyEdit } from "../../src/agent/policy-apply.ts";
import { CONSOLE_FIELD_MANAGER, POLICY_VERSION } from "../../src/objects/policy-crds.ts";
import { CrdPolicySource, SpotPolicyIndex } from "../../src/webhook/crd-policy-source.ts";
import { SpotStatusWriter } from "../../src/webhook/policy-status.ts";
import { decide } from "../../src/webhook/review.ts";
import { realClock } from "../../src/shared/clock.ts";
import {
  createNamespace,
  deleteNamespace,
  kubeconfigPath,
  kubectl,
  remove,
  requireRig,
  waitFor,
} from "./harness.ts";
import { installWaveCrds, WAVE_CRDS } from "./wave-crds.ts";

const kube = clientFromKubeconfig(kubeconfigPath);
const suffix = randomBytes(3).toString("hex");
const warmName = `ver-warm-${suffix}`;
let ns = "";
let source: CrdPolicySource | undefined;

interface Cr {
  apiVersion: string;
  metadata: { name: string; generation?: number; managedFields?: { manager: string; apiVersion: string }[] };
  spec: Record<string, unknown>;
  status?: { observedGeneration?: number; conditions?: { type: string; status: string }[] };
}

const spot = (version: string, name: string, target: string, threshold: number): object => ({
  apiVersion: `wave.sh/${version}`,
  kind: "SpotPolicy",
  metadata: { name, namespace: ns },
  spec: { targetRef: { kind: "Deployment", name: target }, threshold, strategy: "Prefer" },
});

/** One object through one version (`kubectl get <plural>.<version>.wave.sh`). */
async function getAt(version: string, plural: string, name: string, namespace?: string): Promise<Cr> {
  const where = namespace === undefined ? [] : ["-n", namespace];
  return JSON.parse(
    await kubectl([
      "get",
      `${plural}.${version}.wave.sh`,
      name,
      ...where,
      "-o",
      "json",
      "--show-managed-fields",
    ]),
  ) as Cr;
}

/** A pod of Deployment `deployment` as the apiserver sends it to the webhook (ReplicaSet owner). */
function podCreate(deployment: string): Parameters<typeof decide>[0] {
  const hash = "5d4c8b7f9";
  return {
    uid: randomBytes(8).toString("hex"),
    kind: { group: "", version: "v1", kind: "Pod" },
    resource: { group: "", version: "v1", resource: "pods" },
    namespace: ns,
    operation: "CREATE",
    object: {
      metadata: {
        generateName: `${deployment}-${hash}-`,
        labels: { app: deployment, "pod-template-hash": hash },
        ownerReferences: [
          {
            apiVersion: "apps/v1",
            kind: "ReplicaSet",
            name: `${deployment}-${hash}`,
            uid: "u",
            controller: true,
          },
        ],
      },
      spec: { containers: [{ name: "app", image: "pause:3.10" }] },
    },
  };
}

before(async () => {
  await requireRig();
  await installWaveCrds();
  ns = await createNamespace("crd-ver");
  source = new CrdPolicySource({ kube });
  assert.ok(await source.start(30_000), "Wave's SpotPolicy informer synced");
});

after(async () => {
  await source?.stop();
  if (ns !== "") await deleteNamespace(ns).catch(() => undefined);
  await remove("warmuppolicies.wave.sh", warmName).catch(() => undefined);
});

test("the CRDs serve v1alpha1 (stored) and v1beta1, conversion None; Wave's clients use v1alpha1", async () => {
  assert.equal(POLICY_VERSION, "v1alpha1");
  for (const name of WAVE_CRDS) {
    const crd = JSON.parse(await kubectl(["get", "crd", name, "-o", "json"])) as {
      spec: {
        conversion?: { strategy: string };
        versions: { name: string; served: boolean; storage: boolean }[];
      };
      status: { storedVersions: string[] };
    };
    const versions = crd.spec.versions.map(
      (v) => `${v.name}${v.served ? "" : "-unserved"}${v.storage ? "*" : ""}`,
    );
    assert.deepEqual(versions, ["v1alpha1*", "v1beta1"], name);
    assert.equal(crd.spec.conversion?.strategy, "None", name);
    assert.deepEqual(crd.status.storedVersions, ["v1alpha1"], `${name}: nothing was ever stored as v1beta1`);
    console.log(
      `# ${name}: versions ${versions.join(", ")} (* storage), storedVersions ${crd.status.storedVersions.join(",")}`,
    );
  }
  const group = JSON.parse(await kubectl(["get", "--raw", "/apis/wave.sh"])) as {
    versions: { version: string }[];
    preferredVersion: { version: string };
  };
  assert.deepEqual(group.versions.map((v) => v.version).sort(), ["v1alpha1", "v1beta1"]);
  // The highest by Kubernetes' version order: what kubectl shows unless told a version.
  assert.equal(group.preferredVersion.version, "v1beta1");
  console.log(`# discovery /apis/wave.sh: preferred ${group.preferredVersion.version}`);
});

test("a SpotPolicy created through v1beta1: read through v1alpha1, in force in Wave's webhook, its status written by Wave", async () => {
  await kubectl(
    ["apply", "--server-side", "--field-manager=gitops", "-f", "-"],
    JSON.stringify(spot("v1beta1", "b", "web-b", 3)),
  );
  const old = await getAt("v1alpha1", "spotpolicies", "b", ns);
  assert.equal(old.apiVersion, "wave.sh/v1alpha1");
  // The spec as given, and the schema's defaults (the same at both versions) filled in.
  assert.deepEqual(old.spec, {
    targetRef: { kind: "Deployment", name: "web-b" },
    threshold: 3,
    strategy: "Prefer",
    percentAboveBase: 0,
    repair: "On",
  });
  const src = source ?? assert.fail("no informer");
  const policy = await waitFor("Wave's informer (v1alpha1) has the v1beta1-made policy in force", () =>
    Promise.resolve(src.lookup({ namespace: ns, kind: "Deployment", name: "web-b" })),
  );
  assert.equal(policy.threshold, 3);
  const d = decide(podCreate("web-b"), (ref) => src.lookup(ref));
  if (d.action !== "assign")
    assert.fail(`the webhook places the Deployment's pod by the policy: ${d.action}`);
  assert.equal(d.policy.threshold, 3);

  // The writer walks every CR of its index: an index of this one only (the rig is shared).
  const index = new SpotPolicyIndex();
  index.upsert(await kube.get("SpotPolicy", "b", ns));
  const writer = new SpotStatusWriter({ kube, index, seen: () => new Map(), clock: realClock });
  await writer.sync();
  const beta = await waitFor("the status Wave wrote (v1alpha1) read through v1beta1", async () => {
    const cr = await getAt("v1beta1", "spotpolicies", "b", ns);
    return cr.status?.observedGeneration === cr.metadata.generation && cr.status?.conditions?.length
      ? cr
      : undefined;
  });
  assert.equal(beta.apiVersion, "wave.sh/v1beta1");
  console.log(
    `# v1beta1-made SpotPolicy: webhook decision ${d.action}; status ${JSON.stringify(beta.status)}`,
  );
});

test("the reverse: Wave writes v1alpha1, v1beta1 reads it; a v1beta1 edit reaches Wave; ownership holds across versions", async () => {
  const made = await applyPolicyEdit(kube, {
    id: 1,
    kind: "SpotPolicy",
    namespace: ns,
    name: "a",
    op: "apply",
    object: spot(POLICY_VERSION, "a", "web-a", 1),
    force: false,
  });
  assert.equal(made.outcome, "applied", made.message);
  const beta = await getAt("v1beta1", "spotpolicies", "a", ns);
  assert.equal(beta.apiVersion, "wave.sh/v1beta1");
  assert.equal(beta.spec.threshold, 1);
  assert.ok(beta.metadata.managedFields?.some((m) => m.manager === CONSOLE_FIELD_MANAGER));

  // A GitOps tool takes threshold through v1beta1 (forced, as a controller re-asserting its field).
  const gitops = spot("v1beta1", "a", "web-a", 4);
  await kubectl(
    ["apply", "--server-side", "--force-conflicts", "--field-manager=gitops", "-f", "-"],
    JSON.stringify(gitops),
  );
  const src = source ?? assert.fail("no informer");
  await waitFor("Wave's informer sees the v1beta1 edit (threshold 4)", () =>
    Promise.resolve(src.lookup({ namespace: ns, kind: "Deployment", name: "web-a" })?.threshold === 4),
  );
  const edit = await applyPolicyEdit(kube, {
    id: 2,
    kind: "SpotPolicy",
    namespace: ns,
    name: "a",
    op: "apply",
    object: spot(POLICY_VERSION, "a", "web-a", 2),
    force: false,
  });
  assert.equal(edit.outcome, "conflict", edit.message);
  assert.deepEqual(
    edit.conflicts.map((c) => `${c.manager} ${c.field}`),
    ["gitops .spec.threshold"],
  );
  console.log(`# Wave's unforced v1alpha1 edit of a v1beta1 manager's field: ${edit.message}`);
});

test("a WarmupPolicy created through v1beta1 is read by Wave's client through v1alpha1", async () => {
  await kubectl(
    ["apply", "--server-side", "--field-manager=gitops", "-f", "-"],
    JSON.stringify({
      apiVersion: "wave.sh/v1beta1",
      kind: "WarmupPolicy",
      metadata: { name: warmName },
      spec: { nodePool: `absent-${suffix}`, enabled: false, ttlSeconds: 900 },
    }),
  );
  const cr = await kube.get("WarmupPolicy", warmName);
  assert.equal(cr.apiVersion, "wave.sh/v1alpha1");
  assert.deepEqual(cr.spec, { nodePool: `absent-${suffix}`, enabled: false, ttlSeconds: 900 });
});
