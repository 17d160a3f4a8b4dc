import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Event } from "../objects/kube.ts";
import { FakeClock } from "../shared/clock.ts";
import { silentLogger, type Logger } from "../shared/log.ts";
import {
  LATE_ANSWER_REASON,
  LATE_ANSWER_WINDOW_MS,
  LateAnswerRecorder,
  lateAnswerEvent,
} from "./late-events.ts";

function recorder(fail: boolean | ((e: Event) => boolean) = false, logger: Logger = silentLogger) {
  const written: Event[] = [];
  const r = new LateAnswerRecorder({
    write: (e) => {
      written.push(e);
      const failed = typeof fail === "function" ? fail(e) : fail;
      return failed ? Promise.reject(new Error("events is forbidden")) : Promise.resolve();
    },
    logger,
    instance: "wave-webhook-0",
  });
  return { r, written };
}

const T0 = Date.parse("2026-12-04T12:00:00Z");
const settle = (): Promise<void> => new Promise((res) => setImmediate(res));

describe("late-answer events", () => {
  it("one aggregated Event per workload per window, on the workload, with the count", () => {
    const { r, written } = recorder();
    for (let i = 0; i < 5; i++) r.record("shop/Deployment/web");
    r.record("db/StatefulSet/pg");
    r.flush(1_000);
    assert.equal(written.length, 2);
    const web = written.find((e) => e.involvedObject.name === "web");
    assert.ok(web);
    assert.equal(web.reason, LATE_ANSWER_REASON);
    assert.equal(web.count, 5);
    assert.equal(web.involvedObject.kind, "Deployment");
    assert.equal(web.metadata.namespace, "shop");
    assert.match(web.message ?? "", /^shop\/Deployment\/web: 5 late/);
    const other = lateAnswerEvent("shop/StatefulSet/web", 1, 1_000, "wave-webhook-0");
    const replica = lateAnswerEvent("shop/Deployment/web", 1, 1_000, "wave-webhook-1");
    assert.equal(
      new Set([web.metadata.name, other.metadata.name, replica.metadata.name]).size,
      3,
      "no name clash",
    );
    r.record("shop/Deployment/web");
    r.record("shop/Deployment/web");
    r.flush(1_000 + LATE_ANSWER_WINDOW_MS - 1);
    assert.equal(written.length, 2, "held within the window");
    r.flush(1_000 + LATE_ANSWER_WINDOW_MS);
    assert.equal(written.length, 3);
    assert.equal(written[2]?.count, 2, "the count since the last Event");
  });

  it("records nothing when there are no late answers", () => {
    const { r, written } = recorder();
    r.flush(1_000);
    r.flush(1_000 + 10 * LATE_ANSWER_WINDOW_MS);
    assert.equal(written.length, 0);
  });

  it("a failing Event write neither throws nor blocks", async () => {
    const { r, written } = recorder(true);
    r.record("shop/Deployment/web");
    assert.doesNotThrow(() => r.flush(1_000));
    await new Promise((res) => setImmediate(res));
    assert.equal(written.length, 1);
  });

  it("flushes once a minute on the injected clock: per workload, the count of that minute", async () => {
    const clock = new FakeClock(T0);
    const { r, written } = recorder();
    const stop = new AbortController();
    const running = r.run(clock, stop.signal);
    r.record("shop/Deployment/web");
    r.record("shop/Deployment/web");
    r.record("shop/StatefulSet/db");
    await clock.advance(LATE_ANSWER_WINDOW_MS - 1);
    assert.equal(written.length, 0, "nothing before the minute is over");
    await clock.advance(1);
    assert.deepEqual(
      written.map((e) => [`${e.involvedObject.kind}/${e.involvedObject.name}`, e.count, e.lastTimestamp]),
      [
        ["Deployment/web", 2, "2026-12-04T12:01:00Z"],
        ["StatefulSet/db", 1, "2026-12-04T12:01:00Z"],
      ],
    );
    // The second minute: only web had late answers; db gets no Event.
    r.record("shop/Deployment/web");
    await clock.advance(LATE_ANSWER_WINDOW_MS);
    assert.deepEqual(
      written.slice(2).map((e) => [e.involvedObject.name, e.count]),
      [["web", 1]],
    );
    // A quiet minute writes nothing.
    await clock.advance(LATE_ANSWER_WINDOW_MS);
    assert.equal(written.length, 3);
    assert.notEqual(written[0]?.metadata.name, written[2]?.metadata.name, "a new Event each minute");
    stop.abort();
    await running;
  });

  it("writes what is pending on shutdown, inside the minute, and waits for the write", async () => {
    const clock = new FakeClock(T0);
    let finish: () => void = () => undefined;
    const written: Event[] = [];
    const r = new LateAnswerRecorder({
      write: (e) =>
        new Promise<void>((res) => {
          written.push(e);
          finish = res;
        }),
      logger: silentLogger,
      instance: "wave-webhook-0",
    });
    const stop = r.start(clock); // as wave webhook and wave start run it
    await clock.advance(LATE_ANSWER_WINDOW_MS);
    r.record("shop/Deployment/web");
    r.record("shop/Deployment/web");
    r.record("shop/Deployment/web");
    await clock.advance(10_000);
    assert.equal(written.length, 0);
    let done = false;
    const running = stop().then(() => (done = true));
    await settle();
    assert.deepEqual(
      written.map((e) => [e.involvedObject.name, e.count]),
      [["web", 3]],
      "the shutdown writes the 3 counted 10 s into the minute",
    );
    assert.equal(done, false, "shutdown waits for the Event's create");
    finish();
    await running;
    assert.equal(done, true);
  });

  it("a failed create is logged and drops only its own workload's count", async () => {
    const warnings: [string, Record<string, unknown> | undefined][] = [];
    const logger: Logger = { ...silentLogger, warn: (m, f) => warnings.push([m, f]) };
    const { r, written } = recorder((e) => e.involvedObject.name === "web", logger);
    r.record("shop/Deployment/web");
    r.record("shop/Deployment/api");
    r.record("db/StatefulSet/pg");
    r.flush(T0);
    await settle();
    assert.deepEqual(
      written.map((e) => e.involvedObject.name),
      ["web", "api", "pg"],
      "the workloads after the failed one are still written",
    );
    assert.deepEqual(
      warnings.map(([, f]) => [f?.workload, f?.count]),
      [["shop/Deployment/web", 1]],
      "the failed write is logged with its workload and count",
    );
    // Later late answers of the failed workload are recorded and written as usual.
    r.record("shop/Deployment/web");
    r.record("shop/Deployment/api");
    r.flush(T0 + LATE_ANSWER_WINDOW_MS);
    await settle();
    assert.deepEqual(
      written.slice(3).map((e) => [e.involvedObject.name, e.count]),
      [
        ["web", 1],
        ["api", 1],
      ],
    );
  });

  it("a write that throws at once is logged the same way and never reaches the caller", async () => {
    const warnings: string[] = [];
    const logger: Logger = { ...silentLogger, warn: (m) => warnings.push(m) };
    const r = new LateAnswerRecorder({
      write: () => {
        throw new Error("no client");
      },
      logger,
      instance: "wave-webhook-0",
    });
    r.record("shop/Deployment/web");
    assert.doesNotThrow(() => r.flush(T0));
    await r.drain(T0);
    assert.equal(warnings.length, 1);
  });
});
