// Issue 42's low items on policy changes: a put that changes nothing is not audited, changes are
// rate-limited per identity (the audit's growth bounded), and no spot policy may target
// Kubernetes' own namespaces or Wave's (400 with the reason).
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { FastifyInstance } from "fastify";
import { build, type Authenticator } from "../../app.ts";
import { storeAudit } from "../../audit.ts";
import { auditRoutes } from "../audit.ts";
import { policyRoutes } from "../policies.ts";
import { openStore } from "../../../core/store/open.ts";
import type { Store } from "../../../core/store/store.ts";
import type { AuditListDto } from "../../../dashboard/dto.ts";
import { FakeClock } from "../../../shared/clock.ts";
import { silentLogger } from "../../../shared/log.ts";

const tokens = { admin: "admin-token-0123456789", viewer: "viewer-token-0123456789" };
const ADMIN = { authorization: `Bearer ${tokens.admin}` };
/** Namespace editors of `team-a`, by name (a stand-in for OIDC or proxy users). */
const editors: Authenticator = (req) => {
  const u = req.headers["x-test-user"];
  return typeof u === "string"
    ? {
        subject: u,
        groups: ["team-a"],
        role: "namespace-editor",
        namespaces: ["team-a", "kube-system"],
        source: "proxy",
      }
    : undefined;
};

const clock = new FakeClock(Date.UTC(2026, 5, 1));
let store: Store;
let app: FastifyInstance;

before(async () => {
  store = await openStore(
    { backend: "sqlite", path: ":memory:" },
    { log: silentLogger, now: () => clock.now() },
  );
  app = await build({
    tokens,
    clock,
    authenticators: [editors],
    changeRate: { burst: 5, perMinute: 6 },
    plugins: [
      policyRoutes({
        store,
        defaultClusterId: "c1",
        now: () => clock.now(),
        audit: storeAudit(store, () => clock.now()),
        waveNamespaces: ["wave-system"],
      }),
      auditRoutes({ store, waveManagers: ["wave-console", "wave-status"] }),
    ],
  });
});

after(async () => {
  await app.close();
  await store.close();
});

const put = (ns: string, who: Record<string, string>, threshold = 2) =>
  app.inject({
    method: "PUT",
    url: `/api/v1/clusters/c1/policies/spot/Deployment/${ns}/web`,
    headers: who,
    payload: { threshold, strategy: "Prefer" },
  });

const audited = async (): Promise<number> =>
  (await app.inject({ url: "/api/v1/clusters/c1/audit", headers: ADMIN })).json<AuditListDto>().entries
    .length;

describe("policy changes: audit growth and reserved namespaces (issue 42)", () => {
  it("a put that changes nothing is not audited", async () => {
    const before = await audited();
    assert.equal((await put("team-a", ADMIN)).statusCode, 200);
    assert.equal((await put("team-a", ADMIN)).statusCode, 200);
    assert.equal((await put("team-a", ADMIN)).statusCode, 200);
    assert.equal(await audited(), before + 1, "three identical puts, one change");
    assert.equal((await put("team-a", ADMIN, 3)).statusCode, 200);
    assert.equal(await audited(), before + 2);
  });

  it("changes are rate-limited per identity: 429 with Retry-After beyond the burst, others unaffected", async () => {
    const ann = { "x-test-user": "ann" };
    const codes: number[] = [];
    for (let i = 0; i < 7; i++) codes.push((await put("team-a", ann, 10 + i)).statusCode);
    assert.deepEqual(codes, [200, 200, 200, 200, 200, 429, 429]);
    const refused = await put("team-a", ann, 20);
    assert.equal(refused.headers["retry-after"], "10");
    assert.match(refused.json<{ message: string }>().message, /ann: too many changes/);
    assert.equal(
      (await put("team-a", { "x-test-user": "bob" }, 30)).statusCode,
      200,
      "bob has his own budget",
    );
    // Reads are never counted.
    const read = await app.inject({ url: "/api/v1/clusters/c1/policies/spot", headers: ann });
    assert.equal(read.statusCode, 200);
    await clock.advance(10_000);
    assert.equal((await put("team-a", ann, 40)).statusCode, 200, "one more change 10 s later");
    assert.equal((await put("team-a", ann, 41)).statusCode, 429);
  });

  it("no spot policy for Kubernetes' own namespaces or Wave's: 400 with the reason", async () => {
    await clock.advance(60_000); // the admin token's budget full again
    for (const [ns, why] of [
      ["kube-system", /kube-system is Kubernetes' own/],
      ["kube-node-lease", /Kubernetes' own/],
      ["wave-system", /wave-system is Wave's own/],
    ] as const) {
      const r = await put(ns, ADMIN, 7);
      assert.equal(r.statusCode, 400, `${ns}: ${r.body}`);
      assert.match(r.json<{ message: string }>().message, why);
    }
    assert.equal(
      (await put("kube-system", { "x-test-user": "carol" })).statusCode,
      400,
      "an editor of it too",
    );
  });
});
