// The real node's bench (hack/rig/real-node-bench.ts): the kubelet's pull time read from its event,
// and the table of medians and warm / cold.
import assert from "node:assert/strict";
import { test } from "node:test";
import { benchTable, pulledSeconds } from "../../hack/rig/real-node-bench.ts";

test("bench: the kubelet's Pulled event gives the pull time in seconds", () => {
  const msg = (t: string): string =>
    `Successfully pulled image "127.0.0.1:5000/x:1" in ${t} (${t} including waiting). Image size: 750665 bytes.`;
  assert.equal(pulledSeconds(msg("6.481s")), 6.481);
  assert.equal(pulledSeconds(msg("352ms")), 0.352);
  assert.equal(pulledSeconds('Container image "x" already present on machine'), undefined);
});

test("bench: medians per image and warm / cold", () => {
  const table = benchTable([
    { image: "bench-500mb", bytes: 500 * 1024 * 1024, cold: [9, 8, 30], warm: [2, 1, 2], pull: [6.5, 6, 7] },
    { image: "bench-small", bytes: 2 * 1024 * 1024, cold: [2, 4], warm: [1, 3], pull: [] },
  ]);
  const rows = table.split("\n");
  assert.equal(rows[2], "| bench-500mb | 500 MB | 9.00 | 2.00 | 0.22 | 6.50 |");
  assert.equal(rows[3], "| bench-small | 2 MB | 3.00 | 2.00 | 0.67 | - |");
});
