// Where Karpenter launched capacity for a pending warmup pod: its Nominated Events ("Pod should
// schedule on: nodeclaim/X" — with ", node/Y" once the claim has a node). kube-scheduler places
// higher-priority pods first, so a real pod that comes while the warm node boots takes it before
// the negative-priority warmup pod binds: that node was launched for the warmup and served a real
// pod (a hit, docs/warmup.md), though the warmup pod never ran there. Pure.
import type { Event, Pod } from "../objects/kube.ts";
import { parsePodEvent } from "../karpenter/events/parse.ts";

/** The NodeClaims and Nodes Karpenter nominated `pod` to, by name. */
export function nominatedNames(events: readonly Event[], pod: Pod): Set<string> {
  const out = new Set<string>();
  for (const e of events) {
    const o = e.involvedObject;
    if (o.kind !== "Pod" || o.name !== pod.metadata.name || o.namespace !== pod.metadata.namespace) continue;
    const to = parsePodEvent(e).nominatedTo;
    if (to === undefined) continue;
    for (const part of to.split(",")) {
      const name = /^\s*(?:nodeclaim|node)\/(\S+)\s*$/i.exec(part)?.[1];
      if (name !== undefined) out.add(name);
    }
  }
  return out;
}
