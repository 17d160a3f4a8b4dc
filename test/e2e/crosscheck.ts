// The cross-check's judge (issue 27 "one truth per figure"): one figure read from every place a
// user or an operator sees it — the console page, the API, core's /metrics, the Grafana panel's
// PromQL on a real Prometheus — and recomputed from the apiserver's own objects. Pure, so a unit
// test (test/unit/crosscheck.test.ts) shows it fails when any one source is perturbed.

/**
 * Where a figure was read. The API is the reference each other source is compared with; the
 * Overview is the cluster totals' route where a figure is also shown there (warmup, issue 38).
 */
export type Source = "api" | "overview" | "metrics" | "prometheus" | "recomputed";

/** Counts must be exact; money, ratios and seconds equal to 1e-6. */
export type Kind = "count" | "money" | "ratio" | "seconds";

export const TOLERANCE: Readonly<Record<Kind, number>> = {
  count: 0,
  money: 1e-6,
  ratio: 1e-6,
  seconds: 1e-6,
};

export interface Figure {
  name: string;
  kind: Kind;
  /** The API's value. */
  api: number;
  /** The other sources' values; a source present with `undefined` was expected and not found. */
  others: Partial<Record<Exclude<Source, "api">, number | undefined>>;
  /** What the page shows, and the page's own formatting of a value (ui/src/format.ts). */
  page?: { shown: string | undefined; format: (n: number) => string };
}

/** Every disagreement among a figure's sources, one line each; [] when all agree. */
export function disagreements(figures: readonly Figure[]): string[] {
  const out: string[] = [];
  const seen = new Set<string>();
  for (const f of figures) {
    if (seen.has(f.name)) out.push(`${f.name}: listed twice`);
    seen.add(f.name);
    if (!Number.isFinite(f.api)) out.push(`${f.name}: api gave ${f.api}`);
    for (const [source, v] of Object.entries(f.others) as [string, number | undefined][]) {
      if (v === undefined || !Number.isFinite(v))
        out.push(`${f.name}: ${source} has no value (api ${f.api})`);
      else if (!(Math.abs(v - f.api) <= TOLERANCE[f.kind]))
        out.push(`${f.name}: ${source} ${v} ≠ api ${f.api}`);
    }
    if (f.page) {
      const want = f.page.format(f.api);
      if (f.page.shown !== want)
        out.push(`${f.name}: page shows ${JSON.stringify(f.page.shown)} ≠ api ${want}`);
    }
  }
  return out;
}

/** How many sources each figure was compared across (the page counts as one). */
export const sourcesOf = (f: Figure): number => 1 + Object.keys(f.others).length + (f.page ? 1 : 0);

/** One sample of Prometheus's text exposition format. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

/** Parses /metrics (text format 0.0.4); comments and blank lines are skipped. */
export function parseExposition(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const m = SAMPLE.exec(line.trim());
    if (!m?.[1] || m[3] === undefined) throw new Error(`not an exposition sample: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? "").matchAll(LABEL))
      labels[l[1] ?? ""] = (l[2] ?? "").replace(/\\n/g, "\n").replace(/\\(["\\])/g, "$1");
    const raw = m[3];
    const value = raw === "+Inf" ? Infinity : raw === "-Inf" ? -Infinity : Number(raw);
    out.push({ name: m[1], labels, value });
  }
  return out;
}

/** The sum of a metric's samples whose labels include `match`; undefined when none matches. */
export function sumOf(
  samples: readonly Sample[],
  name: string,
  match: Readonly<Record<string, string>> = {},
): number | undefined {
  let sum: number | undefined;
  for (const s of samples) {
    if (s.name !== name) continue;
    if (!Object.entries(match).every(([k, v]) => s.labels[k] === v)) continue;
    sum = (sum ?? 0) + s.value;
  }
  return sum;
}
