import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { MemoryKube } from "./memory.ts";
import { KubeApiError, isConflict } from "../port.ts";
import { applyConflicts, fromFieldsV1, ownersOf } from "../managed-fields.ts";
import type { ConfigMap } from "../../objects/kube.ts";
import { FakeClock } from "../../shared/clock.ts";

// ConfigMaps stand in for any kind: the semantics are per field, not per kind.
const cm = (data: Record<string, string>, annotations?: Record<string, string>): ConfigMap => ({
  apiVersion: "v1",
  kind: "ConfigMap",
  metadata: { name: "p", namespace: "ns", ...(annotations ? { annotations } : {}) },
  data,
});

const apply = (kube: MemoryKube, obj: ConfigMap, manager: string, force = false) =>
  kube.patch("ConfigMap", "p", obj, { namespace: "ns", type: "apply", fieldManager: manager, force });

const managers = (o: ConfigMap) =>
  (o.metadata.managedFields ?? []).map(
    (e) =>
      `${e.manager}/${e.operation}:${fromFieldsV1(e.fieldsV1)
        .map((p) => p.join("."))
        .join(",")}`,
  );

describe("MemoryKube server-side apply", () => {
  it("creates the object and records the applier's fields in managedFields", async () => {
    const kube = new MemoryKube({ clock: new FakeClock(Date.UTC(2026, 0, 1)) });
    const out = await apply(
      kube,
      cm({ threshold: "2" }, { "wave.sh/changed-by": "alice" }),
      "argocd-controller",
    );
    assert.deepEqual(out.data, { threshold: "2" });
    assert.deepEqual(managers(out), [
      "argocd-controller/Apply:metadata.annotations.wave.sh/changed-by,data.threshold",
    ]);
    assert.equal(out.metadata.managedFields?.[0]?.time, "2026-01-01T00:00:00Z");
  });

  it("refuses a different value for a field another manager owns with a 409 naming it; nothing changes", async () => {
    const kube = new MemoryKube();
    const first = await apply(kube, cm({ threshold: "2", strategy: "Prefer" }), "argocd-controller");
    const err = await apply(kube, cm({ threshold: "5", strategy: "Prefer" }), "wave-console").then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.ok(isConflict(err));
    assert.ok(err instanceof KubeApiError);
    assert.match(err.message, /conflict with "argocd-controller" using v1: \.data\.threshold/);
    assert.deepEqual(applyConflicts(err.status), [
      { manager: "argocd-controller", field: ".data.threshold" },
    ]);
    const after = await kube.get("ConfigMap", "p", "ns");
    assert.deepEqual(after, first);
  });

  it("shares a field applied with the same value, and force takes a conflicting one over", async () => {
    const kube = new MemoryKube();
    await apply(kube, cm({ threshold: "2", strategy: "Prefer" }), "argocd-controller");
    const shared = await apply(kube, cm({ threshold: "2" }), "wave-console");
    assert.deepEqual(
      ownersOf(shared.metadata.managedFields, [["data", "threshold"]]).map((o) => o.manager),
      ["argocd-controller", "wave-console"],
    );
    const forced = await apply(kube, cm({ threshold: "7" }), "wave-console", true);
    assert.equal(forced.data?.["threshold"], "7");
    assert.deepEqual(managers(forced), [
      "argocd-controller/Apply:data.strategy",
      "wave-console/Apply:data.threshold",
    ]);
    // Argo CD syncing its old value again now conflicts with wave-console.
    await assert.rejects(
      apply(kube, cm({ threshold: "2", strategy: "Prefer" }), "argocd-controller"),
      /conflict with "wave-console"/,
    );
  });

  it("removes a field the manager stops applying unless another manager owns it", async () => {
    const kube = new MemoryKube();
    await apply(kube, cm({ a: "1", b: "2", c: "3" }), "wave-console");
    await kube.patch(
      "ConfigMap",
      "p",
      { data: { c: "3x" } },
      { namespace: "ns", type: "merge", fieldManager: "kubectl-edit" },
    );
    const out = await apply(kube, cm({ a: "1" }), "wave-console");
    assert.deepEqual(out.data, { a: "1", c: "3x" });
    assert.deepEqual(managers(out), ["kubectl-edit/Update:data.c", "wave-console/Apply:data.a"]);
  });

  it("an update with a fieldManager takes the changed fields from their owner, so the next apply conflicts", async () => {
    const kube = new MemoryKube();
    await apply(kube, cm({ threshold: "2" }), "wave-console");
    const cur = await kube.get("ConfigMap", "p", "ns");
    await kube.replace(
      "ConfigMap",
      { ...cur, data: { threshold: "4" } },
      { namespace: "ns", fieldManager: "kubectl-edit" },
    );
    await assert.rejects(apply(kube, cm({ threshold: "3" }), "wave-console"), /conflict with "kubectl-edit"/);
  });

  it("an identical re-apply is a no-op: same resourceVersion, no new managedFields time", async () => {
    const clock = new FakeClock(1_000);
    const kube = new MemoryKube({ clock });
    const a = await apply(kube, cm({ x: "1" }), "wave-console");
    await clock.advance(60_000);
    const b = await apply(kube, cm({ x: "1" }), "wave-console");
    assert.equal(b.metadata.resourceVersion, a.metadata.resourceVersion);
    assert.deepEqual(b.metadata.managedFields, a.metadata.managedFields);
  });

  it("still needs a fieldManager for apply", async () => {
    const kube = new MemoryKube();
    await assert.rejects(
      kube.patch("ConfigMap", "p", cm({}), { namespace: "ns", type: "apply" }),
      /fieldManager/,
    );
  });
});
