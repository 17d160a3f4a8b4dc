import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { FakeClock, flushMicrotasks } from "../shared/clock.ts";
import { LeaderElector } from "./leader.ts";
import { TestKube } from "../warmup/testing/kube.ts";
import { T0 } from "../warmup/testing/fixtures.ts";

function pair() {
  const clock = new FakeClock(T0);
  const kube = new TestKube(clock);
  const mk = (identity: string): LeaderElector =>
    new LeaderElector({ client: kube, clock, namespace: "wave", name: "wave-warmup", identity });
  return { clock, kube, a: mk("a"), b: mk("b") };
}

describe("LeaderElector", () => {
  it("lets one replica hold the lease and another take it only after it expires", async () => {
    const { clock, kube, a, b } = pair();
    assert.equal(await a.tryAcquireOrRenew(), true);
    assert.equal(await b.tryAcquireOrRenew(), false);
    await clock.advance(10_000);
    assert.equal(await a.tryAcquireOrRenew(), true); // renewed
    await clock.advance(10_000);
    // b first saw the renewed record 10 s ago: not yet expired on b's own clock.
    assert.equal(await b.tryAcquireOrRenew(), false);
    await clock.advance(15_000);
    assert.equal(await b.tryAcquireOrRenew(), true);
    const lease = await kube.get("Lease", "wave-warmup", "wave");
    assert.equal(lease.spec.holderIdentity, "b");
    assert.equal(lease.spec.leaseTransitions, 1);
    assert.equal(await a.tryAcquireOrRenew(), false);
  });

  it("runs the work while leading, stops it when another replica takes over, and releases on shutdown", async () => {
    const { clock, kube, a, b } = pair();
    const stop = new AbortController();
    const log: string[] = [];
    const done = a.run(stop.signal, async (leading) => {
      log.push("start");
      await new Promise<void>((resolve) =>
        leading.addEventListener("abort", () => resolve(), { once: true }),
      );
      log.push("stop");
    });
    await flushMicrotasks();
    assert.deepEqual(log, ["start"]);
    assert.equal(a.isLeader, true);
    // Someone else writes the lease (e.g. a partitioned replica that saw it expire).
    const lease = await kube.get("Lease", "wave-warmup", "wave");
    await kube.replace(
      "Lease",
      { ...lease, spec: { ...lease.spec, holderIdentity: "c", renewTime: lease.spec.renewTime } },
      { namespace: "wave" },
    );
    await clock.advance(2_000);
    assert.deepEqual(log, ["start", "stop"]);
    assert.equal(a.isLeader, false);
    stop.abort();
    await clock.advance(2_000);
    await done;
    // Clean shutdown while leading hands over at once.
    const stop2 = new AbortController();
    await kube.delete("Lease", "wave-warmup", { namespace: "wave" });
    const done2 = b.run(stop2.signal, () => Promise.resolve());
    await flushMicrotasks();
    assert.equal(b.isLeader, true);
    stop2.abort();
    await clock.advance(2_000);
    await done2;
    assert.equal((await kube.get("Lease", "wave-warmup", "wave")).spec.holderIdentity, "");
    assert.equal(await a.tryAcquireOrRenew(), true);
  });
});
