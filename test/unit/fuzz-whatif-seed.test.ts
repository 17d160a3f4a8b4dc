// The seed run of the what-if body's fuzz target (bench/fuzz/whatif.ts) inside `npm test`: generated
// bodies against POST …/whatif over a small cluster, each a result or a 4xx with a reason — never a
// 5xx. The full run is `npm run fuzz` (--whatif-inputs, 1,000 by default).
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { fuzzWhatif } from "../../bench/fuzz/whatif.ts";

describe("what-if fuzz seed run", { timeout: 180_000 }, () => {
  it("80 generated bodies: results and 4xx, no 5xx", async () => {
    const r = await fuzzWhatif(80, 29);
    assert.equal(r.inputs, 80);
    assert.ok((r.statuses["200"] ?? 0) >= 5, `replays reached: ${JSON.stringify(r.statuses)}`);
    assert.ok((r.statuses["400"] ?? 0) >= 5, `refusals reached: ${JSON.stringify(r.statuses)}`);
    assert.equal(r.serverErrors, 0, r.examples.join("\n"));
  });
});
