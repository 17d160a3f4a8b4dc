import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { Pod } from "../objects/kube.ts";
import { karpenterVersion, karpenterVersionOfPod } from "./version.ts";

const pod = (image: string, labels?: Record<string, string>): Pod => ({
  metadata: { name: "p", namespace: "kube-system", ...(labels ? { labels } : {}) },
  spec: { containers: [{ name: "controller", image }] },
});

describe("karpenterVersion", () => {
  it("reads the controller image's tag, with or without digest and registry port", () => {
    const digest = "@sha256:" + "a".repeat(64);
    assert.equal(karpenterVersionOfPod(pod(`public.ecr.aws/karpenter/controller:1.8.2${digest}`)), "v1.8.2");
    assert.equal(karpenterVersionOfPod(pod("registry.local:5000/karpenter/controller:v1.6.0")), "v1.6.0");
    assert.equal(karpenterVersionOfPod(pod("registry.local:5000/karpenter/controller")), undefined, "no tag");
    assert.equal(karpenterVersionOfPod(pod("karpenter/controller:latest")), undefined, "not a version");
  });

  it("prefers a version label and ignores pods that are not Karpenter's", () => {
    const labelled = pod("mirror/kc:abc", {
      "app.kubernetes.io/name": "karpenter",
      "app.kubernetes.io/version": "1.7.1",
    });
    assert.equal(karpenterVersionOfPod(labelled), "v1.7.1");
    assert.equal(karpenterVersionOfPod(pod("nginx:1.27")), undefined);
    assert.equal(
      karpenterVersionOfPod(pod("acme/controller:1.0.0")),
      undefined,
      "another project's controller",
    );
  });

  it("reports the newest version while an upgrade runs both, none without Karpenter pods", () => {
    const pods = [
      pod("nginx:1.27"),
      pod("public.ecr.aws/karpenter/controller:1.9.0"),
      pod("public.ecr.aws/karpenter/controller:1.10.1"),
    ];
    assert.equal(karpenterVersion(pods), "v1.10.1", "1.10 > 1.9 numerically");
    assert.equal(karpenterVersion([pod("nginx:1.27")]), undefined);
  });
});
