// Issue 42, finding 8: `wave spot set --kubeconfig F --context X` wrote to F's current context.
// Every command that takes --kubeconfig honours --context and says which cluster and context it
// writes to — checked with a kubeconfig of two contexts whose apiservers are two real HTTP
// servers, each recording the requests it gets.
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { parseConfig } from "../config/config.ts";
import { createLogger } from "../shared/log.ts";
import { suiteDir } from "../../test/support/suite-dir.ts";
import { captureIo } from "../../test/support/io.ts";
import { connectCluster } from "./connect.ts";
import { run } from "./main.ts";

interface Apiserver {
  server: Server;
  url: string;
  requests: string[];
}

/** The collections the commands list (the plural is the path's last segment). */
const LISTED = new Set(["pods", "nodes", "nodeclaims", "nodepools", "leases", "spotpolicies", "configmaps"]);

/** A stand-in apiserver: /version, empty lists, server-side apply echoing the object, 404 else. */
async function apiserver(): Promise<Apiserver> {
  const requests: string[] = [];
  const server = createServer((req, res) => {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (c: string) => (body += c));
    req.on("end", () => {
      requests.push(`${req.method ?? ""} ${req.url ?? ""}`);
      const path = (req.url ?? "").split("?")[0] ?? "";
      const json = (status: number, v: unknown) =>
        res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(v));
      if (path === "/version") return json(200, { major: "1", minor: "31", gitVersion: "v1.31.0" });
      if (req.method === "PATCH") {
        const obj = JSON.parse(body) as { metadata: Record<string, unknown> };
        return json(200, { ...obj, metadata: { ...obj.metadata, uid: "u1", resourceVersion: "2" } });
      }
      if (req.method === "GET" && LISTED.has(path.split("/").at(-1) ?? ""))
        return json(200, { kind: "List", apiVersion: "v1", metadata: { resourceVersion: "1" }, items: [] });
      return json(404, {
        kind: "Status",
        status: "Failure",
        reason: "NotFound",
        code: 404,
        message: "not found",
      });
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests };
}

let dir = "";
let kubeconfig = "";
let a: Apiserver;
let b: Apiserver;
suiteDir("wave-kube-context-", (d) => (dir = d));

before(async () => {
  a = await apiserver();
  b = await apiserver();
  kubeconfig = join(dir, "two-contexts.yaml");
  writeFileSync(
    kubeconfig,
    [
      "apiVersion: v1",
      "kind: Config",
      "current-context: ctx-a",
      "clusters:",
      `- name: cluster-a\n  cluster: { server: "${a.url}" }`,
      `- name: cluster-b\n  cluster: { server: "${b.url}" }`,
      "users:",
      "- name: u\n  user: { token: t0123456789 }",
      "contexts:",
      "- name: ctx-a\n  context: { cluster: cluster-a, user: u }",
      "- name: ctx-b\n  context: { cluster: cluster-b, user: u }",
      "",
    ].join("\n"),
  );
});

after(async () => {
  for (const s of [a, b]) {
    s.server.closeAllConnections();
    await new Promise((r) => s.server.close(r));
  }
});

const reset = (): void => {
  a.requests.length = 0;
  b.requests.length = 0;
};

describe("--context on every command that takes --kubeconfig", { timeout: 30_000 }, () => {
  it("wave spot set --kubeconfig F --context ctx-b writes to ctx-b's apiserver and says so", async () => {
    reset();
    const io = captureIo();
    const code = await run(
      [
        "spot",
        "set",
        "deployment/shop/api",
        "--threshold",
        "2",
        "--kubeconfig",
        kubeconfig,
        "--context",
        "ctx-b",
      ],
      io,
    );
    assert.equal(code, 0, io.stderr.join(""));
    assert.deepEqual(a.requests, [], "nothing reaches the file's current context");
    assert.ok(
      b.requests.some((r) => r.startsWith("PATCH /apis/wave.sh/")),
      b.requests.join("\n"),
    );
    assert.match(io.stderr.join(""), new RegExp(`applying to cluster ${b.url} \\(context ctx-b\\)`));
  });

  it("wave spot list/delete refuse --kubeconfig (they go through core, not the kubeconfig's cluster)", async () => {
    const io = captureIo();
    const code = await run(["spot", "delete", "deployment/shop/api", "--kubeconfig", kubeconfig], io);
    assert.equal(code, 2);
    assert.match(io.stderr.join(""), /--kubeconfig applies to `wave spot set` without --server/);
  });

  it("wave cleanup --kubeconfig F --context ctx-b removes from ctx-b's apiserver and says so", async () => {
    reset();
    const io = captureIo();
    const code = await run(
      [
        "cleanup",
        "--kubeconfig",
        kubeconfig,
        "--context",
        "ctx-b",
        "--namespace",
        "wave",
        "--log-level",
        "error",
      ],
      io,
    );
    assert.equal(code, 0, io.stderr.join(""));
    assert.deepEqual(a.requests, []);
    assert.ok(b.requests.length > 1, b.requests.join("\n"));
    assert.match(
      io.stderr.join(""),
      new RegExp(`removing Wave's objects of cluster ${b.url} \\(context ctx-b\\)`),
    );
    assert.match(
      io.stdout.join(""),
      new RegExp(`cleaned up in namespace wave of cluster ${b.url} \\(context ctx-b\\)`),
    );
  });

  for (const command of ["start", "agent", "webhook"]) {
    it(`wave ${command} connects (connectCluster) to --context's apiserver and logs the cluster and context`, async () => {
      reset();
      const lines: string[] = [];
      const { config } = parseConfig(["--kubeconfig", kubeconfig, "--context", "ctx-b"], {});
      await connectCluster(config, {}, createLogger({ write: (l) => lines.push(l) }));
      assert.deepEqual(a.requests, []);
      assert.deepEqual(b.requests, ["GET /version"]);
      assert.ok(
        lines.some((l) => l.includes(`cluster ${b.url} (context ctx-b)`)),
        lines.join("\n"),
      );
    });
  }
});
