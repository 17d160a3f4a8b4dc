import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { build } from "../api/app.ts";
import { policyRoutes } from "../api/routes/policies.ts";
import { openStore } from "../core/store/open.ts";
import { silentLogger } from "../shared/log.ts";
import { parse as parseYaml } from "yaml";
import { run } from "./main.ts";
import { parseWorkloadRef, spotBody, warmupBody } from "./policies.ts";
import { captureIo as io } from "../../test/support/io.ts";

describe("policy CLI parsing", () => {
  it("parses workload references", () => {
    assert.deepEqual(parseWorkloadRef("deployment/shop/api"), {
      kind: "Deployment",
      namespace: "shop",
      name: "api",
    });
    assert.deepEqual(parseWorkloadRef("sts/db/pg"), { kind: "StatefulSet", namespace: "db", name: "pg" });
    for (const bad of [undefined, "api", "job/ns/x", "deployment//x", "deployment/a/b/c"])
      assert.throws(() => parseWorkloadRef(bad), /kind\/namespace\/name/);
  });
  it("builds policy bodies and rejects bad flags", () => {
    assert.deepEqual(spotBody({ threshold: "3", strategy: "require" }), {
      threshold: 3,
      strategy: "Require",
    });
    assert.deepEqual(spotBody({ threshold: "2", "percent-above-base": "50" }), {
      threshold: 2,
      strategy: "Prefer",
      percentAboveBase: 50,
    });
    assert.throws(() => spotBody({}), /--threshold N is required/);
    assert.throws(() => spotBody({ threshold: "-1" }), /whole number/);
    assert.throws(() => spotBody({ threshold: "1", strategy: "maybe" }), /prefer or require/);
    assert.deepEqual(spotBody({ threshold: "2", repair: "dry-run" }), {
      threshold: 2,
      strategy: "Prefer",
      repair: "dry-run",
    });
    assert.equal(spotBody({ threshold: "2", repair: "off" }).repair, false);
    assert.throws(() => spotBody({ threshold: "1", repair: "maybe" }), /--repair must be on, off or dry-run/);
    assert.deepEqual(warmupBody({ "max-warm-nodes": "2", ttl: "120", "no-pre-pull": true }), {
      enabled: true,
      maxWarmNodes: 2,
      ttlSeconds: 120,
      prePull: false,
    });
    assert.throws(() => warmupBody({ "max-cost-per-hour": "lots" }), /USD/);
  });
});

describe("wave spot / wave warmup against core's API", () => {
  it("sets, lists and deletes policies with the admin token; the viewer token cannot", async () => {
    const store = await openStore(
      { backend: "sqlite", path: join(mkdtempSync(join(tmpdir(), "wave-cli-")), "w.db") },
      { log: silentLogger },
    );
    const app = await build({
      tokens: { admin: "adm", viewer: "view" },
      plugins: [policyRoutes({ store, defaultClusterId: "default" })],
    });
    const server = await app.listen({ port: 0, host: "127.0.0.1" });
    try {
      const set = io();
      const args = ["--server", server, "--admin-token", "adm"];
      assert.equal(
        await run(["spot", "set", "deployment/shop/api", "--threshold", "3", ...args], set),
        0,
        set.stderr.join(""),
      );
      const list = io();
      assert.equal(await run(["spot", "list", ...args], list), 0);
      const listed = JSON.parse(list.stdout.join("")) as {
        policies: { threshold: number; workload: { name: string } }[];
      };
      assert.deepEqual(
        listed.policies.map((p) => [p.workload.name, p.threshold]),
        [["api", 3]],
      );
      // -o: a table (columns as data), YAML; without -o a table only in a terminal.
      const tableOut = io();
      assert.equal(await run(["spot", "list", "-o", "table", ...args], tableOut), 0);
      assert.deepEqual(tableOut.stdout.join("").split("\n"), [
        "WORKLOAD             THRESHOLD  STRATEGY  ABOVE-BASE-%  REPAIR",
        "deployment/shop/api  3          Prefer    0             on",
        "",
      ]);
      const inTerminal = { ...io(), tty: true };
      assert.equal(await run(["spot", "list", ...args], inTerminal), 0);
      assert.equal(inTerminal.stdout.join(""), tableOut.stdout.join(""));
      const yamlOut = io();
      assert.equal(await run(["spot", "list", "--output", "yaml", ...args], yamlOut), 0);
      assert.deepEqual((parseYaml(yamlOut.stdout.join("")) as typeof listed).policies, listed.policies);
      const badFormat = io();
      assert.equal(await run(["spot", "list", "-o", "xml", ...args], badFormat), 2);
      assert.deepEqual(badFormat.stderr, ['wave: -o/--output must be table, json or yaml, got "xml"\n']);
      const warm = io();
      assert.equal(
        await run(["warmup", "set", "general", "--max-warm-nodes", "2", ...args], warm),
        0,
        warm.stderr.join(""),
      );
      const warmList = io();
      assert.equal(await run(["warmup", "list", "-o", "table", ...args], warmList), 0);
      const [header, row] = warmList.stdout.join("").split("\n");
      assert.match(
        header ?? "",
        /^NODEPOOL +ENABLED +MAX-WARM +TTL +COOLDOWN +MAX-\$\/H +PRE-PULL +UPDATED$/,
      );
      assert.match(row ?? "", /^general +true +2 +600s +300s +- +true +\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
      // --cluster-id: that cluster's policies; without it, core's own (defaultClusterId).
      const east = io();
      assert.equal(
        await run(["warmup", "set", "other", "--cluster-id", "east", ...args], east),
        0,
        east.stderr.join(""),
      );
      assert.deepEqual(
        (await store.listPolicies("east", "warmup")).map((p) => p.key),
        ["other"],
      );
      assert.deepEqual(
        (await store.listPolicies("default", "warmup")).map((p) => p.key),
        ["general"],
      );
      const denied = io();
      assert.equal(
        await run(
          [
            "spot",
            "set",
            "deployment/shop/api",
            "--threshold",
            "1",
            "--server",
            server,
            "--admin-token",
            "view",
          ],
          denied,
        ),
        4,
      );
      assert.match(denied.stderr.join(""), /core answered 403/);
      const del = io();
      assert.equal(await run(["spot", "delete", "deployment/shop/api", ...args], del), 0);
      assert.equal((await store.listPolicies("default", "spot")).length, 0);
      // A negative number reaches validation: one clear line, exit 2, nothing sent.
      const negative = io();
      assert.equal(
        await run(["spot", "set", "deployment/shop/api", "--threshold", "-1", ...args], negative),
        2,
      );
      assert.deepEqual(negative.stderr, ['wave: --threshold expects a whole number (0 or more), got "-1"\n']);
      const refused = io();
      assert.equal(
        await run(["spot", "list", "--server", "http://127.0.0.1:1", "--admin-token", "adm"], refused),
        3,
      );
      assert.match(refused.stderr.join(""), /cannot reach Wave core at http:\/\/127.0.0.1:1/);
    } finally {
      await app.close();
      await store.close();
    }
  });
});
