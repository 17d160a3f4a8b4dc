// Realized savings: what spot and Wave's policies saved per NodePool and per workload over the
// console's time range (the header's picker), against the same capacity all on-demand
// (GET …/savings, summed from history).
import type { SavingsDto, SavingsLineDto } from "../../src/dashboard/dto.ts";
import { dateTime, pct, usd } from "./format.ts";
import { useJson } from "./hooks.ts";
import { PRESETS, type RangeSpec } from "./range.ts";

/** The range's [from, to): a preset ends at the minute (one history step), so its URL stays put meanwhile. */
export function savingsWindow(range: RangeSpec, now: number): { from: number; to: number } {
  if (range.kind === "custom") return { from: range.from, to: range.to };
  const to = Math.floor(now / 60_000) * 60_000;
  return { from: to - PRESETS[range.id], to };
}

/**
 * The two scopes of savings, said wherever a figure is shown: nodes (what spot nodes save against
 * the same nodes on-demand — the Overview's figure) and workloads (each workload's requested
 * share of its spot nodes' savings — the Spot page's; it sums to less, nodes' unrequested room
 * being nobody's).
 */
export const SAVINGS_SCOPE = {
  nodes: "scope nodes: every spot node against the same node on-demand",
  workloads: "scope workloads: each workload's requested share of its spot nodes' savings",
} as const;

function Rows({ lines, testid, caption }: { lines: SavingsLineDto[]; testid: string; caption: string }) {
  return (
    <table data-testid={testid}>
      <caption className="muted">{caption}</caption>
      <thead>
        <tr>
          <th>name</th>
          <th>saved</th>
          <th>share</th>
          <th>cost</th>
          <th>all on-demand</th>
        </tr>
      </thead>
      <tbody>
        {lines.map((l) => (
          <tr key={l.name}>
            <td>{l.name}</td>
            <td>{usd(l.savedUsd)}</td>
            <td>{pct(l.savedShare)}</td>
            <td>{usd(l.actualUsd)}</td>
            <td>{usd(l.onDemandUsd)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/**
 * `base` is the cluster's API path (api/v1/clusters/<id>); `range` and `now` are the console's;
 * reloads when `version` changes (≤ 1/min).
 */
export function Savings(p: {
  base: string;
  token: string | null;
  version: number;
  range: RangeSpec;
  now: number;
}) {
  const { from, to } = savingsWindow(p.range, p.now);
  const report = useJson<SavingsDto>(`${p.base}/savings?from=${from}&to=${to}`, p.token, p.version, 60_000);
  const r = report.data;
  return (
    <section data-testid="savings">
      <h2>
        Realized savings{" "}
        <span className="muted" data-testid="savings-range">
          {p.range.kind === "preset" ? `last ${p.range.id}` : `${dateTime(from)} – ${dateTime(to)}`}
        </span>
      </h2>
      {!r ? (
        <p className="loading">{report.error ?? "Loading…"}</p>
      ) : r.pools.length === 0 ? (
        <p className="empty">No history recorded in this range yet.</p>
      ) : (
        <>
          <p data-testid="savings-total">
            {usd(r.total.savedUsd)} saved ({pct(r.total.savedShare)}) — {usd(r.total.actualUsd)} spent vs{" "}
            {usd(r.total.onDemandUsd)} all on-demand
          </p>
          <div className="two">
            <Rows lines={r.pools} testid="savings-pools" caption={`per NodePool — ${SAVINGS_SCOPE.nodes}`} />
            {r.workloads.length ? (
              <Rows
                lines={r.workloads.slice(0, 20)}
                testid="savings-workloads"
                caption={`per workload — ${SAVINGS_SCOPE.workloads}`}
              />
            ) : (
              <p className="empty">No workload's savings recorded in this range yet.</p>
            )}
          </div>
        </>
      )}
    </section>
  );
}
