// Caps on held requests (issue 32): the dashboard's event stream and the spot policies' long poll,
// per token, per client address and in total, over real sockets (each client address a loopback
// address of its own); beyond a cap 429 with the reason, and a closed stream frees its slot.
import assert from "node:assert/strict";
import { request, type IncomingMessage } from "node:http";
import { after, before, describe, it } from "node:test";
import type { FastifyInstance } from "fastify";
import { ClusterHub } from "../core/hub/hub.ts";
import { openStore } from "../core/store/open.ts";
import type { Store } from "../core/store/store.ts";
import { KwokPriceProvider } from "../pricing/kwok.ts";
import { FakeClock } from "../shared/clock.ts";
import { silentLogger } from "../shared/log.ts";
import { build, type Authenticator } from "./app.ts";
import { dashboardRoutes } from "./routes/dashboard.ts";
import { policyRoutes } from "./routes/policies.ts";
import { StreamLimits } from "./streams.ts";

const tokens = { admin: "admin-token-0123456789", viewer: "viewer-token-0123456789" };
const caps = { perToken: 3, perAddress: 2, total: 4 };

let store: Store;
let app: FastifyInstance;
let port = 0;

before(async () => {
  store = await openStore({ backend: "sqlite", path: ":memory:" }, { log: silentLogger });
  const clock = new FakeClock(Date.parse("2026-03-02T12:00:00Z"));
  const hub = new ClusterHub(store, clock);
  hub.ensure("c1");
  app = await build({
    tokens,
    clock,
    plugins: [
      dashboardRoutes({
        hub,
        prices: new KwokPriceProvider(),
        now: () => clock.now(),
        clock,
        streamCaps: caps,
      }),
      policyRoutes({ store, now: () => clock.now(), defaultClusterId: "c1", watchCaps: caps }),
    ],
  });
  await app.listen({ host: "127.0.0.1", port: 0 });
  port = (app.server.address() as { port: number }).port;
});

after(async () => {
  await app.close();
  await store.close();
});

interface Opened {
  status: number;
  body: string;
  res: IncomingMessage;
}

/**
 * Opens a request from `from` and resolves at its status: a stream's headers, a refusal's whole
 * answer, or — a long poll answers nothing while held — 200 once it has been held for 300 ms.
 */
function open(path: string, token: string, from: string, headers?: Record<string, string>): Promise<Opened> {
  return new Promise((resolve, reject) => {
    let held: NodeJS.Timeout | undefined;
    const req = request(
      {
        host: "127.0.0.1",
        port,
        path,
        localAddress: from,
        headers: headers ?? { authorization: `Bearer ${token}` },
      },
      (res) => {
        clearTimeout(held);
        if (res.statusCode === 200) {
          resolve({ status: 200, body: "", res });
          return;
        }
        let body = "";
        res.on("data", (d: Buffer) => (body += d.toString()));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body, res }));
      },
    );
    req.on("error", reject);
    req.end();
    if (path.includes("watch=true"))
      held = setTimeout(
        () =>
          resolve({
            status: 200,
            body: "",
            res: {
              destroy: () => req.destroy(),
              once: (_: string, f: () => void) => req.once("close", f),
            } as unknown as IncomingMessage,
          }),
        300,
      );
  });
}

const message = (o: Opened): string => (JSON.parse(o.body) as { message: string }).message;
const closed = (o: Opened): Promise<void> =>
  new Promise((resolve) => {
    o.res.once("close", () => resolve());
    o.res.destroy();
  });

for (const [what, path] of [
  ["event streams", "/api/v1/clusters/c1/stream"],
  ["policy watches", "/api/v1/policies/spot?watch=true&timeoutSeconds=60&revision=REV"],
] as const) {
  describe(`${what}: per-token, per-address and total caps`, () => {
    it("429 with the reason beyond each cap; a closed one frees its slot", async () => {
      let url: string = path;
      if (url.includes("REV")) {
        const set = await app.inject({
          url: "/api/v1/policies/spot",
          headers: { authorization: `Bearer ${tokens.viewer}` },
        });
        url = url.replace("REV", set.json<{ revision: string }>().revision);
      }
      const a1 = await open(url, tokens.viewer, "127.0.0.1");
      const a2 = await open(url, tokens.viewer, "127.0.0.1");
      assert.deepEqual([a1.status, a2.status], [200, 200]);
      const a3 = await open(url, tokens.viewer, "127.0.0.1");
      assert.equal(a3.status, 429);
      assert.match(message(a3), new RegExp(`too many open ${what} from this address \\(2, at most 2\\)`));
      assert.equal(a3.res.headers.connection, "close");

      const b1 = await open(url, tokens.viewer, "127.0.0.2");
      assert.equal(b1.status, 200);
      const b2 = await open(url, tokens.viewer, "127.0.0.3");
      assert.equal(b2.status, 429);
      assert.match(message(b2), /by this caller \(3, at most 3\)/);

      const c1 = await open(url, tokens.admin, "127.0.0.3");
      assert.equal(c1.status, 200);
      const c2 = await open(url, tokens.admin, "127.0.0.4");
      assert.equal(c2.status, 429);
      assert.match(message(c2), /\(4, at most 4\); try again later/);

      await closed(a1);
      await new Promise((r) => setTimeout(r, 50));
      const again = await open(url, tokens.admin, "127.0.0.4");
      assert.equal(again.status, 200, "a closed stream's slot is free again");
      for (const o of [a2, b1, c1, again]) await closed(o);
    });
  });
}

describe("streams are counted per identity, not per Authorization header (issue 42)", () => {
  it("two signed-in users without a bearer (cookie, proxy) each have their own cap", async () => {
    const users: Authenticator = (req) => {
      const u = req.headers["x-test-user"];
      return typeof u === "string" ? { subject: u, groups: [], role: "viewer", source: "proxy" } : undefined;
    };
    const clock = new FakeClock(Date.parse("2026-03-02T12:00:00Z"));
    const hub = new ClusterHub(store, clock);
    hub.ensure("c1");
    const perUser = await build({
      tokens,
      authenticators: [users],
      plugins: [
        dashboardRoutes({
          hub,
          prices: new KwokPriceProvider(),
          now: () => clock.now(),
          clock,
          streamCaps: { perToken: 1, perAddress: 10, total: 10 },
        }),
      ],
    });
    await perUser.listen({ host: "127.0.0.1", port: 0 });
    const saved = port;
    port = (perUser.server.address() as { port: number }).port;
    try {
      const url = "/api/v1/clusters/c1/stream";
      const ann = await open(url, "", "127.0.0.5", { "x-test-user": "ann" });
      const bob = await open(url, "", "127.0.0.6", { "x-test-user": "bob" });
      assert.deepEqual([ann.status, bob.status], [200, 200], bob.body);
      const ann2 = await open(url, "", "127.0.0.7", { "x-test-user": "ann" });
      assert.equal(ann2.status, 429);
      assert.match(message(ann2), /by this caller \(1, at most 1\)/);
      for (const o of [ann, bob]) await closed(o);
    } finally {
      port = saved;
      await perUser.close();
    }
  });
});

describe("StreamLimits", () => {
  it("releases once however often release is called", () => {
    const l = new StreamLimits("streams", { perToken: 1, perAddress: 1, total: 1 });
    const s = l.acquire("t", "a");
    assert.ok("release" in s);
    s.release();
    s.release();
    assert.equal(l.open, 0);
    assert.ok("release" in l.acquire("t", "a"));
    assert.ok("refused" in l.acquire("u", "b"));
  });
});
