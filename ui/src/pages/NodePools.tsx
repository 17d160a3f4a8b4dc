import { useMemo } from "react";
import type { NodePoolDto, SeriesDto } from "../../../src/dashboard/dto.ts";
import { getJson } from "../api.ts";
import { columns as toColumns, LineChart, type Line } from "../Chart.tsx";
import type { PageCtx } from "../ctx.ts";
import { bytes, cores, num, pct, usd } from "../format.ts";
import { useAsync } from "../hooks.ts";
import { resolveRange, seriesWindow } from "../range.ts";
import { Bar, Loadable } from "../Status.tsx";
import { Table, type Column } from "../Table.tsx";

const poolColumns: Column<NodePoolDto>[] = [
  {
    key: "name",
    label: "pool",
    value: (p) => p.name,
    render: (p) => (
      <>
        {p.name}
        {p.thrashingFlagged ? <span className={`tag ${p.thrashing}`}>thrashing</span> : null}
        {p.warmNodes ? <span className="tag warm">{p.warmNodes} warm</span> : null}
      </>
    ),
  },
  {
    key: "nodes",
    label: "nodes",
    numeric: true,
    value: (p) => p.nodes,
    render: (p) => (
      <>
        <span data-testid="pool-nodes">{num(p.nodes)}</span>
        {p.static ? (
          <span
            className={`tag ${p.static.actualNodes === p.static.desiredNodes ? "" : "warn"}`}
            data-testid="pool-static"
            title="static NodePool (spec.replicas): Karpenter keeps this many nodes and never consolidates them"
          >
            static {num(p.static.actualNodes)}/{num(p.static.desiredNodes)}
          </span>
        ) : null}
      </>
    ),
  },
  {
    key: "split",
    label: "spot / on-demand",
    value: (p) => p.nodesByCapacityType.spot ?? 0,
    render: (p) =>
      `${num(p.nodesByCapacityType.spot ?? 0)} / ${num(p.nodesByCapacityType["on-demand"] ?? 0)}`,
  },
  {
    key: "vcpu",
    label: "vCPU",
    numeric: true,
    value: (p) => p.vcpu,
    render: (p) => cores(p.vcpu),
    wide: true,
  },
  {
    key: "mem",
    label: "memory",
    numeric: true,
    value: (p) => p.memoryBytes,
    render: (p) => bytes(p.memoryBytes),
    wide: true,
  },
  {
    key: "cost",
    label: "$/h",
    numeric: true,
    value: (p) => p.costPerHour,
    render: (p) => usd(p.costPerHour),
  },
  {
    key: "spotCost",
    label: "spot $/h",
    numeric: true,
    wide: true,
    value: (p) => p.costByCapacityType.spot ?? 0,
    render: (p) => usd(p.costByCapacityType.spot ?? 0),
  },
  {
    key: "month",
    label: "$/month",
    numeric: true,
    value: (p) => p.costPerMonth,
    render: (p) => usd(p.costPerMonth),
  },
  {
    key: "cpuLimit",
    label: "cpu limit",
    value: (p) => p.limitUsage.cpu,
    render: (p) => (
      <span
        data-testid="pool-cpu-limit"
        title={p.limits.cpu === null ? undefined : `of ${cores(p.limits.cpu)}`}
      >
        <Bar fraction={p.limitUsage.cpu} />
      </span>
    ),
  },
  {
    key: "memLimit",
    label: "memory limit",
    value: (p) => p.limitUsage.memory,
    render: (p) => (
      <span data-testid="pool-memory-limit">
        <Bar fraction={p.limitUsage.memory} />
        {p.limits.memoryBytes === null ? null : (
          <span className="muted"> of {bytes(p.limits.memoryBytes)}</span>
        )}
      </span>
    ),
  },
  {
    key: "consolidation",
    label: "consolidation",
    wide: true,
    // A static pool's consolidationPolicy and consolidateAfter are ignored by Karpenter.
    value: (p) =>
      p.static ? "never (static)" : `${p.consolidationPolicy ?? "—"} after ${p.consolidateAfter ?? "—"}`,
  },
];

/** Per-pool nodes, $/h and spot ratio on one time axis, and the pools' table (live). */
export function NodePools({ ctx }: { ctx: PageCtx }) {
  const { live, route, now, base, token, version } = ctx;
  const pools = live?.nodePools;
  const names = useMemo(() => (pools ?? []).map((p) => p.name).sort(), [pools]);
  const { from, to } = resolveRange(route.range, now);
  const window = seriesWindow(route.range, now);
  const series = useAsync(
    async (signal) =>
      Promise.all(
        names.map((n) =>
          getJson<SeriesDto>(`${base}/series?window=${window}&pool=${encodeURIComponent(n)}`, token, signal),
        ),
      ),
    [names.join(","), base, token, Math.floor(window / 60)],
    version,
    15000,
  );
  if (!pools) return <p className="loading">Waiting for the first snapshot from core…</p>;
  return (
    <>
      <Table
        label="NodePools"
        testId="pool-table"
        rowTestId="pool-row"
        columns={poolColumns}
        rows={pools}
        rowKey={(p) => p.name}
        empty="No NodePools in this cluster: Karpenter has nothing to provision from."
        onRow={(p) => ctx.go({ page: "nodes", params: { pool: p.name } })}
      />
      <section className="panel">
        <h2>Per pool over the range</h2>
        <Loadable state={series} what="per-pool history">
          {(all) => {
            if (all.every((s) => s.points.length === 0))
              return <p className="empty">No history in this range yet: core records a point a minute.</p>;
            // One x axis for every pool: the union of their timestamps.
            const xs = [...new Set(all.flatMap((s) => s.points.map((p) => p.t / 1000)))].sort(
              (a, b) => a - b,
            );
            const line = (
              pick: (p: SeriesDto["points"][number]) => number | null,
              fmt: (v: number) => string,
            ): Line[] =>
              all.map((s, i) => {
                const c = toColumns(s, pick);
                const at = new Map(c.xs.map((x, j) => [x, c.ys[j] ?? null]));
                return { label: names[i] ?? "", values: xs.map((x) => at.get(x) ?? null), format: fmt };
              });
            return (
              <div className="charts">
                <figure>
                  <figcaption>nodes</figcaption>
                  <LineChart
                    label="nodes per pool"
                    testId="pool-chart-nodes"
                    xs={xs}
                    from={from}
                    to={to}
                    lines={line(
                      (p) => p.nodes,
                      (v) => num(v),
                    )}
                  />
                </figure>
                <figure>
                  <figcaption>$/h</figcaption>
                  <LineChart
                    label="cost per hour per pool"
                    xs={xs}
                    from={from}
                    to={to}
                    lines={line((p) => p.costPerHour, usd)}
                  />
                </figure>
                <figure>
                  <figcaption>spot ratio</figcaption>
                  <LineChart
                    label="spot ratio per pool"
                    xs={xs}
                    from={from}
                    to={to}
                    lines={line(
                      (p) => (p.nodes ? p.spotNodes / p.nodes : null),
                      (v) => pct(v),
                    )}
                  />
                </figure>
              </div>
            );
          }}
        </Loadable>
      </section>
    </>
  );
}
