import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { createLogger, defaultLogFormat, prettyLine, redact } from "./log.ts";

describe("logger", () => {
  it("redacts secret-looking fields", () => {
    assert.deepEqual(redact({ token: "abc", user: "x", clientKey: "k", empty: "" }), {
      token: "[redacted]",
      user: "x",
      clientKey: "[redacted]",
      empty: "",
    });
  });

  it("filters by level and writes JSON lines", () => {
    const lines: string[] = [];
    const log = createLogger({ level: "warn", write: (l) => lines.push(l), now: () => 0 });
    log.info("hidden");
    log.child({ component: "core" }).warn("shown", { n: 1 });
    assert.equal(lines.length, 1);
    assert.deepEqual(JSON.parse(lines[0]!), {
      time: "1970-01-01T00:00:00.000Z",
      level: "warn",
      msg: "shown",
      component: "core",
      n: 1,
    });
  });

  it("never writes a token, in either format, from a call's fields or a child's", () => {
    for (const format of ["json", "pretty"] as const) {
      const lines: string[] = [];
      const log = createLogger({ write: (l) => lines.push(l), format, base: { adminToken: "s3cr3t-base" } });
      log
        .child({ agentToken: "s3cr3t-child" })
        .info("connected", { authorization: "Bearer s3cr3t-call", n: 1 });
      assert.equal(lines.length, 1);
      assert.doesNotMatch(lines[0] ?? "", /s3cr3t/, format);
      assert.match(lines[0] ?? "", /\[redacted\]/, format);
    }
  });

  it("is JSON when stderr is not a terminal, one readable line in a terminal", () => {
    assert.equal(defaultLogFormat(false), "json");
    assert.equal(defaultLogFormat(true), "pretty");
    const lines: string[] = [];
    const log = createLogger({ write: (l) => lines.push(l), format: "pretty", now: () => 0, level: "debug" });
    log
      .child({ app: "wave", component: "agent" })
      .warn("stream broke off", { attempt: 2, reason: "peer gone" });
    log.debug("tick");
    assert.deepEqual(lines, [
      '00:00:00  WARN   agent  stream broke off  attempt=2 reason="peer gone"',
      "00:00:00  DEBUG  tick",
    ]);
    assert.equal(
      prettyLine('{"time":"2026-01-01T12:34:56.000Z","level":"error","msg":"boom","err":"x"}'),
      "12:34:56  ERROR  boom  err=x",
    );
  });
});
