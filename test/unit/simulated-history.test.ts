// `npm start`'s first screen has a past: the embedded cluster's fast-forwarded minutes reach
// core's history through the real path (simulator → agent → gRPC → core's hub → the sampler →
// the store → GET /series). It once raced ahead of core — core still held the empty cluster the
// agent first listed while the simulator ran through its 15 minutes — and the console's overview
// showed 0 nodes and "No history in this range yet" (docs/screenshots/console-overview.png).
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startWave, type Started } from "../../src/cli/start.ts";
import { DEFAULTS } from "../../src/config/config.ts";
import type { OverviewDto, SeriesDto } from "../../src/dashboard/dto.ts";
import { createLogger } from "../../src/shared/log.ts";

const CLUSTER = "default";
const MINUTE = 60_000;
const HISTORY_MS = 10 * MINUTE;

let tmp: string;
let w: Started;
let caughtUpAt: number;

async function api<T>(path: string): Promise<T> {
  const res = await fetch(new URL(`api/v1/clusters/${CLUSTER}/${path}`, w.url), {
    headers: { authorization: `Bearer ${w.tokens.viewer}` },
  });
  assert.equal(res.status, 200, `GET ${path}: ${res.status}`);
  return (await res.json()) as T;
}

before(async () => {
  tmp = mkdtempSync(join(tmpdir(), "wave-sim-history-"));
  w = await startWave(
    {
      ...DEFAULTS,
      port: 0,
      grpcPort: 0,
      webhookPort: 0,
      dataDir: tmp,
      logLevel: "error",
      simulate: true,
      clusterId: CLUSTER,
    },
    {},
    { log: createLogger({ level: "error" }), simulatedHistoryMs: HISTORY_MS },
  );
  await w.caughtUp;
  caughtUpAt = Date.now();
});

after(async () => {
  await w.stop();
  rmSync(tmp, { recursive: true, force: true });
});

describe("the embedded cluster's history at start", { timeout: 180_000 }, () => {
  it("has a point with nodes for (nearly) every fast-forwarded minute, and the overview its nodes", async () => {
    const s = await api<SeriesDto>(`series?window=${(HISTORY_MS + 5 * MINUTE) / 1000}`);
    const fastForwarded = s.points.filter((p) => p.t < caughtUpAt - MINUTE && p.nodes > 0);
    // 10 simulated minutes before the clock caught up: the first may fall before core's first
    // snapshot, the last into the catching-up minute.
    assert.ok(
      fastForwarded.length >= 8,
      `points with nodes before the catch-up: ${fastForwarded.length} ` +
        `(${s.points.map((p) => `${new Date(p.t).toISOString().slice(11, 16)}=${p.nodes}`).join(" ")})`,
    );
    const o = await api<OverviewDto>("overview");
    assert.ok(o.nodes > 0, "the overview counts the cluster's nodes");
  });
});
