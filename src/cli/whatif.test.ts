import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DEFAULT_POLICY } from "../policy/warmup.ts";
import type { ReplayResult } from "../sim/replay.ts";
import { WorkloadError } from "../sim/workload.ts";
import { UsageError } from "./errors.ts";
import { run } from "./main.ts";
import { candidatePolicy } from "../sim/replay.ts";
import {
  GENERATED_CURRENT,
  checkTargets,
  formatReport,
  parseCandidate,
  parseWhatifFlags,
  recordedPolicy,
  type WhatifReport,
} from "./whatif.ts";
import { captureIo as capture } from "../../test/support/io.ts";

function usage(fn: () => unknown, part: string | RegExp): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof UsageError, `a UsageError, got ${String(err)}`);
    if (typeof part === "string")
      assert.ok(err.message.includes(part), `"${err.message}" mentions "${part}"`);
    else assert.match(err.message, part);
    return true;
  });
}

const api = "deployment/shop/api";
const spotCand = (threshold: number, strategy = "prefer") =>
  parseCandidate(["spot", api], { threshold: String(threshold), strategy });

describe("parseCandidate", () => {
  it("takes wave spot set's target and flags: threshold, strategy (default Prefer), percent above base", () => {
    const c = parseCandidate(["spot", "Deployment/shop/web"], {
      threshold: "2",
      strategy: "require",
      "percent-above-base": "50",
    });
    const web = {
      workload: { kind: "Deployment", namespace: "shop", name: "web" },
      threshold: 2,
      strategy: "Require",
      percentAboveBase: 50,
    };
    assert.deepEqual(c.spot, [web]);
    assert.deepEqual(c.body, { spot: [web] });
    assert.equal(parseCandidate(["spot", api], { threshold: "0" }).spot[0]?.strategy, "Prefer");
  });

  it("takes wave warmup set's pool and flags (seconds, over Wave's defaults)", () => {
    const c = parseCandidate(["warmup", "general"], { "max-warm-nodes": "2", ttl: "900", cooldown: "90" });
    assert.deepEqual(c.warmup.general, {
      ...DEFAULT_POLICY,
      enabled: true,
      maxWarmNodes: 2,
      ttlSeconds: 900,
      cooldownSeconds: 90,
    });
    assert.deepEqual(c.body, {
      warmup: { general: { enabled: true, maxWarmNodes: 2, ttlSeconds: 900, cooldownSeconds: 90 } },
    });
    assert.equal(parseCandidate(["warmup", "gpu"], { disable: true }).warmup.gpu?.enabled, false);
  });

  it("rejects what core's API would reject, naming the rule", () => {
    usage(() => parseCandidate([], {}), "name the candidate");
    usage(() => parseCandidate(["spot", api], {}), "--threshold N is required");
    usage(() => parseCandidate(["spot", "pod/shop/api"], { threshold: "1" }), "kind/namespace/name");
    usage(() => parseCandidate(["spot", api], { threshold: "-1" }), "--threshold expects a whole number");
    usage(() => parseCandidate(["spot", api], { threshold: "1", strategy: "maybe" }), "--strategy must be");
    usage(
      () => parseCandidate(["spot", api], { threshold: "1", "percent-above-base": "101" }),
      "percentAboveBase: must be an integer 0–100",
    );
    usage(() => parseCandidate(["spot", "deployment/SHOP/api"], { threshold: "1" }), "workload.namespace");
    usage(() => parseCandidate(["warmup"], {}), "name the NodePool");
    usage(() => parseCandidate(["warmup", "a"], { ttl: "5" }), "ttlSeconds: expected an integer from 30");
    usage(() => parseCandidate(["warmup", "a"], { ttl: "10m" }), "--ttl expects a whole number");
    usage(() => parseCandidate(["warmup", "a", "b"], {}), 'unexpected "b"');
  });
});

