import { useEffect, useRef } from "react";
import uPlot from "uplot";
import type { SeriesDto } from "../../src/dashboard/dto.ts";

export const PALETTE = [
  "#2563eb",
  "#16a34a",
  "#d97706",
  "#9333ea",
  "#dc2626",
  "#0891b2",
  "#db2777",
  "#65a30d",
];

export interface Line {
  label: string;
  values: (number | null)[];
  color?: string;
  scale?: string;
  format?: (v: number) => string;
}

/** Points of a series as uPlot columns, with a null at each gap (agent down) to break the line. */
export function columns(
  series: SeriesDto,
  pick: (p: SeriesDto["points"][number]) => number | null,
): {
  xs: number[];
  ys: (number | null)[];
} {
  const xs: number[] = [];
  const ys: (number | null)[] = [];
  const gapStarts = series.gaps.map((g) => g.from);
  for (const p of series.points) {
    const gap = gapStarts.find((g) => g < p.t && !xs.some((x) => x * 1000 >= g));
    if (gap !== undefined) {
      xs.push(gap / 1000);
      ys.push(null);
    }
    xs.push(p.t / 1000);
    ys.push(pick(p));
  }
  return { xs, ys };
}

/** A time chart over [from, to) with one or two y scales; lines share the x axis. */
export function LineChart(props: {
  xs: number[];
  lines: Line[];
  from: number;
  to: number;
  height?: number;
  testId?: string;
  label: string;
}) {
  const el = useRef<HTMLDivElement>(null);
  const { xs, lines, from, to } = props;
  const height = props.height ?? 200;
  // Rebuilt when the data changes, not on every render (callers pass fresh arrays).
  const key = `${xs.length}:${xs[0] ?? ""}:${xs.at(-1) ?? ""}:${from}:${to}:${lines
    .map((l) => `${l.label}=${l.values.length}/${l.values.reduce<number>((a, v) => a + (v ?? 0), 0)}`)
    .join(",")}`;
  const latest = useRef({ xs, lines });
  latest.current = { xs, lines };
  useEffect(() => {
    const { xs, lines } = latest.current;
    const host = el.current;
    if (!host) return;
    const scales = [...new Set(lines.map((l) => l.scale ?? "y"))];
    const grid = { stroke: "rgba(128,128,128,.15)" };
    const axes: uPlot.Axis[] = [{ stroke: "currentColor", grid }];
    scales.forEach((s, i) => {
      const a: uPlot.Axis = { scale: s, stroke: "currentColor", grid: { ...grid, show: i === 0 } };
      // eslint-disable-next-line @typescript-eslint/no-unsafe-enum-assignment -- const enum Axis.Side: 1 = right
      if (i === 1) a.side = 1;
      axes.push(a);
    });
    const plot = new uPlot(
      {
        width: host.clientWidth || 600,
        height,
        series: [
          {},
          ...lines.map((l, i) => ({
            label: l.label,
            stroke: l.color ?? PALETTE[i % PALETTE.length],
            width: 2,
            scale: l.scale ?? "y",
            value: (_u: uPlot, v: number | null) => (v === null ? "—" : (l.format?.(v) ?? String(v))),
          })),
        ],
        axes,
        scales: { x: { time: true, min: from / 1000, max: to / 1000 } },
      },
      [xs, ...lines.map((l) => l.values)],
      host,
    );
    const onResize = () => plot.setSize({ width: host.clientWidth || 600, height });
    window.addEventListener("resize", onResize);
    return () => {
      window.removeEventListener("resize", onResize);
      plot.destroy();
    };
  }, [key, from, to, height]);
  return <div ref={el} className="chart" data-testid={props.testId} role="img" aria-label={props.label} />;
}

/** Node count and cost over time; gaps (agent down) break the lines instead of being bridged. */
export function HistoryChart({ series, from, to }: { series: SeriesDto; from: number; to: number }) {
  const n = columns(series, (p) => p.nodes);
  const c = columns(series, (p) => p.costPerHour);
  return (
    <LineChart
      label="nodes and cost per hour over the range"
      testId="history-chart"
      xs={n.xs}
      from={from}
      to={to}
      lines={[
        { label: "nodes", values: n.ys, scale: "n", format: (v) => String(Math.round(v)) },
        { label: "$/h", values: c.ys, scale: "usd", format: (v) => `$${v.toFixed(2)}` },
      ]}
    />
  );
}
