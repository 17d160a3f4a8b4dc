import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { FakeClock } from "../shared/clock.ts";
import { handleHttp, type PolicyPush } from "./handler.ts";
import { InMemoryPolicySource } from "./policy-source.ts";
import type { ReviewDeps } from "./review.ts";

const web = {
  workload: { namespace: "shop", kind: "Deployment", name: "web" },
  threshold: 2,
  strategy: "Prefer",
};
const body = (v: unknown) => Buffer.from(JSON.stringify(v));

describe("PUT /policies (push from core)", () => {
  const target = new InMemoryPolicySource();
  const push: PolicyPush = { token: "s3cret-token", target };
  const deps: ReviewDeps = {
    policies: target,
    allocator: { allocate: () => Promise.reject(new Error("unused")) },
    clock: new FakeClock(),
  };
  const put = (b: Buffer, authorization?: string) =>
    handleHttp("PUT", "/policies", b, { ...deps, push, ...(authorization ? { authorization } : {}) });

  it("installs a valid set and reports its revision", async () => {
    const r = await put(
      body({ apiVersion: "wave.sh/v1alpha1", kind: "SpotPolicySet", revision: "9", policies: [web] }),
      "Bearer s3cret-token",
    );
    assert.equal(r.status, 200);
    assert.deepEqual(JSON.parse(r.body), { revision: "9" });
    assert.equal(target.lookup({ namespace: "shop", kind: "Deployment", name: "web" })?.threshold, 2);
  });

  it("rejects bad tokens, bad JSON and invalid sets, keeping the old set", async () => {
    assert.equal((await put(body({}))).status, 401);
    assert.equal((await put(body({}), "Bearer wrong")).status, 401);
    assert.equal((await put(Buffer.from("{"), "Bearer s3cret-token")).status, 400);
    const invalid = await put(
      body({ apiVersion: "wave.sh/v1alpha1", kind: "SpotPolicySet", policies: [{ ...web, threshold: -1 }] }),
      "Bearer s3cret-token",
    );
    assert.equal(invalid.status, 400);
    assert.match(invalid.body, /threshold: must be an integer ≥ 0/);
    assert.equal(target.revision, "9");
    assert.equal((await handleHttp("POST", "/policies", body({}), { ...deps, push })).status, 405);
  });

  it("is 404 when push is not enabled", async () => {
    assert.equal((await handleHttp("PUT", "/policies", body({}), deps)).status, 404);
  });
});
