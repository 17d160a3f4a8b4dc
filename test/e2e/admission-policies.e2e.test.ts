// The chart's ValidatingAdmissionPolicies on the rig's real apiserver (issue 32): rendered for a
// release of this test's own namespace (so they bind only this test's ServiceAccounts), then the
// agent's patches and the webhook's evictions tried as those ServiceAccounts (kubectl --as).
// The agent may change only Wave's annotations; the webhook may not evict in kube-system or
// Wave's own namespace, and may elsewhere.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { after, before, describe, it } from "node:test";
import { parseAllDocuments } from "yaml";
import { applyTaintedPool } from "./pools.ts";
import {
  apply,
  createNamespace,
  deleteNamespace,
  kubectl,
  kubectlRaw,
  remove,
  requireRig,
} from "./harness.ts";

const root = new URL("../../", import.meta.url).pathname;

let ns = "";
let apps = "";
const pool = `vap-${process.pid}`;
const release = "vap";
const created: [string, string][] = [];

function render(namespace: string): object[] {
  const out = execFileSync(
    `${root}.rig/bin/helm`,
    [
      "template",
      release,
      `${root}deploy/helm/wave`,
      "--namespace",
      namespace,
      "--kube-version",
      "1.33.0",
      "--api-versions",
      "karpenter.sh/v1/NodePool",
      "--api-versions",
      "cert-manager.io/v1/Certificate",
      "--show-only",
      "templates/admission-policies.yaml",
    ],
    { encoding: "utf8" },
  );
  return parseAllDocuments(out)
    .map((d) => d.toJSON() as object | null)
    .filter((d): d is object => d !== null);
}

const as = (sa: string): string => `--as=system:serviceaccount:${ns}:${release}-wave-${sa}`;

describe("chart admission policies on the rig", { timeout: 180_000 }, () => {
  before(async () => {
    await requireRig();
    ns = await createNamespace("vap");
    apps = await createNamespace("vap-apps");
    for (const sa of ["agent", "webhook"])
      await apply({
        apiVersion: "v1",
        kind: "ServiceAccount",
        metadata: { name: `${release}-wave-${sa}`, namespace: ns },
      });
    // RBAC as the chart grants it, for these ServiceAccounts.
    await apply({
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRole",
      metadata: { name: `${ns}-test` },
      rules: [
        { apiGroups: ["karpenter.sh"], resources: ["nodepools"], verbs: ["get", "patch"] },
        { apiGroups: [""], resources: ["pods/eviction"], verbs: ["create"] },
      ],
    });
    created.push(["clusterrole", `${ns}-test`]);
    await apply({
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRoleBinding",
      metadata: { name: `${ns}-test` },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: `${ns}-test` },
      subjects: ["agent", "webhook"].map((sa) => ({
        kind: "ServiceAccount",
        name: `${release}-wave-${sa}`,
        namespace: ns,
      })),
    });
    created.push(["clusterrolebinding", `${ns}-test`]);
    for (const doc of render(ns)) {
      const o = doc as { kind: string; metadata: { name: string } };
      // Cluster-scoped: named after this test's namespace so parallel runs never share one.
      o.metadata.name = `${ns}-${o.metadata.name}`;
      const spec = (doc as { spec: { policyName?: string } }).spec;
      if (spec.policyName) spec.policyName = `${ns}-${spec.policyName}`;
      await apply(doc);
      created.push([o.kind.toLowerCase(), o.metadata.name]);
    }
    // No nodes ever: no CPU for it.
    await applyTaintedPool(pool, { limits: { cpu: "0" } });
    // Policies take a moment to be enforced after they are created.
    for (let i = 0; i < 50; i++) {
      const r = await kubectlRaw(["label", `nodepool/${pool}`, as("agent"), "probe=1", "--dry-run=server"]);
      if (r.code !== 0) break;
      await new Promise((res) => setTimeout(res, 200));
    }
  });

  after(async () => {
    await remove("nodepools.karpenter.sh", pool);
    for (const [kind, name] of created.reverse()) await remove(kind, name);
    if (apps) await deleteNamespace(apps);
    if (ns) await deleteNamespace(ns);
  });

  it("the agent may change Wave's annotations and nothing else", async () => {
    // As the warmup controller patches: a merge patch with a resourceVersion precondition, read
    // again on a conflict (Karpenter writes the new pool's status meanwhile, e.g. its NodeOverlay
    // evaluation with the gate on). A refusal by the policy is no conflict and fails at once.
    for (let attempt = 1; ; attempt++) {
      const rv = JSON.parse(await kubectl(["get", `nodepool/${pool}`, "-o", "json"])) as {
        metadata: { resourceVersion: string };
      };
      const r = await kubectlRaw([
        "patch",
        `nodepool/${pool}`,
        as("agent"),
        "--type",
        "merge",
        "-p",
        JSON.stringify({
          metadata: {
            resourceVersion: rv.metadata.resourceVersion,
            annotations: {
              "wave.sh/last-warmup-at": "2026-12-05T00:00:00Z",
              "karpenter.sh/do-not-disrupt": "true",
            },
          },
        }),
      ]);
      if (r.code === 0) break;
      assert.ok(attempt < 10 && /has been modified|Conflict/i.test(r.stderr), r.stderr);
    }
    await kubectl([
      "annotate",
      `nodepool/${pool}`,
      as("agent"),
      "wave.sh/last-warmup-at-",
      "karpenter.sh/do-not-disrupt-",
    ]);
    for (const [what, args, reason] of [
      [
        "another annotation",
        ["annotate", `nodepool/${pool}`, "example.com/x=1"],
        /only wave\.sh\/\* annotations/,
      ],
      ["a label", ["label", `nodepool/${pool}`, "x=1"], /may not change labels, finalizers or the spec/],
      [
        "the spec",
        ["patch", `nodepool/${pool}`, "--type", "merge", "-p", '{"spec":{"limits":{"cpu":"1"}}}'],
        /may not change labels, finalizers or the spec/,
      ],
    ] as const) {
      const r = await kubectlRaw([...args, as("agent")]);
      assert.notEqual(r.code, 0, `${what} was allowed`);
      assert.match(r.stderr, reason, what);
    }
    // Anyone else is not bound by it.
    await kubectl(["label", `nodepool/${pool}`, "x=1"]);
  });

  it("the webhook may not evict in kube-system or Wave's namespace, and may elsewhere", async () => {
    const evict = (namespace: string) =>
      kubectlRaw(
        ["create", "--raw", `/api/v1/namespaces/${namespace}/pods/nope/eviction`, "-f", "-", as("webhook")],
        JSON.stringify({ apiVersion: "policy/v1", kind: "Eviction", metadata: { name: "nope", namespace } }),
      );
    for (const denied of ["kube-system", ns]) {
      const r = await evict(denied);
      assert.match(r.stderr, new RegExp(`may not evict pods in namespace ${denied}`), denied);
    }
    // Past the policy: the pod does not exist.
    const r = await evict(apps);
    assert.match(r.stderr, /NotFound|not found/, r.stderr);
  });
});
