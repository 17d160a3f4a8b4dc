// Wave's metrics registry: a thin, strict layer over prom-client (ADR 0008). Every component
// registers counters, gauges and histograms here; prom-client renders the text exposition format
// and supplies the process and event-loop metrics (`collectDefaults`). The layer adds what
// prom-client leaves loose: every observation must give exactly the declared labels (a typo
// would otherwise create a new series), and gauges/counters can read values owned elsewhere.
import client from "prom-client";

export type Labels = Record<string, string>;

export const CONTENT_TYPE = client.Registry.PROMETHEUS_CONTENT_TYPE;

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

interface MetricOptions {
  name: string;
  help: string;
  /** Label names every observation must provide. */
  labelNames?: readonly string[];
}

function checkOptions(opts: MetricOptions): readonly string[] {
  if (!NAME.test(opts.name)) throw new Error(`invalid metric name ${JSON.stringify(opts.name)}`);
  const labels = opts.labelNames ?? [];
  for (const l of labels) {
    if (!LABEL.test(l) || l.startsWith("__") || l === "le" || l === "quantile") {
      throw new Error(`invalid label name ${JSON.stringify(l)} on metric ${opts.name}`);
    }
  }
  return labels;
}

/** Rejects missing or unknown labels: prom-client would silently create a partial series. */
function checkLabels(name: string, names: readonly string[], labels: Labels | undefined): Labels {
  const given = labels ?? {};
  for (const k of Object.keys(given)) {
    if (!names.includes(k)) throw new Error(`metric ${name}: unknown label ${k}`);
  }
  for (const n of names) if (given[n] === undefined) throw new Error(`metric ${name}: missing label ${n}`);
  return given;
}

type Values = readonly { labels: Partial<Record<string, string | number>>; value: number }[];

function valueOf(values: Values, names: readonly string[], labels: Labels): number {
  const hit = values.find((v) => names.every((n) => String(v.labels[n]) === labels[n]));
  return hit?.value ?? 0;
}

export class Counter {
  readonly name: string;
  readonly labelNames: readonly string[];
  readonly prom: client.Counter;

  constructor(registry: client.Registry, opts: MetricOptions & { read?: () => number }) {
    this.labelNames = checkOptions(opts);
    this.name = opts.name;
    const read = opts.read;
    if (read && this.labelNames.length > 0) throw new Error(`counter ${opts.name}: read needs no labels`);
    this.prom = new client.Counter({
      name: opts.name,
      help: opts.help || opts.name,
      labelNames: [...this.labelNames],
      registers: [registry],
      ...(read
        ? {
            collect(this: client.Counter) {
              this.reset();
              this.inc(read());
            },
          }
        : {}),
    });
  }

  inc(labels?: Labels, by = 1): void {
    if (!(by >= 0)) throw new Error(`counter ${this.name} can only increase (got ${by})`);
    this.prom.inc(checkLabels(this.name, this.labelNames, labels), by);
  }

  async get(labels?: Labels): Promise<number> {
    const m = await this.prom.get();
    return valueOf(m.values, this.labelNames, checkLabels(this.name, this.labelNames, labels));
  }

  /** Forgets one label set (e.g. a cluster core no longer knows). */
  remove(labels: Labels): void {
    this.prom.remove(checkLabels(this.name, this.labelNames, labels));
  }
}

export class Gauge {
  readonly name: string;
  readonly labelNames: readonly string[];
  readonly prom: client.Gauge;

  /** `collect` runs before each render: use it to read a value owned elsewhere. */
  constructor(registry: client.Registry, opts: MetricOptions & { collect?: (g: Gauge) => void }) {
    this.labelNames = checkOptions(opts);
    this.name = opts.name;
    const collect = opts.collect;
    // eslint-disable-next-line @typescript-eslint/no-this-alias -- prom-client binds `this` to its own gauge
    const self = this;
    this.prom = new client.Gauge({
      name: opts.name,
      help: opts.help || opts.name,
      labelNames: [...this.labelNames],
      registers: [registry],
      ...(collect ? { collect: () => collect(self) } : {}),
    });
  }

  set(value: number, labels?: Labels): void {
    this.prom.set(checkLabels(this.name, this.labelNames, labels), value);
  }

