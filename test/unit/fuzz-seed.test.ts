// The seed run of `npm run fuzz` (bench/fuzz) inside `npm test`: a few hundred generated inputs per
// target on loopback — the policy API, the AdmissionReview endpoint, the gRPC ingest and every API
// route (its sweep sends 2^53 to each numeric query parameter, and a viewer's token to each admin
// route) — with no crash, no server error and no admin route open to a viewer. The full run (≥ 10,000 each) is `npm run fuzz`.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { runFuzz } from "../../bench/fuzz/fuzz.ts";

describe("fuzz seed run", { timeout: 180_000 }, () => {
  it("200 inputs per target: no crash, no 5xx / INTERNAL", async () => {
    const report = await runFuzz({ inputs: 200, seed: 7, heapBoundBytes: 256 * 2 ** 20 });
    for (const r of report.results) {
      assert.equal(r.inputs, 200);
      // Each target must reach its handlers, not only be refused at the door.
      assert.ok(Object.keys(r.statuses).length >= 2, `${r.target}: ${JSON.stringify(r.statuses)}`);
    }
    assert.deepEqual(report.problems, [], JSON.stringify(report.results.map((r) => r.examples)));
  });
});
