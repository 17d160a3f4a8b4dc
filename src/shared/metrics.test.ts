import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { Registry } from "./metrics.ts";

describe("metrics registry", () => {
  it("renders counters, gauges and histograms in Prometheus text format", () => {
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
    assert.equal(
      r.render(),
      [
        "# HELP wave_sent_total Messages sent.",
        "# TYPE wave_sent_total counter",
        'wave_sent_total{kind="Pod"} 3',
        'wave_sent_total{kind="a\\"b\\\\c\\nd"} 1',
        "# HELP wave_buffered Buffered messages.",
        "# TYPE wave_buffered gauge",
        "wave_buffered 7",
        "# HELP wave_ack_seconds Ack latency.",
        "# TYPE wave_ack_seconds histogram",
        'wave_ack_seconds_bucket{le="0.1"} 1',
        'wave_ack_seconds_bucket{le="1"} 2',
        'wave_ack_seconds_bucket{le="+Inf"} 3',
        "wave_ack_seconds_sum 3.55",
        "wave_ack_seconds_count 3",
        "",
      ].join("\n"),
    );
  });

  it("renders an unlabelled metric as 0 before any observation", () => {
    const r = new Registry();
    r.counter({ name: "x_total", help: "x" });
    assert.match(r.render(), /^x_total 0$/m);
  });

  it("runs a gauge's collect callback at render time", () => {
    const r = new Registry();
    let depth = 1;
    r.gauge({ name: "depth", help: "d", collect: (g) => g.set(depth) });
    depth = 42;
    assert.match(r.render(), /^depth 42$/m);
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

  it("gauges go up and down and forget a label set", () => {
    const r = new Registry();
    const g = r.gauge({ name: "g", help: "", labelNames: ["cluster"] });
    g.inc({ cluster: "a" }, 5);
    g.dec({ cluster: "a" }, 2);
    assert.equal(g.get({ cluster: "a" }), 3);
    g.remove({ cluster: "a" });
    assert.doesNotMatch(r.render(), /cluster="a"/);
  });
});

describe("counter with read", () => {
  it("reports a total owned elsewhere", () => {
    const r = new Registry();
    let n = 3;
    const c = r.counter({ name: "dropped_total", help: "d", read: () => n });
    n = 5;
    assert.equal(c.get(), 5);
    assert.match(r.render(), /^dropped_total 5$/m);
  });
});
