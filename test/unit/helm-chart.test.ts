// Renders deploy/helm/wave with the helm built by `npm run helm:build` and checks what matters
// for safety: every ServiceAccount gets exactly the permissions documented in RBAC.md, the
// webhook can never block pod creation, pods run hardened, and the storage switch works.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { describe, it } from "node:test";
import { parseAllDocuments } from "yaml";
import { documentedPermissions, ruleKeys } from "./helm-rbac.ts";

const root = new URL("../../", import.meta.url).pathname;
const helm = `${root}.rig/bin/helm`;
const chart = `${root}deploy/helm/wave`;
const skip = existsSync(helm) ? false : `helm not built (${helm}): run npm run helm:build`;
const APIS = ["karpenter.sh/v1/NodePool", "cert-manager.io/v1/Certificate"];
// A helm built with `go install` assumes Kubernetes v1.20 for templates; the chart needs >= 1.29.
const KUBE = ["--kube-version", "1.33.0"];

type Obj = Record<string, unknown>;

const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);
const field = (o: unknown, ...path: string[]): unknown => {
  let cur = o;
  for (const k of path) cur = isObj(cur) ? cur[k] : undefined;
  return cur;
};
const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x) => typeof x === "string") : []);
const objs = (v: unknown): Obj[] => (Array.isArray(v) ? v.filter(isObj) : []);

function render(args: string[] = []): Obj[] {
  const out = execFileSync(
    helm,
    [
      "template",
      "wave",
      chart,
      "--namespace",
      "wave",
      ...KUBE,
      ...APIS.flatMap((a) => ["--api-versions", a]),
      ...args,
    ],
    { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] },
  );
  return parseAllDocuments(out)
    .map((d) => d.toJSON() as unknown)
    .filter(isObj);
}

const byKind = (docs: Obj[], kind: string): Obj[] => docs.filter((d) => d.kind === kind);
const named = (docs: Obj[], kind: string, name: string): Obj => {
  const found = byKind(docs, kind).find((d) => field(d, "metadata", "name") === name);
  assert.ok(found, `${kind} ${name} not rendered`);
  return found;
};

/** Rendered permissions per ServiceAccount, through the (Cluster)RoleBindings. */
function renderedPermissions(docs: Obj[]): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  for (const [bindingKind, roleKind, scope] of [
    ["ClusterRoleBinding", "ClusterRole", "cluster"],
    ["RoleBinding", "Role", "namespace"],
  ] as const) {
    for (const b of byKind(docs, bindingKind)) {
      const role = named(docs, roleKind, String(field(b, "roleRef", "name")));
      for (const s of objs(b.subjects)) {
        assert.equal(s.kind, "ServiceAccount");
        const sa = String(s.name);
        const set = out.get(sa) ?? new Set<string>();
        for (const k of ruleKeys(scope, objs(role.rules))) set.add(k);
        out.set(sa, set);
      }
    }
  }
  return out;
}

