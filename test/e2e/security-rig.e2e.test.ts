// Issue #16 on the real rig:
//   rbac      the chart's RBAC created for real: the agent's ServiceAccount (the warmup controller
//             runs beside the agent, ADR 0014) may create pods only in the warmup namespace and
//             read Secrets nowhere (`kubectl auth can-i`), so its pod-create permission never
//             reaches the release namespace's Secrets; core's may do none of it
//   restricted pre-pull and warmup pods as Wave builds them are admitted into a namespace labelled
//             pod-security.kubernetes.io/enforce=restricted (the apiserver's PodSecurity
//             admission), while the old pull pod (workload's /bin/sh, no securityContext) is not
//   identity  `wave core` with credentials for two clusters and `wave agent` against the rig: an
//             agent with the other cluster's token is rejected (PERMISSION_DENIED) and writes
//             nothing; with its own token it streams the rig's nodes
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { promisify } from "node:util";
import { parseAllDocuments } from "yaml";
import { repoRoot } from "../../hack/rig/lib.ts";
import { parseConfig } from "../../src/config/config.ts";
import { startAgentComponent } from "../../src/cli/agent-component.ts";
import { startCoreComponent } from "../../src/cli/core-component.ts";
import { createLogger } from "../../src/shared/log.ts";
import { prepullPod, warmupPod, warmupPriorityClass } from "../../src/warmup/manifests.ts";
import { CLIENT_EXT, makePki, SERVER_EXT } from "../support/pki.ts";
import {
  createNamespace,
  deleteNamespace,
  kubeconfigPath,
  kubectl,
  kubectlRaw,
  list,
  requireRig,
  withRigLogsOnFailure,
} from "./harness.ts";

const run = promisify(execFile);
const HELM = join(repoRoot, ".rig", "bin", "helm");
const CHART = join(repoRoot, "deploy", "helm", "wave");
const namespaces: string[] = [];
const clusterScoped: string[][] = [];
let work = "";

before(async () => {
  await requireRig();
  work = mkdtempSync(join(tmpdir(), "wave-security-e2e-"));
});

after(async () => {
  for (const args of clusterScoped)
    await kubectlRaw(["delete", ...args, "--ignore-not-found", "--wait=false"]);
  await Promise.all(namespaces.map((n) => deleteNamespace(n)));
  rmSync(work, { recursive: true, force: true });
});

