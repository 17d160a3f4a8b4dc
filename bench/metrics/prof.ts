import { ClusterState } from "../../src/state/cluster.ts";
import { clusterFigures } from "../../src/metrics/figures.ts";
import { createPricing } from "../../src/pricing/setup.ts";
import { realClock } from "../../src/shared/clock.ts";
import { fillState } from "../dashboard/state.ts";
const state = new ClusterState(); fillState(state, { owned: true });
const prices = createPricing({ clock: realClock }).provider;
for (let k = 0; k < 15; k++) clusterFigures({ clusterId: "b", state, prices, now: Date.now(), connected: true, lastSeen: 1, thrashing: [], spotPolicies: [] });
