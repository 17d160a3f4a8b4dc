import { useEffect, useRef } from "react";
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import type { SeriesDto } from "../../src/dashboard/dto.ts";

/** Node count and cost over time; gaps (agent down) break the lines instead of being bridged. */
export function HistoryChart({ series }: { series: SeriesDto }) {
  const el = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const host = el.current;
    if (!host) return;
    const xs: number[] = [];
    const nodes: (number | null)[] = [];
    const cost: (number | null)[] = [];
    const gapStarts = series.gaps.map((g) => g.from);
    for (const p of series.points) {
      // A null point at a gap's start makes uPlot break the line there.
      const gap = gapStarts.find((g) => g < p.t && !xs.some((x) => x >= g));
      if (gap !== undefined) {
        xs.push(gap / 1000);
        nodes.push(null);
        cost.push(null);
      }
      xs.push(p.t / 1000);
      nodes.push(p.nodes);
      cost.push(p.costPerHour);
    }
    const plot = new uPlot(
      {
        width: host.clientWidth || 600,
        height: 220,
        series: [
          {},
          { label: "nodes", stroke: "#2563eb", width: 2, scale: "n" },
          {
            label: "$/h",
            stroke: "#16a34a",
            width: 2,
            scale: "usd",
            value: (_u, v: number | null) => (v === null ? "—" : `$${v.toFixed(2)}`),
          },
        ],
        axes: [
          {},
          { scale: "n", label: "nodes" },
          // eslint-disable-next-line @typescript-eslint/no-unsafe-enum-assignment -- const enum Axis.Side: 1 = right
          { scale: "usd", side: 1, label: "$/h", grid: { show: false } },
        ],
        scales: { x: { time: true } },
      },
      [xs, nodes, cost],
      host,
    );
    const onResize = () => plot.setSize({ width: host.clientWidth || 600, height: 220 });
    window.addEventListener("resize", onResize);
    return () => {
      window.removeEventListener("resize", onResize);
      plot.destroy();
    };
  }, [series]);
  return <div ref={el} className="chart" data-testid="history-chart" />;
}
