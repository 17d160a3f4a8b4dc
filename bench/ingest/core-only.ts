// Core's own cost for one snapshot, without transport or agent: the synthetic cluster trimmed and
// encoded as the agent's 1,000-object chunks, fed to IngestCore.serve with production's sink
// (ClusterHub on SQLite in memory), three times. Prints core's CPU seconds per run: what applying a
// snapshot costs core, apart from the noise of two processes sharing a loaded host (docs/scaling.md).
//
//   node bench/ingest/core-only.ts [--nodes 5000 --pods 150000 --claims 10000 --runs 3]
import { parseArgs } from "node:util";
import { create } from "@bufbuild/protobuf";
import { syntheticCluster } from "../../src/agent/fixtures.ts";
import { trim } from "../../src/agent/trim.ts";
import { ClusterHub } from "../../src/core/hub/hub.ts";
import { IngestCore } from "../../src/core/ingest/core.ts";
import type { Msg } from "../../src/core/ingest/testing.ts";
import { openStore } from "../../src/core/store/open.ts";
import { AgentMessageSchema } from "../../src/gen/wave/v1/ingest_pb.ts";
import type { AgentMessage } from "../../src/gen/wave/v1/ingest_pb.ts";
import { realClock } from "../../src/shared/clock.ts";
import { silentLogger } from "../../src/shared/log.ts";
import { encodeJson, kindToProto } from "../../src/wire/wire.ts";

const { values: args } = parseArgs({
  options: {
    nodes: { type: "string", default: "5000" },
    pods: { type: "string", default: "150000" },
    claims: { type: "string", default: "10000" },
    runs: { type: "string", default: "3" },
  },
});
const objects = syntheticCluster({
  nodes: Number(args.nodes),
  pods: Number(args.pods),
  nodeClaims: Number(args.claims),
}).flatMap((o) => trim(o) ?? []);
const msgs: Msg[] = [
  { body: { case: "hello", value: { clusterId: "bench", sessionId: "s", agentVersion: "bench" } } },
  { sequence: 1n, body: { case: "snapshotBegin", value: {} } },
];
let seq = 2;
for (let i = 0; i < objects.length; i += 1000) {
  const chunk = objects.slice(i, i + 1000).map((o) => ({ kind: kindToProto(o.kind), json: encodeJson(o) }));
  msgs.push({ sequence: BigInt(seq++), body: { case: "snapshotChunk", value: { objects: chunk } } });
}
msgs.push({
  sequence: BigInt(seq),
  body: { case: "snapshotEnd", value: { objectCount: BigInt(objects.length) } },
});
const messages: AgentMessage[] = msgs.map((m) => create(AgentMessageSchema, m));

/** The messages as a stream (a plain iterable: core reads it as one). */
const input = (): AsyncIterable<AgentMessage> => ({
  [Symbol.asyncIterator]: () => {
    let i = 0;
    return {
      next: () =>
        Promise.resolve(
          i < messages.length
            ? { done: false, value: messages[i++] as AgentMessage }
            : { done: true, value: undefined },
        ),
    };
  },
});

for (let r = 0; r < Number(args.runs); r++) {
  const hub = new ClusterHub(
    await openStore({ backend: "sqlite", path: ":memory:" }, { log: silentLogger }),
    realClock,
  );
  const core = new IngestCore({ sink: hub });
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  for await (const _ of core.serve(input(), new AbortController().signal)) {
    // HelloAck and acks.
  }
  const cpu = process.cpuUsage(cpu0);
  const pods = hub.get("bench")?.state.counts().pods ?? 0;
  console.log(
    `run ${r + 1}: core CPU ${((cpu.user + cpu.system) / 1e6).toFixed(2)} s, wall ${((performance.now() - t0) / 1000).toFixed(2)} s, ` +
      `${objects.length} objects (${pods} pods in the state)`,
  );
  await hub.store.close();
}
