// Two core replicas over one store (ADR 0012): the replica an agent streams to owns the cluster;
// the other answers that cluster's reads and event stream through it, with the same figures;
// when the owner is gone it answers from what it has, and a new stream moves the cluster.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { FastifyInstance } from "fastify";
import { node, nodeClaim, nodePool } from "../../agent/fixtures.ts";
import type { ClusterDto, LiveDto, NodePoolDto } from "../../dashboard/dto.ts";
import { build } from "../../api/app.ts";
import { dashboardRoutes } from "../../api/routes/dashboard.ts";
import { policyRoutes } from "../../api/routes/policies.ts";
import { OWNER_HEADER, readThrough } from "../../api/routes/read-through.ts";
import { KwokPriceProvider } from "../../pricing/kwok.ts";
import { FakeClock, realClock } from "../../shared/clock.ts";
import { silentLogger } from "../../shared/log.ts";
import { openStore } from "../store/open.ts";
import type { Store } from "../store/store.ts";
import { ClusterHub } from "./hub.ts";
import { LeaseOwnership } from "./ownership.ts";
import { deliver } from "./testing.ts";

const tokens = { admin: "admin-token-0123456789", viewer: "viewer-token-0123456789" };
const V = { authorization: `Bearer ${tokens.viewer}` };
const TTL = 15_000;

interface Replica {
  name: string;
  hub: ClusterHub;
  ownership: LeaseOwnership;
  app: FastifyInstance;
  url: string;
  ac: AbortController;
  running: Promise<void>;
}

const clock = new FakeClock(Date.UTC(2026, 5, 1));
let store: Store;
const replicas: Replica[] = [];

async function replica(name: string): Promise<Replica> {
  // The port is known once listening; the lease's URL is read when a cluster is claimed.
  let url = "";
  const ownership = new LeaseOwnership({
    store,
    clock,
    log: silentLogger,
    replica: name,
    url: () => url,
    ttlMs: TTL,
  });
  const hub = new ClusterHub(store, clock, { ownership });
  const rt = { ownership };
  const app = await build({
    tokens,
    replica: name,
    forward: readThrough(rt),
    plugins: [
      dashboardRoutes({
        hub,
        prices: new KwokPriceProvider(),
        now: () => clock.now(),
        clock: realClock,
        readThrough: rt,
      }),
      policyRoutes({ store, defaultClusterId: "east", now: () => clock.now() }),
    ],
  });
  url = await app.listen({ host: "127.0.0.1", port: 0 });
  const ac = new AbortController();
  const r = { name, hub, ownership, app, url, ac, running: ownership.run(ac.signal) };
  replicas.push(r);
  return r;
}

/** An agent's stream lands on `r`: hello, then a snapshot of `nodes` nodes in pool east. */
async function stream(r: Replica, session: string, nodes: number): Promise<void> {
  await r.hub.clusterConnected({
    clusterId: "east",
    kubernetesVersion: "v1.34.0",
    karpenterVersion: "1.8.0",
    agentVersion: "0.1.0",
    sessionId: session,
    connectedAt: clock.now(),
  });
  await deliver(r.hub, {
    clusterId: "east",
    sessionId: session,
    sequence: 1,
    receivedAt: clock.now(),
    snapshot: [
      nodePool("default"),
      ...Array.from({ length: nodes }, (_, i) => [nodeClaim(i), node(i)]).flat(),
    ],
    changes: [],
    lifecycle: [],
  });
}

async function get<T>(
  r: Replica,
  path: string,
  _as?: T,
): Promise<{ body: T; owner: string | null; replica: string | null }> {
  const res = await fetch(`${r.url}${path}`, { headers: V });
  assert.equal(res.status, 200, `${r.name} ${path}: ${await res.clone().text()}`);
  return {
    body: (await res.json()) as T,
    owner: res.headers.get(OWNER_HEADER),
    replica: res.headers.get("x-wave-replica"),
  };
}

/** The first `snapshot` event of a cluster's stream on `r`. */
async function firstSnapshot(r: Replica): Promise<{ live: LiveDto; owner: string | null }> {
  const ac = new AbortController();
  const res = await fetch(`${r.url}/api/v1/clusters/east/stream`, { headers: V, signal: ac.signal });
  assert.equal(res.status, 200);
  const reader = (res.body as ReadableStream<Uint8Array> | null)?.getReader();
  assert.ok(reader);
  let text = "";
  const dec = new TextDecoder();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`stream ended: ${text}`);
    text += dec.decode(value);
    const m = /event: snapshot\ndata: (.*)\n\n/.exec(text);
    if (m?.[1]) {
      ac.abort();
      return { live: JSON.parse(m[1]) as LiveDto, owner: res.headers.get(OWNER_HEADER) };
    }
  }
}

