// "What if?" beside a policy editor's preview: core replays the cluster's last 24 h on the
// simulator under the current policies and under the draft (POST …/whatif, viewer role), and the
// result is shown side by side — cost/h, cost/month, spot share, pod start p50/p95, and where the
// edited workload's pods would run now.
import { useEffect, useRef, useState } from "react";
import type { WhatifProgressDto, WhatifReportDto, WhatifRequestDto } from "../../../src/dashboard/dto.ts";
import { runWhatif } from "../api.ts";
import type { PageCtx } from "../ctx.ts";
import { usd } from "../format.ts";
import { workloadNameOfKey } from "../../../src/policy/spot.ts";

const pct = (v: number): string => `${(v * 100).toFixed(0)} %`;
const sec = (s: WhatifReportDto["current"]["podStart"], pick: "p50Ms" | "p95Ms"): string =>
  s.count === 0 ? "—" : `${(s[pick] / 1000).toFixed(1)} s`;

/**
 * The result's rows, as `wave whatif` prints them (src/cli/whatif.ts formatClusterReport): cost/h,
 * cost/month, spot share, pod start p50/p95, cost/h now, the NodePools whose cost the candidate
 * changes, and where the workload's pods run now. The editors' button and the What-if page show
 * the same rows.
 */
export function whatifRows(r: WhatifReportDto, workload?: string): [string, string, string][] {
  const c = r.current;
  const k = r.candidate;
  const out: [string, string, string][] = [
    ["cost/h (average)", usd(c.costPerHour), usd(k.costPerHour)],
    ["cost/month", usd(c.costPerMonth), usd(k.costPerMonth)],
    ["spot share", pct(c.spotShare), pct(k.spotShare)],
    ["pod start p50", sec(c.podStart, "p50Ms"), sec(k.podStart, "p50Ms")],
    ["pod start p95", sec(c.podStart, "p95Ms"), sec(k.podStart, "p95Ms")],
    ["cost/h now", usd(c.now.costPerHour), usd(k.now.costPerHour)],
  ];
  for (const p of [...new Set([...Object.keys(c.now.pools), ...Object.keys(k.now.pools)])].sort()) {
    const a = c.now.pools[p]?.costPerHour ?? 0;
    const b = k.now.pools[p]?.costPerHour ?? 0;
    if (Math.abs(a - b) > 1e-9) out.push([`NodePool ${p} cost/h now`, usd(a), usd(b)]);
  }
  const a = workload ? c.now.workloads[workload] : undefined;
  const b = workload ? k.now.workloads[workload] : undefined;
  if (a && b)
    out.push([
      `${workloadNameOfKey(workload ?? "")} pods on-demand / spot now`,
      `${a.onDemand} / ${a.spot}`,
      `${b.onDemand} / ${b.spot}`,
    ]);
  return out;
}

/** The result's rows as a table (current beside the candidate). */
export function WhatifTable({ report, workload }: { report: WhatifReportDto; workload?: string }) {
  return (
    <table aria-label="what-if result">
      <caption>
        {`${((report.to - report.from) / 3_600_000).toFixed(1)} h of this cluster replayed on the simulator (${report.historyBuckets} history buckets, ${report.workloads.length} workloads)`}
      </caption>
      <thead>
        <tr>
          <th />
          <th>current</th>
          <th>this policy</th>
        </tr>
      </thead>
      <tbody>
        {whatifRows(report, workload).map(([label, now, then]) => (
          <tr key={label}>
            <th scope="row">{label}</th>
            <td>{now}</td>
            <td>{then}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** "about 1 min 20 s left" */
function left(ms: number | undefined): string {
  if (ms === undefined || !Number.isFinite(ms)) return "";
  const s = Math.max(1, Math.ceil(ms / 1000));
  return ` · about ${s < 60 ? `${s} s` : `${Math.floor(s / 60)} min ${s % 60} s`} left`;
}

/** The replay's progress bar with its estimate, and Cancel (which stops the replay in core). */
export function WhatifProgress({
  progress,
  onCancel,
}: {
  progress: WhatifProgressDto | undefined;
  onCancel: () => void;
}) {
  const f = progress?.state === "running" ? Math.min(1, Math.max(0, progress.fraction)) : 0;
  const label =
    progress === undefined
      ? "Starting the replay…"
      : progress.state === "queued"
        ? `Waiting for a replay slot${progress.position > 0 ? ` (${progress.position} ahead)` : ""}${left(progress.etaMs)}`
        : `Replaying the last 24 h · ${Math.floor(f * 100)} %${left(progress.etaMs)}`;
  return (
    <div className="whatif-progress">
      <progress max={100} value={Math.floor(f * 100)} aria-label="what-if progress" />
      <span>{label}</span>
      <button type="button" onClick={onCancel}>
        Cancel
      </button>
    </div>
  );
}

/** A running replay's progress (with Cancel), then the error if it failed. */
export function WhatifRunStatus({
  busy,
  progress,
  error,
  onCancel,
}: {
  busy: boolean;
  progress: WhatifProgressDto | undefined;
  error: string | undefined;
  onCancel: () => void;
}) {
  return (
    <>
      {busy ? <WhatifProgress progress={progress} onCancel={onCancel} /> : null}
      {error ? (
        <p className="error" role="alert">
          {error}
        </p>
      ) : null}
    </>
  );
}

/**
 * One what-if replay at a time: busy, progress, the report or the error, and Cancel. Leaving the
 * page closes the request, and so does Cancel: core stops the replay.
 */
export function useWhatifRun(ctx: PageCtx) {
  const [busy, setBusy] = useState(false);
  const [report, setReport] = useState<WhatifReportDto | undefined>();
  const [error, setError] = useState<string | undefined>();
  const [progress, setProgress] = useState<WhatifProgressDto | undefined>();
  const running = useRef<AbortController | undefined>(undefined);
  useEffect(() => () => running.current?.abort(), []);
  const run = async (body: WhatifRequestDto): Promise<void> => {
    const ac = new AbortController();
    running.current = ac;
    setBusy(true);
    setError(undefined);
    setProgress(undefined);
    try {
      setReport(await runWhatif(ctx.base, ctx.token, body, { signal: ac.signal, onProgress: setProgress }));
    } catch (err) {
      if (!ac.signal.aborted) setError((err as Error).message);
    } finally {
      if (running.current === ac) {
        running.current = undefined;
        setBusy(false);
      }
    }
  };
  const cancel = (): void => {
    running.current?.abort();
    running.current = undefined;
    setBusy(false);
  };
  return { busy, report, setReport, error, setError, progress, run, cancel };
}

export function WhatifPanel({
  ctx,
  candidate,
  workload,
  disabled,
}: {
  ctx: PageCtx;
  /** The draft, as the what-if body's spot or warmup part. */
  candidate: WhatifRequestDto;
  /** namespace/Kind/name of the edited workload: its pods' placement is shown. */
  workload?: string;
  disabled?: boolean;
}) {
  const { busy, report, error, progress, run, cancel } = useWhatifRun(ctx);
  const go = (): Promise<void> => run(candidate);
  return (
    <div className="whatif" data-testid="whatif">
      <button type="button" disabled={busy || disabled} onClick={() => void go()}>
        {busy ? "Replaying the last 24 h…" : "What if? (replay the last 24 h)"}
      </button>
      <WhatifRunStatus busy={busy} progress={progress} error={error} onCancel={cancel} />
      {report ? <WhatifTable report={report} {...(workload ? { workload } : {})} /> : null}
    </div>
  );
}
