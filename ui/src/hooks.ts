import { useEffect, useState } from "react";
import { getJson } from "./api.ts";

/** Loads `path` and reloads it whenever `version` changes (at most every `minIntervalMs`). */
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
  useEffect(() => {
    const id = setTimeout(() => setTick(version), minIntervalMs);
    return () => clearTimeout(id);
  }, [version, minIntervalMs]);
  useEffect(() => {
    if (path === null) return;
    const ac = new AbortController();
    getJson<T>(path, token, ac.signal).then(
      (data) => setState({ data, error: undefined, loading: false }),
      (err: unknown) => {
        if (!ac.signal.aborted) setState((s) => ({ ...s, error: (err as Error).message, loading: false }));
      },
    );
    return () => ac.abort();
  }, [path, token, tick]);
  return state;
}
