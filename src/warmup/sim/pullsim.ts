// A fluid model of a kubelet pulling K images, serial (serializeImagePulls: true, the kubelet's
// default) vs parallel (serializeImagePulls: false, optionally capped by maxParallelImagePulls).
// KWOK nodes run no container runtime, so the rig cannot show pull times; this model is how
// Wave reasons about what pre-pull buys.
//
// Per image: a fixed registry latency (auth, manifest, first byte), a download that shares the
// node's bandwidth with the other downloads in flight and is capped per stream, then an
// unpack that needs a CPU core. Time is simulated; nothing sleeps.

export interface ImageSpec {
  name: string;
  sizeBytes: number;
}

export interface NodeModel {
  /** Node download bandwidth, bytes/s, shared fairly among concurrent downloads. */
  bandwidthBps: number;
  /** A single registry stream's ceiling, bytes/s (one pull rarely fills the NIC). */
  perStreamBps: number;
  /** Registry round trips before bytes flow, ms. */
  latencyMs: number;
  /** Decompress + unpack speed of one core, bytes/s. */
  unpackBps: number;
  cores: number;
}

export interface PullResult {
  totalMs: number;
  /** Finish time of each image, ms from the start, by name. */
  finishedAt: Record<string, number>;
}

type Phase = "wait" | "latency" | "download" | "unpack" | "done";

interface Job {
  name: string;
  phase: Phase;
  /** Remaining ms (latency) or bytes (download, unpack). */
  left: number;
  size: number;
}

/**
 * Simulates pulling `images` in order with at most `maxParallel` pulls in flight
 * (1 = serializeImagePulls: true; Infinity = unlimited).
 */
export function simulatePulls(
  images: readonly ImageSpec[],
  node: NodeModel,
  maxParallel: number,
): PullResult {
  if (!(maxParallel >= 1)) throw new Error("maxParallel must be >= 1");
  for (const k of ["bandwidthBps", "perStreamBps", "unpackBps", "cores"] as const) {
    if (!(node[k] > 0)) throw new Error(`${k} must be > 0`);
  }
  const jobs: Job[] = images.map((i) => ({ name: i.name, phase: "wait", left: 0, size: i.sizeBytes }));
  const finishedAt: Record<string, number> = {};
  let t = 0;
  const admit = (): void => {
    let inFlight = jobs.filter((j) => j.phase !== "wait" && j.phase !== "done").length;
    for (const j of jobs) {
      if (inFlight >= maxParallel) break;
      if (j.phase !== "wait") continue;
      j.phase = "latency";
      j.left = node.latencyMs;
      inFlight++;
    }
  };
  const advancePhase = (j: Job): void => {
    if (j.phase === "latency") {
      j.phase = "download";
      j.left = j.size;
    } else if (j.phase === "download") {
      j.phase = "unpack";
      j.left = j.size;
    } else if (j.phase === "unpack") {
      j.phase = "done";
      finishedAt[j.name] = t;
    }
  };
  admit();
  for (let guard = 0; guard < 100_000; guard++) {
    // Zero-length phases complete at once.
    for (const j of jobs) while (j.phase !== "wait" && j.phase !== "done" && j.left <= 1e-9) advancePhase(j);
    admit();
    const active = jobs.filter((j) => j.phase !== "wait" && j.phase !== "done");
    if (active.length === 0) break;
    const downloads = active.filter((j) => j.phase === "download").length;
    const unpacks = active.filter((j) => j.phase === "unpack").length;
    const downRate = Math.min(node.perStreamBps, node.bandwidthBps / Math.max(1, downloads)) / 1000; // per ms
    const unpackRate = (node.unpackBps * Math.min(1, node.cores / Math.max(1, unpacks))) / 1000;
    const rate = (j: Job): number =>
      j.phase === "latency" ? 1 : j.phase === "download" ? downRate : unpackRate;
    // Step to the next phase completion; rates are constant in between.
    const dt = Math.min(...active.map((j) => j.left / rate(j)));
    t += dt;
    for (const j of active) j.left -= dt * rate(j);
  }
  return { totalMs: t, finishedAt };
}
