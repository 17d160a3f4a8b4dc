import type { DisruptionCountsDto, DisruptionDto, LifecycleEventDto } from "../../../src/dashboard/dto.ts";
import type { PageCtx } from "../ctx.ts";
import { dateTime, num } from "../format.ts";
import { useJson } from "../hooks.ts";
import { DISRUPTION_LIST_LIMIT, disruptionCountsPath, disruptionsPath } from "../paths.ts";
import { rangeQuery, resolveRange } from "../range.ts";
import { Loadable } from "../Status.tsx";
import { Table, type Column } from "../Table.tsx";

/** Counts by reason (columns) per pool (rows), from core's exact counts. */
export function countsByReason(rows: DisruptionCountsDto["counts"]): {
  reasons: string[];
  pools: { pool: string; counts: Record<string, number>; total: number }[];
} {
  const reasons = [...new Set(rows.map((r) => r.reason))].sort();
  const byPool = new Map<string, Record<string, number>>();
  for (const r of rows) {
    const pool = r.nodePool || "—";
    const c = byPool.get(pool) ?? {};
    c[r.reason] = (c[r.reason] ?? 0) + r.count;
    byPool.set(pool, c);
  }
  return {
    reasons,
    pools: [...byPool.entries()]
      .map(([pool, counts]) => ({ pool, counts, total: Object.values(counts).reduce((a, b) => a + b, 0) }))
      .sort((a, b) => b.total - a.total || a.pool.localeCompare(b.pool)),
  };
}

const disruptionColumns: Column<DisruptionDto>[] = [
  { key: "at", label: "when", numeric: true, value: (d) => d.at, render: (d) => dateTime(d.at) },
  { key: "reason", label: "reason", value: (d) => d.reason },
  { key: "pool", label: "pool", value: (d) => d.nodePool },
  { key: "claim", label: "NodeClaim", value: (d) => d.nodeClaim },
];

const lifecycleColumns: Column<LifecycleEventDto>[] = [
  { key: "at", label: "when", numeric: true, value: (e) => e.at, render: (e) => dateTime(e.at) },
  { key: "phase", label: "step", value: (e) => e.phase },
  { key: "claim", label: "NodeClaim", value: (e) => e.nodeClaim },
  { key: "pool", label: "pool", value: (e) => e.nodePool },
  { key: "type", label: "type", value: (e) => e.instanceType, wide: true },
  { key: "capacity", label: "capacity", value: (e) => e.capacityType, wide: true },
  { key: "reason", label: "reason", value: (e) => e.reason },
];

