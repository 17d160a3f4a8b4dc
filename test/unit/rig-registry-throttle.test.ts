// The rig registry's bandwidth limit (hack/rig/registry-throttle.ts): a shared token bucket.
import assert from "node:assert/strict";
import { test } from "node:test";
import { tokenBucket } from "../../hack/rig/registry-throttle.ts";

test("throttle: a tenth of a second's burst goes at once, the rest at the rate", () => {
  const b = tokenBucket(1000); // bytes per second
  assert.equal(b.take(100, 0), 0);
  assert.equal(b.take(100, 0), 100);
  assert.equal(b.take(800, 0), 900);
  // 1000 bytes booked by t = 1000 ms: the link is free again then, with its burst.
  assert.equal(b.take(100, 1000), 0);
});

test("throttle: an idle link does not bank more than the burst", () => {
  const b = tokenBucket(1000);
  assert.equal(b.take(100, 60_000), 0);
  // 600 bytes after a minute idle: done at 600 ms, released a burst (100 ms) early.
  assert.equal(b.take(500, 60_000), 400);
});

test("throttle: 500 MB at 50 MB/s takes 10 s", () => {
  const b = tokenBucket(50 * 1024 * 1024);
  let wait = 0;
  for (let i = 0; i < 500; i++) wait = b.take(1024 * 1024, 0);
  assert.equal(Math.round(wait + 100), 10_000);
});
