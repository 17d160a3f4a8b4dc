// The host path a new user takes from the README (issue 18, item 5): `wave start --kubeconfig`
// against the rig, every port left to the OS (0), Wave's namespace missing, `--register-webhook`.
// One command must: create the namespace and say so; print every listening address in its
// banner (API/UI, agent gRPC, the webhook's URL and CA); register the webhook with its CA, so
// pods of a workload with a spot policy are placed through it; let `wave spot|warmup set` find
// the running instance (its bound port and generated admin token) with no --server or token; and
// on SIGTERM remove its registration and its instance file.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { promisify } from "node:util";
import { repoRoot } from "../../hack/rig/lib.ts";
import { spawnWave, stopWave, type WaveProcess } from "../support/wave-process.ts";
import {
  apply,
  createNamespace,
  deleteNamespace,
  get,
  kubeconfigPath,
  kubectlRaw,
  list,
  remove,
  requireRig,
  waitFor,
  withRigLogsOnFailure,
} from "./harness.ts";
import { ASSIGNMENT_LABEL } from "../../src/objects/wave.ts";

const run = promisify(execFile);
const suffix = randomBytes(3).toString("hex");
/** Wave's namespace: missing before the start, created by it. */
const waveNs = `wave-host-${suffix}`;
const CONFIG_NAME = "wave-spot-placement";
let appNs = "";
let work = "";
let wave: WaveProcess | undefined;

/** `wave <args>` with the test's data directory, as a user in the same directory would run it. */
async function cli(args: string[]): Promise<{ code: number; out: string }> {
  try {
    const { stdout, stderr } = await run(
      process.execPath,
      [join(repoRoot, "bin", "wave.ts"), ...args, "--data-dir", join(work, "data")],
      { env: { PATH: process.env["PATH"] ?? "", HOME: work }, timeout: 30_000 },
    );
    return { code: 0, out: stdout + stderr };
  } catch (e) {
    const err = e as { code?: number; stdout?: string; stderr?: string };
    return { code: err.code ?? 1, out: `${err.stdout ?? ""}${err.stderr ?? ""}` };
  }
}

before(async () => {
  await requireRig();
  appNs = await createNamespace("host-app");
  work = mkdtempSync(join(tmpdir(), "wave-host-e2e-"));
  assert.equal(await get("namespace", waveNs), undefined);
});

after(async () => {
  if (wave && wave.child.exitCode === null && wave.child.signalCode === null) wave.child.kill("SIGKILL");
  for (const [what, step] of [
    ["webhook configuration", () => remove("mutatingwebhookconfiguration", CONFIG_NAME)],
    ["workloads", () => kubectlRaw(["delete", "deployments", "--all", "-n", appNs, "--wait=false"])],
    ["namespaces", () => Promise.all([appNs, waveNs].filter((n) => n !== "").map((n) => deleteNamespace(n)))],
  ] as const) {
    try {
      await step();
    } catch (err) {
      process.stderr.write(`cleanup of ${what} failed: ${(err as Error).message}\n`);
    }
  }
  if (work !== "") rmSync(work, { recursive: true, force: true });
});

