import knexFactory, { Knex } from 'knex';
import { Model, knexSnakeCaseMappers } from 'objection';
import path from 'node:path';
import pg from 'pg';
import { observeDatabase } from '../observability/database';

/**
 * Weft's own bigint columns (COUNT(*), versions) fit a JS number, so its connections parse INT8 as
 * one. Scoped to these connections: a global setTypeParser would also reach the pools that
 * postgres_table opens to external databases, whose bigints must keep full precision.
 */
const weftTypes = {
  getTypeParser: ((oid: number, format?: string) =>
    oid === pg.types.builtins.INT8 ? (value: string) => Number(value) : pg.types.getTypeParser(oid, format as 'text')) as typeof pg.types.getTypeParser,
};

export type Db = Knex;
/** A connection or an open transaction: services accept either so callers decide the unit of work. */
export type Executor = Knex | Knex.Transaction;

const migrationsDirectory = path.join(__dirname, 'migrations');

export function createDb(databaseUrl: string, pool: { min?: number; max?: number } = {}): Db {
  const db = knexFactory({
    client: 'pg',
    connection: { connectionString: databaseUrl, application_name: 'weft', types: weftTypes } as Knex.PgConnectionConfig,
    pool: { min: pool.min ?? 0, max: pool.max ?? 10 },
    // Code says camelCase, tables say snake_case: identifiers are converted both ways, for
    // query-builder calls and result rows alike (raw SQL text is left as written).
    ...knexSnakeCaseMappers(),
    migrations: { directory: migrationsDirectory, loadExtensions: ['.ts'], tableName: 'knex_migrations' },
  });
  Model.knex(db);
  observeDatabase(db);
  return db;
}

export async function migrateToLatest(db: Db): Promise<string[]> {
  const [, applied] = (await db.migrate.latest()) as [number, string[]];
  return applied;
}