describe("parseWhatifFlags", () => {
  it("defaults to the connected cluster: 24 h window, its own interruption rate, 60 s boot, seed 7", () => {
    const plan = parseWhatifFlags(["spot", api], { threshold: "0" });
    assert.equal(plan.source, "cluster");
    assert.equal(plan.windowMs, 24 * 3_600_000);
    assert.equal(plan.spotInterruptionRate, undefined);
    assert.equal(plan.bootDelayMs, 60_000);
    assert.equal(plan.seed, 7);
    assert.equal(parseWhatifFlags(["spot", api], { threshold: "0", window: "90m" }).windowMs, 90 * 60_000);
  });

  it("offline (--scenario or --workload): 1 h, aws catalog, 0.02 interruptions", () => {
    const plan = parseWhatifFlags(["spot", api], { threshold: "0", scenario: true });
    assert.deepEqual(
      [plan.source, plan.durationMs, plan.workloadFile, plan.catalog, plan.spotInterruptionRate],
      ["offline", 3_600_000, undefined, "aws", 0.02],
    );
    const other = parseWhatifFlags(["warmup", "general"], {
      duration: "90m",
      catalog: "kwok",
      "boot-delay": "5s",
      "spot-interruption-rate": "0",
      seed: "42",
      json: true,
      workload: "w.json",
    });
    assert.equal(other.durationMs, 90 * 60_000);
    assert.equal(other.catalog, "kwok");
    assert.equal(other.bootDelayMs, 5000);
    assert.equal(other.spotInterruptionRate, 0);
    assert.equal(other.seed, 42);
    assert.equal(other.json, true);
    assert.equal(other.workloadFile, "w.json");
  });

  it("rejects bad flags with one line each", () => {
    const f = (flags: Record<string, string | boolean>) => () =>
      parseWhatifFlags(["spot", api], { threshold: "0", ...flags });
    usage(f({ scenario: true, duration: "soon" }), "--duration expects a duration");
    usage(f({ scenario: true, duration: "0s" }), "--duration expects a duration");
    usage(f({ scenario: true, duration: "25h" }), "at most 24h");
    usage(f({ window: "25h" }), "--window expects a duration");
    usage(f({ duration: "1h" }), "--duration is for --scenario or --workload");
    usage(f({ scenario: true, window: "1h" }), "--window is for the connected cluster");
    usage(f({ scenario: true, workload: "w.json" }), "--scenario and --workload");
    usage(f({ "boot-delay": "2h" }), "--boot-delay expects a duration");
    usage(f({ scenario: true, catalog: "gcp" }), "--catalog must be aws or kwok");
    usage(f({ "spot-interruption-rate": "often" }), "--spot-interruption-rate");
    usage(f({ "spot-interruption-rate": "-1" }), "--spot-interruption-rate");
    usage(f({ seed: "1.5" }), "--seed expects a whole number");
    usage(f({ workload: " " }), "--workload needs a value");
  });
});

describe("candidatePolicy and checkTargets", () => {
  it("replaces the current policy's entries for the same workload or pool and keeps the rest", () => {
    const current = {
      spot: [
        ...GENERATED_CURRENT.spot,
        {
          workload: { kind: "Deployment" as const, namespace: "shop", name: "web" },
          threshold: 1,
          strategy: "Prefer" as const,
        },
      ],
      warmup: { gpu: { ...DEFAULT_POLICY, enabled: true } },
    };
    const plan = {
      spot: spotCand(0, "require").spot,
      warmup: parseCandidate(["warmup", "general"], {}).warmup,
    };
    const c = candidatePolicy(current, plan);
    assert.deepEqual(
      c.spot.map((p) => [p.workload.name, p.threshold, p.strategy]),
      [
        ["api", 0, "Require"],
        ["web", 1, "Prefer"],
      ],
    );
    assert.deepEqual(Object.keys(c.warmup).sort(), ["general", "gpu"]);
    assert.equal(current.spot[0]?.threshold, 3, "the current policy is not modified");
  });

  it("names what the workload has when a candidate targets something it does not", () => {
    const wl = { deployments: ["shop/api", "shop/web"], pools: ["general"] };
    assert.doesNotThrow(() =>
      checkTargets({ spot: spotCand(1).spot, warmup: parseCandidate(["warmup", "general"], {}).warmup }, wl),
    );
    usage(
      () =>
        checkTargets(
          { spot: parseCandidate(["spot", "deployment/shop/apl"], { threshold: "1" }).spot, warmup: {} },
          wl,
        ),
      "spot: the workload has no deployment/shop/apl (deployments: deployment/shop/api, deployment/shop/web)",
    );
    usage(
      () =>
        checkTargets(
          { spot: parseCandidate(["spot", "statefulset/shop/api"], { threshold: "1" }).spot, warmup: {} },
          wl,
        ),
      "no statefulset/shop/api",
    );
    usage(
      () => checkTargets({ spot: [], warmup: parseCandidate(["warmup", "gpu"], {}).warmup }, wl),
      "warmup: the workload has no NodePool gpu (NodePools: general)",
    );
  });
});

