// The per-source limit on the fresh reads a caller can cause (issue 16, docs/spot-placement.md
// "Threat model": 10/s, burst 20 per source address), with the injected clock.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { MemoryKube } from "../kube/memory/memory.ts";
import { FakeClock } from "../shared/clock.ts";
import { BackingVerifier, SourceLimiter } from "./backing.ts";

const takes = (l: SourceLimiter, source: string, n: number): number => {
  let ok = 0;
  for (let i = 0; i < n; i++) if (l.take(source)) ok++;
  return ok;
};

describe("SourceLimiter (10/s, burst 20 per source)", () => {
  it("lets one source cause 20 reads at once and refuses the 21st", () => {
    const l = new SourceLimiter(new FakeClock());
    assert.equal(takes(l, "10.9.9.9", 20), 20);
    assert.equal(l.take("10.9.9.9"), false);
  });

  it("keeps each source's budget apart: an exhausted source costs the others nothing", () => {
    const l = new SourceLimiter(new FakeClock());
    assert.equal(takes(l, "10.9.9.9", 50), 20);
    assert.equal(takes(l, "172.18.0.1", 20), 20, "the apiserver's address still has its whole burst");
    assert.equal(l.take("10.9.9.9"), false);
  });

  it("refills at 10 per second with the clock, never above the burst", async () => {
    const clock = new FakeClock();
    const l = new SourceLimiter(clock);
    takes(l, "a", 20);
    await clock.advance(99);
    assert.equal(l.take("a"), false, "0.99 of a token after 99 ms");
    await clock.advance(1);
    assert.equal(takes(l, "a", 5), 1, "one token after 100 ms");
    await clock.advance(500);
    assert.equal(takes(l, "a", 10), 5, "five tokens after another 500 ms");
    await clock.advance(60_000);
    assert.equal(takes(l, "a", 30), 20, "a long quiet spell refills to the burst, not beyond");
  });
});

describe("BackingVerifier", () => {
  it("reads nothing for a source over its limit and answers no room (0)", async () => {
    const clock = new FakeClock();
    const kube = new MemoryKube({ clock });
    const rs = await kube.create(
      "ReplicaSet",
      {
        apiVersion: "apps/v1",
        kind: "ReplicaSet",
        metadata: { name: "api-h1", namespace: "shop" },
        spec: { replicas: 4, selector: { matchLabels: { app: "api" } } },
      },
      { namespace: "shop" },
    );
    let gets = 0;
    kube.inject((r) => {
      if (r.op === "get" && r.kind === "ReplicaSet") gets++;
      return undefined;
    });
    const v = new BackingVerifier({ kube, limiter: new SourceLimiter(clock, 10, 2) });
    const owner = {
      kind: "ReplicaSet",
      namespace: "shop",
      name: "api-h1",
      uid: rs.metadata.uid ?? "",
    } as const;
    assert.equal(await v.desired(owner, "10.9.9.9"), 4);
    assert.equal(await v.desired(owner, "10.9.9.9"), 4);
    assert.equal(await v.desired(owner, "10.9.9.9"), 0, "over the limit: no room");
    assert.equal(gets, 2, "and no read of the apiserver");
    assert.equal(await v.desired(owner, "172.18.0.1"), 4, "another source still reads");
    await clock.advance(100);
    assert.equal(await v.desired(owner, "10.9.9.9"), 4, "refilled by the clock");
  });
});
