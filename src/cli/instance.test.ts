import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { build } from "../api/app.ts";
import { policyRoutes } from "../api/routes/policies.ts";
import { openStore } from "../core/store/open.ts";
import { silentLogger } from "../shared/log.ts";
import { instanceFile, readInstance, removeInstance, writeInstance, type Instance } from "./instance.ts";
import { run, type Io } from "./main.ts";

const dir = (): string => mkdtempSync(join(tmpdir(), "wave-instance-"));
const instance: Instance = {
  pid: process.pid,
  apiUrl: "http://127.0.0.1:40123",
  grpcAddress: "127.0.0.1:40124",
  webhookUrl: "https://127.0.0.1:40125/mutate",
  clusterId: "default",
  adminToken: "adm",
};

describe("the running instance's file", () => {
  it("round-trips, private to its owner, and is removed only by its own process", () => {
    const d = dir();
    writeInstance(d, instance);
    assert.equal(statSync(instanceFile(d)).mode & 0o777, 0o600, "it holds tokens");
    assert.deepEqual(readInstance(d), instance);
    removeInstance(d, process.pid + 1);
    assert.deepEqual(readInstance(d), instance, "another pid does not remove it");
    removeInstance(d, process.pid);
    assert.equal(readInstance(d), undefined);
  });
  it("ignores a dead process's file, a malformed one and a missing one", () => {
    const d = dir();
    assert.equal(readInstance(d), undefined);
    writeInstance(d, instance);
    assert.equal(
      readInstance(d, () => false),
      undefined,
    );
    for (const bad of ["{", "null", JSON.stringify({ ...instance, pid: "1" }), JSON.stringify({ pid: 1 })]) {
      writeFileSync(instanceFile(d), bad);
      assert.equal(readInstance(d), undefined, bad);
    }
  });
});

describe("wave spot finds the running instance", () => {
  it("uses its address and generated admin token when --server and tokens are not given", async () => {
    const store = await openStore({ backend: "sqlite", path: join(dir(), "w.db") }, { log: silentLogger });
    const app = await build({
      tokens: { admin: "adm", viewer: "view" },
      plugins: [policyRoutes({ store, defaultClusterId: "default" })],
    });
    const server = await app.listen({ port: 0, host: "127.0.0.1" });
    const d = dir();
    const out: string[] = [];
    const err: string[] = [];
    const io: Io = {
      out: (t) => out.push(t),
      err: (t) => err.push(t),
      env: {},
      signal: new AbortController().signal,
    };
    try {
      // --force: this core serves policies only, no view of the cluster's workloads.
      const args = ["spot", "set", "deployment/shop/api", "--threshold", "2", "--force", "--data-dir", d];
      assert.equal(await run(args, io), 2, "no instance: the default port is refused");
      assert.match(err.join(""), /admin token is required|cannot reach/);
      writeInstance(d, { ...instance, apiUrl: server });
      err.length = 0;
      assert.equal(await run(args, io), 0, err.join(""));
      assert.equal((await store.listPolicies("default", "spot")).length, 1);
    } finally {
      await app.close();
      await store.close();
    }
  });
});
