// Display formatting, one place: every page formats money, counts, sizes and times through these.
const INT = new Intl.NumberFormat("en-US", { maximumFractionDigits: 0 });

/** Counts: 12,345. */
export const num = (n: number): string => INT.format(n);
/** Dollars: $0.042, $3.21, $512, $12.3k (the same rule on every page). */
export const usd = (n: number): string => {
  const sign = n < 0 ? "−" : "";
  const a = Math.abs(n);
  const s =
    a >= 1000 ? `$${(a / 1000).toFixed(1)}k` : a >= 100 ? `$${a.toFixed(0)}` : `$${a.toFixed(a < 1 ? 3 : 2)}`;
  return sign + s;
};
/** A change in $/h with its sign: +$0.42/h, −$1.20/h. */
export const usdDelta = (n: number): string => `${n >= 0 ? "+" : "−"}${usd(Math.abs(n))}/h`;
export const pct = (f: number | null): string =>
  f === null || !Number.isFinite(f) ? "—" : `${(f * 100).toFixed(0)}%`;
export const cores = (n: number): string => (n >= 100 ? n.toFixed(0) : n.toFixed(n % 1 === 0 ? 0 : 1));
export function bytes(n: number): string {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) {
    n /= 1024;
    i++;
  }
  return `${n.toFixed(n >= 10 || i === 0 ? 0 : 1)} ${units[i] ?? ""}`;
}
export function ago(t: number | null, now: number): string {
  if (t === null) return "—";
  const s = Math.max(0, Math.round((now - t) / 1000));
  if (s < 90) return `${s}s`;
  if (s < 5400) return `${Math.round(s / 60)}m`;
  if (s < 172800) return `${Math.round(s / 3600)}h`;
  return `${Math.round(s / 86400)}d`;
}
export const time = (t: number): string => new Date(t).toLocaleTimeString();
export const dateTime = (t: number): string =>
  new Date(t).toLocaleString(undefined, {
    month: "short",
    day: "numeric",
    hour: "2-digit",
    minute: "2-digit",
    second: "2-digit",
  });
/** A length of time: seconds under 90 s (churned nodes live that briefly), then minutes, hours. */
export function duration(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  if (s < 90) return `${s} s`;
  if (s < 5400) return `${Math.round(s / 60)} min`;
  return `${(s / 3600).toFixed(1)} h`;
}
