// No cluster silently refused (issue 30): an agent whose snapshot or object core refuses at a bound
// is listed by the API as rejected with the reason, and /metrics counts it — through the real path
// (gRPC stream → ingest → hub → store → API), until a later snapshot is accepted.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { FastifyInstance } from "fastify";
import { node, nodePool, pod } from "../../agent/fixtures.ts";
import { MemorySource } from "../../agent/source.ts";
import { build } from "../../api/app.ts";
import { dashboardRoutes } from "../../api/routes/dashboard.ts";
import type { ClusterDto } from "../../dashboard/dto.ts";
import { KwokPriceProvider } from "../../pricing/kwok.ts";
import { FakeClock } from "../../shared/clock.ts";
import { silentLogger } from "../../shared/log.ts";
import { Registry } from "../../shared/metrics.ts";
import { ClusterHub } from "../hub/hub.ts";
import { openStore } from "../store/open.ts";
import type { Store } from "../store/store.ts";
import { runAgent } from "./agent.test-helper.ts";
import { metadataProblem } from "../../objects/names.ts";
import { IngestCore } from "./core.ts";
import { startIngestServer, type IngestServer } from "./server.ts";
import {
  hello,
  rawStream,
  sessionWithSnapshot,
  snapshotBegin,
  snapshotChunk,
  upsert,
  within,
  wire,
  type Msg,
} from "./testing.ts";

const T0 = Date.UTC(2026, 5, 1, 12, 0, 0);
const tokens = { admin: "admin-token-0123456789", viewer: "viewer-token-0123456789" };
const V = { authorization: `Bearer ${tokens.viewer}` };

const clock = new FakeClock(T0);
const metrics = new Registry();
let store: Store;
let hub: ClusterHub;
let server: IngestServer;
let app: FastifyInstance;

before(async () => {
  store = await openStore(
    { backend: "sqlite", path: ":memory:" },
    { log: silentLogger, now: () => clock.now() },
  );
  hub = new ClusterHub(store, clock);
  const ingest = new IngestCore({
    sink: hub,
    clock,
    metrics,
    coreVersion: "test",
    maxSnapshotObjects: 300,
    decodeLimits: { maxObjectBytes: 32 * 1024 },
  });
  server = await startIngestServer({ core: ingest, port: 0, host: "127.0.0.1", tokens: ["t"] });
  app = await build({
    tokens,
    plugins: [dashboardRoutes({ hub, prices: new KwokPriceProvider(), now: () => clock.now(), clock })],
  });
});

after(async () => {
  await app.close();
  await server.close();
  await store.close();
});

async function listed(id: string): Promise<ClusterDto | undefined> {
  const r = await app.inject({ url: "/api/v1/clusters", headers: V });
  assert.equal(r.statusCode, 200, r.body);
  return r.json<ClusterDto[]>().find((c) => c.id === id);
}

