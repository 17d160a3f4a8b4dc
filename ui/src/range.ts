// The time range every chart, list and count of the console follows: a preset ending now, or a
// custom [from, to). Serialized into the URL so a link reopens the same view.
export const PRESETS = {
  "15m": 15 * 60_000,
  "1h": 3_600_000,
  "6h": 6 * 3_600_000,
  "24h": 86_400_000,
  "7d": 7 * 86_400_000,
} as const;
export type Preset = keyof typeof PRESETS;
export type RangeSpec = { kind: "preset"; id: Preset } | { kind: "custom"; from: number; to: number };

export const DEFAULT_RANGE: RangeSpec = { kind: "preset", id: "1h" };

export function parseRange(s: string | null | undefined): RangeSpec {
  if (s && s in PRESETS) return { kind: "preset", id: s as Preset };
  const m = /^(\d+)-(\d+)$/.exec(s ?? "");
  if (m) {
    const from = Number(m[1]);
    const to = Number(m[2]);
    if (from < to) return { kind: "custom", from, to };
  }
  return DEFAULT_RANGE;
}

export function formatRange(r: RangeSpec): string {
  return r.kind === "preset" ? r.id : `${r.from}-${r.to}`;
}

/** The absolute [from, to) of a range at `now` (presets end now). */
export function resolveRange(r: RangeSpec, now: number): { from: number; to: number } {
  return r.kind === "preset" ? { from: now - PRESETS[r.id], to: now } : { from: r.from, to: r.to };
}

/** Query string for the API's ranged routes; `to` is left open for presets (live). */
export function rangeQuery(r: RangeSpec, now: number): string {
  const { from, to } = resolveRange(r, now);
  return r.kind === "preset" ? `from=${Math.floor(from / 60_000) * 60_000}` : `from=${from}&to=${to}`;
}

/** The history window (seconds back from now) that covers the range; the chart clips to it. */
export function seriesWindow(r: RangeSpec, now: number): number {
  const { from } = resolveRange(r, now);
  return Math.max(60, Math.ceil((now - from) / 1000));
}
