// `npm run test:e2e`: bring the rig up if it is not running, run the e2e suite with node's test
// runner, and stop the rig again only if this script started it.
//
//   node hack/rig/e2e.ts [--karpenter vX.Y] [extra node --test args, e.g. --test-name-pattern=smoke]
//                        [e2e files]
//
// Without file arguments it runs every test/e2e/**/*.e2e.test.ts.
//
// WAVE_E2E_KEEP_RIG=1 keeps a rig this script started running afterwards.
import { spawn } from "node:child_process";
import { down, report, up } from "./cluster.ts";
import { kubeconfigPath, repoRoot, requestedKarpenter } from "./lib.ts";

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
    const args = [
      "--test",
      "--test-reporter=spec",
      "--test-concurrency=1",
      ...extra,
      ...(files.length > 0 ? [] : ["test/e2e/**/*.e2e.test.ts"]),
    ];
    process.stderr.write(`[e2e] node ${args.join(" ")}\n`);
    return await new Promise<number>((ok) => {
      const child = spawn(process.execPath, args, {
        cwd: repoRoot,
        stdio: "inherit",
        env: { ...process.env, KUBECONFIG: kubeconfigPath },
      });
      child.on("close", (c) => ok(c ?? 1));
    });
  } finally {
    if (started && process.env["WAVE_E2E_KEEP_RIG"] !== "1") await down();
    else if (!started)
      process.stderr.write("[e2e] leaving the rig running (it was already up before this run)\n");
  }
}

main().then((code) => process.exit(code), report);