describe("recordedPolicy", () => {
  it("reads a recorded workload's current spot and warmup policies", () => {
    const p = recordedPolicy({
      policies: {
        spot: [
          {
            workload: { kind: "Deployment", namespace: "shop", name: "api" },
            threshold: 2,
            strategy: "Prefer",
          },
        ],
        warmup: { general: { enabled: true, maxWarmNodes: 2 } },
      },
    });
    assert.equal(p.spot[0]?.threshold, 2);
    assert.deepEqual(p.warmup.general, { ...DEFAULT_POLICY, enabled: true, maxWarmNodes: 2 });
    assert.deepEqual(recordedPolicy({}), { spot: [], warmup: {} });
  });

  it("rejects bad policies with their path", () => {
    const bad = (policies: unknown, part: string): void =>
      assert.throws(
        () => recordedPolicy({ policies }),
        (err: unknown) => err instanceof WorkloadError && err.message.includes(part),
      );
    bad([], "policies: expected { spot");
    bad({ spot: [{ threshold: 1 }] }, "policies.spot: policies[0].workload: must be an object");
    bad({ warmup: [] }, "policies.warmup: expected an object");
    bad({ warmup: { general: { ttlSeconds: 1 } } }, "policies.warmup.general: ttlSeconds");
  });
});

function result(costPerHour: number, p50: number, p95: number, count: number): ReplayResult {
  return {
    durationMs: 3_600_000,
    costPerHour,
    nodeHours: { spot: 3, onDemand: 1 },
    pools: {},
    timeline: [],
    podStartHistogram: [],
    nodeClaimsCreated: 5,
    podStart: { count, p50Ms: p50, p95Ms: p95, maxMs: p95 },
    podStartByDeployment: count === 0 ? {} : { "shop/api": { count, p50Ms: p50, p95Ms: p95, maxMs: p95 } },
    pendingAtEnd: count === 0 ? 4 : 0,
    spotInterruptions: 1,
    preemptions: 0,
    spotShare: 0.75,
    end: { costPerHour, nodes: { spot: 1, onDemand: 1 }, pools: {}, byDeployment: {} },
  };
}

function report(current: ReplayResult, candidate: ReplayResult): WhatifReport {
  return {
    workload: "generated workload",
    durationMs: 3_600_000,
    catalog: "aws",
    bootDelayMs: 60_000,
    seed: 7,
    current: { policy: GENERATED_CURRENT, result: current },
    candidate: {
      policy: { spot: spotCand(0).spot, warmup: parseCandidate(["warmup", "general"], {}).warmup },
      result: candidate,
    },
  };
}

describe("formatReport", () => {
  it("puts cost and pod start latency side by side with the change", () => {
    const text = formatReport(report(result(2, 4000, 62_000, 40), result(1.5, 2000, 31_000, 40)));
    const row = (label: string): string[] =>
      (text.split("\n").find((l) => l.startsWith(label)) ?? "")
        .slice(label.length)
        .trim()
        .split(/\s{2,}/);
    assert.deepEqual(row("cost/h (average)"), ["$2.000", "$1.500", "-25.0 %"]);
    assert.deepEqual(row("cost/month (730 h)"), ["$1460", "$1095", "-$365"]);
    assert.deepEqual(row("pod start p50"), ["4.0 s", "2.0 s", "-50.0 %"]);
    assert.deepEqual(row("pod start p95"), ["62.0 s", "31.0 s", "-50.0 %"]);
    assert.deepEqual(row("shop/api"), ["4.0 s", "62.0 s", "2.0 s", "31.0 s", "40/40"]);
    assert.match(text, /^current: {3}spot deployment\/shop\/api=3:Prefer; warmup none$/m);
    assert.match(
      text,
      /^candidate: spot deployment\/shop\/api=0:Prefer; warmup general \(max 1 warm, ttl 600s\)$/m,
    );
  });

  it("shows no latency (not 0 s) for a run in which no pod started", () => {
    const text = formatReport(report(result(1, 0, 0, 0), result(1, 3000, 3000, 4)));
    const p50 = text.split("\n").find((l) => l.startsWith("pod start p50")) ?? "";
    assert.deepEqual(
      p50
        .slice("pod start p50".length)
        .trim()
        .split(/\s{2,}/),
      ["—", "3.0 s"],
    );
    assert.match(text, /^pods pending at end\s+4\s+0$/m);
  });
});

