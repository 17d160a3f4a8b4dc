import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { Registry } from "./metrics.ts";
import { startMetricsServer } from "./metrics-server.ts";

describe("metrics server", () => {
  it("serves the registry at /metrics and health at /healthz", async () => {
    const r = new Registry();
    r.counter({ name: "wave_test_total", help: "t" }).inc();
    let healthy = true;
    const s = await startMetricsServer(r, { port: 0, host: "127.0.0.1", healthy: () => healthy });
    try {
      const res = await fetch(`http://127.0.0.1:${s.port}/metrics`);
      assert.equal(res.status, 200);
      assert.match(res.headers.get("content-type") ?? "", /text\/plain; version=0.0.4/);
      assert.match(await res.text(), /^wave_test_total 1$/m);
      assert.equal((await fetch(`http://127.0.0.1:${s.port}/healthz`)).status, 200);
      healthy = false;
      assert.equal((await fetch(`http://127.0.0.1:${s.port}/healthz`)).status, 503);
      assert.equal((await fetch(`http://127.0.0.1:${s.port}/nope`)).status, 404);
    } finally {
      await s.close();
    }
  });
});