describe("a refused cluster is listed as rejected and counted", { timeout: 30_000 }, () => {
  it("a snapshot over the object bound: the API lists why, /metrics counts it; an accepted one clears it", async () => {
    const big = Array.from({ length: 100 }, (_, i) => wire(node(i)));
    const msgs: Msg[] = [hello("big"), snapshotBegin(1)];
    for (let i = 0; i < 5; i++) msgs.push(snapshotChunk(2 + i, big));
    const err = await rawStream(server.port, msgs, "t");
    assert.equal(err?.code, 8, err?.message); // RESOURCE_EXHAUSTED

    const c = await listed("big");
    assert.ok(c, "the refused cluster is listed");
    assert.equal(c.connected, false);
    assert.equal(c.rejected?.bound, "snapshot_objects");
    assert.equal(c.rejected.at, T0);
    assert.match(c.rejected.message, /^snapshot exceeds 300 objects; rejected$/);
    assert.deepEqual(
      (await app.inject({ url: "/api/v1/clusters/big", headers: V })).json<ClusterDto>().rejected,
      {
        at: T0,
        bound: "snapshot_objects",
        message: c.rejected.message,
      },
    );
    assert.match(
      await metrics.render(),
      /^wave_ingest_rejected_total\{cluster="big",reason="snapshot_objects"\} 1$/m,
    );

    // The agent comes back with a snapshot within the bound: no longer rejected.
    const { agent, stop } = runAgent({
      source: new MemorySource([nodePool("default"), node(1)]),
      coreUrl: `http://127.0.0.1:${server.port}`,
      token: "t",
      clusterId: "big",
      agentVersion: "test",
      clock: new FakeClock(T0),
    });
    try {
      await within(
        10_000,
        agent.until((a) => a.outbox.lastAcked >= 3),
        "snapshot acknowledged",
      );
      const again = await listed("big");
      assert.equal(again?.rejected, null);
      assert.equal(again.connected, true);
    } finally {
      await stop();
    }
  });

  it("an object over the per-object bound in a delta: listed with that bound and counted", async () => {
    const p = pod(1, 1);
    p.object.metadata.annotations = { big: "h".repeat(40_000) };
    const err = await rawStream(
      server.port,
      [...sessionWithSnapshot("fat", [wire(nodePool("default"))]), upsert(4, wire(p))],
      "t",
    );
    assert.equal(err?.code, 8, err?.message);
    const c = await listed("fat");
    assert.equal(c?.rejected?.bound, "object_bytes");
    assert.match(c.rejected.message, /^delta 4: object of 4\d{4} bytes exceeds 32768 bytes/);
    assert.match(
      await metrics.render(),
      /^wave_ingest_rejected_total\{cluster="fat",reason="object_bytes"\} 1$/m,
    );
  });

  it("names Kubernetes would refuse (issue 42): snapshot and delta refused, listed as object_name", async () => {
    const hostile = ["$(touch /tmp/x)", "a;b", "`id`", "x'y", "a\nb", "UPPER", "-lead", "a".repeat(254)];
    for (const [i, name] of hostile.entries()) {
      const p = pod(1, 1);
      p.object.metadata.name = name;
      const id = `bad-name-${i}`;
      const err = await rawStream(server.port, [...sessionWithSnapshot(id, [wire(p)])], "t");
      assert.equal(err?.code, 3, `${JSON.stringify(name)}: ${err?.message ?? "accepted"}`); // INVALID_ARGUMENT
      const c = await listed(id);
      assert.equal(c?.rejected?.bound, "object_name", name);
      assert.match(
        c.rejected.message,
        /^snapshot object 1 \(Pod\): metadata\.name .* is not a DNS-1123 subdomain; rejected$/,
      );
    }
    const ns = pod(2, 1);
    ns.object.metadata.namespace = "team.a";
    const inNs = await rawStream(server.port, sessionWithSnapshot("bad-ns", [wire(ns)]), "t");
    assert.equal(inNs?.code, 3);
    assert.match(
      (await listed("bad-ns"))?.rejected?.message ?? "",
      /metadata\.namespace "team\.a" is not a DNS-1123 label/,
    );
    const pool = nodePool("ok");
    pool.object.metadata.labels = { "team/$(id)": "x" };
    const labelled = await rawStream(
      server.port,
      [...sessionWithSnapshot("bad-label", [wire(nodePool("default"))]), upsert(4, wire(pool))],
      "t",
    );
    assert.equal(labelled?.code, 3);
    assert.match(
      (await listed("bad-label"))?.rejected?.message ?? "",
      /^delta 4 \(NodePool\): label key .* is not a qualified name/,
    );
    assert.match(
      await metrics.render(),
      /^wave_ingest_rejected_total\{cluster="bad-name-0",reason="object_name"\} 1$/m,
    );
    // What every real cluster holds passes: subdomains with dots, labels with prefixes.
    const fine = pod(3, 1);
    fine.object.metadata.name = "api-7d9f.v2";
    fine.object.metadata.labels = {
      "app.kubernetes.io/name": "api",
      "karpenter.sh/nodepool": "general",
      empty: "",
    };
    assert.equal(metadataProblem(fine.object.metadata), undefined);
  });
});
