// What importing a module costs a fresh Node process: RSS and V8 heap after a full GC, one process
// per entry, against an empty process and a one-line TypeScript module (Node's type stripping
// loads a WebAssembly TypeScript parser on the first .ts file). Explains Wave's starting RSS
// (bench/pipeline/README.md).
//
//   node bench/pipeline/imports.ts [module-or-path …]   (default: the list below)
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { repoRoot } from "../../hack/rig/lib.ts";

const DEFAULTS = [
  "src/cli/main.ts",
  "src/cli/agent-component.ts",
  "src/cli/core-component.ts",
  "src/cli/webhook-component.ts",
  "src/agent/run.ts",
  "src/kube/clientnode/kubeconfig.ts",
  "@kubernetes/client-node",
  "@aws-sdk/client-ec2",
  "@connectrpc/connect-node",
  "fastify",
  "yaml",
];

const dir = mkdtempSync(join(tmpdir(), "wave-imports-"));
const plainTs = join(dir, "plain.ts");
const plainJs = join(dir, "plain.mjs");
writeFileSync(plainTs, "export const x: number = 1;\n");
writeFileSync(plainJs, "export const x = 1;\n");

function measure(spec: string | undefined): { rss: number; heap: number } {
  const target =
    spec === undefined
      ? ""
      : spec.startsWith("src/") || spec.startsWith("/")
        ? resolve(repoRoot, spec)
        : spec;
  const script = [
    target === ""
      ? ""
      : `await import(${JSON.stringify(target.startsWith("/") ? `file://${target}` : target)});`,
    "globalThis.gc(); globalThis.gc(); await new Promise((r) => setTimeout(r, 100));",
    "const m = process.memoryUsage(); console.log(JSON.stringify({ rss: m.rss, heap: m.heapUsed }));",
  ].join("\n");
  const r = spawnSync(process.execPath, ["--expose-gc", "--input-type=module", "-e", script], {
    cwd: repoRoot,
    encoding: "utf8",
  });
  if (r.status !== 0) throw new Error(`${spec ?? "(nothing)"}: ${r.stderr.slice(0, 500)}`);
  return JSON.parse(r.stdout) as { rss: number; heap: number };
}

const mib = (b: number): string => (b / 2 ** 20).toFixed(0).padStart(4);
try {
  const base = measure(undefined);
  console.log(`node ${process.version}: empty process RSS ${mib(base.rss)} MiB, heap ${mib(base.heap)} MiB`);
  console.log("                                      RSS MiB  (+ over empty)  heap MiB");
  const specs = process.argv.length > 2 ? process.argv.slice(2) : DEFAULTS;
  for (const [label, spec] of [
    ["one-line .mjs module", plainJs],
    ["one-line .ts module (type stripping)", plainTs],
    ...specs.map((s) => [s, s]),
  ] as [string, string][]) {
    const m = measure(spec);
    console.log(`  ${label.padEnd(36)} ${mib(m.rss)}     (+${mib(m.rss - base.rss).trim()})  ${mib(m.heap)}`);
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
