import { useCallback, useEffect, useRef, useState } from "react";
import { getJson } from "./api.ts";

export interface AsyncState<T> {
  data: T | undefined;
  error: string | undefined;
  loading: boolean;
}

/**
 * Runs `load` when `deps` change and again whenever `version` changes, at most every
 * `minIntervalMs`. Throttled, not debounced: a live stream that changes every 250 ms (a busy
 * cluster) must not postpone the reload forever. One load at a time; changes seen during a load
 * cause one more load, `minIntervalMs` after it ended. `load` null = nothing to load.
 */
export function useAsync<T>(
  load: ((signal: AbortSignal) => Promise<T>) | null,
  deps: readonly unknown[],
  version: number,
  minIntervalMs = 1000,
): AsyncState<T> {
  const [state, setState] = useState<AsyncState<T>>({ data: undefined, error: undefined, loading: true });
  const [tick, setTick] = useState(0);
  const loader = useRef(load);
  loader.current = load;
  const l = useRef<{ busy: boolean; dirty: boolean; doneAt: number; timer?: ReturnType<typeof setTimeout> }>({
    busy: false,
    dirty: false,
    doneAt: 0,
  });
  const reloadSoon = useCallback(() => {
    const s = l.current;
    if (s.busy) s.dirty = true;
    else
      s.timer ??= setTimeout(
        () => {
          s.timer = undefined;
          setTick((n) => n + 1);
        },
        Math.max(0, s.doneAt + minIntervalMs - Date.now()),
      );
  }, [minIntervalMs]);
  const mounted = useRef(false);
  useEffect(() => {
    // The first load is the fetch effect's own; only later versions ask for a reload.
    if (mounted.current) reloadSoon();
    mounted.current = true;
  }, [version, reloadSoon]);
  useEffect(
    () => () => {
      clearTimeout(l.current.timer);
      l.current.timer = undefined;
    },
    [],
  );
  const enabled = load !== null;
  useEffect(() => {
    const fn = loader.current;
    if (!fn) return;
    const s = l.current;
    const ac = new AbortController();
    s.busy = true;
    s.dirty = false;
    const settle = (): void => {
      s.busy = false;
      s.doneAt = Date.now();
      if (s.dirty) reloadSoon();
    };
    fn(ac.signal).then(
      (data) => {
        if (ac.signal.aborted) return;
        setState({ data, error: undefined, loading: false });
        settle();
      },
      (err: unknown) => {
        if (ac.signal.aborted) return;
        setState((st) => ({ ...st, error: (err as Error).message, loading: false }));
        settle();
      },
    );
    return () => {
      ac.abort();
      s.busy = false;
    };
  }, [...deps, enabled, tick, reloadSoon]);
  return state;
}

/** GET `path` (JSON), reloaded as useAsync describes. */
export function useJson<T>(
  path: string | null,
  token: string | null,
  version: number,
  minIntervalMs = 1000,
): AsyncState<T> {
  return useAsync<T>(
    path === null ? null : (signal) => getJson<T>(path, token, signal),
    [path, token],
    version,
    minIntervalMs,
  );
}

/** `value`, once it has stopped changing for `delayMs` (a filter box: one request per pause). */
export function useDebounced<T>(value: T, delayMs: number): T {
  const [settled, setSettled] = useState(value);
  useEffect(() => {
    const t = setTimeout(() => setSettled(value), delayMs);
    return () => clearTimeout(t);
  }, [value, delayMs]);
  return settled;
}
