import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Pod } from "../objects/kube.ts";
import { DELETION_COST_ANNOTATION } from "./constants.ts";
import { jsonPatch as applyJsonPatch } from "../kube/memory/patch.ts";
import { buildNotePatch, buildPatch, capacityConstraintOf } from "./patch.ts";
import { fixturePod } from "./test-helpers.ts";
import { ASSIGNMENT_LABEL, LEDGER_LABEL, SLOT_LABEL } from "../objects/wave.ts";
import { CAPACITY_TYPE_LABEL } from "../objects/karpenter.ts";

const lbl = (p: Pod): Record<string, string> => p.metadata.labels ?? {};
const ann = (p: Pod): Record<string, string> => p.metadata.annotations ?? {};
const na = (p: Pod) => p.spec.affinity?.nodeAffinity ?? {};

const onDemand = { capacity: "on-demand", slot: "tok1", ledger: "led1" } as const;
const spot = { capacity: "spot", slot: "tok2", ledger: "led1" } as const;
const req = (v: string) => ({ key: CAPACITY_TYPE_LABEL, operator: "In", values: [v] });

describe("buildPatch on a Deployment pod with generateName only", () => {
  const pod = fixturePod("deployment-pod-generatename");

  it("pins an on-demand pod with a required term, labels and a deletion cost", () => {
    const ops = buildPatch(pod, onDemand, "Prefer");
    const out = applyJsonPatch(pod, ops);
    assert.deepEqual(out.spec.affinity, {
      nodeAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: {
          nodeSelectorTerms: [{ matchExpressions: [req("on-demand")] }],
        },
      },
    });
    assert.equal(lbl(out)[ASSIGNMENT_LABEL], "on-demand");
    assert.equal(lbl(out)[SLOT_LABEL], "tok1");
    assert.equal(lbl(out)[LEDGER_LABEL], "led1");
    assert.equal(lbl(out).app, "web", "user labels kept");
    assert.equal(ann(out)[DELETION_COST_ANNOTATION], "10000");
    assert.equal(out.metadata.generateName, "web-5bd499bc46-");
    assert.equal(out.metadata.name, undefined);
    // Label keys contain "/": escaped as ~1 in the JSON pointer.
    assert.ok(ops.some((o) => o.path === "/metadata/labels/wave.sh~1capacity-assignment"));
  });

  it("requires spot under Prefer while spot is available (ADR 0007), with no deletion cost", () => {
    const out = applyJsonPatch(pod, buildPatch(pod, spot, "Prefer"));
    assert.deepEqual(out.spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution, {
      nodeSelectorTerms: [{ matchExpressions: [req("spot")] }],
    });
    assert.equal(ann(out)[DELETION_COST_ANNOTATION], undefined);
    assert.equal(lbl(out)[ASSIGNMENT_LABEL], "spot");
  });

  it("prefers spot (weight 100) under Prefer in the fallback window, with no required term", () => {
    const out = applyJsonPatch(pod, buildPatch(pod, spot, "Prefer", { softSpot: true }));
    assert.deepEqual(out.spec.affinity, {
      nodeAffinity: {
        preferredDuringSchedulingIgnoredDuringExecution: [
          { weight: 100, preference: { matchExpressions: [req("spot")] } },
        ],
      },
    });
    assert.equal(ann(out)[DELETION_COST_ANNOTATION], undefined);
    assert.equal(lbl(out)[ASSIGNMENT_LABEL], "spot");
  });

  it("requires spot under Require", () => {
    const out = applyJsonPatch(pod, buildPatch(pod, spot, "Require"));
    assert.deepEqual(out.spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution, {
      nodeSelectorTerms: [{ matchExpressions: [req("spot")] }],
    });
  });

  it("is idempotent: patching the patched pod adds nothing", () => {
    for (const [a, s] of [
      [onDemand, "Prefer"],
      [spot, "Prefer"],
      [spot, "Require"],
    ] as const) {
      const once = applyJsonPatch(pod, buildPatch(pod, a, s));
      assert.deepEqual(buildPatch(once, a, s), []);
    }
  });

  it("keeps a user-set deletion cost", () => {
    const p = structuredClone(pod);
    p.metadata.annotations = { [DELETION_COST_ANNOTATION]: "-5" };
    const out = applyJsonPatch(p, buildPatch(p, onDemand, "Prefer"));
    assert.equal(ann(out)[DELETION_COST_ANNOTATION], "-5");
  });

  it("adds no labels for an uncounted fallback placement", () => {
    const out = applyJsonPatch(pod, buildPatch(pod, { capacity: "spot" }, "Prefer", { note: "why" }));
    assert.equal(lbl(out)[ASSIGNMENT_LABEL], undefined);
    assert.equal(lbl(out)[SLOT_LABEL], undefined);
    assert.equal(ann(out)["wave.sh/spot-placement-note"], "why");
  });
});

