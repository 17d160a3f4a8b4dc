// Renders deploy/helm/wave with the helm built by `npm run helm:build` and checks what matters
// for safety: every ServiceAccount gets exactly the permissions documented in RBAC.md, the
// webhook can never block pod creation, pods run hardened, and the storage switch works.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
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

const NAMESPACE_SCOPES: Record<string, string> = {
  wave: "namespace",
  "wave-warmup": "warmup",
  "wave-spot-ledgers": "ledger",
};

/** Rendered permissions per ServiceAccount, through the (Cluster)RoleBindings. */
function renderedPermissions(docs: Obj[]): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  for (const [bindingKind, roleKind, scope] of [
    ["ClusterRoleBinding", "ClusterRole", "cluster"],
    ["RoleBinding", "Role", "namespace"],
  ] as const) {
    for (const b of byKind(docs, bindingKind)) {
      const role = byKind(docs, roleKind).find(
        (r) =>
          field(r, "metadata", "name") === field(b, "roleRef", "name") &&
          field(r, "metadata", "namespace") === field(b, "metadata", "namespace"),
      );
      assert.ok(role, `${roleKind} of ${bindingKind} ${String(field(b, "metadata", "name"))} not rendered`);
      for (const s of objs(b.subjects)) {
        assert.equal(s.kind, "ServiceAccount");
        const sa = String(s.name);
        const set = out.get(sa) ?? new Set<string>();
        // Roles live in the release namespace ("wave"), the warmup one or the spot ledger one.
        const where =
          scope === "cluster" ? scope : NAMESPACE_SCOPES[String(field(b, "metadata", "namespace"))];
        assert.ok(where, `a RoleBinding in an unexpected namespace: ${JSON.stringify(b.metadata)}`);
        for (const k of ruleKeys(where, objs(role.rules))) set.add(k);
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
    // Core talks to no apiserver (its warmup runs beside the agent, ADR 0014): its table is empty
    // and nothing binds its ServiceAccount.
    assert.deepEqual([...documented.keys()].sort(), ["agent", "cleanup", "webhook"]);
    assert.match(readFileSync(`${chart}/RBAC.md`, "utf8"), /## core \(`<release>-wave-core`\)\n\nNo rules/);
    assert.deepEqual([...rendered.keys()].sort(), ["wave-agent", "wave-cleanup", "wave-webhook"]);
    for (const [component, perms] of documented) {
      assert.deepEqual(
        [...(rendered.get(`wave-${component}`) ?? [])].sort(),
        [...perms].sort(),
        `permissions of wave-${component} differ from RBAC.md`,
      );
    }
    for (const perms of rendered.values())
      for (const p of perms) {
        assert.doesNotMatch(p, /\|(secrets|\*)\|/, `too broad: ${p}`);
        // One ConfigMap, by name: the agent's memory of core's last warmup policies (ADR 0014).
        if (p.includes("|configmaps|"))
          assert.match(p, /^namespace\|\|configmaps\|(get|update)\|wave-warmup-policies$/, `too broad: ${p}`);
      }
  });

  it("lets the webhook create Events in the pods' namespaces (repair actions, late answers) and do nothing else with them", () => {
    const webhook = renderedPermissions(docs).get("wave-webhook") ?? new Set<string>();
    // Workloads live in any namespace: the repair's Event goes on the pod, the late answers' on
    // the workload, both in its namespace (src/webhook/events.ts, late-events.ts).
    assert.ok(webhook.has("cluster||events|create|-"), "events create, cluster-wide");
    assert.deepEqual(
      [...webhook].filter((p) => p.includes("|events|")),
      ["cluster||events|create|-"],
      "no read, update or delete of Events",
    );
  });

  it("gives the webhook Lease writes only in a spot ledger namespace of its own (never Wave's leader Leases)", () => {
    const leaseRoles = (d: Obj[]): Obj[] =>
      byKind(d, "Role").filter((r) =>
        objs(r.rules).some((rule) => strings(rule.resources).includes("leases")),
      );
    const webhookRoles = leaseRoles(docs).filter((r) => field(r, "metadata", "name") === "wave-webhook");
    assert.deepEqual(
      webhookRoles.map((r) => field(r, "metadata", "namespace")),
      ["wave-spot-ledgers"],
      "the webhook's only Lease Role is in the ledger namespace",
    );
    const ns = named(docs, "Namespace", "wave-spot-ledgers");
    assert.equal(field(ns, "metadata", "labels", "pod-security.kubernetes.io/enforce"), "restricted");
    const env = (d: Obj[], kind: string, name: string): Record<string, unknown> =>
      Object.fromEntries(
        objs(
          field(objs(field(named(d, kind, name), "spec", "template", "spec", "containers"))[0], "env"),
        ).map((e) => [String(e.name), e.value]),
      );
    assert.equal(env(docs, "Deployment", "wave-webhook").WAVE_SPOT_LEDGER_NAMESPACE, "wave-spot-ledgers");
    // The chart's own ledger namespace goes with the release: the cleanup hook needs no access.
    assert.ok(!("WAVE_SPOT_LEDGER_NAMESPACE" in env(docs, "Job", "wave-cleanup")));

    // A namespace the user made: not created; the cleanup hook empties it with a Role there.
    const own = render([
      "--set",
      "webhook.ledgerNamespace=spot-ledgers",
      "--set",
      "webhook.createLedgerNamespace=false",
    ]);
    assert.equal(
      byKind(own, "Namespace").filter((n) => field(n, "metadata", "name") === "spot-ledgers").length,
      0,
    );
    assert.deepEqual(
      leaseRoles(own)
        .map((r) => `${String(field(r, "metadata", "namespace"))}/${String(field(r, "metadata", "name"))}`)
        .sort(),
      ["spot-ledgers/wave-cleanup", "spot-ledgers/wave-webhook", "wave/wave-agent", "wave/wave-cleanup"],
    );
    assert.equal(env(own, "Job", "wave-cleanup").WAVE_SPOT_LEDGER_NAMESPACE, "spot-ledgers");
    assert.equal(env(own, "Deployment", "wave-webhook").WAVE_SPOT_LEDGER_NAMESPACE, "spot-ledgers");
  });

  it("requires mutual TLS from agents by default, with the agent certificate's identity; off only when asked (warns)", () => {
    const coreEnv = (d: Obj[]): Obj[] =>
      objs(
        field(
          objs(field(named(d, "Deployment", "wave-core"), "spec", "template", "spec", "containers"))[0],
          "env",
        ),
      );
    const value = (env: Obj[], name: string): unknown => env.find((e) => e.name === name)?.value;
    assert.equal(
      value(coreEnv(docs), "WAVE_GRPC_ALLOW_NO_CLIENT_CERT"),
      undefined,
      "mTLS required by default",
    );
    assert.equal(value(coreEnv(docs), "WAVE_AGENT_IDENTITY"), "wave-agent");
    const cert = named(docs, "Certificate", "wave-agent");
    assert.equal(field(cert, "spec", "commonName"), "wave-agent");
    assert.ok(strings(field(cert, "spec", "usages")).includes("client auth"));
    const off = render(["--set", "agent.mtls=false"]);
    assert.equal(value(coreEnv(off), "WAVE_GRPC_ALLOW_NO_CLIENT_CERT"), "true");
  });

  it("puts warmup and pull pods in a restricted namespace of their own under a deny-all NetworkPolicy", () => {
    const ns = named(docs, "Namespace", "wave-warmup");
    assert.equal(field(ns, "metadata", "labels", "pod-security.kubernetes.io/enforce"), "restricted");
    const np = named(docs, "NetworkPolicy", "wave-warmup-deny-all");
    assert.equal(field(np, "metadata", "namespace"), "wave-warmup");
    assert.deepEqual(field(np, "spec"), { podSelector: {}, policyTypes: ["Ingress", "Egress"] });
    // Nothing of the chart's puts a Secret there.
    assert.deepEqual(
      byKind(docs, "Secret").filter((x) => field(x, "metadata", "namespace") === "wave-warmup"),
      [],
    );
  });

  it("admits only the control plane's addresses to the webhook port when they are named", () => {
    const rules = (d: Obj[]): Obj[] =>
      objs(field(named(d, "NetworkPolicy", "wave-webhook"), "spec", "ingress"));
    const named2 = render([
      "--set",
      "webhook.controlPlaneCidrs[0]=10.0.0.0/16",
      "--set",
      "webhook.controlPlaneCidrs[1]=10.1.0.0/16",
    ]);
    const [first] = rules(named2);
    assert.deepEqual(field(first, "from"), [
      { ipBlock: { cidr: "10.0.0.0/16" } },
      { ipBlock: { cidr: "10.1.0.0/16" } },
    ]);
    assert.equal(rules(named2).length, 1);
    // The webhook keeps connection slots for them (issue 42); without them (helm template sees no
    // cluster to look the API server up in), any source and no reserved CIDRs.
    const cidrsEnv = (d: Obj[]): unknown =>
      objs(
        field(
          objs(field(named(d, "Deployment", "wave-webhook"), "spec", "template", "spec", "containers"))[0],
          "env",
        ),
      ).find((e) => e.name === "WAVE_WEBHOOK_CONTROL_PLANE_CIDRS")?.value;
    assert.equal(cidrsEnv(named2), "10.0.0.0/16,10.1.0.0/16");
    assert.equal(cidrsEnv(docs), undefined);
    assert.equal(field(rules(docs)[0], "from"), undefined);
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
    assert.deepEqual(field(named(docs, "PodDisruptionBudget", "wave-webhook"), "spec", "maxUnavailable"), 1);
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
    // Replicas read each other's clusters through the pod IP's API (ADR 0012), and may reach it.
    const ip = env(pgCore).find((e) => e.name === "WAVE_POD_IP");
    assert.deepEqual(field(ip, "valueFrom", "fieldRef"), { fieldPath: "status.podIP" });
    assert.equal(
      env(pgCore).find((e) => e.name === "WAVE_ADVERTISE_URL")?.value,
      "http://$(WAVE_POD_IP):8080",
    );
    assert.ok(!env(sqliteCore).some((e) => e.name === "WAVE_ADVERTISE_URL"));
    const three = render(["-f", `${chart}/ci/postgres-values.yaml`, "--set", "core.replicas=3"]);
    const np = named(three, "NetworkPolicy", "wave-core");
    assert.ok(
      JSON.stringify(field(np, "spec", "egress")).includes('"port":8080'),
      "core may reach the other replicas' API",
    );
  });

  it("gives core's ServiceAccount the IRSA annotation and the pricing settings", () => {
    const env = (d: Obj): Record<string, unknown> =>
      Object.fromEntries(
        objs(field(objs(field(d, "spec", "template", "spec", "containers"))[0], "env")).map((e) => [
          String(e.name),
          e.value,
        ]),
      );
    const plain = env(named(docs, "Deployment", "wave-core"));
    assert.equal(plain.WAVE_PRICING_SOURCE, "auto");
    assert.equal(plain.WAVE_PRICING_REFRESH, "12h");
    assert.equal(plain.WAVE_PRICING_MAX_AGE, "24h");
    assert.ok(!("WAVE_PRICING_REGION" in plain), "the nodes' regions by default");
    assert.equal(field(named(docs, "ServiceAccount", "wave-core"), "metadata", "annotations"), undefined);
    const role = "arn:aws:iam::111122223333:role/wave-pricing";
    const irsa = render([
      "--set",
      `core.serviceAccount.annotations.eks\\.amazonaws\\.com/role-arn=${role}`,
      "--set",
      "core.pricing.region=eu-west-1",
      "--set",
      "core.pricing.source=aws",
    ]);
    assert.deepEqual(field(named(irsa, "ServiceAccount", "wave-core"), "metadata", "annotations"), {
      "eks.amazonaws.com/role-arn": role,
    });
    assert.equal(field(named(irsa, "ServiceAccount", "wave-agent"), "metadata", "annotations"), undefined);
    const set = env(named(irsa, "Deployment", "wave-core"));
    assert.equal(set.WAVE_PRICING_REGION, "eu-west-1");
    assert.equal(set.WAVE_PRICING_SOURCE, "aws");
  });

  it("configures OIDC sign-in and the auth proxy: secrets only as mounted files from existing Secrets, roles in the config file", () => {
    const container = (d: Obj): Obj => objs(field(d, "spec", "template", "spec", "containers"))[0] ?? {};
    const envOf = (d: Obj): Obj[] => objs(field(container(d), "env"));
    const plain = named(docs, "Deployment", "wave-core");
    assert.ok(
      !envOf(plain).some(
        (e) => String(e.name).startsWith("WAVE_OIDC_") || String(e.name).startsWith("WAVE_AUTH_PROXY"),
      ),
    );
    const on = render([
      "--set",
      "auth.oidc.enabled=true",
      "--set",
      "auth.oidc.issuerUrl=https://idp.example.com/realms/wave",
      "--set",
      "auth.oidc.clientId=wave",
      "--set",
      "auth.oidc.redirectUrl=https://wave.example.com/auth/callback",
      "--set",
      "auth.oidc.existingSecret=wave-oidc",
      "--set",
      "auth.proxy.trustedAddresses[0]=127.0.0.1",
      "--set",
      "auth.proxy.existingSecret=wave-proxy",
      "--set",
      "auth.roles.clusters.*.admin[0]=wave-admins",
    ]);
    const core = named(on, "Deployment", "wave-core");
    const env = Object.fromEntries(envOf(core).map((e) => [String(e.name), e]));
    assert.equal(field(env.WAVE_OIDC_ISSUER_URL, "value"), "https://idp.example.com/realms/wave");
    assert.equal(field(env.WAVE_OIDC_CLIENT_ID, "value"), "wave");
    assert.equal(field(env.WAVE_OIDC_REDIRECT_URL, "value"), "https://wave.example.com/auth/callback");
    assert.equal(field(env.WAVE_OIDC_CLIENT_SECRET_FILE, "value"), "/etc/wave/oidc/client-secret");
    assert.equal(field(env.WAVE_AUTH_PROXY_TRUSTED, "value"), "127.0.0.1");
    assert.equal(field(env.WAVE_AUTH_PROXY_SECRET_FILE, "value"), "/etc/wave/auth-proxy/proxy-secret");
    // One header family, chosen (issue 42): never a fallback across families.
    assert.equal(field(env.WAVE_AUTH_PROXY_HEADERS, "value"), "x-auth-request");
    assert.ok(
      !("WAVE_OIDC_CLIENT_SECRET" in env) && !("WAVE_AUTH_PROXY_SECRET" in env),
      "no secret in the env",
    );
    const volumes = objs(field(core, "spec", "template", "spec", "volumes"));
    assert.deepEqual(
      volumes
        .filter((v) => ["oidc-client-secret", "auth-proxy-secret"].includes(String(v.name)))
        .map((v) => v.secret),
      [
        { secretName: "wave-oidc", items: [{ key: "client-secret", path: "client-secret" }] },
        { secretName: "wave-proxy", items: [{ key: "proxy-secret", path: "proxy-secret" }] },
      ],
    );
    const config = parseAllDocuments(
      String(field(named(on, "ConfigMap", "wave-config"), "data", "config.yaml")),
    )[0]?.toJSON() as Obj;
    assert.deepEqual(config.authRoles, { clusters: { "*": { admin: ["wave-admins"] } } });
    // What Wave itself parses: the same keys `wave core` reads (unknown keys would stop it).
    const fails = (args: string[]): string => {
      try {
        execFileSync(
          helm,
          ["template", "wave", chart, ...KUBE, ...APIS.flatMap((a) => ["--api-versions", a]), ...args],
          {
            encoding: "utf8",
            stdio: "pipe",
          },
        );
      } catch (err) {
        return String((err as { stderr?: unknown }).stderr);
      }
      assert.fail(`helm template ${args.join(" ")} succeeded`);
    };
    assert.match(
      fails(["--set", "auth.oidc.enabled=true", "--set", "auth.roles.clusters.*.admin[0]=a"]),
      /auth.oidc.issuerUrl is required/,
    );
    assert.match(
      fails(["--set", "auth.proxy.trustedAddresses[0]=127.0.0.1"]),
      /auth.roles is required with auth.oidc.enabled or auth.proxy/,
    );
    assert.match(fails(["--set", "auth.oidc.clientSecret=x"]), /clientSecret/);
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
    assert.match(fails(["--set", "checks.crds=false", "--set", "core.pricing.region=us-east-1a"]), /region/);
    for (const same of ["default", "default-warmup"])
      assert.match(
        fails([
          "--namespace",
          "default",
          "--set",
          "checks.crds=false",
          "--set",
          `webhook.ledgerNamespace=${same}`,
        ]),
        /ledgerNamespace \(default(-warmup)?\) must be a namespace of its own/,
      );
  });
  it("scrapes core (with the viewer token), the agent and the webhook (over its TLS), and lets Prometheus through", () => {
    const docs = render([
      "--set",
      "serviceMonitor.enabled=true",
      "--api-versions",
      "monitoring.coreos.com/v1/ServiceMonitor",
      "--set",
      "webhook.controlPlaneCidrs[0]=10.0.0.0/8",
      "--set",
      "networkPolicy.metricsFrom[0].namespaceSelector.matchLabels.team=monitoring",
    ]);
    const sm = named(docs, "ServiceMonitor", "wave");
    const components = objs(field(sm, "spec", "selector", "matchExpressions")).flatMap((e) =>
      strings(e["values"]),
    );
    assert.deepEqual(components, ["core", "agent", "webhook"]);
    const endpoints = objs(field(sm, "spec", "endpoints"));
    assert.deepEqual(
      endpoints.map((e) => e["port"]),
      ["http", "metrics", "https"],
    );
    assert.equal(field(endpoints[0], "authorization", "credentials", "key"), "viewer-token");
    const webhook = endpoints[2];
    assert.equal(webhook?.["scheme"], "https");
    assert.equal(
      field(webhook, "authorization", "credentials", "key"),
      "viewer-token",
      "the webhook's /metrics needs the viewer token (issue 32)",
    );
    assert.equal(field(webhook, "tlsConfig", "serverName"), "wave-webhook.wave.svc");
    assert.deepEqual(field(webhook, "tlsConfig", "ca", "secret"), {
      name: "wave-webhook-tls",
      key: "ca.crt",
    });
    // The webhook's port, closed to all but the control plane, is open to the metricsFrom peers.
    const np = named(docs, "NetworkPolicy", "wave-webhook");
    const rules = objs(field(np, "spec", "ingress"));
    assert.equal(rules.length, 2);
    assert.deepEqual(field(rules[1], "from"), [
      { namespaceSelector: { matchLabels: { team: "monitoring" } } },
    ]);
    // Without controlPlaneCidrs the port is open to all already: no extra rule.
    const open = named(
      render(["--set", "networkPolicy.metricsFrom[0].podSelector.matchLabels.a=b"]),
      "NetworkPolicy",
      "wave-webhook",
    );
    assert.equal(objs(field(open, "spec", "ingress")).length, 1);
  });

  it("ships the Grafana dashboard for the sidecar and the alerts as a PrometheusRule, both optional", () => {
    const off = render();
    assert.equal(byKind(off, "PrometheusRule").length, 0);
    assert.equal(
      byKind(off, "ConfigMap").filter((c) => field(c, "metadata", "labels", "grafana_dashboard")).length,
      0,
    );
    const on = render([
      "--set",
      "grafanaDashboard.enabled=true",
      "--set",
      "prometheusRule.enabled=true",
      "--set",
      "prometheusRule.labels.release=kps",
      "--set",
      "alerts.runbookBaseUrl=https://docs.example/wave/metrics.md",
    ]);
    const cm = named(on, "ConfigMap", "wave-grafana-dashboard");
    assert.equal(field(cm, "metadata", "labels", "grafana_dashboard"), "1");
    const json = String(field(cm, "data", "wave.json"));
    assert.equal(json, readFileSync(`${root}deploy/grafana/wave.json`, "utf8").trimEnd());
    assert.equal((JSON.parse(json) as { uid: string }).uid, "wave-karpenter");
    const rule = named(on, "PrometheusRule", "wave");
    assert.equal(field(rule, "metadata", "labels", "release"), "kps");
    const alerts = objs(field(rule, "spec", "groups")).flatMap((g) =>
      objs(g["rules"]).map((r) => r["alert"]),
    );
    assert.deepEqual(alerts, [
      "WaveNodePoolThrashing",
      "WaveSpotShareBelowPolicy",
      "WaveWarmupMissesRising",
      "WaveWarmupExpiriesRising",
      "WaveWebhookFallbacks",
      "WaveAgentDisconnected",
      "WaveConsolidationBlockedCost",
      "WavePricingStale",
      "WaveTargetDown",
      "WaveTargetMissing",
    ]);
    for (const r of objs(field(rule, "spec", "groups")).flatMap((g) => objs(g["rules"])))
      assert.equal(
        field(r, "annotations", "runbook_url"),
        `https://docs.example/wave/metrics.md#${String(r["alert"]).toLowerCase()}`,
      );
    // A relative runbook link is dead in Alertmanager: no PrometheusRule without the base URL.
    assert.throws(
      () => render(["--set", "prometheusRule.enabled=true"]),
      /alerts\.runbookBaseUrl is required/,
    );
  });
  // Issue 32: what RBAC cannot narrow, held by admission policies; core without a token; egress
  // to the API server's own addresses and core's to the pricing endpoints.
  it("mounts no ServiceAccount token into core, which has no RBAC", () => {
    const sa = (c: string) => named(docs, "ServiceAccount", `wave-${c}`).automountServiceAccountToken;
    assert.deepEqual([sa("core"), sa("agent"), sa("webhook")], [false, true, true]);
    const pod = field(named(docs, "Deployment", "wave-core"), "spec", "template", "spec");
    assert.equal(field(pod, "automountServiceAccountToken"), false);
  });

  it("lets the agent change only Wave's annotations, and the webhook evict nowhere in system or Wave namespaces", () => {
    const vap = (name: string) => named(docs, "ValidatingAdmissionPolicy", name);
    const agent = vap("wave-agent-annotations-only");
    assert.deepEqual(
      objs(field(agent, "spec", "matchConditions")).map((c) => c.expression),
      ['request.userInfo.username == "system:serviceaccount:wave:wave-agent"'],
    );
    const agentRules = JSON.stringify(field(agent, "spec", "validations"));
    assert.match(agentRules, /k\.startsWith\('wave\.sh\/'\) \|\| k == 'karpenter\.sh\/do-not-disrupt'/);
    assert.match(agentRules, /object\.metadata\.labels/);
    const evictions = vap("wave-webhook-evictions");
    assert.deepEqual(field(evictions, "spec", "matchConstraints", "resourceRules"), [
      { apiGroups: [""], apiVersions: ["*"], resources: ["pods/eviction"], operations: ["CREATE"] },
    ]);
    const denied = String(objs(field(evictions, "spec", "validations"))[0]?.expression);
    for (const ns of [
      "kube-system",
      "kube-public",
      "kube-node-lease",
      "wave",
      "wave-spot-ledgers",
      "wave-warmup",
    ])
      assert.ok(denied.includes(`"${ns}"`), `${ns} not denied: ${denied}`);
    for (const name of ["wave-agent-annotations-only", "wave-webhook-evictions"])
      assert.deepEqual(field(named(docs, "ValidatingAdmissionPolicyBinding", name), "spec"), {
        policyName: name,
        validationActions: ["Deny"],
      });
    // An allow-list of the workloads' namespaces, when given.
    const only = render(["--set", "admissionPolicies.evictionNamespaces[0]=shop"]);
    const rules = objs(
      field(named(only, "ValidatingAdmissionPolicy", "wave-webhook-evictions"), "spec", "validations"),
    );
    assert.equal(rules[1]?.expression, 'request.namespace in ["shop"]');
    // Kubernetes 1.29 serves them as v1beta1 (issue 42: none rendered there before).
    const old = render([
      "--kube-version",
      "1.29.0",
      "--api-versions",
      "admissionregistration.k8s.io/v1beta1/ValidatingAdmissionPolicy",
    ]);
    const beta = [
      ...byKind(old, "ValidatingAdmissionPolicy"),
      ...byKind(old, "ValidatingAdmissionPolicyBinding"),
    ];
    assert.equal(beta.length, 6);
    assert.ok(beta.every((d) => d.apiVersion === "admissionregistration.k8s.io/v1beta1"));
    assert.ok(
      [...byKind(docs, "ValidatingAdmissionPolicy")].every(
        (d) => d.apiVersion === "admissionregistration.k8s.io/v1",
      ),
    );
  });

  it("lets the webhook patch pods only for wave.sh/* labels and the deletion cost, nowhere in system or Wave namespaces (issue 42)", () => {
    const vap = named(docs, "ValidatingAdmissionPolicy", "wave-webhook-pod-labels-only");
    assert.deepEqual(field(vap, "spec", "matchConstraints", "resourceRules"), [
      { apiGroups: [""], apiVersions: ["*"], resources: ["pods"], operations: ["UPDATE"] },
    ]);
    assert.deepEqual(
      objs(field(vap, "spec", "matchConditions")).map((c) => c.expression),
      ['request.userInfo.username == "system:serviceaccount:wave:wave-webhook"'],
    );
    const rules = JSON.stringify(field(vap, "spec", "validations"));
    for (const ns of ["kube-system", "wave", "wave-warmup"]) assert.ok(rules.includes(`\\"${ns}\\"`), ns);
    assert.match(rules, /k\.startsWith\('wave\.sh\/'\)/);
    assert.match(rules, /controller\.kubernetes\.io\/pod-deletion-cost/);
    assert.match(rules, /object\.spec == oldObject\.spec/);
    assert.deepEqual(
      field(named(docs, "ValidatingAdmissionPolicyBinding", "wave-webhook-pod-labels-only"), "spec"),
      {
        policyName: "wave-webhook-pod-labels-only",
        validationActions: ["Deny"],
      },
    );
  });

  it("sends core's egress to the pricing endpoints, never the API server; the others' to the API server's addresses", () => {
    const egress = (d: Obj[], c: string) =>
      objs(field(named(d, "NetworkPolicy", `wave-${c}`), "spec", "egress"));
    const ports = (rules: Obj[]) => rules.flatMap((r) => objs(r.ports).map((p) => p.port));
    assert.equal(ports(egress(docs, "core")).includes(6443), false);
    assert.ok(ports(egress(docs, "core")).includes(443));
    const pinned = render(["--set", "networkPolicy.kubeApiServer.cidrs[0]=10.0.0.10/32"]);
    for (const c of ["agent", "webhook"]) {
      const api = egress(pinned, c).find((r) => ports([r]).includes(6443));
      assert.deepEqual(field(api, "to"), [{ ipBlock: { cidr: "10.0.0.10/32" } }], c);
    }
    const scraped = render([
      "--set",
      "networkPolicy.metricsFrom[0].namespaceSelector.matchLabels.team=monitoring",
    ]);
    const agentIn = objs(field(named(scraped, "NetworkPolicy", "wave-agent"), "spec", "ingress"));
    assert.deepEqual(field(agentIn[0], "from"), [
      { namespaceSelector: { matchLabels: { team: "monitoring" } } },
    ]);
  });
});