describe("Wave's RBAC: pods only in the warmup namespace, Secrets nowhere", { timeout: 120_000 }, () => {
  it("kubectl auth can-i as the chart's agent and core ServiceAccounts", async () => {
    await withRigLogsOnFailure(async () => {
      const ns = await createNamespace("sec-rel");
      namespaces.push(ns, `${ns}-warmup`);
      const release = `sec${ns.slice(-6)}`;
      const { stdout } = await run(
        HELM,
        [
          "template",
          release,
          CHART,
          "--namespace",
          ns,
          "--kube-version",
          "1.34.0",
          "--api-versions",
          "karpenter.sh/v1/NodePool",
          "--api-versions",
          "cert-manager.io/v1/Certificate",
        ],
        { maxBuffer: 16 << 20 },
      );
      const docs = parseAllDocuments(stdout).map(
        (d) => d.toJSON() as { kind?: string; metadata?: { name?: string } },
      );
      const kinds = new Set([
        "Namespace",
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "Role",
        "RoleBinding",
        "NetworkPolicy",
      ]);
      const objs = docs.filter(
        (d) => kinds.has(String(d.kind)) && !String(d.metadata?.name).endsWith("-cleanup"),
      );
      for (const d of objs)
        if (d.kind === "ClusterRole" || d.kind === "ClusterRoleBinding")
          clusterScoped.push([d.kind.toLowerCase(), String(d.metadata?.name)]);
      await kubectl(["apply", "-f", "-"], JSON.stringify({ apiVersion: "v1", kind: "List", items: objs }));
      const warmupNs = `${ns}-warmup`;
      const saOf = (component: string): string => {
        const found = objs.find(
          (d) => d.kind === "ServiceAccount" && String(d.metadata?.name).endsWith(`-${component}`),
        );
        assert.ok(found, `the chart renders the ${component}'s ServiceAccount`);
        return `system:serviceaccount:${ns}:${String(found.metadata?.name)}`;
      };
      const answersOf = async (sa: string): Promise<Record<string, string>> => {
        const can = async (verb: string, resource: string, namespace: string): Promise<string> =>
          (await kubectlRaw(["auth", "can-i", verb, resource, "-n", namespace, `--as=${sa}`])).stdout.trim();
        const answers: Record<string, string> = {};
        for (const [verb, res, where] of [
          ["create", "pods", warmupNs],
          ["delete", "pods", warmupNs],
          ["create", "pods", ns],
          ["get", "secrets", ns],
          ["list", "secrets", ns],
          ["get", "secrets", warmupNs],
          ["create", "secrets", warmupNs],
        ] as const)
          answers[`${verb} ${res} in ${where === ns ? "release" : "warmup"}`] = await can(verb, res, where);
        process.stderr.write(`[can-i] ${sa}: ${JSON.stringify(answers)}\n`);
        return answers;
      };
      const secretsNowhere = {
        "create pods in release": "no",
        "get secrets in release": "no",
        "list secrets in release": "no",
        "get secrets in warmup": "no",
        "create secrets in warmup": "no",
      };
      assert.deepEqual(await answersOf(saOf("agent")), {
        "create pods in warmup": "yes",
        "delete pods in warmup": "yes",
        ...secretsNowhere,
      });
      assert.deepEqual(await answersOf(saOf("core")), {
        "create pods in warmup": "no",
        "delete pods in warmup": "no",
        ...secretsNowhere,
      });
      // The warmup namespace enforces `restricted` and a NetworkPolicy denies all its traffic.
      const nsObj = JSON.parse(await kubectl(["get", "namespace", warmupNs, "-o", "json"])) as {
        metadata: { labels: Record<string, string> };
      };
      assert.equal(nsObj.metadata.labels["pod-security.kubernetes.io/enforce"], "restricted");
      const [np] = await list("networkpolicies", { namespace: warmupNs });
      assert.deepEqual((np as unknown as { spec: unknown } | undefined)?.spec, {
        podSelector: {},
        policyTypes: ["Ingress", "Egress"],
      });
    });
  });
});

