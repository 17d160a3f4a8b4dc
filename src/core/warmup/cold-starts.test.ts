import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { coldStartOf, ColdStartRecorder } from "./cold-starts.ts";
import { ClusterState } from "../../state/cluster.ts";
import type { Node, Pod } from "../../objects/kube.ts";
import type { ColdStart } from "../store/store.ts";
import { silentLogger } from "../../shared/log.ts";

const T0 = Date.parse("2026-03-02T12:00:00Z");
const iso = (ms: number): string => new Date(ms).toISOString();

const node = (name: string, created: number): Node => ({
  apiVersion: "v1",
  kind: "Node",
  metadata: { name, creationTimestamp: iso(created), labels: { "karpenter.sh/nodepool": "general" } },
  spec: {},
  status: {},
});
const pod = (name: string, nodeName: string, created: number, readyAfterS?: number, wave = false): Pod => ({
  apiVersion: "v1",
  kind: "Pod",
  metadata: {
    name,
    namespace: "apps",
    creationTimestamp: iso(created),
    ...(wave ? { labels: { "app.kubernetes.io/managed-by": "wave" } } : {}),
  },
  spec: { nodeName, containers: [{ name: "c" }] },
  status: {
    phase: "Running",
    ...(readyAfterS === undefined
      ? {}
      : {
          conditions: [
            { type: "Ready", status: "True", lastTransitionTime: iso(created + readyAfterS * 1000) },
          ],
        }),
  },
});

describe("cold starts", () => {
  it("are pods that became Ready on a node created after them, once each", () => {
    const nodes = new Map([
      ["new", node("new", T0 + 20_000)],
      ["old", node("old", T0 - 3_600_000)],
    ]);
    const of = (object: Pod, previous?: Pod) =>
      coldStartOf(
        "c",
        {
          kind: "Pod",
          type: previous ? "update" : "add",
          object,
          ...(previous ? { previous } : {}),
        } as never,
        (n) => nodes.get(n),
      );
    assert.deepEqual(of(pod("a", "new", T0, 31)), {
      clusterId: "c",
      pool: "general",
      pod: "apps/a",
      node: "new",
      at: T0 + 31_000,
      seconds: 31,
    });
    assert.equal(of(pod("b", "old", T0, 2)), undefined, "room on an older node: no cold start");
    assert.equal(of(pod("c", "new", T0)), undefined, "not Ready yet");
    assert.equal(of(pod("d", "new", T0, 31), pod("d", "new", T0, 31)), undefined, "already Ready before");
    assert.ok(of(pod("e", "new", T0, 31), pod("e", "new", T0)), "turned Ready");
    assert.equal(of(pod("f", "gone", T0, 31)), undefined, "node unknown");
  });

  it("are written from a cluster's state as its pods turn Ready", async () => {
    const written: ColdStart[] = [];
    const rec = new ColdStartRecorder({
      store: { writeColdStarts: (rows) => (written.push(...rows), Promise.resolve(rows.length)) },
      log: silentLogger,
    });
    const state = new ClusterState();
    rec.attach("c", state);
    rec.attach("c", state);
    state.apply("Node", "add", node("n", T0 + 10_000));
    state.apply("Pod", "add", pod("a", "n", T0));
    state.apply("Pod", "add", pod("a", "n", T0, 40));
    await rec.flush();
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(
      written.map((r) => [r.pod, r.seconds]),
      [["apps/a", 40]],
    );
  });
});
