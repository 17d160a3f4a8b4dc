// `npm run fuzz`: ≥ 10,000 generated inputs against each of the policy API, the AdmissionReview
// endpoint and the gRPC ingest, all on loopback, seeded (replay with --seed). Fails on any crash
// (uncaught error), any server error (HTTP 5xx, gRPC INTERNAL/UNKNOWN) or heap kept above the
// bound. Flags: --inputs N (per target, default 10000), --seed S, --heap-mib M (default 64).
import { parseArgs } from "node:util";
import { runFuzz } from "./fuzz.ts";

const { values } = parseArgs({
  options: {
    inputs: { type: "string" },
    seed: { type: "string" },
    "heap-mib": { type: "string" },
    "whatif-inputs": { type: "string" },
  },
});
const inputs = Number(values.inputs ?? 10_000);
const seed = Number(values.seed ?? 20261203);
const heapMib = Number(values["heap-mib"] ?? 64);
const whatifInputs = Number(values["whatif-inputs"] ?? 1000);
const report = await runFuzz({ inputs, seed, heapBoundBytes: heapMib * 2 ** 20, whatifInputs });
for (const r of report.results) {
  process.stdout.write(
    `${r.target.padEnd(16)} ${r.inputs} inputs in ${(r.ms / 1000).toFixed(1)} s: ${r.serverErrors} server errors, ` +
      `heap kept ${(r.heapGrowth / 2 ** 20).toFixed(1)} MiB` +
      (r.heldStreams === undefined ? "" : `, ${r.heldStreams} streams held`) +
      (r.placementChecks === undefined
        ? ""
        : `, ${r.placementViolations ?? 0} placement violations in ${r.placementChecks} checks`) +
      (r.violations === undefined ? "" : `, ${r.violations} violations`) +
      `; ${JSON.stringify(r.statuses)}\n`,
  );
  for (const e of r.examples) process.stdout.write(`  example: ${e}\n`);
}
process.stdout.write(
  `crashes: ${report.crashes.length}; peak RSS ${(report.peakRss / 2 ** 20).toFixed(0)} MiB; seed ${seed}\n`,
);
for (const c of report.crashes) process.stdout.write(`  crash: ${c}\n`);
process.stdout.write(report.ok ? "fuzz: ok\n" : `fuzz: FAILED (${report.problems.join("; ")})\n`);
process.exit(report.ok ? 0 : 1);
