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
import { fixtures } from "../../test/fixtures/karpenter/load.ts";
import { consoleRoutes } from "../api/routes/console.ts";
import { dashboardRoutes } from "../api/routes/dashboard.ts";
import { ClusterHub } from "../core/hub/hub.ts";
import { deliverSnapshot } from "../core/hub/testing.ts";
import { KwokPriceProvider } from "../pricing/kwok.ts";
import { FakeClock } from "../shared/clock.ts";
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

const NOW = Date.parse("2026-03-02T12:00:00Z");

describe("wave spot / wave warmup against core's API", () => {
  it("sets, lists and deletes policies with the admin token; the viewer token cannot", async () => {
    const store = await openStore(
      { backend: "sqlite", path: join(mkdtempSync(join(tmpdir(), "wave-cli-")), "w.db") },
      { log: silentLogger },
    );
    // Core sees cluster "default": NodePool "general" and a pod of deployment shop/api.
    const hub = new ClusterHub(store, new FakeClock(NOW));
    await hub.clusterConnected({
      clusterId: "default",
      kubernetesVersion: "v1.34.1",
      karpenterVersion: "v1.8.2",
      agentVersion: "test",
      sessionId: "s1",
      connectedAt: NOW - 5000,
    });
    const pool = fixtures.nodePool();
    pool.metadata.name = "general";
    const pod = fixtures.pod("running");
    pod.metadata.ownerReferences = [
      { apiVersion: "apps/v1", kind: "ReplicaSet", name: "api-7c9f8d6b5", uid: "rs-1", controller: true },
    ];
    await deliverSnapshot(
      hub,
      NOW,
      [
        { kind: "NodePool", object: pool },
        { kind: "Pod", object: pod },
      ],
      { clusterId: "default" },
    );
    const prices = new KwokPriceProvider();
    const app = await build({
      tokens: { admin: "adm", viewer: "view" },
      plugins: [
        policyRoutes({ store, defaultClusterId: "default" }),
        consoleRoutes({ hub, prices, now: () => NOW }),
        dashboardRoutes({ hub, prices, now: () => NOW }),
      ],
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
      // A workload or NodePool core does not see is refused (exit 4); --force sets it with a warning.
      const typo = io();
      assert.equal(await run(["spot", "set", "deployment/shop/apii", "--threshold", "1", ...args], typo), 4);
      assert.deepEqual(typo.stderr, [
        "wave: core sees no pod of deployment/shop/apii in cluster default (a typo? --force sets it anyway)\n",
      ]);
      const noPool = io();
      assert.equal(await run(["warmup", "set", "genral", ...args], noPool), 4);
      assert.deepEqual(noPool.stderr, [
        "wave: no NodePool genral in cluster default (a typo? --force sets it anyway)\n",
      ]);
      assert.equal((await store.listPolicies("default", "spot")).length, 1);
      assert.equal((await store.listPolicies("default", "warmup")).length, 1);
      // --cluster-id: that cluster's policies; without it, core's own (defaultClusterId). Core has
      // no state of cluster "east" (its nodepools answer 404: refused), so it takes --force.
      const eastUnknown = io();
      assert.equal(await run(["warmup", "set", "other", "--cluster-id", "east", ...args], eastUnknown), 4);
      const east = io();
      assert.equal(
        await run(["warmup", "set", "other", "--cluster-id", "east", "--force", ...args], east),
        0,
        east.stderr.join(""),
      );
      assert.deepEqual(east.stderr, [
        "wave: warning: no NodePool other in cluster east; setting its policy anyway (--force)\n",
      ]);
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