describe("buildPatch on a StatefulSet pod", () => {
  it("pins db-0 on-demand and keeps its volumes and hostname", () => {
    const pod = fixturePod("statefulset-pod");
    const out = applyJsonPatch(pod, buildPatch(pod, onDemand, "Require"));
    assert.equal(out.metadata.name, "db-0");
    assert.equal(
      out.spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms
        .length,
      1,
    );
    assert.deepEqual(
      (out.spec as unknown as Record<string, unknown>).volumes,
      (pod.spec as unknown as Record<string, unknown>).volumes,
    );
    assert.equal((out.spec as unknown as Record<string, unknown>).hostname, "db-0");
  });
});

describe("buildPatch on a pod with existing affinity", () => {
  const pod = fixturePod("existing-affinity");

  it("ANDs the required term into every nodeSelectorTerm and keeps everything else", () => {
    const out = applyJsonPatch(pod, buildPatch(pod, onDemand, "Prefer"));
    const before =
      pod.spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms ??
      [];
    const terms =
      out.spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms ??
      [];
    assert.equal(before.length, 3);
    assert.equal(terms.length, 3);
    terms.forEach((t, i) => {
      const orig = before[i];
      assert.ok(orig);
      assert.deepEqual(t.matchExpressions, [...(orig.matchExpressions ?? []), req("on-demand")]);
      assert.deepEqual(t.matchFields, orig.matchFields);
    });
    assert.deepEqual(
      out.spec.affinity?.nodeAffinity?.preferredDuringSchedulingIgnoredDuringExecution,
      pod.spec.affinity?.nodeAffinity?.preferredDuringSchedulingIgnoredDuringExecution,
    );
    assert.deepEqual(out.spec.affinity?.podAntiAffinity, pod.spec.affinity?.podAntiAffinity);
    assert.deepEqual(out.spec.nodeSelector, { "kubernetes.io/os": "linux" });
  });

  it("appends the spot preference after the user's and leaves required terms alone", () => {
    const out = applyJsonPatch(pod, buildPatch(pod, spot, "Prefer", { softSpot: true }));
    const prefs = out.spec.affinity?.nodeAffinity?.preferredDuringSchedulingIgnoredDuringExecution ?? [];
    assert.equal(prefs.length, 2);
    assert.equal(prefs[0]?.weight, 20);
    assert.deepEqual(prefs[1], { weight: 100, preference: { matchExpressions: [req("spot")] } });
    assert.deepEqual(
      out.spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution,
      pod.spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution,
    );
  });

  it("handles affinity without nodeAffinity, and nodeAffinity without the field", () => {
    const base = fixturePod("deployment-pod-generatename");
    const a: Pod = structuredClone(base);
    a.spec.affinity = { podAntiAffinity: { x: 1 } };
    const outA = applyJsonPatch(a, buildPatch(a, onDemand, "Prefer"));
    assert.deepEqual(outA.spec.affinity?.podAntiAffinity, { x: 1 });
    assert.ok(na(outA).requiredDuringSchedulingIgnoredDuringExecution);
    const b: Pod = structuredClone(base);
    b.spec.affinity = { nodeAffinity: { preferredDuringSchedulingIgnoredDuringExecution: [] } };
    const outB = applyJsonPatch(b, buildPatch(b, onDemand, "Prefer"));
    assert.deepEqual(na(outB).preferredDuringSchedulingIgnoredDuringExecution, []);
    assert.ok(na(outB).requiredDuringSchedulingIgnoredDuringExecution);
    const c: Pod = structuredClone(base);
    c.spec.affinity = {
      nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [] } },
    };
    const outC = applyJsonPatch(c, buildPatch(c, onDemand, "Prefer"));
    assert.deepEqual(outC.spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution, {
      nodeSelectorTerms: [{ matchExpressions: [req("on-demand")] }],
    });
  });
});

describe("capacityConstraintOf", () => {
  it("finds the user's own capacity-type constraint", () => {
    assert.equal(capacityConstraintOf(fixturePod("capacity-constrained")), "nodeSelector");
    assert.equal(
      capacityConstraintOf(fixturePod("capacity-constrained-affinity")),
      "preferred node affinity",
    );
    assert.equal(capacityConstraintOf(fixturePod("existing-affinity")), undefined);
    assert.equal(capacityConstraintOf(fixturePod("deployment-pod-generatename")), undefined);
    const pod = fixturePod("existing-affinity");
    const patched = applyJsonPatch(pod, buildPatch(pod, onDemand, "Prefer"));
    assert.equal(capacityConstraintOf(patched), "required node affinity");
  });

  it("buildNotePatch only annotates", () => {
    const pod = fixturePod("capacity-constrained");
    const out = applyJsonPatch(pod, buildNotePatch(pod, "left alone"));
    assert.deepEqual(
      { ...out, metadata: { ...out.metadata, annotations: undefined } },
      { ...pod, metadata: { ...pod.metadata, annotations: undefined } },
    );
    assert.equal(ann(out)["wave.sh/spot-placement-note"], "left alone");
  });
});
