// Test helper: a real agent streaming to the core under test, with the options these tests share.
import { Agent, type AgentOptions } from "../../agent/agent.ts";
import { MemorySource } from "../../agent/source.ts";
import { FakeClock } from "../../shared/clock.ts";
import { Registry } from "../../shared/metrics.ts";

/** A test agent's options: where it streams and as which cluster; the rest as `runAgent` says. */
export type TestAgentOptions = Pick<AgentOptions, "coreUrl" | "clusterId"> & Partial<AgentOptions>;

/**
 * Starts an agent (by default: an empty source, version 0.1.0, a fake clock, its own metrics
 * registry, a 100 ms retry); `stop` aborts it and waits until it has ended.
 */
export function runAgent(opts: TestAgentOptions): { agent: Agent; stop: () => Promise<void> } {
  const agent = new Agent({
    source: new MemorySource(),
    agentVersion: "0.1.0",
    clock: new FakeClock(),
    metrics: new Registry(),
    backoff: { initialMs: 100, maxMs: 100, jitter: "none" },
    ...opts,
  });
  const ac = new AbortController();
  const running = agent.run(ac.signal);
  const stop = async (): Promise<void> => {
    ac.abort();
    await running;
  };
  return { agent, stop };
}
