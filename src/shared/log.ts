// A tiny structured logger: JSON lines to stderr, levels, and redaction of secrets.

export type Level = "debug" | "info" | "warn" | "error";
const order: Record<Level, number> = { debug: 10, info: 20, warn: 30, error: 40 };

const SECRET_KEYS = /token|password|secret|authorization|key$|cert$/i;

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  child(fields: Record<string, unknown>): Logger;
}

export interface LoggerOptions {
  level?: Level;
  write?: (line: string) => void;
  base?: Record<string, unknown>;
  now?: () => number;
}

/** Replaces values of secret-looking keys so tokens never reach logs. */
export function redact(fields: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(fields)) {
    if (SECRET_KEYS.test(k) && v !== undefined && v !== null && v !== "") out[k] = "[redacted]";
    else if (v instanceof Error) out[k] = v.message;
    else out[k] = v;
  }
  return out;
}

export function createLogger(opts: LoggerOptions = {}): Logger {
  const min = order[opts.level ?? "info"];
  const write = opts.write ?? ((line: string) => process.stderr.write(line + "\n"));
  const now = opts.now ?? Date.now;
  const base = opts.base ?? {};
  const emit = (level: Level, msg: string, fields?: Record<string, unknown>): void => {
    if (order[level] < min) return;
    write(
      JSON.stringify({ time: new Date(now()).toISOString(), level, msg, ...redact({ ...base, ...fields }) }),
    );
  };
  return {
    debug: (m, f) => emit("debug", m, f),
    info: (m, f) => emit("info", m, f),
    warn: (m, f) => emit("warn", m, f),
    error: (m, f) => emit("error", m, f),
    child: (fields) => createLogger({ ...opts, base: { ...base, ...fields } }),
  };
}

/** A logger that drops everything (tests). */
export const silentLogger: Logger = createLogger({ write: () => undefined });
