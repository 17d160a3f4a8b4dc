// The Store contract against a real PostgreSQL server.
// - WAVE_TEST_POSTGRES_URL set: use that server (CI starts one with hack/postgres/start.sh).
// - unset, and Debian's postgresql binaries present: start a throwaway server with
//   hack/postgres/start.sh for this run and stop it afterwards.
// - unset and no binaries (or WAVE_TEST_POSTGRES=off): the suite is skipped, saying why.
// Every test works in its own schema, dropped afterwards, so runs never see each other's rows.
import { after, describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import pg from "pg";
import { storeContract } from "./contract.ts";
import { migrationContract } from "./migrations.contract.ts";
import { postgresMigrations } from "./migrations.ts";
import { openPostgresStore, PostgresDriver } from "./postgres.ts";

const scripts = join(import.meta.dirname, "../../../hack/postgres");

function serverUrl(): { url?: string; skip?: string } {
  const given = process.env.WAVE_TEST_POSTGRES_URL;
  if (given) return { url: given };
  if (process.env.WAVE_TEST_POSTGRES === "off") return { skip: "WAVE_TEST_POSTGRES=off" };
  const state = mkdtempSync(join(tmpdir(), "wave-pg-state-"));
  const env = { ...process.env, WAVE_PG_STATE: state };
  const started = spawnSync("bash", [join(scripts, "start.sh")], { env, encoding: "utf8" });
  if (started.status === 3) {
    rmSync(state, { recursive: true, force: true });
    return {
      skip: "WAVE_TEST_POSTGRES_URL is unset and no PostgreSQL server binaries were found (apt-get install -y postgresql)",
    };
  }
  if (started.status !== 0) {
    throw new Error(`hack/postgres/start.sh failed (${started.status}): ${started.stderr}`);
  }
  after(() => {
    spawnSync("bash", [join(scripts, "stop.sh")], { env, stdio: "ignore" });
    rmSync(state, { recursive: true, force: true });
  });
  return { url: started.stdout.trim() };
}

const { url, skip } = serverUrl();
if (skip) console.log(`# PostgreSQL store contract SKIPPED: ${skip}`);

async function withAdmin<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

function freshSchema(): string {
  return `wave_t_${randomBytes(6).toString("hex")}`;
}

async function dropSchema(schema: string): Promise<void> {
  await withAdmin((c) => c.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`));
}

storeContract(
  "postgres",
  () => {
    const schema = freshSchema();
    return Promise.resolve({
      open: (retention) => openPostgresStore({ url: url ?? "", schema, ...(retention ? { retention } : {}) }),
      dispose: () => dropSchema(schema),
    });
  },
  { skip },
);

migrationContract(
  "postgres",
  async () => {
    const schema = freshSchema();
    await withAdmin((c) => c.query(`CREATE SCHEMA ${schema}`));
    return { driver: new PostgresDriver({ url: url ?? "", schema }), dispose: () => dropSchema(schema) };
  },
  postgresMigrations,
  { skip },
);

void describe("PostgreSQL store", { skip: skip ?? false }, () => {
  it("applies migrations exactly once when several cores start together", async () => {
    const schema = freshSchema();
    try {
      const opened = await Promise.all(
        [1, 2, 3, 4].map(() => openPostgresStore({ url: url ?? "", schema, maxConnections: 2 })),
      );
      const applied = opened.map((o) => o.migrations.applied.length).sort();
      assert.deepEqual(applied, [0, 0, 0, 14]);
      await Promise.all(opened.map((o) => o.store.close()));
      // Contracts in schema_migrations (what an older build checks), expands in schema_expansions.
      const rows = await withAdmin((c) => c.query(`SELECT version FROM ${schema}.schema_migrations`));
      assert.equal(rows.rowCount, 8);
      const expands = await withAdmin((c) => c.query(`SELECT version FROM ${schema}.schema_expansions`));
      assert.equal(expands.rowCount, 6);
    } finally {
      await dropSchema(schema);
    }
  });

  it("rejects a bad schema name before connecting", async () => {
    await assert.rejects(
      openPostgresStore({ url: url ?? "", schema: "x; DROP TABLE y" }),
      /schema must match/,
    );
  });
});
