import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { createLogger, redact } from "./log.ts";

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
});
