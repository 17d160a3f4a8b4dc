// A small Prometheus metrics registry: counters, gauges and histograms with labels, rendered in
// the text exposition format (version 0.0.4). Enough for /metrics endpoints of the agent, core,
// webhook and controllers without a dependency.

export type Labels = Record<string, string>;

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

export const CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

interface MetricOptions {
  name: string;
  help: string;
  /** Label names every observation must provide (in this order). */
  labelNames?: readonly string[];
}

abstract class Metric {
  readonly name: string;
  readonly help: string;
  readonly labelNames: readonly string[];
  abstract readonly type: "counter" | "gauge" | "histogram";

  constructor(opts: MetricOptions) {
    if (!NAME.test(opts.name)) throw new Error(`invalid metric name ${JSON.stringify(opts.name)}`);
    for (const l of opts.labelNames ?? []) {
      if (!LABEL.test(l) || l.startsWith("__") || l === "le") {
        throw new Error(`invalid label name ${JSON.stringify(l)} on metric ${opts.name}`);
      }
    }
    this.name = opts.name;
    this.help = opts.help;
    this.labelNames = opts.labelNames ?? [];
  }

  /** A stable key for a label set; rejects missing or unknown labels. */
  protected key(labels: Labels | undefined): string {
    const given = labels ?? {};
    for (const k of Object.keys(given)) {
      if (!this.labelNames.includes(k)) throw new Error(`metric ${this.name}: unknown label ${k}`);
    }
    const values = this.labelNames.map((n) => {
      const v = given[n];
      if (v === undefined) throw new Error(`metric ${this.name}: missing label ${n}`);
      return v;
    });
    return JSON.stringify(values);
  }

  protected labelText(key: string, extra?: [string, string]): string {
    const values = JSON.parse(key) as string[];
    const pairs = this.labelNames.map((n, i) => `${n}="${escapeLabel(values[i] ?? "")}"`);
    if (extra) pairs.push(`${extra[0]}="${escapeLabel(extra[1])}"`);
    return pairs.length === 0 ? "" : `{${pairs.join(",")}}`;
  }

  abstract samples(): string[];

  render(): string {
    const lines = [`# HELP ${this.name} ${escapeHelp(this.help)}`, `# TYPE ${this.name} ${this.type}`];
    return [...lines, ...this.samples()].join("\n");
  }
}

export class Counter extends Metric {
  readonly type = "counter";
  readonly #values = new Map<string, number>();
  readonly #read: (() => number) | undefined;

  /** `read` supplies an unlabelled counter's total at render time (a count owned elsewhere). */
  constructor(opts: MetricOptions & { read?: () => number }) {
    super(opts);
    if (opts.read && this.labelNames.length > 0)
      throw new Error(`counter ${opts.name}: read needs no labels`);
    this.#read = opts.read;
  }

  inc(labels?: Labels, by = 1): void {
    if (!(by >= 0)) throw new Error(`counter ${this.name} can only increase (got ${by})`);
    const k = this.key(labels);
    this.#values.set(k, (this.#values.get(k) ?? 0) + by);
  }

