// Realized savings: what spot and Wave's policies saved per NodePool and per workload over a
// chosen range, against the same capacity all on-demand (GET …/savings, summed from history).
import { useState } from "react";
import type { SavingsDto, SavingsLineDto } from "../../src/dashboard/dto.ts";
import { pct, usd } from "./format.ts";
import { useJson } from "./hooks.ts";

const RANGES = [
  { label: "24 h", ms: 86_400_000 },
  { label: "7 d", ms: 7 * 86_400_000 },
  { label: "30 d", ms: 30 * 86_400_000 },
] as const;

function Rows({ lines, testid }: { lines: SavingsLineDto[]; testid: string }) {
  return (
    <table data-testid={testid}>
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

/** `base` is the cluster's API path (api/v1/clusters/<id>); reloads when `version` changes (≤ 1/min). */
export function Savings({ base, token, version }: { base: string; token: string | null; version: number }) {
  const [range, setRange] = useState<number>(RANGES[0].ms);
  // The range's start moves once a minute (one history step), so the URL stays cacheable meanwhile.
  const to = Math.floor(Date.now() / 60_000) * 60_000;
  const report = useJson<SavingsDto>(`${base}/savings?from=${to - range}&to=${to}`, token, version, 60_000);
  const r = report.data;
  return (
    <section data-testid="savings">
      <h2>
        Realized savings{" "}
        {RANGES.map((x) => (
          <button key={x.label} disabled={x.ms === range} onClick={() => setRange(x.ms)}>
            {x.label}
          </button>
        ))}
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
            <Rows lines={r.pools} testid="savings-pools" />
            {r.workloads.length ? (
              <Rows lines={r.workloads.slice(0, 20)} testid="savings-workloads" />
            ) : (
              <p className="empty">No workload's savings recorded in this range yet.</p>
            )}
          </div>
        </>
      )}
    </section>
  );
}
