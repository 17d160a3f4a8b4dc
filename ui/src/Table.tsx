// One table for every page (columns as data, as Headlamp does): sortable by a button in each
// header (keyboard-reachable, aria-sort set), filtered by a text box over the columns' values,
// and — for thousands of rows — virtualized: only the rows in view are in the DOM.
import { useMemo, useState, type ReactNode } from "react";
import { num } from "./format.ts";

export interface Column<T> {
  key: string;
  label: string;
  /** Sort and filter value; columns without one are not sortable. */
  value?: (row: T) => string | number | null;
  render?: (row: T) => ReactNode;
  /** Numeric columns align right. */
  numeric?: boolean;
  /** Hidden below 1100 px (the table must fit 900 px without horizontal scrolling). */
  wide?: boolean;
  title?: string;
}

export interface TableProps<T> {
  label: string;
  columns: Column<T>[];
  rows: readonly T[];
  rowKey: (row: T) => string;
  /** Why the table is empty (an empty state says why). */
  empty: string;
  initialSort?: { key: string; desc: boolean };
  filterLabel?: string;
  onRow?: (row: T) => void;
  rowTestId?: string;
  testId?: string;
  /** Render only visible rows (fixed row height) past this many rows. */
  virtualAbove?: number;
  /** Shown beside the heading (counts). */
  headingExtra?: ReactNode;
  children?: ReactNode;
}

const ROW = 30;
const VISIBLE = 20;

/**
 * One collator for every comparison: `localeCompare` with options builds one per call, which made
 * sorting 5,000 node names take seconds (bench:ui); a shared collator sorts them in ~0.1 s.
 */
const COLLATOR = new Intl.Collator(undefined, { numeric: true });

export function compareValues(x: string | number | null, y: string | number | null): number {
  if (x === y) return 0;
  if (x === null) return 1;
  if (y === null) return -1;
  if (typeof x === "number" && typeof y === "number") return x - y;
  return COLLATOR.compare(String(x), String(y));
}

export function sortRows<T>(rows: readonly T[], col: Column<T> | undefined, desc: boolean): T[] {
  const get = col?.value;
  if (!get) return [...rows];
  return [...rows].sort((a, b) => {
    const x = get(a);
    const y = get(b);
    // Nulls last in both directions.
    if (x === null || y === null) return compareValues(x, y);
    const c = compareValues(x, y);
    return desc ? -c : c;
  });
}

export function Table<T>(props: TableProps<T>) {
  const { columns } = props;
  const [sort, setSort] = useState(props.initialSort ?? { key: columns[0]?.key ?? "", desc: false });
  const [filter, setFilter] = useState("");
  const [top, setTop] = useState(0);
  const rows = useMemo(() => {
    const f = filter.trim().toLowerCase();
    const kept = f
      ? props.rows.filter((r) =>
          columns.some((c) => {
            const v = c.value?.(r);
            return v !== null && v !== undefined && String(v).toLowerCase().includes(f);
          }),
        )
      : props.rows;
    return sortRows(
      kept,
      columns.find((c) => c.key === sort.key),
      sort.desc,
    );
  }, [props.rows, columns, filter, sort]);
  const virtual = props.virtualAbove !== undefined && rows.length > props.virtualAbove;
  const first = virtual ? Math.floor(top / ROW) : 0;
  const shown = virtual ? rows.slice(first, first + VISIBLE + 2) : rows;
  const total = props.rows.length;

  const head = (
    <thead>
      <tr>
        {columns.map((c) => {
          const active = sort.key === c.key;
          const aria = active ? (sort.desc ? "descending" : "ascending") : "none";
          return (
            <th
              key={c.key}
              aria-sort={c.value ? aria : undefined}
              className={`${c.numeric ? "num" : ""} ${c.wide ? "wide" : ""}`}
              title={c.title}
              scope="col"
            >
              {c.value ? (
                <button
                  type="button"
                  className="sort"
                  onClick={() =>
                    setSort((s) => ({ key: c.key, desc: s.key === c.key ? !s.desc : c.numeric === true }))
                  }
                >
                  {c.label}
                  <span aria-hidden="true">{active ? (sort.desc ? " ▾" : " ▴") : ""}</span>
                </button>
              ) : (
                c.label
              )}
            </th>
          );
        })}
      </tr>
    </thead>
  );
  const body = (
    <tbody>
      {virtual ? <tr style={{ height: first * ROW }} aria-hidden="true" /> : null}
      {shown.map((r) => (
        <tr
          key={props.rowKey(r)}
          data-testid={props.rowTestId}
          style={virtual ? { height: ROW } : undefined}
          className={props.onRow ? "clickable" : undefined}
          tabIndex={props.onRow ? 0 : undefined}
          onClick={props.onRow ? () => props.onRow?.(r) : undefined}
          onKeyDown={
            props.onRow
              ? (e) => {
                  if (e.key === "Enter") props.onRow?.(r);
                }
              : undefined
          }
        >
          {columns.map((c) => (
            <td key={c.key} className={`${c.numeric ? "num" : ""} ${c.wide ? "wide" : ""}`}>
              {c.render ? c.render(r) : (c.value?.(r) ?? "—")}
            </td>
          ))}
        </tr>
      ))}
      {virtual ? (
        <tr style={{ height: Math.max(0, rows.length - first - shown.length) * ROW }} aria-hidden="true" />
      ) : null}
    </tbody>
  );
  return (
    <section className="panel" data-testid={props.testId}>
      <h2>
        {props.label}{" "}
        <span className="muted count">
          ({rows.length === total ? num(total) : `${num(rows.length)} of ${num(total)}`})
        </span>
        {props.headingExtra}
        {total > 0 ? (
          <input
            type="search"
            placeholder="filter…"
            value={filter}
            onChange={(e) => setFilter(e.target.value)}
            aria-label={props.filterLabel ?? `filter ${props.label.toLowerCase()}`}
          />
        ) : null}
      </h2>
      {props.children}
      {total === 0 ? (
        <p className="empty">{props.empty}</p>
      ) : rows.length === 0 ? (
        <p className="empty">Nothing matches “{filter}”.</p>
      ) : virtual ? (
        <div
          className="scroll"
          style={{ height: ROW * (Math.min(rows.length, VISIBLE) + 1) + 2 }}
          onScroll={(e) => setTop(e.currentTarget.scrollTop)}
        >
          <table aria-label={props.label} aria-rowcount={rows.length + 1}>
            {head}
            {body}
          </table>
        </div>
      ) : (
        <div className="fit">
          <table aria-label={props.label}>
            {head}
            {body}
          </table>
        </div>
      )}
    </section>
  );
}
