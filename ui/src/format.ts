// Display formatting, one place.
export const usd = (n: number): string =>
  n >= 1000 ? `$${(n / 1000).toFixed(1)}k` : n >= 100 ? `$${n.toFixed(0)}` : `$${n.toFixed(n < 1 ? 3 : 2)}`;
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
/** A length of time: seconds under 90 s (churned nodes live that briefly), then minutes, hours. */
export function duration(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  if (s < 90) return `${s} s`;
  if (s < 5400) return `${Math.round(s / 60)} min`;
  return `${(s / 3600).toFixed(1)} h`;
}
