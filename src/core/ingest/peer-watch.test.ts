import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { FakeClock, flushMicrotasks } from "../../shared/clock.ts";
import { watchPeer } from "./peer-watch.ts";
import type { Pingable } from "./peer-watch.ts";

/** A session whose peer answers pings only while `alive`. */
class FakeSession implements Pingable {
  destroyed = false;
  alive = true;
  pings = 0;
  ping(callback: (err: Error | null) => void): boolean {
    this.pings++;
    if (this.alive) queueMicrotask(() => callback(null));
    return true;
  }
  destroy(): void {
    this.destroyed = true;
  }
}

const check = { intervalMs: 1000, timeoutMs: 500 };

describe("watchPeer", () => {
  it("keeps an answering peer and drops it once it stops answering", async () => {
    const clock = new FakeClock();
    const s = new FakeSession();
    const reasons: string[] = [];
    const done = watchPeer(s, check, clock, new AbortController().signal, (w) => reasons.push(w));
    await flushMicrotasks();
    await clock.advance(5000);
    assert.equal(s.pings, 5);
    assert.equal(s.destroyed, false, "answered every ping");

    s.alive = false; // partitioned: no FIN, no answer
    await clock.advance(1000);
    assert.equal(s.destroyed, false, "the ping is out, not yet late");
    await clock.advance(499);
    assert.equal(s.destroyed, false);
    await clock.advance(1);
    assert.equal(s.destroyed, true, "unanswered for timeoutMs");
    assert.deepEqual(reasons, ["no answer to a ping for 500 ms"]);
    await done;
  });

  it("drops a session whose ping errors, and stops quietly when aborted", async () => {
    const clock = new FakeClock();
    const failing: Pingable = {
      destroyed: false,
      ping: (cb) => {
        queueMicrotask(() => cb(new Error("ERR_HTTP2_PING_CANCEL")));
        return true;
      },
      destroy() {
        (this as { destroyed: boolean }).destroyed = true;
      },
    };
    const reasons: string[] = [];
    const done = watchPeer(failing, check, clock, new AbortController().signal, (w) => reasons.push(w));
    await flushMicrotasks();
    await clock.advance(1000);
    await done;
    assert.equal(failing.destroyed, true);
    assert.deepEqual(reasons, ["ping failed: ERR_HTTP2_PING_CANCEL"]);

    const ac = new AbortController();
    const s = new FakeSession();
    const stopped = watchPeer(s, check, clock, ac.signal, () => assert.fail("aborted, not dead"));
    await flushMicrotasks();
    await clock.advance(1000);
    s.alive = false;
    await clock.advance(1000);
    ac.abort();
    await stopped;
    assert.equal(s.destroyed, false);
    assert.equal(clock.pending, 0, "no timers left behind");
  });
});
