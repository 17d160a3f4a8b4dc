// The per-component processes the Helm chart runs, each with its own ServiceAccount:
//   wave agent   — informers → gRPC (mutual TLS + bearer) → core, and the warmup controller beside
//                  it, only while holding its Lease
//   wave core    — history store, hub, ingest server, API + UI
//   wave webhook — spot-placement admission, SpotPolicy resources through its own informer (or,
//                  --spot-policy-source core, pulled from core's API)
//   wave cleanup — removes what Wave wrote into the cluster (the chart's post-delete hook)
// `wave start` (start.ts) composes the first three builders in one process. Each lives in its own
// module so a process loads only its own dependencies (the CLI imports them lazily); this module
// gathers them for callers that want all of them (tests).
export * from "./component.ts";
export * from "./agent-component.ts";
export * from "./core-component.ts";
export * from "./webhook-component.ts";
export * from "./cleanup.ts";
