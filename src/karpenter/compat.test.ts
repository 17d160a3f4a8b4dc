import assert from "node:assert/strict";
import { test } from "node:test";
import { karpenterSupport, TESTED_KARPENTER } from "./compat.ts";

test("karpenterSupport: by minor, patches and sim/pre-release suffixes inside the range are tested", () => {
  for (const v of [
    "v1.6.0",
    "v1.6.4",
    "1.8.2",
    "v1.8-sim",
    "v1.11.2",
    "v1.15.0",
    "v1.15.7",
    "v1.15.0-rc.1",
  ]) {
    const s = karpenterSupport(v);
    assert.equal(s.status, "tested", v);
    assert.equal(s.warning, null, v);
  }
});

test("karpenterSupport: older, newer and undetected versions carry a warning naming the range", () => {
  const older = karpenterSupport("v1.0.8");
  assert.equal(older.status, "older");
  assert.match(older.warning ?? "", /v1\.0\.8 is older .*v1\.6\.4–v1\.15\.0/);
  assert.equal(karpenterSupport("v0.37.5").status, "older");
  const newer = karpenterSupport("v1.16.0");
  assert.equal(newer.status, "newer");
  assert.match(newer.warning ?? "", /newer .*shown as Karpenter writes them/);
  assert.equal(karpenterSupport("v2.0.0").status, "newer");
  for (const v of [null, undefined, ""]) assert.match(karpenterSupport(v).warning ?? "", /not detected/);
  const odd = karpenterSupport("latest");
  assert.equal(odd.status, "unknown");
  assert.match(odd.warning ?? "", /"latest" is not a release number/);
  assert.deepEqual(
    { o: older.oldestTested, n: older.newestTested },
    { o: TESTED_KARPENTER.oldest, n: TESTED_KARPENTER.newest },
  );
});
