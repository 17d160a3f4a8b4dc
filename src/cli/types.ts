// The shapes every command shares (its context, its I/O), in their own module so that the
// commands (loaded lazily by commands.ts) and main.ts import them one way, without a circle.
import type { ExtraOptions, WaveConfig } from "../config/config.ts";

export interface Io {
  out: (text: string) => void;
  err: (text: string) => void;
  env: NodeJS.ProcessEnv;
  /** Aborted on SIGINT/SIGTERM. */
  signal: AbortSignal;
  /** stdout is a terminal: list commands then print tables (output.ts). */
  tty?: boolean;
}

export interface CommandContext {
  config: WaveConfig;
  positionals: string[];
  /** The command's own flags (declared in `options`). */
  flags: Record<string, string | boolean | undefined>;
  io: Io;
  /** The settings (WaveConfig keys) given by file, environment or flag rather than defaulted. */
  given?: ReadonlySet<string>;
}

export interface Command {
  name: string;
  summary: string;
  usage?: string;
  options?: ExtraOptions;
  /**
   * The shared flags (config.ts) this command reads, for its --help; unset → all of them (the
   * servers that read most: start, core). A flag its usage explains itself is left out here.
   */
  globals?: readonly string[];
  /** A long-running process: its heap is tuned for a small resident size (heap.ts). */
  service?: boolean;
  run(ctx: CommandContext): Promise<number>;
}
