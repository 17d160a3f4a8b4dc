// GET /api/v1/clusters and /api/v1/clusters/{id}: the clusters core knows, with their agent's
// connection state and their Karpenter against the tested range.
import type { FastifyInstance } from "fastify";
import type { ClusterEntry } from "../../../core/hub/hub.ts";
import type { ClusterDto } from "../../../dashboard/dto.ts";
import {
  clusterKarpenterVersion,
  karpenterSupport,
  type KarpenterSupport,
} from "../../../dashboard/karpenter-version.ts";
import { askOwner } from "../read-through.ts";
import { mayReadCluster } from "../../identity.ts";
import { clusterSchema } from "../schemas.ts";
import { clusterGet, viewer, type ClusterRoutes } from "./common.ts";

/** A cluster's DTO; a Karpenter outside the tested range is logged once per cluster and version. */
function clusterDtos(deps: ClusterRoutes["deps"]): (c: ClusterEntry) => ClusterDto {
  const warned = new Map<string, string>();
  const supportOf = (c: ClusterEntry, version: string | null): KarpenterSupport => {
    const support = karpenterSupport(version);
    // Outside the tested range is worth one log line per cluster and version, not one per poll;
    // "not detected" is the normal state of clusters whose Karpenter runs outside pods.
    if (support.status !== "tested" && support.status !== "unknown" && warned.get(c.id) !== version) {
      warned.set(c.id, version ?? "");
      deps.log?.warn("Karpenter release outside the tested range", {
        cluster: c.id,
        karpenterVersion: version,
        oldestTested: support.oldestTested,
        newestTested: support.newestTested,
      });
    }
    return support;
  };

  const clusterDto = (c: ClusterEntry): ClusterDto => {
    // Agents do not know Karpenter's version: core reads it off the controller pods.
    const karpenterVersion = c.info?.karpenterVersion || clusterKarpenterVersion(c.state) || null;
    return {
      id: c.id,
      simulated: c.simulated,
      // The hub's flag follows the agent's stream (hello → end), so a quiet but open stream is
      // connected and a dropped one is not, however recent its last message.
      connected: c.connected,
      lastSeen: c.lastSeen,
      catchingUp: c.catchingUp && { ...c.catchingUp },
      kubernetesVersion: c.info?.kubernetesVersion || null,
      karpenterVersion,
      karpenterSupport: supportOf(c, karpenterVersion),
      agentVersion: c.info?.agentVersion || null,
      rejected: c.rejected && { ...c.rejected },
    };
  };

  return clusterDto;
}

export function clustersRoutes(ctx: ClusterRoutes): (app: FastifyInstance) => void {
  const { hub, store } = ctx;
  const clusterDto = clusterDtos(ctx.deps);
  return (app) => {
    app.get(
      "/api/v1/clusters",
      {
        config: viewer,
        schema: {
          summary: "Clusters core knows, with their agent's connection state",
          response: { 200: { type: "array", items: clusterSchema } },
        },
      },
      async (req) => {
        // Every cluster the store knows, not only those whose agent streams to this replica.
        for (const r of await store.listClusters()) await hub.known(r.id);
        // Only the clusters the caller has a role in (issue 42: a viewer of one saw them all).
        const readable = hub.clusters().filter((c) => mayReadCluster(req.identity, c.id));
        return Promise.all(
          readable.map(async (c) => {
            const rt = ctx.deps.readThrough;
            const owner = rt && (await rt.ownership.otherOwner(c.id).catch(() => undefined));
            if (!rt || !owner) return clusterDto(c);
            try {
              const url = `/api/v1/clusters/${encodeURIComponent(c.id)}`;
              const res = await askOwner(rt, owner, { method: "GET", url, headers: req.headers });
              if (res.ok) return (await res.json()) as ClusterDto;
            } catch {
              rt.ownership.unreachable(c.id, owner);
            }
            return clusterDto(c);
          }),
        );
      },
    );

    clusterGet(app, ctx, {
      path: "/api/v1/clusters/:id",
      summary: "One cluster, with its agent's connection state",
      response: clusterSchema,
      read: (c) => clusterDto(c),
    });
  };
}
