// The API-routes fuzz target (issue 32): core's API built as `wave core` builds it (every route
// plugin, src/cli/parts.ts apiRoutes) over a connected cluster, on loopback. Every route the app
// registers is found through build()'s onRoute, so a route added later is fuzzed without editing
// this file. First a sweep: each numeric query parameter of each route at its edges and past them
// (2^53, its maximum + 1, -1, 1e20), then generated requests: path and query values, bodies
// mutated from a valid one or grown up to (and past) the body limit, and any of the viewer, admin,
// a wrong or no token. A server error (5xx) is a finding, and so is a viewer's token on a route
// that needs the admin role answered anything but 403.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { syntheticCluster } from "../../src/agent/fixtures.ts";
import { build, type RouteSchema } from "../../src/api/app.ts";
import type { Role } from "../../src/api/identity.ts";
import { apiRoutes } from "../../src/cli/parts.ts";
import { ClusterHub } from "../../src/core/hub/hub.ts";
import { deliver } from "../../src/core/hub/testing.ts";
import { openStore } from "../../src/core/store/open.ts";
import { KwokPriceProvider } from "../../src/pricing/kwok.ts";
import { FakeClock } from "../../src/shared/clock.ts";
import { silentLogger } from "../../src/shared/log.ts";
import { seeded } from "../../src/shared/random.ts";
import { gen, type Json } from "./gen.ts";
import type { TargetResult } from "./targets.ts";

const LOOPBACK = "127.0.0.1";
const ADMIN = "fuzz-admin-token-0123456789";
const VIEWER = "fuzz-viewer-token-0123456789";
/** The API's body limit (app.ts default): bodies are grown up to it, and a few past it. */
const BODY_LIMIT = 256 * 1024;

interface Route {
  method: string;
  url: string;
  role: Role | undefined;
  schema: RouteSchema;
}

interface PropSchema {
  type?: string | string[];
  minimum?: number;
  maximum?: number;
  maxLength?: number;
  enum?: readonly unknown[];
}

const propsOf = (schema: unknown): Record<string, PropSchema> =>
  (schema as { properties?: Record<string, PropSchema> } | undefined)?.properties ?? {};
const isNumeric = (p: PropSchema): boolean => [p.type].flat().some((t) => t === "integer" || t === "number");

function heap(): number {
  (globalThis as { gc?: () => void }).gc?.();
  return process.memoryUsage().heapUsed;
}

const enc = (s: string): string => (s === "" ? "%20" : encodeURIComponent(s));
const text = (v: Json): string => (typeof v === "string" ? v : JSON.stringify(v));

/** A valid body per write route (by the end of its URL), for mutation. */
function validBody(url: string): Json | undefined {
  if (url.endsWith("/spot/:kind/:namespace/:name"))
    return { threshold: 3, strategy: "Prefer", percentAboveBase: 20, repair: true };
  if (url.endsWith("/warmup/:pool"))
    return {
      enabled: true,
      maxWarmNodes: 2,
      ttlSeconds: 600,
      cooldownSeconds: 300,
      maxCostPerHour: 1.5,
      prePull: true,
      prePullDeadlineSeconds: 300,
    };
  if (url.endsWith("/thrashing/apply")) return { nodePool: "default", title: "Raise consolidateAfter" };
  if (url.endsWith("/whatif"))
    return { warmup: { default: { enabled: true, maxWarmNodes: 1 } }, windowHours: 1 };
  return undefined;
}

