// `npm run test:e2e`: bring the rig up if it is not running, run the e2e suite with node's test
// runner, and stop the rig again only if this script started it.
//
//   node hack/rig/e2e.ts [--karpenter vX.Y] [extra node --test args, e.g. --test-name-pattern=smoke]
//                        [e2e files]
//
// Without file arguments it runs every test/e2e/**/*.e2e.test.ts in two lanes of one file at a
// time: the main lane, and beside it the soak tests (*.soak.e2e.test.ts: minutes of wall time,
// light on the rig) followed by the files in BESIDE. Every e2e test works on NodePools and
// namespaces of its own; the ones in BESIDE also restart nothing shared (no apiserver, no core
// the others use), count nothing cluster-wide and mostly wait on Karpenter, so the two lanes
// overlap their waits instead of adding them. The second lane's output is printed when it ends;
// a failure in either fails the run.
//
// WAVE_E2E_KEEP_RIG=1 keeps a rig this script started running afterwards.
import { spawn } from "node:child_process";
import { globSync } from "node:fs";
import { down, report, up } from "./cluster.ts";
import { kubeconfigPath, repoRoot, requestedKarpenter } from "./lib.ts";

/** Files that run in the second lane, after the soak tests (see above); order: longest first. */
export const BESIDE = [
  "test/e2e/warmup.e2e.test.ts",
  "test/e2e/fidelity.e2e.test.ts",
  "test/e2e/whatif.e2e.test.ts",
  "test/e2e/rig-smoke.e2e.test.ts",
];

const RESTARTS_APISERVER = "test/e2e/apiserver-restart.e2e.test.ts";

/**
 * Files that compare cluster-wide figures with a recomputation from the apiserver: last in the
 * main lane, when the second lane (whose tests launch and remove nodes) has long ended.
 */
export const LAST = ["test/e2e/crosscheck.e2e.test.ts"];

/** argv without `--karpenter vX` / `--karpenter=vX` (that picks the rig's pair, not a test arg). */
function testArgs(argv: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] ?? "";
    if (a === "--karpenter") i++;
    else if (!a.startsWith("--karpenter=")) out.push(a);
  }
  return out;
}

async function main(): Promise<number> {
  const started = await up(requestedKarpenter(process.argv.slice(2)));
  try {
    const extra = testArgs(process.argv.slice(2));
    const files = extra.filter((a) => !a.startsWith("-") && a.endsWith(".ts"));
    const options = extra.filter((a) => !files.includes(a));
    const all = files.length > 0 ? [] : globSync("test/e2e/**/*.e2e.test.ts", { cwd: repoRoot }).sort();
    const soak = all.filter((f) => f.endsWith(".soak.e2e.test.ts"));
    const beside = [...soak, ...BESIDE.filter((f) => all.includes(f))];
    // The apiserver restart goes first, while the second lane is in its soak test (which rides it
    // out): the files in BESIDE never see a restart.
    const main =
      files.length > 0
        ? files
        : all
            .filter((f) => !beside.includes(f))
            .sort((a, b) => Number(b === RESTARTS_APISERVER) - Number(a === RESTARTS_APISERVER))
            .sort((a, b) => Number(LAST.includes(a)) - Number(LAST.includes(b)));
    const lane = (list: string[], out: "inherit" | "buffer"): Promise<number> => {
      const args = ["--test", "--test-reporter=spec", "--test-concurrency=1", ...options, ...list];
      process.stderr.write(`[e2e] node ${args.join(" ")}\n`);
      return new Promise<number>((ok) => {
        const child = spawn(process.execPath, args, {
          cwd: repoRoot,
          stdio: out === "inherit" ? "inherit" : ["ignore", "pipe", "pipe"],
          env: { ...process.env, KUBECONFIG: kubeconfigPath },
        });
        const chunks: Buffer[] = [];
        child.stdout?.on("data", (b: Buffer) => chunks.push(b));
        child.stderr?.on("data", (b: Buffer) => chunks.push(b));
        child.on("close", (c) => {
          if (out === "buffer")
            process.stdout.write(
              `\n[e2e] second lane (${list.join(" ")}):\n${Buffer.concat(chunks).toString()}\n`,
            );
          ok(c ?? 1);
        });
      });
    };
    const codes = await Promise.all([
      lane(main, "inherit"),
      ...(beside.length > 0 ? [lane(beside, "buffer")] : []),
    ]);
    return codes.find((c) => c !== 0) ?? 0;
  } finally {
    if (started && process.env["WAVE_E2E_KEEP_RIG"] !== "1") await down();
    else if (!started)
      process.stderr.write("[e2e] leaving the rig running (it was already up before this run)\n");
  }
}

main().then((code) => process.exit(code), report);