describe("Wave's pods under the restricted Pod Security Standard", { timeout: 120_000 }, () => {
  it("pre-pull and warmup pods are admitted; the old shell-running pull pod is not", async () => {
    await withRigLogsOnFailure(async () => {
      const ns = await createNamespace("sec-psa");
      namespaces.push(ns);
      await kubectl([
        "label",
        "namespace",
        ns,
        "pod-security.kubernetes.io/enforce=restricted",
        "pod-security.kubernetes.io/enforce-version=latest",
      ]);
      const nodes = await list("nodes");
      const node = nodes[0]?.metadata.name ?? "no-node";
      const pull = prepullPod({
        pool: "general",
        node,
        image: "example.com/app:1.2.3",
        namespace: ns,
        now: Date.now(),
        deadlineSeconds: 60,
      });
      const pool = {
        apiVersion: "karpenter.sh/v1",
        kind: "NodePool",
        metadata: { name: "general" },
        spec: {
          template: { spec: { nodeClassRef: { group: "x", kind: "x", name: "x" }, requirements: [] } },
        },
      };
      const warm = warmupPod({
        pool,
        namespace: ns,
        largest: {
          apiVersion: "v1",
          kind: "Pod",
          metadata: { name: "big", namespace: "app" },
          spec: { containers: [{ name: "c", image: "x" }] },
        },
        requests: { cpu: 100, memory: 1 << 20 },
        now: Date.now(),
        ttlSeconds: 60,
        slot: 0,
      });
      if ((await kubectlRaw(["get", "priorityclass", "wave-warmup"])).code !== 0) {
        await kubectl(["create", "-f", "-"], JSON.stringify(warmupPriorityClass()));
        clusterScoped.push(["priorityclass", "wave-warmup"]);
      }
      // Real creates (not dry runs): PodSecurity admission runs on them.
      for (const p of [pull, warm]) {
        const r = await kubectlRaw(["create", "-f", "-"], JSON.stringify(p));
        assert.equal(r.code, 0, `${p.metadata.name} rejected: ${r.stderr}`);
      }
      const old = structuredClone(pull) as unknown as {
        metadata: { name: string };
        spec: Record<string, unknown> & { containers: Record<string, unknown>[] };
      };
      old.metadata.name = "wave-prepull-old-style";
      delete old.spec.securityContext;
      delete old.spec.volumes;
      old.spec.containers = [
        { name: "pull", image: "example.com/app:1.2.3", command: ["/bin/sh", "-c", "true"] },
      ];
      const refused = await kubectlRaw(["create", "-f", "-"], JSON.stringify(old));
      assert.notEqual(refused.code, 0, "the old pull pod must violate restricted");
      assert.match(refused.stderr, /violates PodSecurity "restricted/);
      process.stderr.write(
        `[psa] admitted ${pull.metadata.name} and ${warm.metadata.name}; old style refused\n`,
      );
    });
  });
});

describe("agent credentials bound to cluster ids, on the rig", { timeout: 120_000 }, () => {
  it("an agent with another cluster's token is rejected; with its own it streams", async () => {
    await withRigLogsOnFailure(async () => {
      const ns = await createNamespace("sec-id");
      namespaces.push(ns);
      makePki(work, [
        { dir: "grpc", cn: "wave-core", ext: SERVER_EXT },
        { dir: "agent", cn: "wave-agent", ext: CLIENT_EXT },
      ]);
      const tokenA = "token-of-cluster-a-e2e-0123456789";
      const tokenB = "token-of-cluster-b-e2e-0123456789";
      const creds = join(work, "agents.yaml");
      writeFileSync(
        creds,
        [
          "- name: agent-a",
          `  token: ${tokenA}`,
          "  identity: wave-agent",
          "  clusters: [rig-a]",
          "- name: agent-b",
          `  token: ${tokenB}`,
          "  identity: wave-agent",
          "  clusters: [rig-b]",
        ].join("\n"),
      );
      const lines: string[] = [];
      const log = createLogger({ level: "info", write: (l) => lines.push(l) });
      const common = ["--kubeconfig", kubeconfigPath, "--namespace", ns, "--host", "127.0.0.1"];
      const core = await startCoreComponent(
        parseConfig([
          ...common,
          ...[
            "--cluster-id",
            "rig-a",
            "--port",
            "0",
            "--grpc-port",
            "0",
            "--grpc-tls-dir",
            join(work, "grpc"),
          ],
          ...["--data-dir", join(work, "data"), "--agent-credentials", creds],
          ...["--admin-token", "admin-token-e2e-0123456789", "--viewer-token", "viewer-token-e2e-0123456789"],
          ...["--pod-name", "core-0", "--warmup-namespace", ns],
        ]).config,
        process.env,
        { log },
      );
      const agentWith = (token: string, pod: string) =>
        startAgentComponent(
          parseConfig([
            ...common,
            ...[
              "--cluster-id",
              "rig-a",
              "--agent-token",
              token,
              "--core-address",
              `https://127.0.0.1:${core.grpcPort}`,
            ],
            ...[
              "--agent-tls-dir",
              join(work, "agent"),
              "--metrics-port",
              "0",
              "--pod-name",
              pod,
              "--agent-lease",
              `lease-${pod}`,
            ],
          ]).config,
          process.env,
          { log },
        );
      try {
        const wrong = await agentWith(tokenB, "agent-wrong");
        const deadline = Date.now() + 30_000;
        while (!lines.some((l) => l.includes("may not stream cluster"))) {
          assert.ok(Date.now() < deadline, `no rejection within 30 s:\n${lines.slice(-20).join("\n")}`);
          await new Promise((r) => setTimeout(r, 100));
        }
        await wrong.stop();
        assert.equal(
          core.hub.get("rig-a")?.info,
          undefined,
          "nothing from the wrong token reached cluster rig-a",
        );
        const right = await agentWith(tokenA, "agent-right");
        try {
          const until = Date.now() + 60_000;
          // Streaming: connected, and its snapshot (the rig's objects, however few) written.
          const streamed = (): boolean => {
            const c = core.hub.get("rig-a");
            return c?.connected === true && c.info !== undefined && c.lastSeen !== c.info.connectedAt;
          };
          while (!streamed()) {
            assert.ok(
              Date.now() < until,
              `the agent's snapshot reached core within 60 s:\n${lines.slice(-10).join("\n")}`,
            );
            await new Promise((r) => setTimeout(r, 100));
          }
          assert.equal(core.hub.get("rig-a")?.info?.agentVersion !== undefined, true);
        } finally {
          await right.stop();
        }
      } finally {
        await core.stop();
      }
    });
  });
});