export function Disruptions({ ctx }: { ctx: PageCtx }) {
  const { route, now } = ctx;
  const pool = route.params["pool"] ?? "";
  const reason = route.params["reason"] ?? "";
  const q = `limit=1000&${rangeQuery(route.range, now)}${pool ? `&pool=${encodeURIComponent(pool)}` : ""}`;
  const disruptions = useJson<DisruptionDto[]>(
    disruptionsPath(ctx.base, route.range, now, pool || undefined),
    ctx.token,
    ctx.version,
    2000,
  );
  const counted = useJson<DisruptionCountsDto>(
    disruptionCountsPath(ctx.base, route.range, now, pool || undefined),
    ctx.token,
    ctx.version,
    2000,
  );
  const lifecycle = useJson<LifecycleEventDto[]>(`${ctx.base}/events?${q}`, ctx.token, ctx.version, 2000);
  const { from, to } = resolveRange(route.range, now);
  const pools = (ctx.live?.nodePools ?? []).map((p) => p.name);
  const setParam = (k: string, v: string): void => ctx.go({ params: { ...route.params, [k]: v } });
  return (
    <>
      <section className="panel filters" aria-label="filters">
        <label>
          pool{" "}
          <select value={pool} onChange={(e) => setParam("pool", e.target.value)} aria-label="filter by pool">
            <option value="">all pools</option>
            {[...new Set([...pools, ...(pool ? [pool] : [])])].map((p) => (
              <option key={p}>{p}</option>
            ))}
          </select>
        </label>
        <label>
          reason{" "}
          <select
            value={reason}
            onChange={(e) => setParam("reason", e.target.value)}
            aria-label="filter by reason"
          >
            <option value="">all reasons</option>
            {[...new Set([...(counted.data?.counts ?? []).map((d) => d.reason), ...(reason ? [reason] : [])])]
              .sort()
              .map((r) => (
                <option key={r}>{r}</option>
              ))}
          </select>
        </label>
      </section>
      <Loadable state={counted} what="disruption counts">
        {(c) => {
          const m = countsByReason(c.counts.filter((r) => !reason || r.reason === reason));
          const total = m.pools.reduce((n, p) => n + p.total, 0);
          return (
            <section className="panel" data-testid="disruption-counts">
              <h2>
                Disruptions by reason per pool <span className="muted count">({num(total)})</span>
              </h2>
              {total === 0 ? (
                <p className="empty">
                  No disruptions in this range{pool || reason ? " for these filters" : ""}: Karpenter
                  disrupted no node.
                </p>
              ) : (
                <div className="fit">
                  <table aria-label="disruptions by reason per pool">
                    <thead>
                      <tr>
                        <th scope="col">pool</th>
                        {m.reasons.map((r) => (
                          <th key={r} scope="col" className="num">
                            {r}
                          </th>
                        ))}
                        <th scope="col" className="num">
                          total
                        </th>
                      </tr>
                    </thead>
                    <tbody>
                      {m.pools.map((p) => (
                        <tr key={p.pool} data-testid="count-row">
                          <td>{p.pool}</td>
                          {m.reasons.map((r) => (
                            <td key={r} className="num">
                              {num(p.counts[r] ?? 0)}
                            </td>
                          ))}
                          <td className="num">{num(p.total)}</td>
                        </tr>
                      ))}
                    </tbody>
                  </table>
                </div>
              )}
            </section>
          );
        }}
      </Loadable>
      <Loadable state={disruptions} what="disruptions">
        {(all) => {
          const rows = all.filter((d) => d.at >= from && d.at < to && (!reason || d.reason === reason));
          // The list is the newest page; say so when the range holds more than it shows.
          const total = counted.data?.counts
            .filter((r) => !reason || r.reason === reason)
            .reduce((n, r) => n + r.count, 0);
          const paged = all.length >= DISRUPTION_LIST_LIMIT && total !== undefined && total > rows.length;
          return (
            <>
              {paged ? (
                <p className="muted" data-testid="disruption-list-paged">
                  The list shows the newest {num(rows.length)} of {num(total)} disruptions in this range; the
                  counts above are complete.
                </p>
              ) : null}
              <Table
                label="Disruptions"
                testId="disruption-table"
                rowTestId="disruption-row"
                columns={disruptionColumns}
                rows={rows}
                rowKey={(d) => `${d.nodeClaim}/${d.reason}/${d.at}`}
                initialSort={{ key: "at", desc: true }}
                empty="No disruptions in this range."
                onRow={(d) => ctx.go({ node: d.nodeClaim })}
                virtualAbove={100}
              />
            </>
          );
        }}
      </Loadable>
      <Loadable state={lifecycle} what="lifecycle events">
        {(all) => (
          <Table
            label="Node lifecycle"
            testId="lifecycle-table"
            rowTestId="lifecycle-row"
            columns={lifecycleColumns}
            rows={all.filter((e) => e.at >= from && e.at < to)}
            rowKey={(e) => `${e.nodeClaim}/${e.phase}/${e.at}`}
            initialSort={{ key: "at", desc: true }}
            empty="No NodeClaim launched, registered, initialized, disrupted or terminated in this range."
            onRow={(e) => ctx.go({ node: e.nodeName ?? e.nodeClaim })}
            virtualAbove={100}
          />
        )}
      </Loadable>
    </>
  );
}
