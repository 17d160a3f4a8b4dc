// The component tests' configuration: flags parsed as `wave` parses them, with no environment.
import { parseConfig } from "../config/config.ts";
import { CLIENT_EXT, SERVER_EXT } from "../../test/support/pki.ts";

/** The three tokens a server accepts, each long enough (≥ 16 characters). */
export const TOKEN_FLAGS = [
  "--agent-token",
  "a".repeat(20),
  "--admin-token",
  "b".repeat(20),
  "--viewer-token",
  "c".repeat(20),
];

export const config = (args: string[]) => parseConfig(args, {}).config;

/** Core's gRPC serving pair (in grpc/) and the agent's client pair (in agent/), from one CA. */
export const CORE_AGENT_PKI = [
  { dir: "grpc", cn: "grpc", ext: SERVER_EXT },
  { dir: "agent", cn: "wave-agent", ext: CLIENT_EXT },
];
