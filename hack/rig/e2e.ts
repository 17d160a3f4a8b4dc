// `npm run test:e2e`: bring the rig up if it is not running, run the e2e suite with node's test
// runner, and stop the rig again only if this script started it.
//
//   node hack/rig/e2e.ts [--karpenter vX.Y] [extra node --test args, e.g. --test-name-pattern=smoke]
//                        [e2e files]
//
// Without file arguments it runs every test/e2e/**/*.e2e.test.ts, one file at a time, and beside
// them the soak tests (*.soak.e2e.test.ts): tests that watch the rig for minutes of wall time and
// load it lightly (on their own NodePool, as every e2e test is), so they need not add their
// minutes to the suite's. Their output is printed when they end; a failure fails the run.
//
// WAVE_E2E_KEEP_RIG=1 keeps a rig this script started running afterwards.
import { spawn } from "node:child_process";
import { globSync } from "node:fs";
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
    const options = extra.filter((a) => !files.includes(a));
    const all = files.length > 0 ? [] : globSync("test/e2e/**/*.e2e.test.ts", { cwd: repoRoot }).sort();
    const soak = all.filter((f) => f.endsWith(".soak.e2e.test.ts"));
    const main = files.length > 0 ? files : all.filter((f) => !soak.includes(f));
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
              `\n[e2e] soak tests (${list.join(" ")}):\n${Buffer.concat(chunks).toString()}\n`,
            );
          ok(c ?? 1);
        });
      });
    };
    const codes = await Promise.all([
      lane(main, "inherit"),
      ...(soak.length > 0 ? [lane(soak, "buffer")] : []),
    ]);
    return codes.find((c) => c !== 0) ?? 0;
  } finally {
    if (started && process.env["WAVE_E2E_KEEP_RIG"] !== "1") await down();
    else if (!started)
      process.stderr.write("[e2e] leaving the rig running (it was already up before this run)\n");
  }
}

main().then((code) => process.exit(code), report);
