// POST /clusters/:id/thrashing/apply through core's app (inject): admin only, the fix as the
// detector gives it (never a client's patch), applied only to the cluster core runs itself (the
// embedded simulated one); a real cluster gets a 409 with the kubectl patch to run instead.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { FastifyInstance } from "fastify";
import { fixtures } from "../../../test/fixtures/karpenter/load.ts";
import { ClusterHub } from "../../core/hub/hub.ts";
import { openStore } from "../../core/store/open.ts";
import type { Store } from "../../core/store/store.ts";
import type { ThrashingFixesDto } from "../../dashboard/dto.ts";
import { KwokPriceProvider } from "../../pricing/kwok.ts";
import { FakeClock } from "../../shared/clock.ts";
import { silentLogger } from "../../shared/log.ts";
import { build } from "../app.ts";
import { consoleRoutes } from "./console.ts";
import { storeAudit } from "../audit.ts";
import { deliverSnapshot } from "../../core/hub/testing.ts";
import { mergePatch } from "../../kube/memory/patch.ts";

const NOW = Date.parse("2026-03-02T12:00:00Z");
const tokens = { admin: "a-token", viewer: "v-token" };
const ADMIN = { authorization: `Bearer ${tokens.admin}` };
const VIEWER = { authorization: `Bearer ${tokens.viewer}` };

let dir: string;
let store: Store;
/** Core running the cluster itself (it may patch "c1"), and core watching a real "c1". */
let embedded: FastifyInstance;
let remote: FastifyInstance;
let hub: ClusterHub;
const patched: [string, Record<string, unknown>][] = [];

before(async () => {
  dir = await mkdtemp(join(tmpdir(), "wave-thrash-apply-"));
  store = await openStore({ backend: "sqlite", path: join(dir, "wave.db") }, { log: silentLogger });
  const clock = new FakeClock(NOW);
  hub = new ClusterHub(store, clock);
  await deliverSnapshot(hub, NOW, [{ kind: "NodePool", object: fixtures.nodePool() }]);
  // Six NodeClaims of pool "default", each removed Empty 2 minutes after launch: thrashing.
  const lifecycle = [];
  const disruptions = [];
  for (let i = 0; i < 6; i++) {
    const at = NOW - 30 * 60_000 + i * 240_000;
    const base = { clusterId: "c1", nodeClaim: `nc-${i}`, nodeClaimUid: `u-${i}`, nodePool: "default" };
    lifecycle.push({ ...base, phase: "Launched" as const, at });
    lifecycle.push({ ...base, phase: "Disrupted" as const, reason: "Empty", at: at + 120_000 });
    lifecycle.push({ ...base, phase: "Terminated" as const, reason: "Empty", at: at + 125_000 });
    disruptions.push({ ...base, reason: "Empty", at: at + 120_000, source: "event" as const });
  }
  await store.write({ lifecycle, disruptions });
  const deps = { hub, prices: new KwokPriceProvider(), now: () => clock.now() };
  embedded = await build({
    tokens,
    plugins: [
      consoleRoutes({
        ...deps,
        audit: storeAudit(store, () => clock.now()),
        nodePools: {
          clusterId: "c1",
          patch: (pool, patch) => {
            patched.push([pool, patch]);
            return Promise.resolve();
          },
        },
      }),
    ],
  });
  remote = await build({ tokens, plugins: [consoleRoutes(deps)] });
});

