import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { Pod } from "../objects/kube.ts";
import { node, pod } from "./testing/fixtures.ts";
import { prepullPod } from "./manifests.ts";
import { normalizeImage, planPulls, pullOutcome, workloadImages } from "./prepull.ts";

const withStatus = (status: Pod["status"]): Pod => ({ ...pod("p"), status });

describe("pre-pull planning", () => {
  it("dedupes workload images, init containers included", () => {
    assert.deepEqual(
      workloadImages([pod("a", { image: "x:1", initImage: "y:1" }), pod("b", { image: "x:1" })]),
      ["x:1", "y:1"],
    );
  });

  it("normalizes references the way the kubelet reports them", () => {
    assert.equal(normalizeImage("nginx"), "docker.io/library/nginx:latest");
    assert.equal(normalizeImage("org/app:1"), "docker.io/org/app:1");
    assert.equal(normalizeImage("localhost:5000/app"), "localhost:5000/app:latest");
    assert.equal(normalizeImage("example.com/app@sha256:abc"), "example.com/app@sha256:abc");
  });

  it("skips images on the node or in flight and respects free pod slots", () => {
    const n = node("n", "p", { images: ["docker.io/library/nginx:1.27"] });
    const inFlight = prepullPod({
      pool: "p",
      node: "n",
      image: "b:1",
      namespace: "wave",
      now: 0,
      deadlineSeconds: 60,
    });
    assert.deepEqual(planPulls(["nginx:1.27", "a:1", "b:1", "c:1", "d:1"], n, [inFlight], 2), {
      pull: ["a:1", "c:1"],
      deferred: ["d:1"],
    });
  });

  it("reads pull outcomes, counting a start error (no shell) as pulled", () => {
    assert.equal(pullOutcome(withStatus({ phase: "Succeeded" })), "pulled");
    assert.equal(
      pullOutcome(
        withStatus({
          phase: "Failed",
          containerStatuses: [{ name: "pull", state: { terminated: { reason: "StartError" } } }],
        }),
      ),
      "pulled",
    );
    assert.equal(
      pullOutcome(
        withStatus({
          phase: "Pending",
          containerStatuses: [{ name: "pull", state: { waiting: { reason: "RunContainerError" } } }],
        }),
      ),
      "pulled",
    );
    assert.equal(
      pullOutcome(
        withStatus({
          phase: "Pending",
          containerStatuses: [{ name: "pull", state: { waiting: { reason: "ImagePullBackOff" } } }],
        }),
      ),
      "failed",
    );
    assert.equal(pullOutcome(withStatus({ phase: "Failed" })), "failed");
    assert.equal(pullOutcome(withStatus({ phase: "Pending" })), "pulling");
  });
});