/** Figures that must not depend on which replica answers (the snapshot's own time aside). */
const figures = (l: LiveDto): unknown => ({
  nodes: l.overview.nodes,
  cost: l.overview.costPerHour,
  pools: l.nodePools.map((p) => [p.name, p.nodes, p.costPerHour]),
});

before(async () => {
  store = await openStore(
    { backend: "sqlite", path: ":memory:" },
    { log: silentLogger, now: () => clock.now() },
  );
});

after(async () => {
  for (const r of replicas) {
    r.ac.abort();
    await r.running;
    await r.app.close();
  }
  await store.close();
});

describe("core replicas", { timeout: 30_000 }, () => {
  it("answer a cluster's reads and stream through its owner, with the owner's figures", async () => {
    const a = await replica("core-a");
    const b = await replica("core-b");
    await stream(a, "s1", 3);
    assert.equal(a.hub.owns("east"), true);
    assert.equal(b.hub.owns("east"), false);

    const fromA = await get<NodePoolDto[]>(a, "/api/v1/clusters/east/nodepools");
    const fromB = await get<NodePoolDto[]>(b, "/api/v1/clusters/east/nodepools");
    assert.deepEqual(fromB.body, fromA.body);
    assert.equal(fromA.body[0]?.nodes, 3);
    assert.deepEqual([fromA.owner, fromB.owner, fromB.replica], [null, "core-a", "core-b"]);

    const listB = await get<ClusterDto[]>(b, "/api/v1/clusters");
    const listA = await get<ClusterDto[]>(a, "/api/v1/clusters");
    assert.deepEqual(listB.body, listA.body);
    assert.equal(listB.body.find((c) => c.id === "east")?.connected, true);

    const [sa, sb] = await Promise.all([firstSnapshot(a), firstSnapshot(b)]);
    assert.deepEqual(figures(sb.live), figures(sa.live));
    assert.equal(sb.owner, "core-a", "b's stream is a's, relayed");

    // A policy written on b is the cluster's, whichever replica reads it.
    const put = await fetch(`${b.url}/api/v1/clusters/east/policies/warmup/default`, {
      method: "PUT",
      headers: { authorization: `Bearer ${tokens.admin}`, "content-type": "application/json" },
      body: JSON.stringify({ enabled: true }),
    });
    assert.equal(put.status, 200, await put.clone().text());
    assert.equal(put.headers.get(OWNER_HEADER), "core-a");
    assert.deepEqual(
      (await get<{ nodePool: string }[]>(a, "/api/v1/clusters/east/policies/warmup")).body.map(
        (p) => p.nodePool,
      ),
      ["default"],
    );
  });

  it("when the owner dies, the other answers from the store, then owns the cluster its agent moved to", async () => {
    const [a, b] = replicas;
    assert.ok(a && b);
    // a "dies": its API is gone and its lease is no longer renewed.
    a.ac.abort();
    await a.running.catch(() => undefined);
    await a.app.close();
    const down = await get<ClusterDto[]>(b, "/api/v1/clusters");
    assert.equal(down.body.find((c) => c.id === "east")?.connected, false, "nobody streams it now");
    assert.equal(down.owner, null);
    // The agent reconnects, through the front, to b: b owns the cluster and serves it.
    await stream(b, "s1", 4);
    assert.equal(b.hub.owns("east"), true);
    const now = await get<NodePoolDto[]>(b, "/api/v1/clusters/east/nodepools");
    assert.deepEqual([now.body[0]?.nodes, now.owner], [4, null]);
    const lease = (await store.leases()).find((l) => l.clusterId === "east");
    assert.deepEqual([lease?.holder, lease?.generation], ["core-b", 2]);
  });

  it("a replica that lost its cluster to a newer stream stops owning it and reads through the new owner", async () => {
    const b = replicas[1];
    assert.ok(b);
    const c = await replica("core-c");
    await stream(c, "s2", 5);
    assert.equal(b.hub.owns("east"), true, "until b renews");
    // b's next renewal finds c's lease: b lets the cluster go.
    await clock.advance(TTL / 3);
    for (let i = 0; i < 50 && b.hub.owns("east"); i++) await new Promise((r) => setImmediate(r));
    assert.equal(b.hub.owns("east"), false);
    assert.equal(b.hub.get("east")?.connected, false, "b's copy is no longer live");
    const viaB = await get<NodePoolDto[]>(b, "/api/v1/clusters/east/nodepools");
    assert.deepEqual([viaB.body[0]?.nodes, viaB.owner], [5, "core-c"]);
  });
});