// Issue 33: the chart as production installs use it (umbrella charts, GitOps, EKS, Karpenter).
describe("helm chart deploy/helm/wave: production conventions", { skip }, () => {
  const docs = skip ? [] : render();

  it("renders as a subchart of an umbrella chart (Helm adds `global` to its values)", () => {
    const dir = mkdtempSync(join(tmpdir(), "wave-umbrella-"));
    try {
      mkdirSync(join(dir, "charts"));
      cpSync(chart, join(dir, "charts", "wave"), { recursive: true });
      writeFileSync(
        join(dir, "Chart.yaml"),
        "apiVersion: v2\nname: platform\nversion: 1.0.0\ndependencies:\n  - name: wave\n    version: 0.1.0\n",
      );
      writeFileSync(
        join(dir, "values.yaml"),
        "global:\n  imageRegistry: registry.example\nwave:\n  clusterId: prod\n",
      );
      const out = execFileSync(
        helm,
        [
          "template",
          "platform",
          dir,
          "--namespace",
          "wave",
          ...KUBE,
          ...APIS.flatMap((a) => ["--api-versions", a]),
        ],
        { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] },
      );
      const docs = parseAllDocuments(out)
        .map((d) => d.toJSON() as unknown)
        .filter(isObj);
      const core = named(docs, "Deployment", "platform-wave-core");
      const env = objs(field(objs(field(core, "spec", "template", "spec", "containers"))[0], "env"));
      assert.equal(env.find((e) => e.name === "WAVE_CLUSTER_ID")?.value, "prod");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("renders no PodDisruptionBudget at one replica (its node could never be drained), maxUnavailable 1 and a spread above", () => {
    const pdbs = (d: Obj[]) =>
      byKind(d, "PodDisruptionBudget").map((p) => [field(p, "metadata", "name"), field(p, "spec")]);
    const spread = (d: Obj[], c: string) =>
      objs(
        field(named(d, "Deployment", `wave-${c}`), "spec", "template", "spec", "topologySpreadConstraints"),
      );
    // Defaults: two webhook replicas, one core on SQLite.
    assert.deepEqual(pdbs(docs), [
      [
        "wave-webhook",
        {
          maxUnavailable: 1,
          selector: {
            matchLabels: {
              "app.kubernetes.io/name": "wave",
              "app.kubernetes.io/instance": "wave",
              "app.kubernetes.io/component": "webhook",
            },
          },
        },
      ],
    ]);
    assert.deepEqual(spread(docs, "core"), []);
    assert.equal(spread(docs, "webhook").length, 2);
    const one = render(["--set", "webhook.replicas=1"]);
    assert.deepEqual(pdbs(one), [], "no PDB at one webhook replica");
    assert.deepEqual(spread(one, "webhook"), []);
    const ha = render(["-f", `${chart}/ci/postgres-values.yaml`, "--set", "core.replicas=3"]);
    assert.deepEqual(
      pdbs(ha).map(([name, spec]) => [name, field(spec, "maxUnavailable")]),
      [
        ["wave-core", 1],
        ["wave-webhook", 1],
      ],
    );
    assert.deepEqual(
      spread(ha, "core").map((s) => [
        s.topologyKey,
        s.whenUnsatisfiable,
        field(s, "labelSelector", "matchLabels", "app.kubernetes.io/component"),
      ]),
      [
        ["topology.kubernetes.io/zone", "ScheduleAnyway", "core"],
        ["kubernetes.io/hostname", "DoNotSchedule", "core"],
      ],
    );
  });

  it("serves the webhook on the node's network when asked (the control plane cannot reach pod IPs)", () => {
    const pod = (d: Obj[]) => field(named(d, "Deployment", "wave-webhook"), "spec", "template", "spec");
    const container = (d: Obj[]) => objs(field(pod(d), "containers"))[0];
    const port = (d: Obj[]) => objs(field(container(d), "ports"))[0]?.containerPort;
    const envPort = (d: Obj[]) =>
      objs(field(container(d), "env")).find((e) => e.name === "WAVE_WEBHOOK_PORT")?.value;
    assert.equal(field(pod(docs), "hostNetwork"), undefined);
    assert.equal(port(docs), 8443);
    const host = render(["--set", "webhook.hostNetwork=true"]);
    assert.equal(field(pod(host), "hostNetwork"), true);
    assert.equal(field(pod(host), "dnsPolicy"), "ClusterFirstWithHostNet");
    assert.equal(port(host), 10260, "a port free on the node, not the pods' 8443");
    assert.equal(envPort(host), "10260");
    // The API server still calls the Service's port, which targets the container's by name.
    const svc = objs(field(named(host, "Service", "wave-webhook"), "spec", "ports"))[0];
    assert.deepEqual([svc?.port, svc?.targetPort], [8443, "https"]);
    const cfg = objs(named(host, "MutatingWebhookConfiguration", "wave-webhook").webhooks)[0];
    assert.equal(field(cfg, "clientConfig", "service", "port"), 8443);
    const np = objs(field(named(host, "NetworkPolicy", "wave-webhook"), "spec", "ingress"));
    assert.equal(objs(np[0]?.ports)[0]?.port, 10260);
    const other = render(["--set", "webhook.hostNetwork=true", "--set", "webhook.hostNetworkPort=9443"]);
    assert.equal(port(other), 9443);
  });

  it("takes each component's ServiceAccount (create, name, annotations), pod labels, annotations and priority class from values", () => {
    const pod = (d: Obj[], c: string) => field(named(d, "Deployment", `wave-${c}`), "spec", "template");
    const set = render([
      "--set",
      "webhook.serviceAccount.annotations.eks\\.amazonaws\\.com/role-arn=arn:aws:iam::1:role/w",
      "--set",
      "agent.serviceAccount.create=false",
      "--set",
      "agent.serviceAccount.name=platform-agent",
      "--set",
      "core.serviceAccount.name=pricing",
      ...["agent", "core", "webhook"].flatMap((c) => [
        "--set",
        `${c}.podLabels.team=platform`,
        "--set",
        `${c}.podAnnotations.owner=${c}`,
        "--set",
        `${c}.priorityClassName=system-cluster-critical`,
      ]),
    ]);
    assert.deepEqual(
      byKind(set, "ServiceAccount")
        .map((s) => field(s, "metadata", "name"))
        .sort(),
      ["pricing", "wave-cleanup", "wave-webhook"],
      "no ServiceAccount made for the agent's own",
    );
    assert.deepEqual(field(named(set, "ServiceAccount", "wave-webhook"), "metadata", "annotations"), {
      "eks.amazonaws.com/role-arn": "arn:aws:iam::1:role/w",
    });
    assert.equal(field(named(set, "ServiceAccount", "pricing"), "automountServiceAccountToken"), false);
    for (const [c, sa] of [
      ["agent", "platform-agent"],
      ["core", "pricing"],
      ["webhook", "wave-webhook"],
    ] as const) {
      const p = pod(set, c);
      assert.equal(field(p, "spec", "serviceAccountName"), sa, c);
      assert.equal(field(p, "metadata", "labels", "team"), "platform", c);
      assert.equal(field(p, "metadata", "annotations", "owner"), c, c);
      assert.equal(field(p, "spec", "priorityClassName"), "system-cluster-critical", c);
      // Extra pod labels never enter the selector (immutable on upgrade).
      assert.equal(
        field(named(set, "Deployment", `wave-${c}`), "spec", "selector", "matchLabels", "team"),
        undefined,
      );
    }
    // The agent's permissions and admission policy follow its ServiceAccount.
    const subjects = [...byKind(set, "ClusterRoleBinding"), ...byKind(set, "RoleBinding")]
      .filter((b) => String(field(b, "metadata", "name")).startsWith("wave-agent"))
      .flatMap((b) => objs(b.subjects).map((s) => s.name));
    assert.ok(subjects.length >= 3, JSON.stringify(subjects));
    assert.deepEqual([...new Set(subjects)], ["platform-agent"]);
    assert.deepEqual(
      objs(
        field(
          named(set, "ValidatingAdmissionPolicy", "wave-agent-annotations-only"),
          "spec",
          "matchConditions",
        ),
      ).map((m) => m.expression),
      ['request.userInfo.username == "system:serviceaccount:wave:platform-agent"'],
    );
    assert.throws(
      () => render(["--set", "webhook.serviceAccount.create=false"]),
      /webhook\.serviceAccount\.name is required/,
    );
  });

  it("keeps Wave's own pods off Karpenter's (spot) nodes by default; preferred, off or replaced by a component's nodeAffinity", () => {
    const nodeAffinity = (d: Obj[], c: string) =>
      field(named(d, "Deployment", `wave-${c}`), "spec", "template", "spec", "affinity", "nodeAffinity");
    const notSpot = {
      matchExpressions: [{ key: "karpenter.sh/capacity-type", operator: "NotIn", values: ["spot"] }],
    };
    // avoidKarpenterNodes (issue 44) adds karpenter.sh/nodepool DoesNotExist: helm-placement.test.ts.
    const notKarpenter = { key: "karpenter.sh/nodepool", operator: "DoesNotExist" };
    for (const c of ["agent", "core", "webhook"])
      assert.deepEqual(
        nodeAffinity(docs, c),
        {
          requiredDuringSchedulingIgnoredDuringExecution: {
            nodeSelectorTerms: [{ matchExpressions: [...notSpot.matchExpressions, notKarpenter] }],
          },
        },
        c,
      );
    const preferred = render(["--set", "avoidSpotNodes=preferred", "--set", "avoidKarpenterNodes=none"]);
    assert.deepEqual(nodeAffinity(preferred, "core"), {
      preferredDuringSchedulingIgnoredDuringExecution: [{ weight: 100, preference: notSpot }],
    });
    const none = render(["--set", "avoidSpotNodes=none", "--set", "avoidKarpenterNodes=none"]);
    assert.equal(nodeAffinity(none, "webhook"), undefined);
    const own = render([
      "--set",
      "agent.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].key=role",
      "--set",
      "agent.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator=Exists",
    ]);
    assert.deepEqual(nodeAffinity(own, "agent"), {
      requiredDuringSchedulingIgnoredDuringExecution: {
        nodeSelectorTerms: [{ matchExpressions: [{ key: "role", operator: "Exists" }] }],
      },
    });
    assert.deepEqual(nodeAffinity(own, "core"), {
      requiredDuringSchedulingIgnoredDuringExecution: {
        nodeSelectorTerms: [{ matchExpressions: [...notSpot.matchExpressions, notKarpenter] }],
      },
    });
  });

  it("renders byte-identical twice with auth.existingSecret (the GitOps path), which every token reference names", () => {
    const args = [
      "template",
      "wave",
      chart,
      "--namespace",
      "wave",
      ...KUBE,
      ...APIS.flatMap((a) => ["--api-versions", a]),
      "--api-versions",
      "monitoring.coreos.com/v1/ServiceMonitor",
      "--set",
      "auth.existingSecret=wave-gitops-tokens",
      "--set",
      "serviceMonitor.enabled=true",
    ];
    const once = (): string =>
      execFileSync(helm, args, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
    const first = once();
    assert.equal(once(), first, "a second render differs: Argo CD would see drift on every sync");
    const docs = parseAllDocuments(first)
      .map((d) => d.toJSON() as unknown)
      .filter(isObj);
    assert.deepEqual(byKind(docs, "Secret"), [], "no generated Secret");
    const refs = [...first.matchAll(/secretKeyRef:\s+name: (\S+)\s+key: (\S+-token)/g)].map((m) => m[1]);
    assert.ok(refs.length >= 4, `token references: ${refs.length}`);
    assert.deepEqual([...new Set(refs)], ["wave-gitops-tokens"]);
    const sm = named(docs, "ServiceMonitor", "wave");
    assert.equal(
      field(objs(field(sm, "spec", "endpoints"))[0], "authorization", "credentials", "name"),
      "wave-gitops-tokens",
    );
    // Without it the chart generates tokens, which only a cluster-aware `helm upgrade` keeps:
    // `helm template` (Argo CD) makes new ones on every render.
    const generated = (): string =>
      execFileSync(helm, args.slice(0, -4), { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
    assert.notEqual(generated(), generated());
  });

  it("passes helm lint --strict with the default values and with every option of issue 33 set (global included)", () => {
    const lint = (args: string[]): string =>
      execFileSync(helm, ["lint", "--strict", chart, ...KUBE, "--set", "checks.crds=false", ...args], {
        encoding: "utf8",
        stdio: ["ignore", "pipe", "pipe"],
      });
    assert.match(lint([]), /1 chart\(s\) linted, 0 chart\(s\) failed/);
    const all = lint([
      "-f",
      `${chart}/ci/postgres-values.yaml`,
      "--set",
      "global.imageRegistry=registry.example",
      "--set",
      "core.replicas=2",
      "--set",
      "webhook.hostNetwork=true",
      "--set",
      "avoidSpotNodes=preferred",
      "--set",
      "auth.existingSecret=wave-gitops-tokens",
      "--set",
      "agent.serviceAccount.create=false",
      "--set",
      "agent.serviceAccount.name=platform-agent",
      "--set",
      "prometheusRule.enabled=true",
      "--set",
      "alerts.runbookBaseUrl=https://docs.example/wave/metrics.md",
      "--set",
      "alerts.rules.WavePricingStale.threshold=3600",
    ]);
    assert.match(all, /0 chart\(s\) failed/);
    assert.doesNotMatch(all, /\[(WARNING|ERROR)\]/);
  });
});

// Wave's own CRDs (issue 31), shipped as Karpenter ships its own: a chart of their own
// (deploy/helm/wave-crds, upgraded by `helm upgrade`, kept on uninstall) and a copy in the wave
// chart's crds/ folder (installed once by `helm install`). One source: wave-crds/templates.
describe("helm charts: Wave's CRDs (deploy/helm/wave-crds, deploy/helm/wave/crds)", { skip }, () => {
  const crdChart = `${root}deploy/helm/wave-crds`;
  const FILES = ["wave.sh_spotpolicies.yaml", "wave.sh_warmuppolicies.yaml"];

  it("the wave chart's crds/ folder is a byte-identical copy of wave-crds/templates (npm run crds:gen)", () => {
    const listed = (dir: string): string[] =>
      execFileSync("ls", [dir], { encoding: "utf8" })
        .split("\n")
        .filter((f) => f.endsWith(".yaml"))
        .sort();
    assert.deepEqual(listed(`${crdChart}/templates`), FILES);
    assert.deepEqual(listed(`${chart}/crds`), FILES);
    for (const f of FILES)
      assert.equal(
        readFileSync(`${chart}/crds/${f}`, "utf8"),
        readFileSync(`${crdChart}/templates/${f}`, "utf8"),
        `deploy/helm/wave/crds/${f} drifted from deploy/helm/wave-crds/templates/${f}: run npm run crds:gen`,
      );
  });

  const crds = (): Obj[] =>
    parseAllDocuments(
      execFileSync(helm, ["template", "wave-crds", crdChart, ...KUBE], {
        encoding: "utf8",
        stdio: ["ignore", "pipe", "pipe"],
      }),
    )
      .map((d) => d.toJSON() as unknown)
      .filter(isObj);

  it("the wave-crds chart renders both CRDs, kept on uninstall, with a status subresource", () => {
    const docs = crds();
    assert.deepEqual(docs.map((d) => `${String(d.kind)} ${String(field(d, "metadata", "name"))}`).sort(), [
      "CustomResourceDefinition spotpolicies.wave.sh",
      "CustomResourceDefinition warmuppolicies.wave.sh",
    ]);
    for (const d of docs) {
      assert.equal(field(d, "metadata", "annotations", "helm.sh/resource-policy"), "keep");
      const [v] = objs(field(d, "spec", "versions"));
      assert.equal(v?.name, "v1alpha1");
      assert.deepEqual(field(v, "subresources", "status"), {});
    }
    const lint = execFileSync(helm, ["lint", "--strict", crdChart, ...KUBE], { encoding: "utf8" });
    assert.match(lint, /0 chart\(s\) failed/);
  });

  it("names, scopes and fields agree with src/objects/policy-crds.ts", async () => {
    const c = await import("../../src/objects/policy-crds.ts");
    const docs = crds();
    const crd = (plural: string): Obj => {
      const found = docs.find((d) => field(d, "metadata", "name") === `${plural}.${c.POLICY_GROUP}`);
      assert.ok(found, plural);
      return found;
    };
    const spot = crd(c.SPOT_POLICY_PLURAL);
    const warm = crd(c.WARMUP_POLICY_PLURAL);
    assert.equal(field(spot, "spec", "names", "kind"), c.SPOT_POLICY_KIND);
    assert.equal(field(spot, "spec", "scope"), "Namespaced");
    assert.equal(field(warm, "spec", "names", "kind"), c.WARMUP_POLICY_KIND);
    assert.equal(field(warm, "spec", "scope"), "Cluster");
    const props = (d: Obj, ...path: string[]): string[] =>
      Object.keys(
        field(
          objs(field(d, "spec", "versions"))[0],
          "schema",
          "openAPIV3Schema",
          "properties",
          ...path,
        ) as Obj,
      ).sort();
    // Every field of the TypeScript shapes (Required<> makes the compiler list them all).
    const spotSpec: Required<import("../../src/objects/policy-crds.ts").SpotPolicySpec> = {
      targetRef: { kind: "Deployment", name: "web" },
      threshold: 0,
      percentAboveBase: 0,
      strategy: "Prefer",
      repair: "On",
      fallbackWindowSeconds: 60,
    };
    const spotStatus: Required<import("../../src/objects/policy-crds.ts").SpotPolicyStatus> = {
      observedGeneration: 1,
      targetOnDemand: 0,
      targetSpot: 0,
      onDemand: 0,
      spot: 0,
      conditions: [],
      lastRepair: { time: "", pod: "", action: "" },
    };
    const warmSpec: Required<import("../../src/objects/policy-crds.ts").WarmupPolicySpec> = {
      nodePool: "p",
      enabled: true,
      maxWarmNodes: 1,
      ttlSeconds: 30,
      cooldownSeconds: 0,
      maxCostPerHour: "1",
      prePull: true,
      prePullDeadlineSeconds: 10,
    };
    const warmStatus: Required<import("../../src/objects/policy-crds.ts").WarmupPolicyStatus> = {
      observedGeneration: 1,
      state: "idle",
      blocker: "",
      warmNodes: 0,
      hits: 0,
      misses: 0,
      conditions: [],
    };
    assert.deepEqual(props(spot, "spec", "properties"), Object.keys(spotSpec).sort());
    assert.deepEqual(props(spot, "status", "properties"), Object.keys(spotStatus).sort());
    assert.deepEqual(props(warm, "spec", "properties"), Object.keys(warmSpec).sort());
    assert.deepEqual(props(warm, "status", "properties"), Object.keys(warmStatus).sort());
  });

  it("prints target, on-demand, spot and ready for `kubectl get spotpolicies -A`", () => {
    const spot = crds().find((d) => field(d, "metadata", "name") === "spotpolicies.wave.sh");
    const cols = objs(field(objs(field(spot, "spec", "versions"))[0], "additionalPrinterColumns"))
      .filter((c) => c.priority === undefined)
      .map((c) => `${String(c.name)}=${String(c.jsonPath)}`);
    assert.deepEqual(cols, [
      "Target=.spec.targetRef.name",
      "On-Demand=.status.onDemand",
      "Spot=.status.spot",
      "Want-OD=.status.targetOnDemand",
      "Want-Spot=.status.targetSpot",
      'Ready=.status.conditions[?(@.type=="Ready")].status',
      "Age=.metadata.creationTimestamp",
    ]);
  });

  it("`helm install` of the wave chart carries the CRDs (--include-crds)", () => {
    const out = execFileSync(
      helm,
      [
        "template",
        "wave",
        chart,
        "--namespace",
        "wave",
        "--include-crds",
        ...KUBE,
        ...APIS.flatMap((a) => ["--api-versions", a]),
      ],
      { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] },
    );
    assert.match(out, /name: spotpolicies\.wave\.sh/);
    assert.match(out, /name: warmuppolicies\.wave\.sh/);
  });

  it("aggregates wave-policy-view into view/edit/admin and wave-policy-edit into edit/admin; off when asked", () => {
    const docs = render();
    const view = named(docs, "ClusterRole", "wave-policy-view");
    const edit = named(docs, "ClusterRole", "wave-policy-edit");
    const aggregated = (r: Obj): string[] =>
      Object.entries((field(r, "metadata", "labels") ?? {}) as Obj)
        .filter(([k, v]) => k.startsWith("rbac.authorization.k8s.io/aggregate-to-") && v === "true")
        .map(([k]) => k.replace("rbac.authorization.k8s.io/aggregate-to-", ""))
        .sort();
    assert.deepEqual(aggregated(view), ["admin", "edit", "view"]);
    assert.deepEqual(aggregated(edit), ["admin", "edit"]);
    assert.deepEqual(ruleKeys("cluster", objs(view.rules)).sort(), [
      "cluster|wave.sh|spotpolicies/status|get|-",
      "cluster|wave.sh|spotpolicies/status|list|-",
      "cluster|wave.sh|spotpolicies/status|watch|-",
      "cluster|wave.sh|spotpolicies|get|-",
      "cluster|wave.sh|spotpolicies|list|-",
      "cluster|wave.sh|spotpolicies|watch|-",
      "cluster|wave.sh|warmuppolicies/status|get|-",
      "cluster|wave.sh|warmuppolicies/status|list|-",
      "cluster|wave.sh|warmuppolicies/status|watch|-",
      "cluster|wave.sh|warmuppolicies|get|-",
      "cluster|wave.sh|warmuppolicies|list|-",
      "cluster|wave.sh|warmuppolicies|watch|-",
    ]);
    // Editors write the spec of SpotPolicies only: never a status, never a WarmupPolicy.
    assert.deepEqual(ruleKeys("cluster", objs(edit.rules)).sort(), [
      "cluster|wave.sh|spotpolicies|create|-",
      "cluster|wave.sh|spotpolicies|deletecollection|-",
      "cluster|wave.sh|spotpolicies|delete|-",
      "cluster|wave.sh|spotpolicies|patch|-",
      "cluster|wave.sh|spotpolicies|update|-",
    ]);
    // Nothing binds them: aggregation is how users get them.
    for (const b of [...byKind(docs, "ClusterRoleBinding"), ...byKind(docs, "RoleBinding")])
      assert.doesNotMatch(String(field(b, "roleRef", "name")), /^wave-policy-/);
    const off = render(["--set", "policyRoles.aggregate=false"]);
    assert.equal(
      byKind(off, "ClusterRole").filter((r) =>
        String(field(r, "metadata", "name")).startsWith("wave-policy-"),
      ).length,
      0,
    );
  });
});
