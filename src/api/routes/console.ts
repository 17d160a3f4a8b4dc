// The console's per-cluster pages beyond the dashboard: warmup, spot placement, the node drawer and
// the thrashing fixes, one thin plugin per resource in ./clusters/ (pure builders in src/console).
// Viewer role, like the dashboard; applying a fix needs admin.
import type { FastifyInstance } from "fastify";
import { kubectlPatch } from "../../dashboard/thrashing/fixes.ts";
import type { ApiPlugin } from "../app.ts";
import { consoleContext, type ConsoleDeps } from "./clusters/console-context.ts";
import { consolidationRoutes } from "./clusters/consolidation.ts";
import { nodeRoutes } from "./clusters/node.ts";
import { spotPlacementRoutes } from "./clusters/spot-placement.ts";
import { thrashingFixesRoutes } from "./clusters/thrashing-fixes.ts";
import { warmupRoutes } from "./clusters/warmup.ts";

export type { ConsoleDeps, NodePoolPatcher } from "./clusters/console-context.ts";
export { kubectlPatch };

const viewer = { role: "viewer" as const };

export function consoleRoutes(deps: ConsoleDeps): ApiPlugin {
  const ctx = consoleContext(deps);
  const plugins = [
    thrashingFixesRoutes,
    warmupRoutes,
    spotPlacementRoutes,
    nodeRoutes,
    consolidationRoutes,
  ].map((p) => p(ctx));
  return (app: FastifyInstance) => {
    app.get(
      "/api/v1/whoami",
      {
        config: viewer,
        schema: {
          summary:
            "Who the caller is: subject, groups, role (in the default cluster) and, for namespace editors, their namespaces; the UI shows editing by role",
        },
      },
      (req) => ({
        role: req.identity?.role ?? "viewer",
        subject: req.identity?.subject ?? "",
        groups: req.identity?.groups ?? [],
        ...(req.identity?.namespaces ? { namespaces: req.identity.namespaces } : {}),
        source: req.identity?.source ?? "token",
      }),
    );

    for (const p of plugins) p(app);
  };
}