export async function fuzzApiRoutes(n: number, seed: number): Promise<TargetResult> {
  const g = gen(seeded(seed));
  const dir = await mkdtemp(join(tmpdir(), "wave-fuzz-routes-"));
  const store = await openStore({ backend: "sqlite", path: join(dir, "wave.db") }, { log: silentLogger });
  const clock = new FakeClock(Date.parse("2026-03-02T12:00:00Z"));
  const hub = new ClusterHub(store, clock);
  await hub.clusterConnected({
    clusterId: "c1",
    kubernetesVersion: "v1.34.1",
    karpenterVersion: "1.8.2",
    agentVersion: "fuzz",
    sessionId: "s1",
    connectedAt: clock.now(),
  });
  await deliver(hub, {
    clusterId: "c1",
    sessionId: "s1",
    sequence: 1,
    receivedAt: clock.now(),
    snapshot: syntheticCluster({ nodes: 4, pods: 20, nodeClaims: 4 }),
    changes: [],
    lifecycle: [],
  });
  const routes: Route[] = [];
  const app = await build({
    tokens: { admin: ADMIN, viewer: VIEWER },
    clock,
    bodyLimit: BODY_LIMIT,
    // The fuzzer's admin token changes far faster than the per-identity limit allows (change-rate.ts).
    changeRate: { burst: 1e9, perMinute: 1e9 },
    onRoute: (r) => {
      if (r.url.startsWith("/api/") && r.method !== "HEAD") routes.push(r);
    },
    plugins: apiRoutes({ hub, store, prices: new KwokPriceProvider(), clock, clusterId: "c1" }),
  });
  await app.listen({ host: LOOPBACK, port: 0 });
  const base = `http://${LOOPBACK}:${(app.server.address() as { port: number }).port}`;

  const statuses: Record<string, number> = {};
  const examples: string[] = [];
  let serverErrors = 0;
  const finding = (what: string): void => {
    serverErrors++;
    if (examples.length < 5) examples.push(what.slice(0, 400));
  };

  const pathValue = (name: string): string => {
    if (name === "id") return g.chance(0.9) ? "c1" : enc(text(g.value()));
    if (name === "kind") return enc(g.pick(["Deployment", "StatefulSet", "ReplicaSet", "Pod", ""]));
    if (g.chance(0.6)) return g.pick(["default", "shop", "web", "general", "a.b"]);
    if (g.chance(0.2)) return "a".repeat(g.pick([63, 64, 253, 254, 300]));
    return enc(text(g.value()));
  };
  const urlOf = (r: Route): string =>
    r.url.replaceAll(/:([A-Za-z]+)/g, (_m, name: string) => pathValue(name));
  /** The route's URL with valid path values (the sweep's: it must reach the handler). */
  const validUrl = (r: Route): string =>
    r.url.replaceAll(/:([A-Za-z]+)/g, (_m, name: string) =>
      name === "id" ? "c1" : name === "kind" ? "Deployment" : "default",
    );
  const queryValue = (p: PropSchema | undefined): string => {
    if (p && isNumeric(p) && g.chance(0.7))
      return String(
        g.pick([
          p.minimum ?? 0,
          p.maximum ?? 0,
          (p.maximum ?? 0) + 1,
          2 ** 53,
          2 ** 53 + 2,
          -1,
          1e20,
          g.int(1_000_000),
        ]),
      );
    if (p?.enum && g.chance(0.5)) return String(g.pick(p.enum));
    if (p?.maxLength !== undefined && g.chance(0.3)) return "q".repeat(p.maxLength + g.pick([0, 1]));
    return text(g.value());
  };

  const send = async (
    r: Route,
    url: string,
    token: "viewer" | "admin" | "wrong" | "none",
    body: string | undefined,
  ): Promise<void> => {
    const sent = `${token} ${r.method} ${url} ${(body ?? "").slice(0, 200)}${(body?.length ?? 0) > 200 ? `… (${body?.length} bytes)` : ""}`;
    const authorization =
      token === "viewer"
        ? VIEWER
        : token === "admin"
          ? ADMIN
          : token === "wrong"
            ? "wrong-token-0123456789"
            : "";
    try {
      const res = await fetch(base + url, {
        method: r.method,
        headers: {
          ...(token === "none" ? {} : { authorization: `Bearer ${authorization}` }),
          ...(body === undefined ? {} : { "content-type": "application/json" }),
        },
        ...(body === undefined ? {} : { body }),
      });
      // The event stream never ends by itself: its status is what is checked.
      if (String(res.headers.get("content-type")).startsWith("text/event-stream")) await res.body?.cancel();
      else await res.arrayBuffer();
      statuses[String(res.status)] = (statuses[String(res.status)] ?? 0) + 1;
      if (res.status >= 500) finding(`${res.status}: ${sent}`);
      // A viewer on an admin route: forbidden, whatever else is wrong with the request (404 and
      // 414: the URL matched no route, so the route's handler was never reached).
      if (
        token === "viewer" &&
        r.role !== undefined &&
        r.role !== "viewer" &&
        ![403, 404, 414].includes(res.status)
      )
        finding(`viewer on an admin route answered ${res.status}, not 403: ${sent}`);
    } catch (err) {
      statuses["transport-error"] = (statuses["transport-error"] ?? 0) + 1;
      finding(`${sent} → ${String(err)}`);
    }
  };

  // The sweep: every numeric query parameter of every route at and past its edges, and a viewer
  // on every admin route (each counts as an input; the generated ones fill the rest).
  const sweep: (() => Promise<void>)[] = [];
  for (const r of routes) {
    for (const [k, p] of Object.entries(propsOf(r.schema.querystring))) {
      if (!isNumeric(p)) continue;
      for (const v of [2 ** 53, (p.maximum ?? 0) + 1, -1, 1e20])
        sweep.push(() => send(r, `${validUrl(r)}?${k}=${v}`, "viewer", undefined));
    }
    if (r.role !== undefined && r.role !== "viewer") {
      const body = validBody(r.url);
      sweep.push(() => send(r, validUrl(r), "viewer", body === undefined ? undefined : JSON.stringify(body)));
    }
  }

  const before = heap();
  const started = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next < n) {
        const i = next++;
        const swept = sweep[i];
        if (swept) {
          await swept();
          continue;
        }
        const r = g.pick(routes);
        const props = propsOf(r.schema.querystring);
        const names = [...Object.keys(props), "x"];
        const query = Array.from({ length: g.int(4) }, () => {
          const k = g.pick(names);
          return `${k}=${enc(queryValue(props[k]))}`;
        });
        const url = `${urlOf(r)}${query.length > 0 ? `?${query.join("&")}` : ""}`;
        const token = g.pick(["viewer", "viewer", "admin", "admin", "wrong", "none"] as const);
        let body: string | undefined;
        const valid = validBody(r.url);
        if (valid !== undefined || r.method !== "GET") {
          body = JSON.stringify(valid === undefined ? g.value() : g.mutate(valid));
          const shape = g.int(100);
          if (shape < 8) {
            // Large: grown toward the body limit, now and then past it (413).
            const size = Math.floor(BODY_LIMIT * g.pick([0.5, 0.9, 0.99, 1.2]));
            body = JSON.stringify({ ...(valid as Record<string, Json> | undefined), pad: "p".repeat(size) });
          } else if (shape < 16) body = g.mangle(body);
        }
        // DELETE carries no body.
        if (r.method === "DELETE") body = undefined;
        await send(r, url, token, body);
      }
    }),
  );
  const ms = performance.now() - started;
  await app.close();
  await store.close();
  await rm(dir, { recursive: true, force: true });
  return {
    target: `API routes (${routes.length})`,
    inputs: n,
    serverErrors,
    statuses,
    examples,
    heapGrowth: heap() - before,
    ms,
  };
}
