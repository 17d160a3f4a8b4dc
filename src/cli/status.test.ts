// `wave status` through a real core: `wave start` on the embedded simulated cluster, the command
// run as the CLI runs it (main.ts's run), reading core's API over HTTP. Its figures are the API's
// own (the console's), its policies those core lists, in every output format; exit codes as
// errors.ts says; listed in `wave --help` and the completion script.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { parse } from "yaml";
import type { OverviewDto, SpotPolicySetDto, WarmupPolicyDto } from "../dashboard/dto.ts";
import { startSimulatedWave, type SimulatedWave } from "../../test/support/wave.ts";
import { run, type Io } from "./main.ts";
import type { ClusterStatus } from "./status.ts";
import { EXIT } from "./errors.ts";

const CLUSTER = "status";
let sw: SimulatedWave;

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

async function status(...extra: string[]): Promise<{ code: number; out: string; err: string }> {
  const io = capture();
  const url = sw.w.url.replace(/\/$/, "");
  const code = await run(
    ["status", "--server", url, "--viewer-token", sw.w.tokens.viewer, "--cluster-id", CLUSTER, ...extra],
    io,
  );
  return { code, out: io.stdout.join(""), err: io.stderr.join("") };
}

async function api<T>(path: string): Promise<T> {
  const res = await fetch(new URL(`api/v1/clusters/${CLUSTER}/${path}`, sw.w.url), {
    headers: { authorization: `Bearer ${sw.w.tokens.viewer}` },
  });
  assert.equal(res.status, 200);
  return (await res.json()) as T;
}

before(async () => {
  sw = await startSimulatedWave("status-test", CLUSTER, { simulatedHistoryMs: 5 * 60_000 });
});
after(() => sw.stop());

describe("wave status", { timeout: 180_000 }, () => {
  it("prints the API's figures and every policy's target vs actual, as JSON", async () => {
    const before = await api<OverviewDto>("overview");
    const r = await status("-o", "json");
    const after = await api<OverviewDto>("overview");
    assert.equal(r.code, 0, r.err);
    const st = JSON.parse(r.out) as ClusterStatus;
    assert.equal(st.clusterId, CLUSTER);
    assert.equal(st.nodePools, after.nodePools);
    // The live cluster moves between reads: the status's figures are the API's at its moment.
    for (const [k, v] of [
      ["nodes", st.nodes],
      ["costPerHour", st.costPerHour],
      ["pendingPods", st.pendingPods],
    ] as const) {
      const lo = Math.min(before[k], after[k]);
      const hi = Math.max(before[k], after[k]);
      assert.ok(v >= lo && v <= hi, `${k} ${v} within [${lo}, ${hi}]`);
    }
    assert.ok(st.spotRatio >= 0 && st.spotRatio <= 1);
    assert.equal(typeof st.blockedCostPerHour, "number");
    const spot = await api<SpotPolicySetDto>("policies/spot");
    assert.deepEqual(
      st.spot.map((s) => s.workload).sort(),
      spot.policies
        .map((p) => `${p.workload.kind.toLowerCase()}/${p.workload.namespace}/${p.workload.name}`)
        .sort(),
    );
    for (const s of st.spot) assert.ok(s.target, `${s.workload} has a target`);
    const warm = await api<WarmupPolicyDto[]>("policies/warmup");
    assert.deepEqual(
      st.warmup.map((w) => w.nodePool).sort(),
      warm
        .filter((w) => w.policy.enabled)
        .map((w) => w.nodePool)
        .sort(),
    );
  });

  it("prints tables by default in a terminal-less -o table, and YAML", async () => {
    const t = await status("-o", "table");
    assert.equal(t.code, 0, t.err);
    assert.match(
      t.out,
      /^CLUSTER\s+NODES\s+POOLS\s+COST\/H\s+COST\/MONTH\s+SPOT\s+PENDING\s+WARM\s+BLOCKED\n/,
    );
    assert.match(t.out, /SPOT POLICY\s+POLICY\s+PODS\s+TARGET OD\/SPOT\s+ACTUAL OD\/SPOT/);
    assert.match(t.out, /deployment\/shop\/api\s+base 3 Prefer/);
    assert.match(t.out, /WARMUP POLICY\s+MAX-WARM\s+WARM NOW\s+STATE\n[\s\S]*\ngeneral\s+1\s/);
    const y = await status("-o", "yaml");
    assert.equal((parse(y.out) as ClusterStatus).clusterId, CLUSTER);
  });

  it("exits 4 on a refused token, 3 when core does not answer, 2 on a bad -o", async () => {
    const io = capture();
    const url = sw.w.url.replace(/\/$/, "");
    assert.equal(
      await run(["status", "--server", url, "--viewer-token", "x".repeat(40), "--cluster-id", CLUSTER], io),
      EXIT.refused,
    );
    assert.equal(
      await run(
        [
          "status",
          "--server",
          "http://127.0.0.1:9",
          "--viewer-token",
          "x".repeat(40),
          "--cluster-id",
          CLUSTER,
        ],
        capture(),
      ),
      EXIT.unreachable,
    );
    assert.equal((await status("-o", "xml")).code, EXIT.usage);
  });

  it("is listed in wave --help and the completion script", async () => {
    const help = capture();
    assert.equal(await run(["--help"], help), 0);
    assert.match(help.stdout.join(""), /\n {2}status +the cluster's figures/);
    const comp = capture();
    assert.equal(await run(["completion", "bash"], comp), 0);
    assert.match(comp.stdout.join(""), /status\) words="--server --output/);
  });
});
