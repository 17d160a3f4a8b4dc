import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Event } from "../objects/kube.ts";
import { silentLogger } from "../shared/log.ts";
import { LATE_ANSWER_REASON, LATE_ANSWER_WINDOW_MS, LateAnswerRecorder } from "./late-events.ts";

function recorder(fail = false) {
  const written: Event[] = [];
  const r = new LateAnswerRecorder({
    write: (e) => {
      written.push(e);
      return fail ? Promise.reject(new Error("forbidden")) : Promise.resolve();
    },
    logger: silentLogger,
    instance: "wave-webhook-0",
  });
  return { r, written };
}

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
});
