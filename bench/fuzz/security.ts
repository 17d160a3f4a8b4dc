// Issue 42's fuzz targets: the auth-proxy headers (one family, trusted addresses only), hostile
// object names in every copyable command (pasted into a real bash), and per-cluster authorization
// of every route that lists across clusters. Each has an oracle, and every answer that disagrees
// with it is a violation (the run fails on any).
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { FastifyInstance } from "fastify";
import { nodePool } from "../../src/agent/fixtures.ts";
import { build } from "../../src/api/app.ts";
import { proxyAuthenticator } from "../../src/api/proxy-auth.ts";
import { roleInCluster, type RoleMapping } from "../../src/api/roles.ts";
import { parseConfig } from "../../src/config/config.ts";
import { coreApi, dashboardMetrics } from "../../src/cli/parts.ts";
import { ClusterHub } from "../../src/core/hub/hub.ts";
import { connectTestCluster, deliverSnapshot } from "../../src/core/hub/testing.ts";
import { openStore } from "../../src/core/store/open.ts";
import { blockerFix } from "../../src/dashboard/consolidation/fixes.ts";
import { BlockerReasonSchema } from "../../src/dashboard/dto.ts";
import { thrashingFixDtos } from "../../src/dashboard/thrashing/fixes.ts";
import type { ThrashingReport } from "../../src/dashboard/thrashing/detect.ts";
import type { NodePool } from "../../src/objects/karpenter.ts";
import { KwokPriceProvider } from "../../src/pricing/kwok.ts";
import { FakeClock } from "../../src/shared/clock.ts";
import { silentLogger } from "../../src/shared/log.ts";
import { Registry } from "../../src/shared/metrics.ts";
import { seeded } from "../../src/shared/random.ts";
import { gen } from "./gen.ts";
import type { TargetResult } from "./targets.ts";

function heap(): number {
  (globalThis as { gc?: () => void }).gc?.();
  return process.memoryUsage().heapUsed;
}

/** Answers by kind, and the first few violations (to replay). */
class Verdicts {
  readonly statuses: Record<string, number> = {};
  readonly examples: string[] = [];
  violations = 0;
  seen(status: string): void {
    this.statuses[status] = (this.statuses[status] ?? 0) + 1;
  }
  violation(example: string): void {
    this.violations++;
    if (this.examples.length < 5) this.examples.push(example.slice(0, 400));
  }
}

const result = (target: string, n: number, v: Verdicts, before: number, started: number): TargetResult => ({
  target,
  inputs: n,
  serverErrors: v.statuses["500"] ?? 0,
  statuses: v.statuses,
  examples: v.examples,
  heapGrowth: Math.max(0, heap() - before),
  violations: v.violations,
  ms: performance.now() - started,
});

// ---------------------------------------------------------------------------------------------
// auth-proxy headers: only X-Auth-Request-* from the trusted address make an identity

const ROLES: RoleMapping = {
  clusters: {
    "*": { admin: ["ops"], viewer: ["dev"], namespaceEditors: [{ group: "team", namespaces: ["a"] }] },
  },
};
const USER_HEADERS = ["user", "email", "groups"] as const;

export async function fuzzProxyHeaders(n: number, seed: number): Promise<TargetResult> {
  const g = gen(seeded(seed));
  const app = await build({
    tokens: { admin: "fuzz-admin-token-0123456789", viewer: "fuzz-viewer-token-0123456789" },
    authenticators: [
      proxyAuthenticator({
        trusted: ["127.0.0.1"],
        headers: "x-auth-request",
        roles: ROLES,
        defaultClusterId: "c1",
      }),
    ],
    changeRate: { burst: 1e9, perMinute: 1e9 },
    plugins: [
      (s) => {
        s.put("/api/v1/clusters/:id/change", { config: { role: "admin" } }, () => ({ ok: true }));
      },
    ],
  });
  const value = (): string =>
    g.chance(0.5)
      ? g.pick(["ops", "dev", "team", "ops,dev", " ops ", "", ",", "OPS", "ops\t"])
      : JSON.stringify(g.value());
  const v = new Verdicts();
  const before = heap();
  const started = performance.now();
  for (let i = 0; i < n; i++) {
    const headers: Record<string, string> = {};
    for (const family of ["x-auth-request", "x-forwarded"])
      for (const h of USER_HEADERS)
        if (g.chance(0.5)) headers[`${family}-${h}`] = value().replace(/[\r\n]/g, "");
    const from = g.chance(0.7) ? "127.0.0.1" : g.pick(["10.0.0.1", "::1", "127.0.0.2"]);
    const r = await app.inject({
      method: "PUT",
      url: "/api/v1/clusters/c1/change",
      headers,
      remoteAddress: from,
    });
    v.seen(String(r.statusCode));
    // The oracle: the family's own headers, from the trusted address, decide alone.
    const at = (h: string): string | undefined => headers[`x-auth-request-${h}`]?.trim() || undefined;
    const who = at("email") ?? at("user");
    const groups = (at("groups") ?? "")
      .split(",")
      .map((s) => s.trim())
      .filter((s) => s !== "");
    const role =
      who === undefined || from !== "127.0.0.1" ? undefined : roleInCluster(ROLES, "c1", groups)?.role;
    const want = who === undefined || from !== "127.0.0.1" ? 401 : role === "admin" ? 200 : 403;
    if (r.statusCode !== want)
      v.violation(`from ${from} ${JSON.stringify(headers)}: ${r.statusCode}, want ${want}`);
  }
  await app.close();
  return result("proxy-headers", n, v, before, started);
}

