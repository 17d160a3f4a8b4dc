// The README's run command on this checkout: `npm start` with ephemeral ports must, within 30 s,
// serve NodePools with nodes, a non-zero cost, a thrashing alert for the misconfigured pool, and
// history for the minutes the simulated cluster fast-forwarded through (once the fast-forward
// raced ahead of core: core still held the empty cluster the agent first listed, history recorded
// no nodes, and the console's first screen showed 0 nodes and no chart).
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { NodePoolDto, OverviewDto, SeriesDto, ThrashingDto } from "../../src/dashboard/dto.ts";
import { SIMULATED_HISTORY_MS } from "../../src/cli/start.ts";

const repo = fileURLToPath(new URL("../..", import.meta.url));

async function poll<T>(deadline: number, fn: () => Promise<T | undefined>): Promise<T | undefined> {
  for (;;) {
    const v = await fn().catch(() => undefined);
    if (v !== undefined || Date.now() > deadline) return v;
    await new Promise((r) => setTimeout(r, 500));
  }
}

describe("embedded default (npm start)", () => {
  it("shows pools with nodes, cost and a thrashing alert within 30 s", { timeout: 120_000 }, async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "wave-start-"));
    const child = spawn(
      "npm",
      ["start", "--", "--port", "0", "--grpc-port", "0", "--data-dir", dataDir, "--log-level", "warn"],
      { cwd: repo, env: { ...process.env, KUBECONFIG: "", WAVE_VIEWER_TOKEN: "" }, detached: true },
    );
    let out = "";
    let err = "";
    const exited = new Promise((r) => child.once("exit", r));
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr.on("data", (d: Buffer) => (err += d.toString()));
    try {
      const url = await poll(Date.now() + 90_000, () => {
        if (child.exitCode !== null) return Promise.resolve({ base: "", token: "" });
        const m = /Dashboard: (http:\/\/\S+?)\/#token=(\S+)/.exec(out);
        return Promise.resolve(m ? { base: m[1] ?? "", token: m[2] ?? "" } : undefined);
      });
      assert.ok(url?.base, `no dashboard URL printed.\nstdout: ${out}\nstderr: ${err.slice(-2000)}`);
      const started = Date.now();
      const get = async <T>(path: string): Promise<T> => {
        const res = await fetch(`${url.base}/api/v1/clusters/default/${path}`, {
          headers: { authorization: `Bearer ${url.token}` },
          signal: AbortSignal.timeout(5000),
        });
        if (!res.ok) throw new Error(`${path}: ${res.status}`);
        return (await res.json()) as T;
      };
      // A point a minute with nodes, for most of the fast-forwarded minutes (the first may
      // precede core's first snapshot, the last fall into the minute the clock caught up in).
      const minutes = SIMULATED_HISTORY_MS / 60_000;
      let series: SeriesDto | undefined;
      const seen = await poll(started + 30_000, async () => {
        const [pools, overview, thrashing, s] = await Promise.all([
          get<NodePoolDto[]>("nodepools"),
          get<OverviewDto>("overview"),
          get<ThrashingDto[]>("thrashing"),
          get<SeriesDto>(`series?window=${(SIMULATED_HISTORY_MS + 300_000) / 1000}`),
        ]);
        series = s;
        const ok =
          pools.some((p) => p.nodes > 0) &&
          overview.costPerHour > 0 &&
          thrashing.some((t) => t.nodePool === "batch" && t.flagged) &&
          s.points.filter((p) => p.nodes > 0).length >= minutes - 3;
        return ok ? { pools, overview, thrashing } : undefined;
      });
      assert.ok(
        seen,
        "within 30 s: pools with nodes, non-zero cost, a thrashing alert for 'batch' and " +
          `${minutes - 3}+ history points with nodes (series: ` +
          `${series?.points.map((p) => `${new Date(p.t).toISOString().slice(11, 16)}=${p.nodes}`).join(" ")})`,
      );
      // The misconfigured pool is the worst; spot interruptions and Wave's own churn elsewhere
      // may flag other pools lower (the report names their causes).
      assert.equal(seen.thrashing[0]?.nodePool, "batch", "the misconfigured pool is flagged worst");
    } finally {
      if (child.pid && child.exitCode === null) process.kill(-child.pid, "SIGINT");
      await exited;
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
