// The embedded cluster's saved objects (issue 43): which kinds, how they come back (uid, creation
// time and field owners kept), and when they are written (a burst is one write, on the clock).
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { MemoryKube } from "../kube/memory/memory.ts";
import { FakeClock } from "../shared/clock.ts";
import { silentLogger } from "../shared/log.ts";
import {
  SAVED_KINDS,
  clusterFile,
  readSavedCluster,
  restoreCluster,
  saveClusterOnChange,
  type SavedCluster,
} from "./durable-cluster.ts";

const dir = mkdtempSync(join(tmpdir(), "wave-durable-"));
after(() => rmSync(dir, { recursive: true, force: true }));

describe("the embedded cluster's saved objects", () => {
  it("saves what users and Wave write, not what the controllers make again", () => {
    for (const k of [
      "SpotPolicy",
      "WarmupPolicy",
      "NodePool",
      "Deployment",
      "PodDisruptionBudget",
      "Namespace",
    ])
      assert.ok(SAVED_KINDS.includes(k as never), k);
    for (const k of ["Pod", "Node", "NodeClaim", "ReplicaSet", "Event", "Lease"])
      assert.ok(!SAVED_KINDS.includes(k as never), k);
    assert.equal(SAVED_KINDS[0], "Namespace", "namespaces come back first");
  });

  it("writes a burst of changes once after the debounce, and what is left on stop; restores it as it was", async () => {
    const clock = new FakeClock();
    const kube = new MemoryKube({ clock });
    const file = clusterFile(dir);
    const saver = saveClusterOnChange(kube, file, {
      clock,
      clusterClock: clock,
      log: silentLogger,
      debounceMs: 2000,
    });
    await kube.create("NodePool", {
      metadata: { name: "batch" },
      spec: { template: { spec: { requirements: [], nodeClassRef: { group: "", kind: "", name: "" } } } },
    });
    await kube.patch(
      "NodePool",
      "batch",
      { spec: { disruption: { consolidateAfter: "15m" } } },
      {
        fieldManager: "wave-console",
      },
    );
    await kube.create("Pod", {
      metadata: { name: "p", namespace: "default" },
      spec: { containers: [] },
    });
    assert.equal(existsSync(file), false, "nothing written inside the debounce");
    await clock.advance(2000);
    await new Promise((r) => setImmediate(r));
    const saved = JSON.parse(readFileSync(file, "utf8")) as SavedCluster;
    assert.deepEqual(Object.keys(saved.objects), ["NodePool"], "pods are not saved");
    await kube.patch("NodePool", "batch", { metadata: { labels: { team: "data" } } });
    saver.stop();
    const last = readSavedCluster(file, silentLogger);
    assert.equal(
      last?.objects.NodePool?.[0]?.metadata.labels?.["team"],
      "data",
      "the last change is written on stop",
    );

    const original = await kube.get("NodePool", "batch");
    const next = new MemoryKube({ clock });
    assert.equal(restoreCluster(next, last), 1);
    const back = await next.get("NodePool", "batch");
    assert.equal(back.spec.disruption?.consolidateAfter, "15m");
    assert.equal(back.metadata.uid, original.metadata.uid);
    assert.equal(back.metadata.creationTimestamp, original.metadata.creationTimestamp);
    assert.deepEqual(back.metadata.managedFields, original.metadata.managedFields, "field owners kept");
    assert.equal(back.metadata.generation, original.metadata.generation);
  });

  it("starts without a file that cannot be read", () => {
    assert.equal(readSavedCluster(join(dir, "none.json"), silentLogger), undefined);
    const bad = join(dir, "bad.json");
    rmSync(bad, { force: true });
    writeFileSync(bad, "{not json");
    assert.equal(readSavedCluster(bad, silentLogger), undefined);
  });
});