// ---------------------------------------------------------------------------------------------
// hostile names in every copyable command, pasted into bash: argv intact, nothing else runs

const SHELL_CHARS = [
  "$",
  "(",
  ")",
  "`",
  ";",
  "'",
  '"',
  "\n",
  " ",
  "|",
  "&",
  "<",
  ">",
  "*",
  "?",
  "~",
  "#",
  "{",
  "}",
  "\\",
  "!",
  "%",
  "-",
  "a",
  "0",
  ".",
  "=",
  "\t",
];

export function fuzzCopyableCommands(n: number, seed: number): TargetResult {
  const g = gen(seeded(seed));
  const dir = mkdtempSync(join(tmpdir(), "wave-fuzz-paste-"));
  const sentinel = join(dir, "ran");
  const argvFile = join(dir, "argv");
  const hostile = (): string =>
    g.chance(0.2)
      ? g.pick([
          `$(touch ${sentinel})`,
          `\`touch ${sentinel}\``,
          `x; touch ${sentinel}`,
          `'; touch ${sentinel}; '`,
        ])
      : Array.from({ length: 1 + g.int(12) }, () =>
          g.chance(0.1) ? `touch ${sentinel}` : g.pick(SHELL_CHARS),
        ).join("");
  const pool = {
    metadata: { name: "p" },
    spec: { disruption: { consolidateAfter: "Never", budgets: [{ nodes: "0" }] } },
  } as unknown as NodePool;
  const reasons = BlockerReasonSchema.anyOf.map((s) => s.const);
  const v = new Verdicts();
  const before = heap();
  const started = performance.now();
  const lines: string[] = [];
  const expected: string[][] = [];
  for (let i = 0; i < n; i++) {
    const name = hostile();
    if (g.chance(0.5)) {
      const reason = g.pick(reasons);
      const ns = g.chance(0.5) ? hostile() : null;
      const object = { kind: ns === null ? "NodePool" : "Pod", namespace: ns, name };
      const blocker = {
        reason,
        blocking: true,
        waiting: false,
        message: "",
        object,
        pods: [],
        until: null,
        source: "state" as const,
        fix: null,
      };
      const fix = blockerFix(blocker, { pool, node: undefined, version: "1.2.0" });
      if (!fix?.kubectl || !fix.target || !fix.patch) {
        v.seen("no-command");
        continue;
      }
      v.seen("consolidation");
      lines.push(fix.kubectl);
      const t = fix.target;
      expected.push([
        "patch",
        t.kind.toLowerCase(),
        t.name,
        ...(t.namespace ? ["-n", t.namespace] : []),
        "--type",
        "merge",
        "-p",
        JSON.stringify(fix.patch),
      ]);
    } else {
      const patch = { spec: { disruption: { consolidateAfter: hostile() } } };
      const report = {
        nodePool: name,
        severity: "high",
        advice: [{ id: "x", title: "t", detail: "", patch }],
      };
      const [dto] = thrashingFixDtos([report as unknown as ThrashingReport], false);
      v.seen("thrashing");
      lines.push(dto?.fixes[0]?.kubectl ?? "");
      expected.push(["patch", "nodepool", name, "--type", "merge", "-p", JSON.stringify(patch)]);
    }
  }
  // One bash, a kubectl on PATH's place (a function: the same parsing, no fork per line).
  const stub = `kubectl() { for a in "$@"; do printf '%s\\0' "$a"; done >> ${JSON.stringify(argvFile)}; printf '\\001\\0' >> ${JSON.stringify(argvFile)}; }\n`;
  const r = spawnSync("bash", [], {
    input: stub + lines.map((l) => `${l}\n`).join(""),
    env: { PATH: "/usr/bin:/bin", HOME: dir },
    encoding: "utf8",
  });
  if (r.status !== 0) v.violation(`bash exited ${String(r.status)}: ${r.stderr}`);
  if (existsSync(sentinel)) v.violation("a pasted line ran a command");
  const runs = existsSync(argvFile) ? readFileSync(argvFile, "utf8").split("\u0001\0").slice(0, -1) : [];
  for (const [i, want] of expected.entries()) {
    const got = (runs[i] ?? "").split("\0").slice(0, -1);
    if (JSON.stringify(got) !== JSON.stringify(want))
      v.violation(`${lines[i] ?? ""} → ${JSON.stringify(got)}`);
  }
  if (runs.length !== expected.length)
    v.violation(`${runs.length} kubectl runs for ${expected.length} lines`);
  rmSync(dir, { recursive: true, force: true });
  return result("copyable-commands", n, v, before, started);
}

