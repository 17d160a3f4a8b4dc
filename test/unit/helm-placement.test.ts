// Issue 44, part 5 and 7: what the chart sends to the webhook (opt-in namespace/object selectors,
// matchConditions for pods no SpotPolicy can concern), where and at what priority Wave's own pods
// run, what the uninstall cleanup waits for, and what NOTES.txt tells the user. Rendered with the
// helm built by `npm run helm:build`, like helm-chart.test.ts.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { cpSync, existsSync, mkdtempSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { parseAllDocuments } from "yaml";
import { labelSelectorMatcher } from "../../src/kube/selectors.ts";
import type { LabelSelector } from "../../src/objects/kube.ts";

const root = new URL("../../", import.meta.url).pathname;
const helm = `${root}.rig/bin/helm`;
const chart = `${root}deploy/helm/wave`;
const skip = existsSync(helm) ? false : `helm not built (${helm}): run npm run helm:build`;
const BASE = ["--namespace", "wave", "--kube-version", "1.33.0", "--set", "checks.crds=false"];

interface Webhook {
  namespaceSelector?: LabelSelector;
  objectSelector?: LabelSelector;
  matchConditions?: { name: string; expression: string }[];
  failurePolicy?: string;
}
interface PodSpec {
  affinity?: { nodeAffinity?: unknown };
  priorityClassName?: string;
  containers: { args?: string[] }[];
}
interface Obj {
  kind?: string;
  metadata?: { name?: string };
  webhooks?: Webhook[];
  spec?: { template?: { spec?: PodSpec } };
  data?: Record<string, string>;
}

function render(args: string[] = [], dir = chart): Obj[] {
  const out = execFileSync(helm, ["template", "wave", dir, ...BASE, ...args], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "pipe"],
  });
  return parseAllDocuments(out)
    .map((d) => d.toJSON() as Obj | null)
    .filter((d): d is Obj => d !== null && typeof d === "object");
}

const one = (docs: Obj[], kind: string, name: string): Obj => {
  const d = docs.find((o) => o.kind === kind && o.metadata?.name === name);
  assert.ok(d, `${kind} ${name} not rendered`);
  return d;
};
const webhookOf = (docs: Obj[]): Webhook => {
  const w = one(docs, "MutatingWebhookConfiguration", "wave-webhook").webhooks?.[0];
  assert.ok(w);
  return w;
};
const podSpec = (docs: Obj[], c: string): PodSpec => {
  const spec = one(docs, "Deployment", `wave-${c}`).spec?.template?.spec;
  assert.ok(spec, c);
  return spec;
};

