// GET /api/v1/clusters/{id}/stream: server-sent `snapshot` events (a LiveDto), now and after every
// change, throttled; the snapshot is the view model's, built once and shared by every client.
import type { FastifyInstance } from "fastify";
import { realClock } from "../../../shared/clock.ts";
import { openSse } from "../../sse.ts";
import { DEFAULT_SSE_CAPS, StreamLimits } from "../../streams.ts";
import { Throttle } from "../live.ts";
import { errorSchema } from "../schemas.ts";
import { idParams, viewer, type ClusterRoutes, type IdParams } from "./common.ts";

export function streamRoutes(ctx: ClusterRoutes): (app: FastifyInstance) => void {
  const { deps, hub } = ctx;
  const clock = deps.clock ?? realClock;
  const streams = new StreamLimits("event streams", deps.streamCaps ?? DEFAULT_SSE_CAPS);
  return (app) => {
    app.get<{ Params: IdParams }>(
      "/api/v1/clusters/:id/stream",
      {
        config: viewer,
        schema: {
          summary:
            "Server-sent events: `snapshot` (a LiveDto) now and after every change, at most every 250 ms",
          params: idParams,
          response: { 404: errorSchema, 429: errorSchema },
        },
      },
      async (req, reply) => {
        const c = await ctx.clusterOr404(req.params.id, reply);
        if (!c) return reply;
        // HEAD gets the stream's headers and ends (an open stream would never answer it).
        if (req.method === "HEAD") return reply.type("text/event-stream; charset=utf-8").send();
        const release = await streams.admit(req, reply);
        if (!release) return reply;
        openSse(req, reply, (stream) => {
          // Snapshots are built asynchronously; a slower older build must not overwrite a newer one.
          let started = 0;
          let sent = 0;
          const push = (): void => {
            const seq = ++started;
            ctx.views
              .of(c)
              .liveJson(deps.now())
              .then(
                (json) => {
                  if (seq < sent || stream.closed) return;
                  sent = seq;
                  stream.sendJson("snapshot", json);
                },
                (err: unknown) => req.log.error({ err }, "live snapshot failed"),
              );
          };
          const throttle = new Throttle(clock, deps.liveThrottleMs ?? 250, push);
          const off = hub.onChange((id) => {
            if (id === c.id) throttle.poke();
          });
          throttle.poke();
          return () => {
            off();
            throttle.stop();
            release();
          };
        });
        return reply;
      },
    );
  };
}
