import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import {
  MALLOC_ENV,
  SIZE_MODE_OFF_ABOVE,
  SIZE_MODE_ON_BELOW,
  semiSpaceConfigured,
  sizeMode,
} from "./heap.ts";

/** new_space size (MiB) after a burst of short-lived allocations, in a fresh process. */
function youngGenerationAfterBurst(pin: boolean): number {
  const script = [
    pin
      ? `(await import(${JSON.stringify(new URL("./heap.ts", import.meta.url).href)})).tuneHeapForService([], "");`
      : "",
    'const v8 = await import("node:v8");',
    "let keep = 0;",
    "for (let i = 0; i < 100; i++) keep += JSON.parse(JSON.stringify(Array.from({ length: 2000 }, (_, j) => ({ i, j, s: 'x'.repeat(40) })))).length;",
    'const ns = v8.getHeapSpaceStatistics().find((s) => s.space_name === "new_space");',
    "console.log(ns.space_size / 2 ** 20, keep);",
  ].join("\n");
  const r = spawnSync(process.execPath, ["--input-type=module", "-e", script], { encoding: "utf8" });
  assert.equal(r.status, 0, r.stderr);
  return Number(r.stdout.split(" ")[0]);
}

/** Runs `lines` in a fresh process whose heap tuneHeapForService tuned (heap.ts as `h`); its JSON output. */
function inTunedProcess(lines: readonly string[], flags: readonly string[] = []): unknown {
  const heap = JSON.stringify(new URL("./heap.ts", import.meta.url).href);
  const script = [`const h = await import(${heap});`, 'h.tuneHeapForService([], "");', ...lines].join("\n");
  const r = spawnSync(process.execPath, [...flags, "--input-type=module", "-e", script], {
    encoding: "utf8",
  });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout);
}

describe("heap tuning for long-running commands", () => {
  it("keeps the young generation at its initial size through an allocation burst", () => {
    const pinned = youngGenerationAfterBurst(true);
    const grown = youngGenerationAfterBurst(false);
    assert.ok(pinned <= 4, `pinned young generation ${pinned} MiB`);
    assert.ok(grown > pinned * 2, `unpinned ${grown} MiB vs pinned ${pinned} MiB`);
  });

  it("leaves a size chosen on Node's command line or in NODE_OPTIONS alone", () => {
    assert.equal(semiSpaceConfigured(["--max-semi-space-size=8"], undefined), true);
    assert.equal(semiSpaceConfigured([], "--max-old-space-size=512 --max_semi_space_size=4"), true);
    assert.equal(semiSpaceConfigured(["--enable-source-maps"], "--max-old-space-size=512"), false);
  });

  it("optimizes for size while the live heap is small, with hysteresis", () => {
    assert.equal(sizeMode(true, 100 * 2 ** 20), true);
    assert.equal(sizeMode(true, SIZE_MODE_OFF_ABOVE + 1), false);
    assert.equal(sizeMode(false, SIZE_MODE_ON_BELOW + 1), false, "stays off between the thresholds");
    assert.equal(sizeMode(false, SIZE_MODE_ON_BELOW - 1), true);
    assert.equal(sizeMode(true, SIZE_MODE_ON_BELOW + 1), true, "stays on between the thresholds");
  });

  it("leaves size mode after a full collection finds a large live heap", () => {
    const out = inTunedProcess(
      [
        "const before = h.optimizingForSize();",
        "const keep = [];",
        "for (let i = 0; i < 40; i++) keep.push(Array.from({ length: 100000 }, (_, j) => ({ i, j, s: 'x' + j })));",
        "globalThis.gc();",
        "await new Promise((r) => setTimeout(r, 50));",
        "console.log(JSON.stringify({ before, after: h.optimizingForSize(), live: process.memoryUsage().heapUsed, kept: keep.length }));",
      ],
      ["--expose-gc"],
    ) as { before: boolean; after: boolean; live: number };
    assert.ok(out.live > SIZE_MODE_OFF_ABOVE, `the workload keeps ${out.live} bytes live`);
    assert.deepEqual({ before: out.before, after: out.after }, { before: true, after: false });
  });

  it("once settled, collects the burst's garbage and stays in size mode with a large live heap", () => {
    const out = inTunedProcess([
      "const keep = [];",
      "let garbage = [];",
      "for (let i = 0; i < 40; i++) keep.push(Array.from({ length: 100000 }, (_, j) => ({ i, j, s: 'x' + j })));",
      "for (let i = 0; i < 20; i++) garbage.push(Array.from({ length: 100000 }, (_, j) => ({ i, j })));",
      "garbage = undefined;",
      "const before = process.memoryUsage().heapUsed;",
      "h.settleHeap();",
      "const after = process.memoryUsage().heapUsed;",
      // More full collections with the large live heap: size mode stays on.
      "for (let i = 0; i < 10; i++) keep.push(Array.from({ length: 100000 }, (_, j) => ({ i, j })));",
      "await new Promise((r) => setTimeout(r, 50));",
      "console.log(JSON.stringify({ before, after, size: h.optimizingForSize(), kept: keep.length }));",
    ]) as { before: number; after: number; size: boolean };
    assert.ok(out.after > SIZE_MODE_OFF_ABOVE, `the workload keeps ${out.after} bytes live`);
    assert.ok(
      out.after < out.before - 50 * 2 ** 20,
      `settling collected: ${out.before} → ${out.after} bytes`,
    );
    assert.equal(out.size, true);
  });

  it("once settled after a burst, V8's heap is about what is live: the emptied pages are given back", () => {
    // The agent's sync (heapBurst with the young generation pinned, then settleHeap): what stays
    // is spread over pages full of the sync's garbage; a plain full collection kept them (at
    // 5k/150k 203 MiB of heap for 108 MiB live).
    const out = inTunedProcess([
      "const end = h.heapBurst({ pinYoung: true });",
      "const keep = [];",
      "for (let i = 0; i < 1200000; i++) { const o = { i, s: 'x' + i, t: [i] }; if (i % 8 === 0) keep.push(o); }",
      "end();",
      "h.settleHeap();",
      "const v8 = await import('node:v8');",
      "const young = v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').space_size;",
      "const m = process.memoryUsage();",
      "console.log(JSON.stringify({ used: m.heapUsed, total: m.heapTotal, young, kept: keep.length }));",
    ]) as { used: number; total: number; young: number };
    const MiB = 2 ** 20;
    assert.ok(out.young <= 4 * MiB, `the young generation stayed pinned: ${out.young / MiB} MiB`);
    assert.ok(
      out.total - out.used < 0.25 * out.used,
      `V8 heap ${(out.total / MiB).toFixed(1)} MiB for ${(out.used / MiB).toFixed(1)} MiB live`,
    );
  });

  it("the image runs with the malloc settings the benchmarks use", () => {
    const dockerfile = readFileSync(new URL("../../Dockerfile", import.meta.url), "utf8");
    for (const [k, v] of Object.entries(MALLOC_ENV))
      assert.match(dockerfile, new RegExp(`^\\s+${k}=${v}\\b`, "m"), `${k}=${v} in the Dockerfile`);
  });
});