after(async () => {
  await embedded.close();
  await remote.close();
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

const fixesOf = async (app: FastifyInstance): Promise<ThrashingFixesDto> => {
  const res = await app.inject({ url: "/api/v1/clusters/c1/thrashing/fixes", headers: VIEWER });
  assert.equal(res.statusCode, 200);
  const [f] = res.json<ThrashingFixesDto[]>();
  assert.ok(f, "pool default is flagged");
  return f;
};

const apply = (app: FastifyInstance, body: unknown, headers: Record<string, string> = ADMIN) =>
  app.inject({
    method: "POST",
    url: "/api/v1/clusters/c1/thrashing/apply",
    headers,
    payload: body as object,
  });

describe("applying a thrashing fix", () => {
  it("patches the embedded cluster's NodePool with the fix's own patch, as admin", async () => {
    const f = await fixesOf(embedded);
    assert.equal(f.canApply, true);
    const fix = f.fixes.find((x) => x.kubectl !== null);
    assert.ok(fix, JSON.stringify(f.fixes));
    const res = await apply(embedded, { nodePool: "default", title: fix.title });
    assert.equal(res.statusCode, 200, res.body);
    const body = res.json<{ patch: Record<string, unknown>; kubectl: string }>();
    assert.equal(body.kubectl, fix.kubectl);
    // The fix's own patch, and the pool records it: every advice path keeps what it set (issue 43).
    const [[pool, sent] = ["", {}]] = patched;
    assert.equal(pool, "default");
    const { metadata, ...spec } = sent;
    assert.deepEqual(spec, body.patch);
    const record = (metadata as { annotations: Record<string, string> }).annotations["wave.sh/applied-fix"];
    const recorded = JSON.parse(record ?? "{}") as { at: number };
    assert.deepEqual(recorded, {
      at: recorded.at,
      source: "thrashing",
      title: fix.title,
      patch: body.patch,
    });
    assert.match(JSON.stringify(body.patch), /"spec":\{"disruption"/);
    // The audit names who applied which fix, the pool's fields before and the patch after.
    const entry = (await store.listAudit({ clusterId: "c1", limit: 10 }))[0];
    assert.ok(entry, "audited");
    assert.equal(entry.subject, "token:admin");
    assert.equal(entry.action, "thrashing.apply");
    assert.equal(entry.object, `NodePool default: ${fix.title}`);
    assert.equal(entry.after, JSON.stringify(body.patch));
    assert.match(entry.before ?? "", /^\{"spec":\{"disruption"/);
  });

  it("refuses viewers, unknown fixes and bodies that are not {nodePool, title}", async () => {
    const f = await fixesOf(embedded);
    const title = f.fixes[0]?.title ?? "";
    patched.length = 0;
    assert.equal((await apply(embedded, { nodePool: "default", title }, VIEWER)).statusCode, 403);
    assert.equal((await apply(embedded, { nodePool: "default", title }, {})).statusCode, 401);
    const unknown = await apply(embedded, { nodePool: "default", title: "Delete the cluster" });
    assert.equal(unknown.statusCode, 409);
    assert.equal(unknown.json<{ error: string }>().error, "no_such_fix");
    const calm = await apply(embedded, { nodePool: "calm", title });
    assert.equal(calm.statusCode, 409);
    assert.match(calm.json<{ message: string }>().message, /not thrashing/);
    for (const bad of [{ nodePool: "default" }, { nodePool: "default", title, patch: { spec: {} } }])
      assert.equal((await apply(embedded, bad)).statusCode, 400, JSON.stringify(bad));
    assert.deepEqual(patched, [], "nothing patched");
  });

  it("never patches a real cluster: 409 with the kubectl patch to run", async () => {
    const f = await fixesOf(remote);
    assert.equal(f.canApply, false);
    const fix = f.fixes.find((x) => x.kubectl !== null);
    assert.ok(fix);
    patched.length = 0;
    const res = await apply(remote, { nodePool: "default", title: fix.title });
    assert.equal(res.statusCode, 409);
    const body = res.json<{ error: string; message: string }>();
    assert.equal(body.error, "not_applicable");
    assert.ok(body.message.includes(fix.kubectl ?? "?"), body.message);
    assert.deepEqual(patched, []);
  });

  it("once the NodePool holds the fix: when it was applied, when the score clears, no advice on top (issue 43)", async () => {
    const f = await fixesOf(embedded);
    assert.equal(f.applied, null, "no fix in effect yet");
    const fix = f.fixes.find((x) => x.kubectl !== null && x.title.startsWith("Raise consolidateAfter"));
    assert.ok(fix, JSON.stringify(f.fixes));
    const res = await apply(embedded, { nodePool: "default", title: fix.title });
    assert.equal(res.statusCode, 200, res.body);
    // Applied but not yet in the cluster: the advice stands.
    assert.equal((await fixesOf(embedded)).applied, null);
    // The agent streams the patched NodePool.
    const pool = mergePatch(fixtures.nodePool(), res.json<{ patch: Record<string, unknown> }>().patch);
    await deliverSnapshot(hub, NOW, [{ kind: "NodePool", object: pool as never }], { sessionId: "s2" });
    const after = await fixesOf(embedded);
    assert.equal(after.severity, f.severity, "the score is still the cycles from before the fix");
    assert.deepEqual(after.applied, { title: fix.title, at: NOW, clearsBy: NOW + 30 * 60_000 });
    assert.deepEqual(after.fixes, [], "no advice while the fix is in effect");
  });
});
