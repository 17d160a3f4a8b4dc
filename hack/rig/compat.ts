// `npm run test:compat`: for each Karpenter pair in hack/rig/versions.env, bring the matching rig
// up (built side by side in .rig/cache) and run the e2e files that cross Karpenter, one by one;
// print a version × test table, keep each file's output under .rig/compat/<version>/, and with
// --write-docs put the table into docs/compatibility.md.
//
//   node hack/rig/compat.ts [--karpenter v1.8,v1.15] [--files rig-smoke,pipeline] [--record] [--write-docs]
//   node hack/rig/compat.ts --docs-only   # docs/compatibility.md from the stored results, no run
//
// --record also refreshes test/fixtures/karpenter/recorded/<version>/ from each rig. The rig is
// left stopped unless it was already running at the default pair before.
import { spawn } from "node:child_process";
import { createWriteStream, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { down, report, up } from "./cluster.ts";
import { kubeconfigPath, readVersions, repoRoot, rigDir, selectPair, type RigPair } from "./lib.ts";

/** The e2e files whose subject crosses Karpenter (provisioning, lifecycle, disruption, placement). */
export const COMPAT_FILES = [
  "rig-smoke",
  "pipeline",
  "dashboard",
  "warmup",
  "spot-placement",
  "spot-lifecycle",
];

export interface FileResult {
  file: string;
  ok: boolean;
  pass: number;
  fail: number;
  seconds: number;
}

export interface PairResult {
  pair: RigPair;
  /** When this pair's run finished (ISO). */
  at?: string;
  up: boolean;
  error?: string;
  files: FileResult[];
}

function arg(name: string): string | undefined {
  const argv = process.argv.slice(2);
  const i = argv.indexOf(name);
  if (i >= 0) return argv[i + 1];
  return argv.find((a) => a.startsWith(`${name}=`))?.slice(name.length + 1);
}

function runNode(args: string[], log: string): Promise<{ code: number; out: string }> {
  return new Promise((ok) => {
    const out = createWriteStream(log);
    let text = "";
    const child = spawn(process.execPath, args, {
      cwd: repoRoot,
      env: { ...process.env, KUBECONFIG: kubeconfigPath },
      stdio: ["ignore", "pipe", "pipe"],
    });
    const take = (d: Buffer): void => {
      text += d.toString();
      out.write(d);
    };
    child.stdout.on("data", take);
    child.stderr.on("data", take);
    child.on("close", (code) => {
      out.end();
      ok({ code: code ?? 1, out: text });
    });
  });
}

const count = (out: string, what: string): number =>
  Number(new RegExp(`^ℹ ${what} (\\d+)`, "m").exec(out)?.[1] ?? "0");

/** The version × test table (Markdown). */
export function table(results: readonly PairResult[], files: readonly string[]): string {
  const head = `| Karpenter | Kubernetes | ${files.join(" | ")} |`;
  const rule = `| --- | --- | ${files.map(() => "---").join(" | ")} |`;
  const rows = results.map((r) => {
    const cells = files.map((f) => {
      if (!r.up) return "rig failed";
      const x = r.files.find((y) => y.file === f);
      if (!x) return "not run";
      return `${x.ok ? "pass" : "**FAIL**"} ${x.pass}/${x.pass + x.fail} (${x.seconds}s)`;
    });
    return `| ${r.pair.karpenter} | ${r.pair.kubernetes} | ${cells.join(" | ")} |`;
  });
  return [head, rule, ...rows].join("\n");
}

const BEGIN = "<!-- test:compat table begin -->";
const END = "<!-- test:compat table end -->";

/**
 * The latest stored result of every pair in versions.env (.rig/compat/<version>/result.json), so a
 * run of one pair updates its row and keeps the others'.
 */
function storedResults(): { results: PairResult[]; files: string[] } {
  const results: PairResult[] = [];
  for (const pair of readVersions().pairs) {
    const f = join(rigDir, "compat", pair.karpenter, "result.json");
    if (existsSync(f)) results.push(JSON.parse(readFileSync(f, "utf8")) as PairResult);
  }
  return { results, files: [...COMPAT_FILES] };
}

function writeDocs(results: readonly PairResult[], files: readonly string[]): void {
  const path = join(repoRoot, "docs", "compatibility.md");
  const text = readFileSync(path, "utf8");
  const a = text.indexOf(BEGIN);
  const b = text.indexOf(END);
  if (a < 0 || b < a) throw new Error(`${path} lacks the ${BEGIN} … ${END} markers`);
  const dates = results.map((r) => `${r.pair.karpenter} ${(r.at ?? "").slice(0, 16).replace("T", " ")} UTC`);
  const stamp = `Runs (\`npm run test:compat\`; etcd/KWOK per pair in hack/rig/versions.env): ${dates.join(", ")}.`;
  // Files beyond the table's columns (e.g. the rest of the e2e suite on the default pair).
  const extra = results
    .map((r) => {
      const more = r.files.filter((x) => !files.includes(x.file));
      if (more.length === 0) return "";
      const cells = more.map((x) => `${x.file} ${x.ok ? "pass" : "**FAIL**"} ${x.pass}/${x.pass + x.fail}`);
      return `\nAlso run on ${r.pair.karpenter}: ${cells.join(", ")}.\n`;
    })
    .join("");
  writeFileSync(
    path,
    `${text.slice(0, a + BEGIN.length)}\n${stamp}\n\n${table(results, files)}\n${extra}${text.slice(b)}`,
  );
}

async function main(): Promise<number> {
  if (process.argv.includes("--docs-only")) {
    const all = storedResults();
    writeDocs(all.results, all.files);
    return 0;
  }
  const versions = readVersions();
  const wanted = arg("--karpenter");
  const pairs = wanted ? wanted.split(",").map((v) => selectPair(versions, v)) : versions.pairs;
  const files = (arg("--files")?.split(",") ?? COMPAT_FILES).filter((f) => f !== "");
  for (const f of files) {
    if (!existsSync(join(repoRoot, "test", "e2e", `${f}.e2e.test.ts`)))
      throw new Error(`no test/e2e/${f}.e2e.test.ts`);
  }
  const results: PairResult[] = [];
  for (const pair of pairs) {
    const dir = join(rigDir, "compat", pair.karpenter);
    mkdirSync(dir, { recursive: true });
    const result: PairResult = { pair, up: false, files: [] };
    results.push(result);
    process.stderr.write(
      `\n[compat] ===== Karpenter ${pair.karpenter} on Kubernetes ${pair.kubernetes} =====\n`,
    );
    try {
      await up(pair.karpenter);
      result.up = true;
    } catch (e) {
      result.error = (e as Error).message;
      process.stderr.write(`[compat] rig failed: ${result.error}\n`);
      result.at = new Date().toISOString();
      writeFileSync(join(dir, "result.json"), JSON.stringify(result, null, 2));
      continue;
    }
    if (process.argv.includes("--record")) {
      const r = await runNode([join("hack", "rig", "record-fixtures.ts")], join(dir, "record.log"));
      process.stderr.write(
        `[compat] fixtures ${r.code === 0 ? "recorded" : `NOT recorded (see ${dir}/record.log)`}\n`,
      );
    }
    for (const f of files) {
      const t0 = Date.now();
      const log = join(dir, `${f}.log`);
      const r = await runNode(
        ["--test", "--test-reporter=spec", "--test-concurrency=1", join("test", "e2e", `${f}.e2e.test.ts`)],
        log,
      );
      const x: FileResult = {
        file: f,
        ok: r.code === 0,
        pass: count(r.out, "pass"),
        fail: count(r.out, "fail"),
        seconds: Math.round((Date.now() - t0) / 1000),
      };
      result.files.push(x);
      process.stderr.write(
        `[compat] ${pair.karpenter} ${f}: ${x.ok ? "pass" : "FAIL"} ${x.pass}/${x.pass + x.fail} in ${x.seconds}s (log ${log})\n`,
      );
    }
    result.at = new Date().toISOString();
    // A run of some files updates those and keeps the pair's other files from its last run.
    const prev = join(dir, "result.json");
    const kept = existsSync(prev)
      ? (JSON.parse(readFileSync(prev, "utf8")) as PairResult).files.filter(
          (x) => !result.files.some((y) => y.file === x.file),
        )
      : [];
    writeFileSync(prev, JSON.stringify({ ...result, files: [...kept, ...result.files] }, null, 2));
  }
  writeFileSync(
    join(rigDir, "compat", "results.json"),
    JSON.stringify({ at: new Date().toISOString(), results }, null, 2),
  );
  const t = table(results, files);
  process.stdout.write(`\n${t}\n`);
  if (process.argv.includes("--write-docs")) {
    const all = storedResults();
    writeDocs(all.results, all.files);
  }
  if (process.env["WAVE_E2E_KEEP_RIG"] !== "1") await down();
  return results.every((r) => r.up && r.files.every((f) => f.ok)) ? 0 : 1;
}

if (import.meta.main) main().then((code) => process.exit(code), report);
