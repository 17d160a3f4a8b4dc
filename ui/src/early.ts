// The first screen's API requests, started by the entry module (boot.ts) while the rest of the
// console's code — React and the pages, nearly all of the shipped JS — is still being fetched and
// parsed. On a loaded machine that parse takes a few hundred milliseconds the requests would
// otherwise wait behind (bench/ui). The pages ask for the same paths (paths.ts) and get these
// answers (api.ts `fetchEarly`).
import { fetchEarly, takeToken } from "./api.ts";
import {
  clusterBase,
  disruptionCountsPath,
  NODE_FIRST_SORT,
  nodeListPath,
  seriesPath,
  streamPath,
} from "./paths.ts";
import { parseRoute } from "./route.ts";

/** Starts what the page in the URL asks for first: its cluster's stream and the page's data. */
export function startEarly(now: number): void {
  const token = takeToken();
  const route = parseRoute(location.hash);
  fetchEarly("api/v1/clusters", token);
  fetchEarly("api/v1/whoami", token);
  // Without a cluster in the URL the console picks one from the cluster list first.
  if (route.cluster === undefined) return;
  const base = clusterBase(route.cluster);
  fetchEarly(streamPath(base), token, { accept: "text/event-stream" });
  if (route.page === "overview") {
    fetchEarly(seriesPath(base, route.range, now), token);
    fetchEarly(disruptionCountsPath(base, route.range, now), token);
  } else if (route.page === "nodes") {
    fetchEarly(
      nodeListPath(base, { pool: route.params["pool"], sort: NODE_FIRST_SORT, filter: "", offset: 0 }),
      token,
    );
  }
}