describe("wave whatif", () => {
  let dir = "";
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "wave-whatif-"));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const workload = {
    nodePools: [
      {
        apiVersion: "karpenter.sh/v1",
        kind: "NodePool",
        metadata: { name: "pool" },
        spec: {
          template: {
            spec: {
              requirements: [
                { key: "karpenter.sh/capacity-type", operator: "In", values: ["spot", "on-demand"] },
                { key: "karpenter.kwok.sh/instance-cpu", operator: "In", values: ["4"] },
              ],
            },
          },
        },
      },
    ],
    deployments: [
      {
        apiVersion: "apps/v1",
        kind: "Deployment",
        metadata: { name: "api", namespace: "shop" },
        spec: {
          replicas: 2,
          selector: { matchLabels: { app: "api" } },
          template: {
            metadata: { labels: { app: "api" } },
            spec: { containers: [{ name: "api", image: "api:1", resources: { requests: { cpu: "1" } } }] },
          },
        },
      },
    ],
    steps: [{ at: "2m", deployment: "shop/api", replicas: 5 }],
  };

  it("replays a recorded workload under both policies and prints the table, or JSON", async () => {
    const file = join(dir, "w.json");
    await writeFile(file, JSON.stringify(workload));
    const args = [
      "whatif",
      "--workload",
      file,
      "--catalog",
      "kwok",
      "--duration",
      "5m",
      "--boot-delay",
      "10s",
    ];
    const io = capture();
    assert.equal(
      await run(["whatif", "spot", api, "--threshold", "2", "--strategy", "require", ...args.slice(1)], io),
      0,
      io.stderr.join(""),
    );
    const text = io.stdout.join("");
    assert.match(
      text,
      /^wave whatif: recorded workload .*w\.json, 5 min simulated, kwok catalog, node boot 10s, seed 7$/m,
    );
    assert.match(text, /^cost\/h \(average\)\s+\$\d\.\d{3}\s+\$\d\.\d{3}\s+\+\d+\.\d %$/m);
    assert.match(text, /^shop\/api\s/m);

    const json = capture();
    assert.equal(
      await run(
        ["whatif", "spot", api, "--threshold", "2", "--strategy", "require", ...args.slice(1), "--json"],
        json,
      ),
      0,
    );
    const r = JSON.parse(json.stdout.join("")) as WhatifReport;
    assert.equal(r.current.result.nodeHours.onDemand, 0);
    assert.ok(r.candidate.result.nodeHours.onDemand > 0, "the candidate's base runs on-demand");
    assert.equal(r.current.result.podStart.count, 5);
  });

  it("turns bad input into one line and exit code 2 (3 when core is unreachable)", async () => {
    const bad = join(dir, "bad.json");
    await writeFile(bad, "{ nope");
    const cases: [string[], string][] = [
      [["spot", api, "--threshold", "1", "--workload", join(dir, "missing.json")], "cannot read it (ENOENT)"],
      [["spot", api, "--threshold", "1", "--workload", bad], "not valid JSON"],
      [
        ["spot", "deployment/shop/nope", "--threshold", "1", "--scenario"],
        "the workload has no deployment/shop/nope",
      ],
      [
        ["spot", api, "--threshold", "1", "--scenario", "--catalog", "kwok", "--duration", "1m"],
        "no instance type of the kwok catalog satisfies their requirements",
      ],
      [
        ["spot", api, "--threshold", "1", "--server", "http://127.0.0.1:9", "--viewer-token", "t"],
        "cannot reach Wave core at http://127.0.0.1:9",
      ],
    ];
    for (const [argv, part] of cases) {
      const io = capture();
      const unreachable = argv.includes("http://127.0.0.1:9");
      assert.equal(await run(["whatif", ...argv], io), unreachable ? 3 : 2, argv.join(" "));
      assert.equal(io.stderr.length, 1);
      assert.ok(io.stderr[0]?.includes(part), `${io.stderr[0] ?? ""} mentions ${part}`);
    }
  });
});
