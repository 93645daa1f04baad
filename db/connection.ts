import knexFactory, { Knex } from 'knex';
import { Model, knexSnakeCaseMappers } from 'objection';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { logger } from '../core/logger';
import { codeExtension } from '../core/paths';
import { observeDatabase } from '../observability/database';
import { databaseTlsError, withTlsEnvironment } from './tls';

/**
 * Weft's own bigint columns (COUNT(*), versions) fit a JS number, so its connections parse INT8 as
 * one. Scoped to these connections: a global setTypeParser would also reach the pools that
 * postgres_table opens to external databases, whose bigints must keep full precision.
 */
const weftTypes = {
  getTypeParser: ((oid: number, format?: string) =>
    oid === pg.types.builtins.INT8 ? (value: string) => Number(value) : pg.types.getTypeParser(oid, format as 'text')) as typeof pg.types.getTypeParser,
};

/**
 * knex writes its own warnings ("Acquire connection error: …" with a stack) with console.log, on
 * the stdout that carries the structured log lines; they go through the logger instead, one JSON
 * line each, the first line as the message and the stack as a field.
 */
const knexLog = Object.fromEntries(
  (['debug', 'warn', 'error', 'deprecate'] as const).map((level) => [
    level,
    (message: unknown) => {
      // knex's debug objects carry a statement's bound values (records, key material): only its SQL is kept.
      const text = typeof message === 'string' ? message : String((message as { sql?: unknown } | null)?.sql ?? 'knex debug output');
      const [first, ...stack] = text.split('\n');
      const fields = { component: 'knex', ...(stack.length ? { stack: stack.join('\n') } : {}) };
      logger[level === 'deprecate' ? 'warn' : level](fields, first);
    },
  ]),
);

export type Db = Knex;
/** A connection or an open transaction: services accept either so callers decide the unit of work. */
export type Executor = Knex | Knex.Transaction;

const migrationsDirectory = path.join(__dirname, 'migrations');

/**
 * The migrations by the name knex_migrations records, their source file's (`….ts`), whether this
 * code runs from its sources or built (dist/db/migrations holds `….js`): a database migrated by
 * one is current for the other.
 */
const migrationSource: Knex.MigrationSource<string> = {
  getMigrations: async () => migrationNames(),
  getMigrationName: (name) => name,
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- a file of the folder, as knex's own source loads it
  getMigration: async (name) => require(path.join(migrationsDirectory, `${path.basename(name, '.ts')}${codeExtension}`)) as Knex.Migration,
};

function migrationNames(): string[] {
  return readdirSync(migrationsDirectory)
    .filter((file) => file.endsWith(codeExtension) && !file.endsWith('.d.ts'))
    .map((file) => `${path.basename(file, codeExtension)}.ts`)
    .sort();
}

/**
 * DATABASE_URL goes to pg whole, so its query parameters apply: `?sslmode=verify-full` with
 * `sslrootcert=/path/ca.pem` (`sslcert` / `sslkey` for a client certificate) connects over TLS, as
 * pg-connection-string reads them; PGSSLMODE / PGSSLROOTCERT / PGSSLCERT / PGSSLKEY fill in what
 * the URL leaves out (db/tls.ts). Every connection of the pool, and the raw ones taken from it
 * (LISTEN), is made from these settings.
 */
export function createDb(databaseUrl: string, pool: { min?: number; max?: number } = {}): Db {
  const db = knexFactory({
    client: 'pg',
    connection: { connectionString: withTlsEnvironment(databaseUrl), application_name: 'weft', types: weftTypes } as Knex.PgConnectionConfig,
    pool: { min: pool.min ?? 0, max: pool.max ?? 10 },
    // A failed statement's error names its SQL with placeholders, not with the bound values written
    // in: errors reach logs and traces, and values can be records or key material.
    compileSqlOnError: false,
    log: knexLog,
    // Code says camelCase, tables say snake_case: identifiers are converted both ways, for
    // query-builder calls and result rows alike (raw SQL text is left as written).
    ...knexSnakeCaseMappers(),
    migrations: { migrationSource, tableName: 'knex_migrations' },
  });
  Model.knex(db);
  observeDatabase(db);
  return db;
}

/** Any fixed number: every Weft process that migrates takes this PostgreSQL advisory lock first. */
const MIGRATION_LOCK = 0x57656674;

/**
 * Applies pending migrations. Processes that start together queue on a session advisory lock, so
 * only one migrates and the others find nothing left to do: knex's own lock row would instead fail
 * the second one, and its creation of the bookkeeping tables races on a fresh database.
 */
export async function migrateToLatest(db: Db): Promise<string[]> {
  return explainingTls(db, () =>
    db.transaction(async (lock) => {
      await lock.raw('SELECT pg_advisory_xact_lock(?)', [MIGRATION_LOCK]);
      const [, applied] = (await db.migrate.latest()) as [number, string[]];
      return applied;
    }),
  );
}

/** A process's first use of its database, with a failure for a TLS reason saying which setting to look at. */
async function explainingTls<T>(db: Db, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    const connection = (db.client as { config?: { connection?: { connectionString?: string } } }).config?.connection;
    throw databaseTlsError(error, connection?.connectionString) ?? error;
  }
}

/** The migrations this code has and the database has not applied, read without writing anything. */
export async function pendingMigrations(db: Db): Promise<string[]> {
  const known = migrationNames();
  if (!(await db.schema.hasTable('knex_migrations'))) return known;
  const applied = new Set((await db('knex_migrations').select('name')).map((row: { name: string }) => row.name));
  return known.filter((file) => !applied.has(file));
}

export class SchemaNotCurrentError extends Error {}

/** Refuses to serve on a schema older than the code: migrations are a deployment step (`npm run migrate`). */
export async function assertSchemaCurrent(db: Db): Promise<void> {
  const pending = await explainingTls(db, () => pendingMigrations(db));
  if (pending.length === 0) return;
  throw new SchemaNotCurrentError(
    `The database schema is not current: ${pending.length} migration(s) pending (${pending.slice(0, 3).join(', ')}${pending.length > 3 ? ', …' : ''}). ` +
      'Run `npm run migrate` with the same DATABASE_URL, then start again.',
  );
}
