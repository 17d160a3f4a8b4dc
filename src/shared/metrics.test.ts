import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { Registry, renderAll } from "./metrics.ts";

describe("metrics registry (prom-client underneath)", () => {
  it("renders counters, gauges and histograms in Prometheus text format", async () => {
    const r = new Registry();
    const c = r.counter({ name: "wave_sent_total", help: "Messages sent.", labelNames: ["kind"] });
    const g = r.gauge({ name: "wave_buffered", help: "Buffered messages." });
    const h = r.histogram({ name: "wave_ack_seconds", help: "Ack latency.", buckets: [0.1, 1] });
    c.inc({ kind: "Pod" });
    c.inc({ kind: "Pod" }, 2);
    c.inc({ kind: 'a"b\\c\nd' });
    g.set(7);
    h.observe(0.05);
    h.observe(0.5);
    h.observe(3);
    const text = await r.render();
    for (const line of [
      "# HELP wave_sent_total Messages sent.",
      "# TYPE wave_sent_total counter",
      'wave_sent_total{kind="Pod"} 3',
      'wave_sent_total{kind="a\\"b\\\\c\\nd"} 1',
      "# TYPE wave_buffered gauge",
      "wave_buffered 7",
      "# TYPE wave_ack_seconds histogram",
      'wave_ack_seconds_bucket{le="0.1"} 1',
      'wave_ack_seconds_bucket{le="1"} 2',
      'wave_ack_seconds_bucket{le="+Inf"} 3',
      "wave_ack_seconds_sum 3.55",
      "wave_ack_seconds_count 3",
    ]) {
      assert.ok(text.split("\n").includes(line), `missing line ${line} in\n${text}`);
    }
    assert.equal(await c.get({ kind: "Pod" }), 3);
    assert.deepEqual(await h.get(), { count: 3, sum: 3.55 });
  });

  it("renders an unlabelled metric as 0 before any observation", async () => {
    const r = new Registry();
    r.counter({ name: "x_total", help: "x" });
    assert.match(await r.render(), /^x_total 0$/m);
  });

  it("runs a gauge's collect callback and beforeScrape hooks at render time", async () => {
    const r = new Registry();
    let depth = 1;
    let scrapes = 0;
    r.beforeScrape(() => {
      scrapes++;
    });
    r.gauge({ name: "depth", help: "d", collect: (g) => g.set(depth) });
    depth = 42;
    assert.match(await r.render(), /^depth 42$/m);
    assert.equal(scrapes, 1);
  });

  it("rejects bad names, missing or unknown labels, duplicate metrics and decreasing counters", () => {
    const r = new Registry();
    assert.throws(() => r.counter({ name: "bad-name", help: "" }), /invalid metric name/);
    assert.throws(() => r.counter({ name: "ok", help: "", labelNames: ["le"] }), /invalid label name/);
    const c = r.counter({ name: "c_total", help: "", labelNames: ["a"] });
    assert.throws(() => c.inc(), /missing label a/);
    assert.throws(() => c.inc({ a: "1", b: "2" }), /unknown label b/);
    assert.throws(() => c.inc({ a: "1" }, -1), /only increase/);
    assert.throws(() => r.gauge({ name: "c_total", help: "" }), /already registered/);
    assert.throws(() => r.histogram({ name: "h", help: "", buckets: [1, 1] }), /buckets must increase/);
  });

  it("gauges go up and down and forget a label set", async () => {
    const r = new Registry();
    const g = r.gauge({ name: "g", help: "", labelNames: ["cluster"] });
    g.inc({ cluster: "a" }, 5);
    g.dec({ cluster: "a" }, 2);
    assert.equal(await g.get({ cluster: "a" }), 3);
    g.remove({ cluster: "a" });
    assert.doesNotMatch(await r.render(), /cluster="a"/);
  });

  it("gives prom-client's process and event-loop metrics", async () => {
    const r = new Registry();
    r.collectDefaults();
    const text = await r.render();
    assert.match(text, /^process_cpu_seconds_total /m);
    assert.match(text, /^process_resident_memory_bytes /m);
    assert.match(text, /^nodejs_eventloop_lag_seconds /m);
  });

  it("renders several registries as one exposition", async () => {
    const a = new Registry();
    const b = new Registry();
    a.counter({ name: "a_total", help: "a" }).inc();
    b.gauge({ name: "b", help: "b" }).set(2);
    const text = await renderAll([a, b]);
    assert.match(text, /^a_total 1$/m);
    assert.match(text, /^b 2$/m);
  });
});

describe("counter with read", () => {
  it("reports a total owned elsewhere", async () => {
    const r = new Registry();
    let n = 3;
    const c = r.counter({ name: "dropped_total", help: "d", read: () => n });
    n = 5;
    assert.match(await r.render(), /^dropped_total 5$/m);
    n = 6;
    assert.equal(await c.get(), 6);
  });
});
