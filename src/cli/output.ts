// How list and get commands print: `-o table|json|yaml`. Without -o, a table when stdout is a
// terminal and JSON otherwise (what scripts read, unchanged from before -o existed).
// Tables are columns-as-data (Headlamp, kubectl): a header row, then one row per item.
import { stringify } from "yaml";
import { UsageError } from "./errors.ts";

export type OutputFormat = "table" | "json" | "yaml";

/** The command option for -o/--output (each list/get command declares it). */
export const outputOption = { output: { type: "string" as const, short: "o" } };

export const outputHelp = "  -o, --output table|json|yaml  (default: table in a terminal, json otherwise)\n";

/** The format asked for with -o, else table in a terminal and JSON in a pipe. */
export function outputFormat(
  flags: Record<string, string | boolean | undefined>,
  tty: boolean,
): OutputFormat {
  const v = flags.output;
  if (v === undefined) return tty ? "table" : "json";
  if (v === "table" || v === "json" || v === "yaml") return v;
  throw new UsageError(`-o/--output must be table, json or yaml, got "${String(v)}"`);
}

export interface Column<T> {
  header: string;
  value: (row: T) => string;
}

/** Rows under upper-case headers, columns padded to their widest cell, two spaces apart. */
export function table<T>(columns: readonly Column<T>[], rows: readonly T[]): string {
  const cells = [columns.map((c) => c.header), ...rows.map((r) => columns.map((c) => c.value(r)))];
  const widths = columns.map((_, i) => Math.max(...cells.map((row) => (row[i] ?? "").length)));
  return cells
    .map((row) =>
      row
        .map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i] ?? 0)))
        .join("  ")
        .trimEnd(),
    )
    .join("\n");
}

/** `data` in the format; `asTable` draws the table form from the same data. */
export function render(format: OutputFormat, data: unknown, asTable: () => string): string {
  if (format === "json") return JSON.stringify(data, null, 2) + "\n";
  if (format === "yaml") return stringify(data);
  return asTable() + "\n";
}
