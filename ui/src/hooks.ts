import { useCallback, useEffect, useRef, useState } from "react";
import { getJson } from "./api.ts";

/**
 * Loads `path` and reloads it whenever `version` changes, at most every `minIntervalMs`.
 * Throttled, not debounced: a live stream that changes every 250 ms (a busy cluster) must not
 * postpone the reload forever. One load at a time; changes seen during a load cause one more
 * load, `minIntervalMs` after it ended.
 */
// eslint-disable-next-line @typescript-eslint/no-unnecessary-type-parameters -- T names the response type
export function useJson<T>(
  path: string | null,
  token: string | null,
  version: number,
  minIntervalMs = 1000,
): { data: T | undefined; error: string | undefined; loading: boolean } {
  const [state, setState] = useState<{ data: T | undefined; error: string | undefined; loading: boolean }>({
    data: undefined,
    error: undefined,
    loading: true,
  });
  const [tick, setTick] = useState(0);
  const load = useRef<{
    busy: boolean;
    dirty: boolean;
    doneAt: number;
    timer?: ReturnType<typeof setTimeout>;
  }>({ busy: false, dirty: false, doneAt: 0 });
  const reloadSoon = useCallback(() => {
    const l = load.current;
    if (l.busy) l.dirty = true;
    else
      l.timer ??= setTimeout(
        () => {
          l.timer = undefined;
          setTick((n) => n + 1);
        },
        Math.max(0, l.doneAt + minIntervalMs - Date.now()),
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
      clearTimeout(load.current.timer);
      load.current.timer = undefined;
    },
    [],
  );
  useEffect(() => {
    if (path === null) return;
    const l = load.current;
    const ac = new AbortController();
    l.busy = true;
    l.dirty = false;
    const settle = (): void => {
      l.busy = false;
      l.doneAt = Date.now();
      if (l.dirty) reloadSoon();
    };
    getJson<T>(path, token, ac.signal).then(
      (data) => {
        setState({ data, error: undefined, loading: false });
        settle();
      },
      (err: unknown) => {
        if (ac.signal.aborted) return;
        setState((s) => ({ ...s, error: (err as Error).message, loading: false }));
        settle();
      },
    );
    return () => {
      ac.abort();
      l.busy = false;
    };
  }, [path, token, tick, reloadSoon]);
  return state;
}