  inc(labels?: Labels, by = 1): void {
    this.prom.inc(checkLabels(this.name, this.labelNames, labels), by);
  }

  dec(labels?: Labels, by = 1): void {
    this.prom.dec(checkLabels(this.name, this.labelNames, labels), by);
  }

  async get(labels?: Labels): Promise<number> {
    const m = await this.prom.get();
    return valueOf(m.values, this.labelNames, checkLabels(this.name, this.labelNames, labels));
  }

  /** Forgets one label set (e.g. a cluster that disconnected). */
  remove(labels?: Labels): void {
    this.prom.remove(checkLabels(this.name, this.labelNames, labels));
  }

  /** Forgets every label set (a collector about to set the current ones). */
  reset(): void {
    this.prom.reset();
  }
}

export const DEFAULT_BUCKETS: readonly number[] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export class Histogram {
  readonly name: string;
  readonly labelNames: readonly string[];
  readonly bounds: readonly number[];
  readonly prom: client.Histogram;

  constructor(registry: client.Registry, opts: MetricOptions & { buckets?: readonly number[] }) {
    this.labelNames = checkOptions(opts);
    this.name = opts.name;
    const b = [...(opts.buckets ?? DEFAULT_BUCKETS)];
    for (let i = 1; i < b.length; i++) {
      if (!((b[i] ?? 0) > (b[i - 1] ?? 0))) throw new Error(`histogram ${opts.name}: buckets must increase`);
    }
    this.bounds = b;
    this.prom = new client.Histogram({
      name: opts.name,
      help: opts.help || opts.name,
      labelNames: [...this.labelNames],
      buckets: b,
      registers: [registry],
    });
  }

  observe(value: number, labels?: Labels): void {
    this.prom.observe(checkLabels(this.name, this.labelNames, labels), value);
  }

  /** Count and sum of one label set (tests, summaries). */
  async get(labels?: Labels): Promise<{ count: number; sum: number }> {
    const given = checkLabels(this.name, this.labelNames, labels);
    const m = await this.prom.get();
    const pick = (suffix: string): number =>
      valueOf(
        (m.values as (Values[number] & { metricName?: string })[]).filter(
          (v) => v.metricName === `${this.name}${suffix}`,
        ),
        this.labelNames,
        given,
      );
    return { count: pick("_count"), sum: pick("_sum") };
  }
}

export class Registry {
  /** The prom-client registry underneath, for collectors that need its full API. */
  readonly prom = new client.Registry();
  readonly #beforeScrape: (() => void | Promise<void>)[] = [];

  counter(opts: MetricOptions & { read?: () => number }): Counter {
    this.#unique(opts.name);
    return new Counter(this.prom, opts);
  }

  gauge(opts: MetricOptions & { collect?: (g: Gauge) => void }): Gauge {
    this.#unique(opts.name);
    return new Gauge(this.prom, opts);
  }

  histogram(opts: MetricOptions & { buckets?: readonly number[] }): Histogram {
    this.#unique(opts.name);
    return new Histogram(this.prom, opts);
  }

  /**
   * Runs before every render, before any metric's collect: a collector that computes many
   * metrics from one pass over core's state does that pass here, once per scrape.
   */
  beforeScrape(fn: () => void | Promise<void>): void {
    this.#beforeScrape.push(fn);
  }

  /**
   * prom-client's process and Node.js metrics (CPU, memory, file descriptors, event-loop lag,
   * GC, handles), sampled at scrape time. Call once per registry.
   */
  collectDefaults(): void {
    client.collectDefaultMetrics({ register: this.prom, eventLoopMonitoringPrecision: 20 });
  }

  #unique(name: string): void {
    if (this.prom.getSingleMetric(name)) throw new Error(`metric ${name} is already registered`);
  }

  /** The whole registry in Prometheus text format. */
  async render(): Promise<string> {
    for (const fn of this.#beforeScrape) await fn();
    return this.prom.metrics();
  }
}

/** Renders registries as one exposition (their metric names must not overlap). */
export async function renderAll(registries: readonly Registry[]): Promise<string> {
  const parts = await Promise.all(registries.map((r) => r.render()));
  return parts.filter((p) => p !== "").join("");
}
