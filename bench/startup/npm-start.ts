// `wave start` as a newcomer runs it (after `npm run build:ui`): the time from spawning the process
// to the first full dashboard — the overview priced and a day of history in the series the
// console's 24 h chart asks for — polled through the API with the printed viewer token, every
// 100 ms (the cluster list while the past day is generated, then the overview and the series).
// `node bench/startup/npm-start.ts [runs]`; prints one line per run and the load average.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { ClusterDto, OverviewDto, SeriesDto } from "../../src/dashboard/dto.ts";

const repo = fileURLToPath(new URL("../..", import.meta.url));
const DAY = 86_400_000;
const runs = Number(process.argv[2] ?? 1) || 1;

async function once(): Promise<{ urlMs: number; fullMs: number; firstPointAgoH: number }> {
  // A --data-dir of its own would keep history across runs; a fresh one per run is a first start.
  const dataDir = mkdtempSync(join(tmpdir(), "wave-npm-start-"));
  const t0 = performance.now();
  const child = spawn(
    process.execPath,
    ["bin/wave.ts", "start", "--port", "0", "--grpc-port", "0", "--data-dir", dataDir, "--log-level", "warn"],
    { cwd: repo, env: { ...process.env, KUBECONFIG: "", WAVE_VIEWER_TOKEN: "" } },
  );
  let out = "";
  child.stdout.on("data", (d: Buffer) => (out += d.toString()));
  const exited = new Promise((r) => child.once("exit", r));
  try {
    let url: { base: string; token: string } | undefined;
    let urlMs = 0;
    for (;;) {
      const m = /Dashboard: (http:\/\/\S+?)\/#token=(\S+)/.exec(out);
      if (m) {
        url = { base: m[1] ?? "", token: m[2] ?? "" };
        urlMs = performance.now() - t0;
        break;
      }
      if (child.exitCode !== null || performance.now() - t0 > 120_000) throw new Error(`no URL: ${out}`);
      await new Promise((r) => setTimeout(r, 20));
    }
    const get = async <T>(path: string): Promise<T> => {
      const res = await fetch(`${url.base}/api/v1/clusters/default/${path}`, {
        headers: { authorization: `Bearer ${url.token}` },
      });
      if (!res.ok) throw new Error(`${path}: ${res.status}`);
      return (await res.json()) as T;
    };
    // While the past day is generated the API says so (catchingUp); polled cheaply every 100 ms
    // until it is done, so the dashboard's full queries (a day of series) do not slow the start.
    for (;;) {
      const clusters = await fetch(`${url.base}/api/v1/clusters`, {
        headers: { authorization: `Bearer ${url.token}` },
      })
        .then((r) => (r.ok ? (r.json() as Promise<ClusterDto[]>) : []))
        .catch(() => []);
      const c = clusters.find((x) => x.id === "default");
      if (c && c.catchingUp === null) break;
      if (child.exitCode !== null || performance.now() - t0 > 300_000)
        throw new Error("still catching up after 300 s");
      await new Promise((r) => setTimeout(r, 100));
    }
    for (;;) {
      const [overview, series] = await Promise.all([
        get<OverviewDto>("overview"),
        get<SeriesDto>("series?window=86400"),
      ]).catch(() => [undefined, undefined] as const);
      const now = Date.now();
      const withNodes = series?.points.filter((p) => p.nodes > 0) ?? [];
      const first = withNodes[0]?.t ?? now;
      const last = withNodes.at(-1)?.t ?? 0;
      // A day: the first point within 5 minutes of the window's start, the last of the last minutes.
      if (overview && overview.costPerHour > 0 && first <= now - DAY + 5 * 60_000 && last >= now - 3 * 60_000)
        return { urlMs, fullMs: performance.now() - t0, firstPointAgoH: (now - first) / 3_600_000 };
      if (performance.now() - t0 > 300_000) throw new Error("no full dashboard within 300 s");
      // The last minutes stream through the agent: a tenth of a second between full checks.
      await new Promise((r) => setTimeout(r, 100));
    }
  } finally {
    child.kill("SIGINT");
    await exited;
    rmSync(dataDir, { recursive: true, force: true });
  }
}

for (let i = 0; i < runs; i++) {
  const before = loadavg()[0] ?? 0;
  const r = await once();
  console.log(
    `run ${i + 1}: URL printed ${(r.urlMs / 1000).toFixed(1)} s, first full dashboard (24 h history, ` +
      `first point ${r.firstPointAgoH.toFixed(2)} h ago) ${(r.fullMs / 1000).toFixed(1)} s; ` +
      `load average ${before.toFixed(2)} → ${(loadavg()[0] ?? 0).toFixed(2)}`,
  );
}
