// One table for every page (columns as data, as Headlamp does): sortable by a button in each
// header (keyboard-reachable, aria-sort set), filtered by a text box over the columns' values,
// and — for thousands of rows — virtualized: only the rows in view are in the DOM. A table whose
// rows live on the server (`remote`: the node table of a 5,000-node cluster) shows the window of
// rows the page fetched, and hands sorting and filtering to it.
import { useEffect, useMemo, useState, type ReactNode } from "react";
import { num } from "./format.ts";
import type { Sort } from "./paths.ts";

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

/**
 * Rows sorted, filtered and paged by the server: the table shows `rows` at `offset` of `total`,
 * and reports what the user asked for (sort, filter, the first row in view) for the page to fetch.
 */
export interface RemoteRows<T> {
  /** Rows matching the filter: the scroll height. */
  total: number;
  /** Rows before the filter (the heading's "x of y"). */
  unfiltered: number;
  /** Where `rows` start in the sorted, filtered list. */
  offset: number;
  rows: readonly T[];
  sort: Sort;
  onSort: (s: Sort) => void;
  filter: string;
  onFilter: (f: string) => void;
  /** The first row in view changed (scrolling, or a shorter list). */
  onView: (first: number) => void;
}

export interface TableProps<T> {
  label: string;
  columns: Column<T>[];
  /** The rows, sorted and filtered here; ignored when `remote` is given. */
  rows: readonly T[];
  remote?: RemoteRows<T>;
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
/** Rows a virtualized table shows at once. */
export const VISIBLE = 20;

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
  const { columns, remote } = props;
  const [localSort, setLocalSort] = useState<Sort>(
    props.initialSort ?? { key: columns[0]?.key ?? "", desc: false },
  );
  const [localFilter, setLocalFilter] = useState("");
  const sort = remote ? remote.sort : localSort;
  const setSort = remote ? remote.onSort : setLocalSort;
  const filter = remote ? remote.filter : localFilter;
  const setFilter = remote ? remote.onFilter : setLocalFilter;
  const [top, setTop] = useState(0);
  const local = useMemo(() => {
    if (remote) return [];
    const f = localFilter.trim().toLowerCase();
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
      columns.find((c) => c.key === localSort.key),
      localSort.desc,
    );
  }, [remote, props.rows, columns, localFilter, localSort]);
  const count = remote ? remote.total : local.length;
  const total = remote ? remote.unfiltered : props.rows.length;
  const virtual = props.virtualAbove !== undefined && count > props.virtualAbove;
  // Past the end (the list shrank under a scrolled table): show its last screen.
  const first = virtual ? Math.max(0, Math.min(Math.floor(top / ROW), count - VISIBLE)) : 0;
  const n = virtual ? Math.min(VISIBLE + 2, count - first) : count;
  // The page fetches the window from here (also when a shorter list moved the first row up).
  const onView = remote?.onView;
  useEffect(() => onView?.(first), [onView, first]);
  /** The rows in view; a remote row not fetched yet is undefined (a placeholder row). */
  const shown: (T | undefined)[] = remote
    ? Array.from({ length: n }, (_, i) => remote.rows[first + i - remote.offset])
    : local.slice(first, first + n);
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
                    setSort({ key: c.key, desc: sort.key === c.key ? !sort.desc : c.numeric === true })
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
      {shown.map((r, i) =>
        r === undefined ? (
          <tr key={`loading-${first + i}`} style={{ height: ROW }} className="pending" aria-busy="true">
            <td colSpan={columns.length}>…</td>
          </tr>
        ) : (
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
        ),
      )}
      {virtual ? (
        <tr style={{ height: Math.max(0, count - first - shown.length) * ROW }} aria-hidden="true" />
      ) : null}
    </tbody>
  );
  return (
    <section className="panel" data-testid={props.testId}>
      <h2>
        {props.label}{" "}
        <span className="muted count">
          ({count === total ? num(total) : `${num(count)} of ${num(total)}`})
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
      ) : count === 0 ? (
        <p className="empty">Nothing matches “{filter}”.</p>
      ) : virtual ? (
        <div
          className="scroll"
          style={{ height: ROW * (Math.min(count, VISIBLE) + 1) + 2 }}
          onScroll={(e) => setTop(e.currentTarget.scrollTop)}
        >
          <table aria-label={props.label} aria-rowcount={count + 1}>
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
