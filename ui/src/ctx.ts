// What every page gets from the shell.
import type { ClusterDto, LiveDto } from "../../src/dashboard/dto.ts";
import type { Route } from "./route.ts";

export interface PageCtx {
  clusterId: string;
  /** The cluster's entry in the cluster list (undefined until the list answers). */
  cluster: ClusterDto | undefined;
  /** api/v1/clusters/<id> */
  base: string;
  token: string | null;
  role: "viewer" | "namespace-editor" | "admin" | undefined;
  /** Bumped on every live snapshot: pages reload their data (throttled) when it moves. */
  version: number;
  live: LiveDto | undefined;
  now: number;
  route: Route;
  go: (patch: Partial<Route>) => void;
  /**
   * Opens the admin sign-in "to <why>" (a write answered 401/403, or the viewer asked to edit);
   * once a token is accepted as admin's, `then` continues the action that asked. A wrong token or
   * a viewer's changes nothing (the prompt says so and stays).
   */
  askAdmin: (why: string, then?: () => void) => void;
  /** Reloads the page's data now (after a write: policies do not move the live stream). */
  refresh: () => void;
}
