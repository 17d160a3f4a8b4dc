import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { MemoryKube } from "../kube/memory/memory.ts";
import {
  INSTANCE_ANNOTATION,
  POLICY_API_VERSION,
  WARMUP_POLICY_KIND,
  ownWarmupPolicy,
  type WarmupPolicyResource,
} from "../objects/policy-crds.ts";
import { applyPolicyEdit } from "./policy-apply.ts";

const warmup = (name: string): WarmupPolicyResource => ({
  apiVersion: POLICY_API_VERSION,
  kind: WARMUP_POLICY_KIND,
  metadata: { name },
  spec: { nodePool: name, enabled: true },
});

describe("applyPolicyEdit: which install a WarmupPolicy belongs to", () => {
  it("stamps the applying install's namespace on a WarmupPolicy; only that install (and none other) owns it", async () => {
    const kube = new MemoryKube();
    const r = await applyPolicyEdit(
      kube,
      {
        id: 1,
        kind: "WarmupPolicy",
        namespace: "",
        name: "gpu",
        op: "apply",
        force: false,
        object: warmup("gpu"),
      },
      "wave-a",
    );
    assert.equal(r.outcome, "applied", r.message);
    const stored = await kube.get("WarmupPolicy", "gpu");
    assert.equal(stored.metadata.annotations?.[INSTANCE_ANNOTATION], "wave-a");
    assert.equal(ownWarmupPolicy(stored, "wave-a"), true);
    assert.equal(ownWarmupPolicy(stored, "wave-b"), false, "another install on the cluster leaves it alone");
    assert.equal(
      ownWarmupPolicy(warmup("from-git"), "wave-b"),
      true,
      "one applied by GitOps is every install's",
    );
  });
});
