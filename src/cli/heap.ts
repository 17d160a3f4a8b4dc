// Memory tuning for Wave's long-running processes (`wave agent|core|webhook|start`).
//
// V8 lets its young generation grow from 1 MiB to 16 MiB per semi-space (64 MiB reserved, ~30 MiB
// resident) under an allocation burst such as an initial list or snapshot, and keeps it resident
// afterwards. These processes allocate in bursts and then idle, so the young generation is pinned
// at its initial size: measured on the rig at 200 nodes, agent 171 → 144 MiB and core 218 → 169
// MiB RSS, with no slower sync (bench/pipeline/README.md). `--max-semi-space-size` would do the same
// but must be given on Node's command line; the growth factor can still be set once running.
import { setFlagsFromString } from "node:v8";

export const YOUNG_GENERATION_FLAG = "--semi-space-growth-factor=1";

/** Whether the operator already chose a young-generation size (then it is left alone). */
export function semiSpaceConfigured(execArgv: readonly string[], nodeOptions: string | undefined): boolean {
  return [...execArgv, nodeOptions ?? ""].some((a) => /semi[-_]space/.test(a));
}

/** Pins the young generation (see the header) unless Node's flags size it; true if it did. */
export function pinYoungGeneration(
  execArgv: readonly string[] = process.execArgv,
  nodeOptions: string | undefined = process.env.NODE_OPTIONS,
): boolean {
  if (semiSpaceConfigured(execArgv, nodeOptions)) return false;
  setFlagsFromString(YOUNG_GENERATION_FLAG);
  return true;
}
