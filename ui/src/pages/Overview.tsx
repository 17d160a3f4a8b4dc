import type { DisruptionCountsDto, PendingViewDto, SeriesDto } from "../../../src/dashboard/dto.ts";
import { HistoryChart } from "../Chart.tsx";
import type { PageCtx } from "../ctx.ts";
import { bytes, cores, duration, num, pct, usd } from "../format.ts";
import { useJson } from "../hooks.ts";
import { disruptionCountsPath, seriesPath } from "../paths.ts";
import { resolveRange } from "../range.ts";
import { Savings, SAVINGS_SCOPE } from "../Savings.tsx";
import { Card, Loadable } from "../Status.tsx";
import { PendingPods } from "./Pending.tsx";

/** Cluster totals now (live), and what happened over the range. */
export function Overview({ ctx }: { ctx: PageCtx }) {
  const { live, route, now, base, token, version } = ctx;
  const { from, to } = resolveRange(route.range, now);
  const series = useJson<SeriesDto>(seriesPath(base, route.range, now), token, version, 15000);
  const disruptions = useJson<DisruptionCountsDto>(
    disruptionCountsPath(base, route.range, now),
    token,
    version,
    2000,
  );
  // One read of the pending pods for the card and the table below: they show the same count.
  const pending = useJson<PendingViewDto>(`${base}/pending`, token, version, 5000);
  const o = live?.overview;
  if (!o) return <p className="loading">Waiting for the first snapshot from core…</p>;
  const priced = Object.entries(o.priceSources)
    .map(([k, v]) => `${num(v)} ${k}`)
    .join(", ");
  return (
    <>
      <section className="cards" aria-label="cluster totals">
        <Card
          label="nodes"
          value={num(o.nodes)}
          testid="overview-nodes"
          sub={
            <>
              {num(o.nodePools)} NodePools ·{" "}
              <a href="#pending-pods" data-testid="overview-pending">
                {pending.data ? num(pending.data.pods.length) : "…"} pending pods
              </a>
            </>
          }
        />
        <Card
          label="cost per hour"
          value={usd(o.costPerHour)}
          testid="overview-cost"
          sub={`${usd(o.costPerMonth)} / month${priced ? ` · priced ${priced}` : ""}`}
        />
        <Card
          label="spot ratio"
          value={pct(o.spotRatio.nodes)}
          testid="overview-spot"
          sub={
            <>
              vCPU {pct(o.spotRatio.vcpu)} · cost {pct(o.spotRatio.cost)} ·{" "}
              <span data-testid="overview-spot-saves" title={SAVINGS_SCOPE.nodes}>
                nodes save {usd(o.spotSavingsPerHour)}/h
              </span>
            </>
          }
        />
        <Card
          label="requested / allocatable"
          value={`${pct(o.allocatable.cpu ? o.requested.cpu / o.allocatable.cpu : null)} cpu`}
          sub={`${cores(o.requested.cpu)}/${cores(o.allocatable.cpu)} cores · ${bytes(o.requested.memoryBytes)}/${bytes(o.allocatable.memoryBytes)}`}
        />
        <Card
          label="disruptions in range"
          value={disruptions.data ? num(disruptions.data.total) : "…"}
          testid="overview-disruptions"
          tone={o.thrashingPools.length ? "warn" : ""}
          sub={
            o.thrashingPools.length ? (
              <a href={`#/thrashing?cluster=${encodeURIComponent(ctx.clusterId)}`}>
                thrashing: {o.thrashingPools.join(", ")}
              </a>
            ) : (
              "no thrashing"
            )
          }
        />
        <Card
          label="warm nodes"
          value={num(o.warmup.warmNodes)}
          testid="overview-warm"
          sub={`${usd(o.warmup.costPerHour)}/h · ${num(o.warmup.hits)} hits / ${num(o.warmup.misses)} misses (24 h) · saved ${duration(o.warmup.timeSavedSeconds)} · warm cost ${usd(o.warmup.warmCostUsd)}`}
        />
      </section>
      <section className="panel">
        <h2>Nodes and cost</h2>
        <Loadable state={series} what="history">
          {(s) =>
            s.points.length ? (
              <HistoryChart series={s} from={from} to={to} />
            ) : (
              <p className="empty">
                No history in this range yet: core records a point a minute once an agent streams.
              </p>
            )
          }
        </Loadable>
      </section>
      <PendingPods view={pending} />
      <Savings base={base} token={token} version={version} range={route.range} now={now} />
    </>
  );
}
