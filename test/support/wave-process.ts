// `wave <command>` as a child process, the way a container runs it: its own environment, output
// kept (the last lines) for failure reports, and the three ways a pod ends — SIGTERM, SIGKILL.
import { spawn, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import { repoRoot } from "../../hack/rig/lib.ts";

export interface WaveProcess {
  name: string;
  child: ChildProcess;
  /** The last `keepLines` lines of stdout and stderr. */
  output: string[];
  /** Resolves with the exit code (null when a signal ended it). */
  exited: Promise<number | null>;
}

export interface SpawnOptions {
  /** The whole environment (nothing is inherited but PATH): what the chart sets, plus KUBECONFIG. */
  env: Record<string, string>;
  /** HOME for the process (kubectl-style caches land there, not in the checkout). */
  home: string;
  keepLines?: number;
}

export function spawnWave(name: string, argv: readonly string[], opts: SpawnOptions): WaveProcess {
  const child = spawn(process.execPath, [join(repoRoot, "bin", "wave.ts"), ...argv], {
    cwd: repoRoot,
    env: { PATH: process.env["PATH"] ?? "", HOME: opts.home, ...opts.env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const keep = opts.keepLines ?? 400;
  const output: string[] = [];
  const collect = (b: Buffer): void => {
    output.push(
      ...b
        .toString("utf8")
        .split("\n")
        .filter((l) => l !== ""),
    );
    if (output.length > keep) output.splice(0, output.length - keep);
  };
  child.stdout.on("data", collect);
  child.stderr.on("data", collect);
  const exited = new Promise<number | null>((ok) => child.once("exit", (code) => ok(code)));
  return { name, child, output, exited };
}

export const alive = (p: WaveProcess): boolean => p.child.exitCode === null && p.child.signalCode === null;

/** SIGKILL: the process gets no chance to flush, close or checkpoint anything. */
export async function crashWave(p: WaveProcess): Promise<void> {
  p.child.kill("SIGKILL");
  await p.exited;
}

/**
 * SIGTERM, then SIGKILL if it has not exited within `graceMs`. Resolves with the exit code, or
 * "hung" when it had to be killed.
 */
export async function stopWave(p: WaveProcess, graceMs: number): Promise<number | null | "hung"> {
  if (alive(p)) p.child.kill("SIGTERM");
  let timer: NodeJS.Timeout | undefined;
  const code = await Promise.race([
    p.exited,
    new Promise<"hung">((ok) => (timer = setTimeout(() => ok("hung"), graceMs))),
  ]);
  // A pending timer would keep the test process alive after its last test.
  clearTimeout(timer);
  if (code === "hung") await crashWave(p);
  return code;
}
