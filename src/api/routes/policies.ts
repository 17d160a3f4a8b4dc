// Spot placement and warmup policies: viewers read them, admins write them, namespace editors
// write the spot policies of their namespaces (identity.ts). Bodies are checked
// by the same validators the webhook and the warmup controller use, so nothing the API accepts
// can be rejected later; stored spot policies are served as the SpotPolicySet the webhook pulls.
// One plugin per resource: policies/spot.ts, policies/warmup.ts, policies/history.ts.
import type { FastifyInstance } from "fastify";
import type { ApiPlugin } from "../app.ts";
import { PolicyContext, register, type PolicyDeps } from "./policies/context.ts";
import { policyHistoryRoutes } from "./policies/history.ts";
import { spotPolicyRoutes } from "./policies/spot.ts";
import { warmupPolicyRoutes } from "./policies/warmup.ts";

export { CLUSTER_ID_PATTERN, type PolicyDeps } from "./policies/context.ts";
export { spotPolicyFrom, spotPolicySet } from "./policies/spot-set.ts";

export function policyRoutes(deps: PolicyDeps): ApiPlugin {
  const ctx = new PolicyContext(deps);
  return (app: FastifyInstance) => {
    // The pre-cluster paths act on the default cluster and name their successor.
    app.addHook("onSend", async (req, reply) => {
      const url = req.routeOptions.url;
      if (url?.startsWith("/api/v1/policies")) {
        const successor = url.replace(
          "/api/v1/policies",
          `/api/v1/clusters/${deps.defaultClusterId}/policies`,
        );
        reply.header("deprecation", "true");
        reply.header("link", `<${successor}>; rel="successor-version"`);
      }
    });
    register(app, spotPolicyRoutes(ctx));
    policyHistoryRoutes(ctx, app);
    register(app, warmupPolicyRoutes(ctx));
  };
}
