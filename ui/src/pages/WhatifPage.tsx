// The What-if page: pick a workload (a spot candidate) or a NodePool (a warmup candidate), replay
// the cluster's last 24 h under the current policies and under the candidate (POST …/whatif, with
// its progress and Cancel), and see both side by side — the model check against what core
// recorded, cost/h over the day, pods on-demand/spot, the start-latency distribution — then apply
// the candidate (admins; the policy routes the editors use).
import { useState } from "react";
import type {
  SpotViewDto,
  WarmupViewDto,
  WhatifReportDto,
  WhatifRequestDto,
} from "../../../src/dashboard/dto.ts";
import { saveSpotPolicy, saveWarmupPolicy } from "../api.ts";
import type { PageCtx } from "../ctx.ts";
import { usd } from "../format.ts";
import { useJson } from "../hooks.ts";
import { workloadKey, workloadName } from "../../../src/policy/spot.ts";
import { WhatifRunStatus, useWhatifRun } from "./Whatif.tsx";

type Side = WhatifReportDto["current"];
const CURRENT = "#2563eb";
const CANDIDATE = "#d97706";
/** The histogram's buckets (the API's podStartHistogram order). */
const START_LABELS = ["≤ 5 s", "≤ 15 s", "≤ 30 s", "≤ 1 min", "≤ 2 min", "≤ 5 min", "> 5 min"];
const signed = (v: number): string => `${v >= 0 ? "+" : ""}${(v * 100).toFixed(1)} %`;

/** A small line chart (SVG): each line's values over the same times. */
function Lines(props: {
  label: string;
  ts: number[];
  lines: { label: string; color: string; values: number[]; dashed?: boolean }[];
  format: (v: number) => string;
}) {
  const W = 360;
  const H = 140;
  const max = Math.max(1e-9, ...props.lines.flatMap((l) => l.values));
  const t0 = props.ts[0] ?? 0;
  const span = Math.max(1, (props.ts.at(-1) ?? t0) - t0);
  const x = (t: number): number => ((t - t0) / span) * (W - 10) + 5;
  const y = (v: number): number => H - 5 - (v / max) * (H - 20);
  return (
    <figure className="whatif-chart">
      <figcaption>{props.label}</figcaption>
      <svg viewBox={`0 0 ${W} ${H}`} width={W} height={H} role="img" aria-label={props.label}>
        <text x={5} y={12} className="axis">
          {props.format(max)}
        </text>
        {props.lines.map((l) => (
          <polyline
            key={l.label}
            fill="none"
            stroke={l.color}
            strokeWidth={2}
            strokeDasharray={l.dashed ? "4 3" : undefined}
            points={l.values.map((v, i) => `${x(props.ts[i] ?? t0).toFixed(1)},${y(v).toFixed(1)}`).join(" ")}
          >
            <title>{`${l.label}: ${l.values.map(props.format).join(", ")}`}</title>
          </polyline>
        ))}
      </svg>
      <div className="legend">
        {props.lines.map((l) => (
          <span key={l.label} style={{ color: l.color }}>
            {l.dashed ? "┄ " : "— "}
            {l.label}
          </span>
        ))}
      </div>
    </figure>
  );
}