describe("helm chart deploy/helm/wave", { skip }, () => {
  const docs = skip ? [] : render();

  it("grants each ServiceAccount exactly the permissions RBAC.md documents", () => {
    const documented = documentedPermissions(readFileSync(`${chart}/RBAC.md`, "utf8"));
    const rendered = renderedPermissions(docs);
    assert.deepEqual([...documented.keys()].sort(), ["agent", "cleanup", "core", "webhook"]);
    assert.deepEqual([...rendered.keys()].sort(), [
      "wave-agent",
      "wave-cleanup",
      "wave-core",
      "wave-webhook",
    ]);
    for (const [component, perms] of documented) {
      assert.deepEqual(
        [...(rendered.get(`wave-${component}`) ?? [])].sort(),
        [...perms].sort(),
        `permissions of wave-${component} differ from RBAC.md`,
      );
    }
    for (const perms of rendered.values())
      for (const p of perms) assert.doesNotMatch(p, /\|(secrets|configmaps|\*)\|/, `too broad: ${p}`);
  });

  it("runs each component under its own ServiceAccount, non-root, read-only root filesystem", () => {
    for (const component of ["agent", "core", "webhook"]) {
      const d = named(docs, "Deployment", `wave-${component}`);
      const pod = field(d, "spec", "template", "spec");
      assert.equal(field(pod, "serviceAccountName"), `wave-${component}`);
      assert.equal(field(pod, "securityContext", "runAsUser"), 65532);
      const [c] = objs(field(pod, "containers"));
      assert.ok(c);
      assert.deepEqual(strings(c.args), [component, "--config", "/etc/wave/config.yaml"]);
      assert.equal(field(c, "securityContext", "readOnlyRootFilesystem"), true);
      assert.equal(field(c, "securityContext", "allowPrivilegeEscalation"), false);
      assert.ok(objs(c.volumeMounts).some((m) => m.mountPath === "/tmp"));
    }
  });

  it("registers a webhook that can never block pod creation", () => {
    const cfg = named(docs, "MutatingWebhookConfiguration", "wave-webhook");
    assert.equal(
      field(cfg, "metadata", "annotations", "cert-manager.io/inject-ca-from"),
      "wave/wave-webhook",
    );
    const [w] = objs(cfg.webhooks);
    assert.ok(w);
    assert.equal(w.failurePolicy, "Ignore");
    assert.equal(w.timeoutSeconds, 3);
    assert.equal(w.sideEffects, "NoneOnDryRun", "it writes ledger Leases on real admissions");
    assert.equal(w.reinvocationPolicy, "IfNeeded");
    assert.deepEqual(w.admissionReviewVersions, ["v1"]);
    assert.deepEqual(field(w, "namespaceSelector", "matchExpressions"), [
      { key: "kubernetes.io/metadata.name", operator: "NotIn", values: ["kube-system", "wave"] },
    ]);
    assert.deepEqual(field(w, "objectSelector", "matchExpressions"), [
      { key: "wave.sh/spot-placement", operator: "NotIn", values: ["disabled"] },
    ]);
    assert.deepEqual(w.rules, [
      {
        operations: ["CREATE"],
        apiGroups: [""],
        apiVersions: ["v1"],
        resources: ["pods"],
        scope: "Namespaced",
      },
    ]);
    assert.equal(field(named(docs, "PodDisruptionBudget", "wave-webhook"), "spec", "minAvailable"), 1);
    assert.equal(field(named(docs, "Deployment", "wave-webhook"), "spec", "replicas"), 2);
  });

  it("installs the warmup PriorityClass below every workload and never preempting", () => {
    const pc = named(docs, "PriorityClass", "wave-warmup");
    assert.equal(pc.value, -10);
    assert.equal(pc.preemptionPolicy, "Never");
  });

  it("keeps SQLite on a PVC by default and switches to PostgreSQL from a Secret", () => {
    const env = (d: Obj): Obj[] =>
      objs(field(objs(field(d, "spec", "template", "spec", "containers"))[0], "env"));
    const sqliteCore = named(docs, "Deployment", "wave-core");
    assert.equal(field(sqliteCore, "spec", "strategy", "type"), "Recreate");
    assert.ok(
      byKind(docs, "PersistentVolumeClaim").some((p) => field(p, "metadata", "name") === "wave-core-data"),
    );
    assert.ok(!env(sqliteCore).some((e) => e.name === "WAVE_DATABASE_URL"));

    const pg = render(["-f", `${chart}/ci/postgres-values.yaml`]);
    assert.equal(byKind(pg, "PersistentVolumeClaim").length, 0);
    const pgCore = named(pg, "Deployment", "wave-core");
    const url = env(pgCore).find((e) => e.name === "WAVE_DATABASE_URL");
    assert.deepEqual(field(url, "valueFrom", "secretKeyRef"), { name: "wave-postgres", key: "databaseUrl" });
  });

  it("fails clearly when Karpenter's API is missing, and on SQLite with several core replicas", () => {
    const fails = (args: string[]): string => {
      try {
        execFileSync(helm, ["template", "wave", chart, ...KUBE, ...args], {
          encoding: "utf8",
          stdio: "pipe",
        });
      } catch (err) {
        return String((err as { stderr?: unknown }).stderr);
      }
      assert.fail(`helm template ${args.join(" ")} succeeded`);
    };
    assert.match(fails(["--api-versions", "cert-manager.io/v1/Certificate"]), /Wave needs Karpenter >= 1\.0/);
    assert.match(fails(["--api-versions", "karpenter.sh/v1/NodePool"]), /Wave needs cert-manager/);
    assert.match(fails(["--set", "checks.crds=false", "--set", "core.replicas=2"]), /needs PostgreSQL/);
    assert.match(fails(["--set", "checks.crds=false", "--set", "logLevel=loud"]), /logLevel/);
  });
});