/** NOTES.txt rendered through `tpl` in a copy of the chart (`helm template` never renders NOTES). */
function notes(args: string[] = []): string {
  const dir = mkdtempSync(join(tmpdir(), "wave-notes-"));
  try {
    cpSync(chart, join(dir, "wave"), { recursive: true });
    renameSync(join(dir, "wave/templates/NOTES.txt"), join(dir, "wave/NOTES.src"));
    writeFileSync(
      join(dir, "wave/templates/notes.yaml"),
      'apiVersion: v1\nkind: ConfigMap\nmetadata: { name: notes }\ndata:\n  notes: {{ tpl (.Files.Get "NOTES.src") . | toJson }}\n',
    );
    return String(one(render(args, join(dir, "wave")), "ConfigMap", "notes").data?.notes);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe("helm chart deploy/helm/wave: webhook scope, placement, priority (issue 44)", { skip }, () => {
  const docs = render();

  it("sends only pods controlled by an apps ReplicaSet or StatefulSet (matchConditions), all namespaces but the excluded by default", () => {
    const w = webhookOf(docs);
    assert.deepEqual(w.namespaceSelector, {
      matchExpressions: [
        { key: "kubernetes.io/metadata.name", operator: "NotIn", values: ["kube-system", "wave"] },
      ],
    });
    assert.deepEqual(w.objectSelector, {
      matchExpressions: [{ key: "wave.sh/spot-placement", operator: "NotIn", values: ["disabled"] }],
    });
    assert.equal(w.matchConditions?.length, 1);
    const [cond] = w.matchConditions ?? [];
    assert.ok(cond);
    const expr = cond.expression;
    for (const part of ["ownerReferences", "r.controller", "'apps/'", "'ReplicaSet'", "'StatefulSet'"])
      assert.ok(expr.includes(part), `${part} in ${expr}`);
    assert.equal(w.failurePolicy, "Ignore", "a condition that errors skips the webhook");
    assert.equal(webhookOf(render(["--set", "webhook.matchConditions=false"])).matchConditions, undefined);
  });

  it("adds the opt-in namespaceSelector and objectSelector to the exclusions, which stay", () => {
    const w = webhookOf(
      render([
        "--set",
        "webhook.excludeNamespaces={batch}",
        "--set-json",
        'webhook.namespaceSelector={"matchLabels":{"wave.sh/spot-placement":"enabled"},"matchExpressions":[{"key":"env","operator":"In","values":["prod"]}]}',
        "--set-json",
        'webhook.objectSelector={"matchExpressions":[{"key":"tier","operator":"Exists"}]}',
      ]),
    );
    const ns = labelSelectorMatcher(w.namespaceSelector);
    const label = (name: string, more: Record<string, string> = {}) => ({
      "kubernetes.io/metadata.name": name,
      ...more,
    });
    const selected = { "wave.sh/spot-placement": "enabled", env: "prod" };
    assert.equal(ns(label("shop", selected)), true);
    assert.equal(ns(label("shop", { env: "prod" })), false, "not opted in");
    assert.equal(ns(label("shop", { "wave.sh/spot-placement": "enabled" })), false);
    for (const excluded of ["kube-system", "wave", "batch"])
      assert.equal(ns(label(excluded, selected)), false, excluded);
    const pod = labelSelectorMatcher(w.objectSelector);
    assert.equal(pod({ tier: "web" }), true);
    assert.equal(pod({}), false);
    assert.equal(pod({ tier: "web", "wave.sh/spot-placement": "disabled" }), false, "the opt-out stays");
    assert.throws(
      () => render(["--set-json", 'webhook.namespaceSelector={"matchLabel":{"a":"b"}}']),
      /namespaceSelector/,
      "the schema refuses a misspelt selector",
    );
  });

  it("keeps Wave's pods off Karpenter's nodes and spot nodes by default; each preferred or none", () => {
    const notSpot = { key: "karpenter.sh/capacity-type", operator: "NotIn", values: ["spot"] };
    const notKarpenter = { key: "karpenter.sh/nodepool", operator: "DoesNotExist" };
    for (const c of ["agent", "core", "webhook"])
      assert.deepEqual(
        podSpec(docs, c).affinity?.nodeAffinity,
        {
          requiredDuringSchedulingIgnoredDuringExecution: {
            nodeSelectorTerms: [{ matchExpressions: [notSpot, notKarpenter] }],
          },
        },
        c,
      );
    const mixed = render(["--set", "avoidKarpenterNodes=preferred"]);
    assert.deepEqual(podSpec(mixed, "core").affinity?.nodeAffinity, {
      requiredDuringSchedulingIgnoredDuringExecution: {
        nodeSelectorTerms: [{ matchExpressions: [notSpot] }],
      },
      preferredDuringSchedulingIgnoredDuringExecution: [
        { weight: 100, preference: { matchExpressions: [notKarpenter] } },
      ],
    });
    const none = render(["--set", "avoidKarpenterNodes=none", "--set", "avoidSpotNodes=none"]);
    assert.equal(podSpec(none, "agent").affinity, undefined);
    assert.throws(() => render(["--set", "avoidKarpenterNodes=always"]), /avoidKarpenterNodes/);
  });

  it("runs the webhook and the agent at system-cluster-critical, core at the cluster's default", () => {
    assert.equal(podSpec(docs, "webhook").priorityClassName, "system-cluster-critical");
    assert.equal(podSpec(docs, "agent").priorityClassName, "system-cluster-critical");
    assert.equal(podSpec(docs, "core").priorityClassName, undefined);
    const off = render(["--set", "webhook.priorityClassName=", "--set", "agent.priorityClassName="]);
    assert.equal(podSpec(off, "webhook").priorityClassName, undefined);
  });

  it("makes the uninstall cleanup wait for the agent (warmup runs there) and core", () => {
    const job = docs.find((d) => d.kind === "Job" && d.metadata?.name === "wave-cleanup");
    assert.ok(job);
    const args = job.spec?.template?.spec?.containers[0]?.args ?? [];
    const selector = args[args.indexOf("--wait-for-pods") + 1];
    assert.equal(selector, "app.kubernetes.io/instance=wave,app.kubernetes.io/component in (agent,core)");
  });

  it("NOTES.txt names the CRDs, the webhook's scope and the Karpenter-node default", () => {
    const text = notes();
    assert.match(text, /wave-crds chart/);
    assert.match(text, /kubectl get crd spotpolicies\.wave\.sh warmuppolicies\.wave\.sh/);
    assert.match(text, /only pods controlled by a ReplicaSet or StatefulSet/);
    assert.match(text, /avoidKarpenterNodes=preferred/);
    assert.match(text, /waits for the agent and core/);
    assert.doesNotMatch(text, /Opt-in/);
    const scoped = notes(["--set-json", 'webhook.namespaceSelector={"matchLabels":{"a":"b"}}']);
    assert.match(scoped, /Opt-in: only namespaces\/pods webhook\.namespaceSelector/);
  });
});
