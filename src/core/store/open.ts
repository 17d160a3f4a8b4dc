// One entry point for the composition root: pick the backend from configuration, open it, apply
// pending migrations, and log what happened.
import type { RetentionPolicy } from "../history/downsample.ts";
import type { Logger } from "../../shared/log.ts";
import { openPostgresStore } from "./postgres.ts";
import { openSqliteStore } from "./sqlite.ts";
import type { Store } from "./store.ts";

export type StoreConfig =
  | { backend: "sqlite"; path: string; synchronous?: "NORMAL" | "FULL" }
  | { backend: "postgres"; url: string; schema?: string; maxConnections?: number };

export async function openStore(
  config: StoreConfig,
  opts: { retention?: RetentionPolicy; log: Logger; now?: () => number },
): Promise<Store> {
  const common = {
    ...(opts.retention ? { retention: opts.retention } : {}),
    ...(opts.now ? { now: opts.now } : {}),
  };
  const { store, migrations } =
    config.backend === "sqlite"
      ? await openSqliteStore({ ...config, ...common })
      : await openPostgresStore({ ...config, ...common, log: opts.log });
  opts.log.info("history store open", {
    backend: store.backend,
    ...(config.backend === "sqlite" ? { path: config.path } : {}),
    schemaVersion: migrations.version,
    migrationsApplied: migrations.applied,
    // After a rollback: a newer build's expand migrations, which this build leaves alone.
    ...(migrations.ahead ? { schemaAhead: migrations.ahead } : {}),
  });
  return store;
}