/** Pod starts per latency bucket, current beside candidate. */
function StartHistogram({ current, candidate }: { current: number[]; candidate: number[] }) {
  const max = Math.max(1, ...current, ...candidate);
  return (
    <figure className="whatif-chart">
      <figcaption>pod start latency (pods per bucket)</figcaption>
      <table aria-label="pod start latency">
        <thead>
          <tr>
            <th />
            <th>current</th>
            <th>candidate</th>
          </tr>
        </thead>
        <tbody>
          {START_LABELS.map((label, i) => (
            <tr key={label}>
              <th scope="row">{label}</th>
              {[current[i] ?? 0, candidate[i] ?? 0].map((n, j) => (
                <td key={j}>
                  <span
                    className="bar"
                    style={{ width: `${(n / max) * 80}px`, background: j === 0 ? CURRENT : CANDIDATE }}
                  />{" "}
                  {n}
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </figure>
  );
}

function Result({ r }: { r: WhatifReportDto }) {
  const c: Side = r.current;
  const k: Side = r.candidate;
  const ts = (c.timeline ?? []).map((b) => b.t);
  const rec = r.recorded;
  return (
    <div className="whatif-result" data-testid="whatif-result">
      <p>
        {`${((r.to - r.from) / 3_600_000).toFixed(1)} h replayed: cost/h ${usd(c.costPerHour)} now → ${usd(k.costPerHour)} with the candidate; pod start p95 ${(c.podStart.p95Ms / 1000).toFixed(0)} s → ${(k.podStart.p95Ms / 1000).toFixed(0)} s.`}
      </p>
      <p data-testid="whatif-model-check">
        {rec
          ? `Model check: the current policy replayed at ${usd(c.costPerHour)}/h against ${usd(rec.costPerHour)}/h recorded over the same window (${signed(rec.fidelity.costError)}).`
          : "Model check: core has no recorded series for this window."}
      </p>
      {(r.notes ?? []).map((n) => (
        <p key={n} className="note" role="note">
          {n}
        </p>
      ))}
      <div className="whatif-charts">
        <Lines
          label="cost/h over the window"
          ts={ts}
          format={(v) => usd(v)}
          lines={[
            { label: "current", color: CURRENT, values: (c.timeline ?? []).map((b) => b.costPerHour) },
            { label: "candidate", color: CANDIDATE, values: (k.timeline ?? []).map((b) => b.costPerHour) },
          ]}
        />
        <Lines
          label="pods on-demand / spot"
          ts={ts}
          format={(v) => v.toFixed(0)}
          lines={[
            {
              label: "on-demand, current",
              color: CURRENT,
              values: (c.timeline ?? []).map((b) => b.onDemandPods),
            },
            {
              label: "on-demand, candidate",
              color: CANDIDATE,
              values: (k.timeline ?? []).map((b) => b.onDemandPods),
            },
            {
              label: "spot, current",
              color: CURRENT,
              dashed: true,
              values: (c.timeline ?? []).map((b) => b.spotPods),
            },
            {
              label: "spot, candidate",
              color: CANDIDATE,
              dashed: true,
              values: (k.timeline ?? []).map((b) => b.spotPods),
            },
          ]}
        />
        <StartHistogram current={c.podStartHistogram ?? []} candidate={k.podStartHistogram ?? []} />
      </div>
    </div>
  );
}

export function WhatifPage({ ctx }: { ctx: PageCtx }) {
  const spot = useJson<SpotViewDto>(`${ctx.base}/spot-placement`, ctx.token, ctx.version, 10_000);
  const warm = useJson<WarmupViewDto>(`${ctx.base}/warmup`, ctx.token, ctx.version, 10_000);
  const workloads = spot.data?.workloads ?? [];
  const pools = warm.data?.pools ?? [];
  const [target, setTarget] = useState<string>("");
  const [threshold, setThreshold] = useState(2);
  const [strategy, setStrategy] = useState<"Prefer" | "Require">("Prefer");
  const [maxWarmNodes, setMaxWarmNodes] = useState(1);
  const [ttlSeconds, setTtlSeconds] = useState(600);
  const { busy, report, setReport, error, setError, progress, run, cancel } = useWhatifRun(ctx);
  const [applied, setApplied] = useState<string | undefined>();

  const [kind, name] = target.split(":", 2) as [string, string | undefined];
  const workload = kind === "workload" ? workloads.find((w) => workloadKey(w.workload) === name) : undefined;
  const pool = kind === "pool" ? pools.find((p) => p.nodePool === name) : undefined;
  const pick = (value: string): void => {
    setTarget(value);
    setReport(undefined);
    setApplied(undefined);
    const [k, n] = value.split(":", 2);
    const w = k === "workload" ? workloads.find((x) => workloadKey(x.workload) === n) : undefined;
    if (w?.policy) {
      setThreshold(w.policy.threshold);
      setStrategy(w.policy.strategy);
    }
    const p = k === "pool" ? pools.find((x) => x.nodePool === n) : undefined;
    if (p) {
      setMaxWarmNodes(Math.max(1, p.policy.maxWarmNodes));
      setTtlSeconds(p.policy.ttlSeconds);
    }
  };
  const candidate = (): WhatifRequestDto | undefined => {
    if (workload) return { spot: [{ workload: workload.workload, threshold, strategy }] };
    if (pool)
      return { warmup: { [pool.nodePool]: { ...pool.policy, enabled: true, maxWarmNodes, ttlSeconds } } };
    return undefined;
  };
  const go = async (): Promise<void> => {
    const body = candidate();
    if (!body) return;
    setApplied(undefined);
    await run(body);
  };
  const apply = async (): Promise<void> => {
    if (ctx.role !== "admin") {
      ctx.askAdmin("apply a what-if candidate");
      return;
    }
    try {
      if (workload) {
        await saveSpotPolicy(ctx.base, ctx.token, { workload: workload.workload, threshold, strategy });
        setApplied(`spot policy for ${workloadName(workload.workload)} saved`);
      } else if (pool) {
        await saveWarmupPolicy(ctx.base, ctx.token, pool.nodePool, {
          ...pool.policy,
          enabled: true,
          maxWarmNodes,
          ttlSeconds,
        });
        setApplied(`warmup policy for ${pool.nodePool} saved`);
      }
      ctx.refresh();
    } catch (err) {
      setError((err as Error).message);
    }
  };

  return (
    <section className="whatif-page">
      <h2>What if?</h2>
      <p className="muted">
        Replays this cluster&apos;s last 24 h on the simulator under its current policies and under a
        candidate. Nothing in the cluster changes until you apply it.
      </p>
      <form aria-label="what-if candidate" className="editor" onSubmit={(e) => e.preventDefault()}>
        <label>
          workload or NodePool
          <select value={target} onChange={(e) => pick(e.target.value)}>
            <option value="">choose…</option>
            <optgroup label="workloads (spot policy)">
              {workloads.map((w) => (
                <option key={workloadKey(w.workload)} value={`workload:${workloadKey(w.workload)}`}>
                  {workloadName(w.workload)}
                </option>
              ))}
            </optgroup>
            <optgroup label="NodePools (warmup)">
              {pools.map((p) => (
                <option key={p.nodePool} value={`pool:${p.nodePool}`}>
                  {p.nodePool}
                </option>
              ))}
            </optgroup>
          </select>
        </label>
        {workload ? (
          <>
            <label>
              on-demand base (threshold)
              <input
                type="number"
                min={0}
                value={threshold}
                onChange={(e) => setThreshold(Math.max(0, Math.floor(Number(e.target.value))))}
              />
            </label>
            <label>
              strategy
              <select value={strategy} onChange={(e) => setStrategy(e.target.value as "Prefer" | "Require")}>
                <option>Prefer</option>
                <option>Require</option>
              </select>
            </label>
          </>
        ) : null}
        {pool ? (
          <>
            <label>
              warm nodes
              <input
                type="number"
                min={1}
                value={maxWarmNodes}
                onChange={(e) => setMaxWarmNodes(Math.max(1, Math.floor(Number(e.target.value))))}
              />
            </label>
            <label>
              TTL (s)
              <input
                type="number"
                min={60}
                value={ttlSeconds}
                onChange={(e) => setTtlSeconds(Math.max(60, Math.floor(Number(e.target.value))))}
              />
            </label>
          </>
        ) : null}
        <button type="button" disabled={busy || (!workload && !pool)} onClick={() => void go()}>
          Replay the last 24 h
        </button>
        {report && (workload || pool) ? (
          <button type="button" onClick={() => void apply()}>
            {ctx.role === "admin" ? "Apply the candidate" : "Apply the candidate (admin)"}
          </button>
        ) : null}
      </form>
      <WhatifRunStatus busy={busy} progress={progress} error={error} onCancel={cancel} />
      {applied ? <p role="status">{applied}</p> : null}
      {report ? <Result r={report} /> : null}
    </section>
  );
}
