import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DEFAULT_POLICY } from "../warmup/policy.ts";
import type { ReplayResult } from "../sim/replay.ts";
import { WorkloadError } from "../sim/workload.ts";
import { UsageError } from "./errors.ts";
import { run, type Io } from "./main.ts";
import {
  GENERATED_CURRENT,
  candidatePolicy,
  checkTargets,
  formatReport,
  parseSpotThresholds,
  parseWarmupFlag,
  parseWhatifFlags,
  recordedPolicy,
  type WhatifReport,
} from "./whatif.ts";

function usage(fn: () => unknown, part: string | RegExp): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof UsageError, `a UsageError, got ${String(err)}`);
    if (typeof part === "string")
      assert.ok(err.message.includes(part), `"${err.message}" mentions "${part}"`);
    else assert.match(err.message, part);
    return true;
  });
}

describe("parseSpotThresholds", () => {
  it("parses several policies: threshold, strategy (default Prefer), percent above base", () => {
    assert.deepEqual(parseSpotThresholds("deployment/shop/api=5, Deployment/shop/web=2:require:50"), [
      { workload: { kind: "Deployment", namespace: "shop", name: "api" }, threshold: 5, strategy: "Prefer" },
      {
        workload: { kind: "Deployment", namespace: "shop", name: "web" },
        threshold: 2,
        strategy: "Require",
        percentAboveBase: 50,
      },
    ]);
    assert.deepEqual(parseSpotThresholds("deployment/shop/api=0:25")[0]?.percentAboveBase, 25);
  });

  it("rejects what core's API would reject, naming the item", () => {
    usage(() => parseSpotThresholds("deployment/shop/api"), "kind/namespace/name=N");
    usage(() => parseSpotThresholds("deployment/shop/api=-1"), "kind/namespace/name=N");
    usage(() => parseSpotThresholds("deployment/shop/api=1:Maybe"), "kind/namespace/name=N");
    usage(() => parseSpotThresholds("pod/shop/api=1"), "kind/namespace/name");
    usage(
      () => parseSpotThresholds("deployment/shop/api=1:prefer:101"),
      "percentAboveBase: must be an integer 0–100",
    );
    usage(
      () => parseSpotThresholds("deployment/shop/api=99999999999999999999"),
      "threshold: must be an integer",
    );
    usage(() => parseSpotThresholds("deployment/SHOP/api=1"), "workload.namespace: must be a namespace name");
    usage(
      () => parseSpotThresholds("deployment/shop/api=1,deployment/shop/api=2"),
      "names deployment/shop/api twice",
    );
  });
});

describe("parseWarmupFlag", () => {
  it("parses pools separated by semicolons, over Wave's defaults, enabled unless told", () => {
    const w = parseWarmupFlag("pool=general,maxWarmNodes=2,ttl=10m,cooldown=90s; pool=batch,disabled;");
    assert.deepEqual(w.general, {
      ...DEFAULT_POLICY,
      enabled: true,
      maxWarmNodes: 2,
      ttlSeconds: 600,
      cooldownSeconds: 90,
    });
    assert.equal(w.batch?.enabled, false);
    assert.equal(parseWarmupFlag("pool=a,maxCostPerHour=1.5").a?.maxCostPerHour, 1.5);
    assert.equal(parseWarmupFlag("pool=a,maxCostPerHour=none").a?.maxCostPerHour, null);
  });

  it("rejects bad specs with the rule that was broken", () => {
    usage(() => parseWarmupFlag("general"), "--warmup expects pool=NAME");
    usage(() => parseWarmupFlag("pool=Bad_Name"), "--warmup expects pool=NAME");
    usage(() => parseWarmupFlag("pool=a,warm=2"), 'unknown setting "warm=2" for pool a');
    usage(() => parseWarmupFlag("pool=a,ttl=5s"), "--warmup pool=a: ttlSeconds: expected an integer from 30");
    usage(() => parseWarmupFlag("pool=a,maxWarmNodes=lots"), "maxWarmNodes: expected an integer");
    usage(() => parseWarmupFlag("pool=a,maxCostPerHour=cheap"), "maxCostPerHour: expected a number");
    usage(() => parseWarmupFlag("pool=a;pool=a,disabled"), "names pool a twice");
  });
});

