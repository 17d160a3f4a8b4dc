// Issue 43: `wave start` on the embedded cluster, stopped and started again on the same data dir,
// keeps the user's work — the policies set through the API, the NodePool a fix changed — and its
// tokens (the dashboard link it printed keeps working); `--rotate-tokens` draws new ones, and a
// token given by flag wins. Each start is the real one: simulator → agent → gRPC → core → API.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { SpotPolicySetDto, SpotViewDto, WarmupPolicyDto } from "../dashboard/dto.ts";
import { silentLogger } from "../shared/log.ts";
import { simulatedConfig } from "../../test/support/wave.ts";
import { startWave, type Started } from "./start.ts";

const CLUSTER = "restart";
const dir = mkdtempSync(join(tmpdir(), "wave-restart-"));
const dataDir = join(dir, "data");
after(() => rmSync(dir, { recursive: true, force: true }));

async function start(opts: { rotateTokens?: boolean; adminToken?: string } = {}): Promise<Started> {
  const config = {
    ...simulatedConfig(dataDir, CLUSTER),
    ...(opts.adminToken ? { adminToken: opts.adminToken } : {}),
  };
  const w = await startWave(
    config,
    {},
    {
      log: silentLogger,
      simulatedHistoryMs: 5 * 60_000,
      ...(opts.rotateTokens ? { rotateTokens: true } : {}),
    },
  );
  await w.caughtUp;
  return w;
}

async function call(w: Started, path: string, token: string, init: { method?: string; body?: unknown } = {}) {
  return fetch(new URL(`api/v1/clusters/${CLUSTER}/${path}`, w.url), {
    method: init.method ?? "GET",
    headers: {
      authorization: `Bearer ${token}`,
      ...(init.body === undefined ? {} : { "content-type": "application/json" }),
    },
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
  });
}

async function get<T>(w: Started, path: string): Promise<T> {
  const res = await call(w, path, w.tokens.viewer);
  assert.equal(res.status, 200, `${path}: ${res.status}`);
  return (await res.json()) as T;
}

/** Retries until core shows what the cluster holds (policies reach it through the agent's stream). */
async function until<T>(what: string, f: () => Promise<T | undefined>): Promise<T> {
  const by = Date.now() + 30_000;
  for (;;) {
    const v = await f();
    if (v !== undefined) return v;
    if (Date.now() > by) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const spotOf = async (w: Started, name: string) =>
  (await get<SpotPolicySetDto>(w, "policies/spot")).policies.find((p) => p.workload.name === name);

let second: Started;
let firstTokens: { admin: string; viewer: string };

describe("the embedded cluster across a restart on the same data dir", { timeout: 300_000 }, () => {
  before(async () => {
    const first = await start();
    firstTokens = { ...first.tokens };
    try {
      const put = await call(first, "policies/spot/Deployment/shop/web", first.tokens.admin, {
        method: "PUT",
        body: { threshold: 4, strategy: "Prefer" },
      });
      assert.equal(put.status, 200, await put.text());
      const warm = await call(first, "policies/warmup/batch", first.tokens.admin, {
        method: "PUT",
        body: { enabled: true, maxWarmNodes: 2, ttlSeconds: 300, cooldownSeconds: 120 },
      });
      assert.equal(warm.status, 200, await warm.text());
      // What the Thrashing page's Apply does on this cluster (POST …/thrashing/apply).
      await first.kube.patch("NodePool", "batch", { spec: { disruption: { consolidateAfter: "15m" } } });
      await until("core to list the new spot policy", async () => (await spotOf(first, "web")) ?? undefined);
    } finally {
      await first.stop();
    }
    second = await start();
  });

  it("keeps the spot and warmup policies set through the API, and the scenario's", async () => {
    const web = await until("the spot policy back", () => spotOf(second, "web"));
    assert.deepEqual(
      { threshold: web.threshold, strategy: web.strategy },
      { threshold: 4, strategy: "Prefer" },
    );
    for (const name of ["api", "checkout", "worker"])
      assert.ok(await until(`spot policy ${name}`, () => spotOf(second, name)), name);
    const warmups = await until("the warmup policies back", async () => {
      const list = await get<WarmupPolicyDto[]>(second, "policies/warmup");
      return list.some((p) => p.nodePool === "batch") ? list : undefined;
    });
    assert.deepEqual(warmups.map((p) => p.nodePool).sort(), ["analytics", "batch", "general"]);
    assert.equal(warmups.find((p) => p.nodePool === "batch")?.policy.maxWarmNodes, 2);
  });

  it("admits the pods it creates again with the restored policies, not the store's old rows", async () => {
    const view = await get<SpotViewDto>(second, "spot-placement");
    const web = view.workloads.find((w) => w.workload.name === "web");
    assert.ok(web?.target, JSON.stringify(web));
    assert.equal(web.policy?.threshold, 4);
    // Placed right at admission: nothing for the repair to adopt.
    assert.equal(web.actual.onDemand, web.target.onDemand, JSON.stringify(web));
    assert.equal(web.progress?.toMove ?? 0, 0, JSON.stringify(web.progress));
  });

  it("keeps the NodePool as the fix left it", async () => {
    assert.equal((await second.kube.get("NodePool", "batch")).spec.disruption?.consolidateAfter, "15m");
  });

  it("keeps the tokens: the dashboard link it printed still works", async () => {
    assert.deepEqual(second.tokens, firstTokens);
    assert.equal((await call(second, "overview", firstTokens.viewer)).status, 200);
  });

  it("draws new tokens with --rotate-tokens; a token given by flag wins", async () => {
    await second.stop();
    const rotated = await start({ rotateTokens: true });
    try {
      assert.notEqual(rotated.tokens.viewer, firstTokens.viewer);
      assert.notEqual(rotated.tokens.admin, firstTokens.admin);
      assert.equal(
        (await call(rotated, "overview", firstTokens.viewer)).status,
        401,
        "the old link is refused",
      );
    } finally {
      await rotated.stop();
    }
    const given = "a-token-given-by-flag-0123456789";
    const flagged = await start({ adminToken: given });
    try {
      assert.equal(flagged.tokens.admin, given, "an explicit --admin-token wins");
      assert.equal(
        flagged.tokens.viewer,
        rotated.tokens.viewer,
        "the rotated viewer token is the kept one now",
      );
    } finally {
      await flagged.stop();
    }
  });
});
