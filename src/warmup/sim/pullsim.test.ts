import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { simulatePulls, type ImageSpec, type NodeModel } from "./pullsim.ts";

const MB = 1e6;
const node: NodeModel = {
  bandwidthBps: 250 * MB, // ~2 Gbit/s
  perStreamBps: 60 * MB,
  latencyMs: 800,
  unpackBps: 150 * MB,
  cores: 4,
};
const images: ImageSpec[] = [
  { name: "app", sizeBytes: 600 * MB },
  { name: "sidecar", sizeBytes: 80 * MB },
  { name: "agent", sizeBytes: 150 * MB },
  { name: "init", sizeBytes: 40 * MB },
];

describe("image pull simulation", () => {
  it("serial pulls take the sum of each image's latency, download and unpack", () => {
    const r = simulatePulls(images, node, 1);
    const expected = images.reduce(
      (s, i) => s + 800 + (i.sizeBytes / (60 * MB)) * 1000 + (i.sizeBytes / (150 * MB)) * 1000,
      0,
    );
    assert.ok(Math.abs(r.totalMs - expected) < 1e-6, `${r.totalMs} vs ${expected}`);
  });

  it("parallel pre-pull of K images finishes well before serial pulls", () => {
    const serial = simulatePulls(images, node, 1).totalMs;
    const parallel = simulatePulls(images, node, Infinity).totalMs;
    const capped = simulatePulls(images, node, 2).totalMs;
    // Bounded below by the largest image alone.
    const floor = 800 + (600 / 60) * 1000 + (600 / 150) * 1000;
    // Here the small images hide entirely behind the big one: total = the largest image alone.
    assert.ok(Math.abs(parallel - floor) < 1e-6, `${parallel} vs ${floor}`);
    assert.ok(parallel <= capped + 1e-6 && capped < serial, `${parallel} <= ${capped} < ${serial}`);
    assert.ok(serial / parallel > 1.5, `speed-up ${serial / parallel}`);
  });

  it("buys nothing when one stream already fills the link and there is no latency or unpack", () => {
    const linkBound: NodeModel = {
      bandwidthBps: 100 * MB,
      perStreamBps: 100 * MB,
      latencyMs: 0,
      unpackBps: 1e15,
      cores: 1,
    };
    const serial = simulatePulls(images, linkBound, 1).totalMs;
    const parallel = simulatePulls(images, linkBound, Infinity).totalMs;
    assert.ok(Math.abs(serial - parallel) < 1e-3, `${serial} vs ${parallel}`);
  });

  it("rejects a nonsensical model", () => {
    assert.throws(() => simulatePulls(images, node, 0), /maxParallel/);
    assert.throws(() => simulatePulls(images, { ...node, bandwidthBps: 0 }, 1), /bandwidthBps/);
  });
});