  get(labels?: Labels): number {
    if (this.#read) return this.#read();
    return this.#values.get(this.key(labels)) ?? 0;
  }

  samples(): string[] {
    if (this.#read) return [`${this.name} ${formatValue(this.#read())}`];
    if (this.#values.size === 0 && this.labelNames.length === 0) return [`${this.name} 0`];
    return [...this.#values].map(([k, v]) => `${this.name}${this.labelText(k)} ${formatValue(v)}`);
  }
}

export class Gauge extends Metric {
  readonly type = "gauge";
  readonly #values = new Map<string, number>();
  readonly #collect: (() => void) | undefined;

  /** `collect` runs before each render: use it to read a value owned elsewhere. */
  constructor(opts: MetricOptions & { collect?: (g: Gauge) => void }) {
    super(opts);
    const collect = opts.collect;
    this.#collect = collect ? () => collect(this) : undefined;
  }

  set(value: number, labels?: Labels): void {
    this.#values.set(this.key(labels), value);
  }

  inc(labels?: Labels, by = 1): void {
    const k = this.key(labels);
    this.#values.set(k, (this.#values.get(k) ?? 0) + by);
  }

  dec(labels?: Labels, by = 1): void {
    this.inc(labels, -by);
  }

  get(labels?: Labels): number {
    return this.#values.get(this.key(labels)) ?? 0;
  }

  /** Forgets one label set (e.g. a cluster that disconnected). */
  remove(labels?: Labels): void {
    this.#values.delete(this.key(labels));
  }

  samples(): string[] {
    this.#collect?.();
    if (this.#values.size === 0 && this.labelNames.length === 0) return [`${this.name} 0`];
    return [...this.#values].map(([k, v]) => `${this.name}${this.labelText(k)} ${formatValue(v)}`);
  }
}

interface HistogramSeries {
  buckets: number[];
  sum: number;
  count: number;
}

export const DEFAULT_BUCKETS: readonly number[] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export class Histogram extends Metric {
  readonly type = "histogram";
  readonly bounds: readonly number[];
  readonly #series = new Map<string, HistogramSeries>();

  constructor(opts: MetricOptions & { buckets?: readonly number[] }) {
    super(opts);
    const b = [...(opts.buckets ?? DEFAULT_BUCKETS)];
    for (let i = 1; i < b.length; i++) {
      if (!((b[i] ?? 0) > (b[i - 1] ?? 0))) throw new Error(`histogram ${opts.name}: buckets must increase`);
    }
    this.bounds = b;
  }

  observe(value: number, labels?: Labels): void {
    const k = this.key(labels);
    let s = this.#series.get(k);
    if (!s) {
      s = { buckets: this.bounds.map(() => 0), sum: 0, count: 0 };
      this.#series.set(k, s);
    }
    // Buckets are stored non-cumulative and summed at render time.
    const i = this.bounds.findIndex((b) => value <= b);
    if (i >= 0) s.buckets[i] = (s.buckets[i] ?? 0) + 1;
    s.sum += value;
    s.count++;
  }

  /** Count and sum of one label set (tests, summaries). */
  get(labels?: Labels): { count: number; sum: number } {
    const s = this.#series.get(this.key(labels));
    return { count: s?.count ?? 0, sum: s?.sum ?? 0 };
  }

  samples(): string[] {
    const out: string[] = [];
    for (const [k, s] of this.#series) {
      let cumulative = 0;
      this.bounds.forEach((b, i) => {
        cumulative += s.buckets[i] ?? 0;
        out.push(`${this.name}_bucket${this.labelText(k, ["le", formatValue(b)])} ${cumulative}`);
      });
      out.push(`${this.name}_bucket${this.labelText(k, ["le", "+Inf"])} ${s.count}`);
      out.push(`${this.name}_sum${this.labelText(k)} ${formatValue(s.sum)}`);
      out.push(`${this.name}_count${this.labelText(k)} ${s.count}`);
    }
    return out;
  }
}

export class Registry {
  readonly #metrics = new Map<string, Metric>();

  counter(opts: MetricOptions & { read?: () => number }): Counter {
    return this.#register(new Counter(opts));
  }

  gauge(opts: MetricOptions & { collect?: (g: Gauge) => void }): Gauge {
    return this.#register(new Gauge(opts));
  }

  histogram(opts: MetricOptions & { buckets?: readonly number[] }): Histogram {
    return this.#register(new Histogram(opts));
  }

  #register<M extends Metric>(m: M): M {
    if (this.#metrics.has(m.name)) throw new Error(`metric ${m.name} is already registered`);
    this.#metrics.set(m.name, m);
    return m;
  }

  /** The whole registry in Prometheus text format. */
  render(): string {
    const parts = [...this.#metrics.values()].map((m) => m.render());
    return parts.length === 0 ? "" : parts.join("\n") + "\n";
  }
}

function formatValue(v: number): string {
  if (Number.isNaN(v)) return "NaN";
  if (v === Infinity) return "+Inf";
  if (v === -Infinity) return "-Inf";
  return String(v);
}

function escapeLabel(v: string): string {
  return v.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/"/g, '\\"');
}

function escapeHelp(v: string): string {
  return v.replace(/\\/g, "\\\\").replace(/\n/g, "\\n");
}
