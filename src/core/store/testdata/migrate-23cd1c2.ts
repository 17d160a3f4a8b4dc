// The schema-migration runner of the previous release, 23cd1c2 (0.1.0 before expand/contract),
// verbatim but for this comment and its name: the refusal rule a `helm rollback` to that release
// meets. migrations.contract.ts runs it against the schema this build leaves.
import type { SqlDriver } from "../driver.ts";
import { num } from "../driver.ts";
import type { Migration, MigrateResult } from "../migrations.ts";

const PG_MIGRATION_LOCK = 0x77617665; // "wave"

export async function migrate23cd1c2(
  driver: SqlDriver,
  migrations: readonly Migration[],
  now: number,
  setup?: string,
): Promise<MigrateResult> {
  migrations.forEach((m, i) => {
    if (m.version !== i + 1)
      throw new Error(`migration ${m.name}: expected version ${i + 1}, got ${m.version}`);
  });
  return driver.transaction(async (tx) => {
    if (driver.dialect === "postgres") await tx.all(`SELECT pg_advisory_xact_lock(${PG_MIGRATION_LOCK})`);
    if (setup) await tx.exec(setup);
    await tx.exec(
      `CREATE TABLE IF NOT EXISTS schema_migrations (
         version INTEGER PRIMARY KEY,
         name TEXT NOT NULL,
         applied_at BIGINT NOT NULL
       )`,
    );
    const rows = await tx.all("SELECT version FROM schema_migrations ORDER BY version");
    const done = new Set(rows.map((r) => num(r.version)));
    const newest = Math.max(0, ...done);
    if (newest > migrations.length) {
      throw new Error(
        `database schema version ${newest} is newer than this build knows (${migrations.length}): refusing to run an older Wave against it`,
      );
    }
    const applied: number[] = [];
    for (const m of migrations) {
      if (done.has(m.version)) continue;
      try {
        await tx.exec(m.sql);
      } catch (err) {
        throw new Error(`migration ${m.version} (${m.name}) failed: ${(err as Error).message}`, {
          cause: err,
        });
      }
      await tx.run("INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)", [
        m.version,
        m.name,
        now,
      ]);
      applied.push(m.version);
    }
    return { applied, version: migrations.length };
  });
}
