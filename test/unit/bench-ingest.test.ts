// bench:ingest never hangs (issue 30): a sync core rejects, or one past --deadline-seconds, ends the
// run with exit 1 and the reason, as a small cluster against a tiny snapshot bound shows.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";

// One size (bench/ingest/size.ts, what `npm run bench:ingest` runs per size in its own process).
const RUN = fileURLToPath(new URL("../../bench/ingest/size.ts", import.meta.url));
const SMALL = ["--nodes", "50", "--pods", "200", "--claims", "10", "--seconds", "1", "--heap", "node"];

function bench(...extra: string[]): { status: number | null; stderr: string } {
  const r = spawnSync(process.execPath, [RUN, ...SMALL, ...extra], { encoding: "utf8", timeout: 60_000 });
  return { status: r.status, stderr: r.stderr };
}

describe("bench:ingest fails instead of hanging", { timeout: 120_000 }, () => {
  it("exits 1 with core's reason when the sync is rejected at a bound", () => {
    const r = bench("--max-snapshot-objects", "100");
    assert.equal(r.status, 1, r.stderr);
    assert.match(r.stderr, /^FAIL: initial sync: core rejected it: snapshot exceeds 100 objects; rejected$/m);
  });

  it("exits 1 when the sync passes --deadline-seconds", () => {
    const r = bench("--deadline-seconds", "0.001");
    assert.equal(r.status, 1, r.stderr);
    assert.match(
      r.stderr,
      /^FAIL: \w[\w -]*: not done within the 0\.001 s deadline \(--deadline-seconds\)$/m,
    );
  });
});