test(
  "wave start --kubeconfig: creates its namespace, prints every address, registers its webhook; the CLI finds it",
  { timeout: 180_000 },
  async () => {
    try {
      await withRigLogsOnFailure(async () => {
        const data = join(work, "data");
        wave = spawnWave(
          "start",
          [
            "start",
            "--kubeconfig",
            kubeconfigPath,
            "--namespace",
            waveNs,
            "--data-dir",
            data,
            "--port",
            "0",
            "--grpc-port",
            "0",
            "--webhook-port",
            "0",
            "--register-webhook",
          ],
          { env: {}, home: work },
        );
        const p = wave;
        await waitFor(
          "the banner",
          () => Promise.resolve(p.output.some((l) => l.startsWith("Press Ctrl-C"))),
          {
            timeoutMs: 60_000,
            intervalMs: 250,
          },
        );
        const text = p.output.join("\n");
        process.stderr.write(`[banner]\n${p.output.filter((l) => !l.startsWith("{")).join("\n")}\n`);
        const api = /API and web UI\s+(http:\/\/127\.0\.0\.1:(\d+)\/)/.exec(text);
        const grpc = /agent gRPC\s+https:\/\/127\.0\.0\.1:(\d+)/.exec(text);
        const hook = /webhook\s+(https:\/\/127\.0\.0\.1:(\d+)\/mutate)\s+\(CA: ([^)]+)\)/.exec(text);
        assert.ok(api && grpc && hook, `every address in the banner:\n${text}`);
        for (const port of [api[2], grpc[1], hook[2]]) assert.notEqual(Number(port), 0, "bound ports, not 0");
        assert.match(text, new RegExp(`Created namespace ${waveNs}`));
        assert.match(text, /Webhook registered: MutatingWebhookConfiguration wave-spot-placement/);
        assert.ok(await get("namespace", waveNs), "the namespace exists");

        // Registered with the CA of the certificate it serves.
        const caFile = hook[3] ?? "";
        const config = await get("mutatingwebhookconfiguration", CONFIG_NAME);
        const webhooks = (
          config as unknown as { webhooks?: { clientConfig: { url: string; caBundle: string } }[] }
        ).webhooks;
        assert.equal(webhooks?.[0]?.clientConfig.url, hook[1]);
        assert.equal(
          Buffer.from(webhooks?.[0]?.clientConfig.caBundle ?? "", "base64").toString(),
          readFileSync(caFile, "utf8"),
        );
        const health = await fetch(`${api[1]}healthz`);
        assert.equal(health.status, 200);

        // The CLI finds the instance: no --server, no token. The policy comes before its Deployment:
        // refused (exit 4, core sees no pod of it) unless --force.
        const early = await cli(["spot", "set", `deployment/${appNs}/spotty`, "--threshold", "1"]);
        assert.equal(early.code, 4, early.out);
        assert.match(early.out, /core sees no pod of deployment\/.*\/spotty .*--force sets it anyway/);
        const spot = await cli([
          "spot",
          "set",
          `deployment/${appNs}/spotty`,
          "--threshold",
          "1",
          "--strategy",
          "prefer",
          "--force",
        ]);
        assert.equal(spot.code, 0, spot.out);
        const warm = await cli(["warmup", "set", "default", "--max-warm-nodes", "1", "--disable"]);
        assert.equal(warm.code, 0, warm.out);
        const listed = await cli(["warmup", "list"]);
        assert.equal(listed.code, 0, listed.out);
        assert.match(listed.out, /default/);

        // Pods of the workload are placed through the registered webhook (admission is what counts:
        // they select a label no node has).
        await apply({
          apiVersion: "apps/v1",
          kind: "Deployment",
          metadata: { name: "spotty", namespace: appNs },
          spec: {
            replicas: 2,
            selector: { matchLabels: { app: "spotty" } },
            template: {
              metadata: { labels: { app: "spotty" } },
              spec: {
                nodeSelector: { "wave.dev/e2e-unschedulable": suffix },
                terminationGracePeriodSeconds: 0,
                containers: [{ name: "app", image: "pause:3.10", resources: { requests: { cpu: "100m" } } }],
              },
            },
          },
        });
        const placed = await waitFor(
          "both spotty pods admitted with a capacity assignment",
          async () => {
            const pods = await list("pods", { namespace: appNs, selector: "app=spotty" });
            const a = pods.map((x) => x.metadata.labels?.[ASSIGNMENT_LABEL]).filter((x) => x !== undefined);
            return a.length === 2 ? a.sort() : undefined;
          },
          { timeoutMs: 60_000 },
        );
        assert.deepEqual(placed, ["on-demand", "spot"]);

        // SIGTERM: the registration and the instance file go with the process.
        assert.equal(await stopWave(p, 60_000), 0, "wave start exits 0 on SIGTERM");
        assert.equal(
          await get("mutatingwebhookconfiguration", CONFIG_NAME),
          undefined,
          "registration removed",
        );
        assert.equal(existsSync(join(data, "instance.json")), false, "instance file removed");
        const gone = await cli(["spot", "list"]);
        assert.notEqual(gone.code, 0, "with the instance gone the CLI says so");
        assert.match(gone.out, /token is required|cannot reach/);
      });
    } catch (err) {
      if (wave)
        process.stderr.write(
          `\n----- wave start (last 60 lines) -----\n${wave.output.slice(-60).join("\n")}\n`,
        );
      throw err;
    }
  },
);