// ---------------------------------------------------------------------------------------------
// every route that lists across clusters shows the caller only the clusters it has a role in

const CLUSTERS = ["fz-alpha", "fz-bravo", "fz-charlie", "fz-delta"];
const GROUPS = ["g-alpha", "g-bravo", "g-charlie", "g-delta", "g-all", "g-none"];
/** Routes without a cluster that act on core's own one (authorized for it like any cluster route). */
const OWN_CLUSTER_ONLY = /^\/api\/v1\/(policies|whoami)\b/;

async function listingCore(
  dir: string,
): Promise<{ app: FastifyInstance; roles: RoleMapping; close: () => Promise<void> }> {
  const clusters: Record<string, RoleMapping["clusters"][string]> = {
    "*": { admin: ["g-all"], viewer: [], namespaceEditors: [] },
  };
  for (const [i, id] of CLUSTERS.entries())
    clusters[id] = {
      admin: ["g-all"],
      viewer: [GROUPS[i] ?? ""],
      namespaceEditors: [{ group: "g-bravo", namespaces: ["x"] }],
    };
  const rolesFile = join(dir, "roles.json");
  await writeFile(rolesFile, JSON.stringify({ clusters }));
  const { config } = parseConfig([], {
    WAVE_CLUSTER_ID: "fz-alpha",
    WAVE_AUTH_ROLES: rolesFile,
    WAVE_AUTH_PROXY_TRUSTED: "127.0.0.1",
  });
  const clock = new FakeClock(Date.UTC(2026, 5, 1));
  const store = await openStore(
    { backend: "sqlite", path: ":memory:" },
    { log: silentLogger, now: () => clock.now() },
  );
  const hub = new ClusterHub(store, clock);
  for (const id of CLUSTERS) {
    await connectTestCluster(hub, clock.now(), { clusterId: id, sessionId: id });
    await deliverSnapshot(hub, clock.now(), [nodePool("general")], { clusterId: id, sessionId: id });
  }
  const metrics = new Registry();
  dashboardMetrics({ metrics, hub, prices: new KwokPriceProvider(), store, clock });
  const app = await coreApi({
    config,
    tokens: { admin: "fuzz-admin-token-0123456789", viewer: "fuzz-viewer-token-0123456789" },
    hub,
    store,
    prices: new KwokPriceProvider(),
    clock,
    metrics,
    warmupTotals: () => ({ hits: 0, misses: 0, timeSavedSeconds: 0 }),
    onPolicyChange: () => Promise.resolve(),
  });
  const close = async (): Promise<void> => {
    await app.close();
    await store.close();
  };
  return { app, roles: { clusters }, close };
}

/** Every GET without a cluster in its path (from the OpenAPI document), and /metrics. */
async function listRoutes(app: FastifyInstance): Promise<string[]> {
  const doc = (
    await app.inject({
      url: "/openapi.json",
      headers: { authorization: "Bearer fuzz-admin-token-0123456789" },
    })
  ).json<{
    paths: Record<string, Record<string, unknown>>;
  }>();
  const paths = Object.entries(doc.paths)
    .filter(([p, ops]) => "get" in ops && !p.includes("{") && !OWN_CLUSTER_ONLY.test(p))
    .map(([p]) => p);
  return [...paths, "/metrics"];
}

export async function fuzzClusterLists(n: number, seed: number): Promise<TargetResult> {
  const g = gen(seeded(seed));
  const dir = await mkdtemp(join(tmpdir(), "wave-fuzz-lists-"));
  const core = await listingCore(dir);
  const routes = await listRoutes(core.app);
  const v = new Verdicts();
  const before = heap();
  const started = performance.now();
  for (let i = 0; i < n; i++) {
    const route = g.pick(routes);
    const groups = GROUPS.filter(() => g.chance(0.3));
    const headers = { "x-auth-request-user": `u${i}`, "x-auth-request-groups": groups.join(",") };
    const r = await core.app.inject({ url: route, headers });
    v.seen(String(r.statusCode));
    const mayDefault = roleInCluster(core.roles, "fz-alpha", groups) !== undefined;
    if (!mayDefault) {
      if (r.statusCode !== 403) v.violation(`${route} groups=${groups.join(",")}: ${r.statusCode}, want 403`);
      continue;
    }
    for (const id of CLUSTERS) {
      const may = roleInCluster(core.roles, id, groups) !== undefined;
      const shown = r.body.includes(`"${id}"`) || r.body.includes(`cluster="${id}"`);
      if (shown !== may)
        v.violation(`${route} groups=${groups.join(",")}: ${id} ${shown ? "shown" : "missing"}`);
    }
  }
  await core.close();
  await rm(dir, { recursive: true, force: true });
  return result("cluster-lists", n, v, before, started);
}