describe("parseWhatifFlags", () => {
  it("fills defaults: 1 h, embedded workload, aws catalog, 60 s boot, seed 7", () => {
    const plan = parseWhatifFlags({ "spot-threshold": "deployment/shop/api=0" });
    assert.deepEqual(
      { ...plan, spot: plan.spot.length },
      {
        durationMs: 3_600_000,
        workloadFile: undefined,
        catalog: "aws",
        bootDelayMs: 60_000,
        spotInterruptionRate: 0.02,
        seed: 7,
        json: false,
        spot: 1,
        warmup: {},
      },
    );
    const other = parseWhatifFlags({
      warmup: "pool=general",
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
    const spot = { "spot-threshold": "deployment/shop/api=0" };
    usage(() => parseWhatifFlags({}), "nothing to compare");
    usage(() => parseWhatifFlags({ ...spot, duration: "soon" }), "--duration expects a duration");
    usage(() => parseWhatifFlags({ ...spot, duration: "0s" }), "--duration expects a duration");
    usage(() => parseWhatifFlags({ ...spot, duration: "25h" }), "at most 24h");
    usage(() => parseWhatifFlags({ ...spot, duration: "Never" }), "--duration expects a duration");
    usage(() => parseWhatifFlags({ ...spot, "boot-delay": "2h" }), "--boot-delay expects a duration");
    usage(() => parseWhatifFlags({ ...spot, catalog: "gcp" }), "--catalog must be aws or kwok");
    usage(() => parseWhatifFlags({ ...spot, "spot-interruption-rate": "often" }), "--spot-interruption-rate");
    usage(() => parseWhatifFlags({ ...spot, "spot-interruption-rate": "-1" }), "--spot-interruption-rate");
    usage(() => parseWhatifFlags({ ...spot, seed: "1.5" }), "--seed expects a whole number");
    usage(() => parseWhatifFlags({ ...spot, workload: " " }), "--workload needs a value");
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
      spot: parseSpotThresholds("deployment/shop/api=0:Require"),
      warmup: parseWarmupFlag("pool=general"),
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
      checkTargets(
        { spot: parseSpotThresholds("deployment/shop/api=1"), warmup: parseWarmupFlag("pool=general") },
        wl,
      ),
    );
    usage(
      () => checkTargets({ spot: parseSpotThresholds("deployment/shop/apl=1"), warmup: {} }, wl),
      "the workload has no deployment/shop/apl (deployments: deployment/shop/api, deployment/shop/web)",
    );
    usage(
      () => checkTargets({ spot: parseSpotThresholds("statefulset/shop/api=1"), warmup: {} }, wl),
      "no statefulset/shop/api",
    );
    usage(
      () => checkTargets({ spot: [], warmup: parseWarmupFlag("pool=gpu") }, wl),
      "the workload has no NodePool gpu (NodePools: general)",
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
    nodeClaimsCreated: 5,
    podStart: { count, p50Ms: p50, p95Ms: p95, maxMs: p95 },
    podStartByDeployment: count === 0 ? {} : { "shop/api": { count, p50Ms: p50, p95Ms: p95, maxMs: p95 } },
    pendingAtEnd: count === 0 ? 4 : 0,
    spotInterruptions: 1,
    preemptions: 0,
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
      policy: { spot: parseSpotThresholds("deployment/shop/api=0"), warmup: parseWarmupFlag("pool=general") },
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

  function capture(): Io & { stdout: string[]; stderr: string[] } {
    const stdout: string[] = [];
    const stderr: string[] = [];
    return {
      stdout,
      stderr,
      out: (t) => stdout.push(t),
      err: (t) => stderr.push(t),
      env: {},
      signal: new AbortController().signal,
    };
  }

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
      await run([...args, "--spot-threshold", "deployment/shop/api=2:Require"], io),
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
      await run([...args, "--spot-threshold", "deployment/shop/api=2:Require", "--json"], json),
      0,
    );
    const r = JSON.parse(json.stdout.join("")) as WhatifReport;
    assert.equal(r.current.result.nodeHours.onDemand, 0);
    assert.ok(r.candidate.result.nodeHours.onDemand > 0, "the candidate's base runs on-demand");
    assert.equal(r.current.result.podStart.count, 5);
  });

  it("turns bad input into one line and exit code 2", async () => {
    const bad = join(dir, "bad.json");
    await writeFile(bad, "{ nope");
    const cases: [string[], string][] = [
      [
        ["--workload", join(dir, "missing.json"), "--spot-threshold", "deployment/shop/api=1"],
        "cannot read it (ENOENT)",
      ],
      [["--workload", bad, "--spot-threshold", "deployment/shop/api=1"], "not valid JSON"],
      [["--spot-threshold", "deployment/shop/nope=1"], "the workload has no deployment/shop/nope"],
      [
        ["--catalog", "kwok", "--duration", "1m", "--spot-threshold", "deployment/shop/api=1"],
        "no instance type of the kwok catalog satisfies their requirements",
      ],
    ];
    for (const [argv, part] of cases) {
      const io = capture();
      assert.equal(await run(["whatif", ...argv], io), 2, argv.join(" "));
      assert.equal(io.stderr.length, 1);
      assert.ok(io.stderr[0]?.includes(part), `${io.stderr[0] ?? ""} mentions ${part}`);
    }
  });
});
