// Wave's structured logger: pino behind a small interface (levels, child fields), secrets
// redacted. JSON lines for log collectors; in a terminal one readable line per entry.
import { pino, type DestinationStream } from "pino";

export type Level = "debug" | "info" | "warn" | "error";
export type LogFormat = "json" | "pretty";

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
  /** Where each line goes (default: stderr). */
  write?: (line: string) => void;
  base?: Record<string, unknown>;
  now?: () => number;
  /** Default: pretty when writing to a terminal's stderr, JSON otherwise. */
  format?: LogFormat;
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

/** The default format: a person reads a terminal, a collector reads everything else. */
export function defaultLogFormat(tty: boolean = process.stderr.isTTY): LogFormat {
  return tty ? "pretty" : "json";
}

const LEVEL_WIDTH = 5;

/**
 * One JSON entry as a terminal line: `12:00:00 INFO  core  message  key=value …`
 * (time in UTC, the component when there is one, then the other fields).
 */
export function prettyLine(json: string): string {
  const entry = JSON.parse(json) as Record<string, unknown>;
  const { time, level, msg, app: _app, component, ...rest } = entry;
  const clock = typeof time === "string" ? time.slice(11, 19) : "";
  const fields = Object.entries(rest)
    .map(([k, v]) => `${k}=${typeof v === "string" && !/\s/.test(v) ? v : JSON.stringify(v)}`)
    .join(" ");
  return [
    clock,
    String(level).toUpperCase().padEnd(LEVEL_WIDTH),
    ...(typeof component === "string" ? [component] : []),
    String(msg),
    ...(fields ? [fields] : []),
  ].join("  ");
}

export function createLogger(opts: LoggerOptions = {}): Logger {
  const write = opts.write ?? ((line: string) => process.stderr.write(line + "\n"));
  // A caller's own writer (a test's capture) gets JSON unless it asks; stderr follows the terminal.
  const format = opts.format ?? (opts.write ? "json" : defaultLogFormat());
  const now = opts.now ?? Date.now;
  const stream: DestinationStream = {
    write: (chunk: string) => {
      const line = chunk.endsWith("\n") ? chunk.slice(0, -1) : chunk;
      write(format === "pretty" ? prettyLine(line) : line);
    },
  };
  const root = pino(
    {
      level: opts.level ?? "info",
      base: redact(opts.base ?? {}),
      messageKey: "msg",
      timestamp: () => `,"time":"${new Date(now()).toISOString()}"`,
      formatters: { level: (label) => ({ level: label }) },
    },
    stream,
  );
  return wrap(root);
}

function wrap(p: pino.Logger): Logger {
  const emit =
    (level: Level) =>
    (msg: string, fields?: Record<string, unknown>): void => {
      if (fields) p[level](redact(fields), msg);
      else p[level](msg);
    };
  return {
    debug: emit("debug"),
    info: emit("info"),
    warn: emit("warn"),
    error: emit("error"),
    child: (fields) => wrap(p.child(redact(fields))),
  };
}

/** A logger that drops everything (tests). */
export const silentLogger: Logger = createLogger({ write: () => undefined, format: "json", level: "error" });
