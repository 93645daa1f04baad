import { createHash } from 'node:crypto';
import type { Knex } from 'knex';
import { logger } from '../../core/logger';
import { quoteIdentifier } from '../sql/builder';
import { ConnectionLender, qualified } from './storage';

// GIN indexes on the fields SPARQL reads bound tables by (services/ontology/sparql-reach-reads.ts
// finds records by `(data -> field) @> ANY (...)`, a scalar or an array element): subject and
// link template fields. Built in the background with CREATE INDEX CONCURRENTLY, so writers are
// never blocked, the first time a runtime reads a table by a field; a build that fails (a lock
// it could not take in time, the table dropped) leaves an invalid index that the next try drops.

/** Index name of a field: a digest, since field names may be long or hold any character. */
export function fieldIndexName(table: string, field: string): string {
  return `weft_reach_${createHash('sha256').update(table).update('\u0000').update(field).digest('hex').slice(0, 24)}`;
}

/** A string literal for DDL, where parameters cannot go (standard_conforming_strings is on since PostgreSQL 9.1). */
function literal(text: string): string {
  if (text.includes('\u0000')) throw new Error('a field name holds a NUL character');
  return `'${text.replace(/'/g, "''")}'`;
}

/** How long a build waits for the table's older transactions, at each of its waits. */
const LOCK_WAIT = '3min';

/** The field indexes a runtime has built or is building (one per runtime: ManagedTableMemory). */
export class FieldIndexes {
  private readonly ensured = new Set<string>();
  private readonly building = new Set<Promise<void>>();

  /** Starts building the indexes `fields` lack on the table, on `db` (the runtime's pool); returns at once. */
  ensure(db: Knex, schema: string, table: string, fields: string[]): void {
    const wanted = fields.filter((field) => !this.ensured.has(`${schema}.${table}\u0000${field}`));
    if (!wanted.length) return;
    for (const field of wanted) this.ensured.add(`${schema}.${table}\u0000${field}`);
    const build = this.build(db, schema, table, wanted).catch((error: unknown) => {
      // Tried again by the next process, or by this one after a restart.
      for (const field of wanted) this.ensured.delete(`${schema}.${table}\u0000${field}`);
      logger.warn({ err: error, table }, 'field index not built');
    });
    this.building.add(build);
    void build.finally(() => this.building.delete(build));
  }

  private async build(db: Knex, schema: string, table: string, fields: string[]): Promise<void> {
    const { rows } = await db.raw<{ rows: Array<{ name: string; valid: boolean }> }>(
      `SELECT c.relname AS name, i.indisvalid AS valid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = ? AND c.relname = ANY (?::text[])`,
      [schema, fields.map((field) => fieldIndexName(table, field))],
    );
    const found = new Map(rows.map((row) => [row.name, row.valid]));
    const missing = fields.filter((field) => found.get(fieldIndexName(table, field)) !== true);
    if (!missing.length) return;
    // One connection of the pool, outside any transaction (CONCURRENTLY needs that). A concurrent
    // build waits, three times, for every transaction older than its own to end: with 5 s to do
    // so it failed whenever a query of 20 s ran on the table (the 10M-record bench: the offers'
    // product index stayed invalid, and every lookup by product scanned 6.2 million rows). No read
    // or write queues behind that wait; only maintenance of the same table (ANALYZE, VACUUM, DDL)
    // does, so a few minutes are allowed.
    const client = db.client as unknown as ConnectionLender;
    const connection = await client.acquireConnection();
    try {
      await connection.query(`SET lock_timeout = '${LOCK_WAIT}'`);
      for (const field of missing) {
        const name = fieldIndexName(table, field);
        if (found.get(name) === false) await connection.query(`DROP INDEX CONCURRENTLY IF EXISTS ${quoteIdentifier(schema)}.${quoteIdentifier(name)}`);
        await connection.query(`CREATE INDEX CONCURRENTLY IF NOT EXISTS ${quoteIdentifier(name)} ON ${qualified(schema, table)} USING gin ((data -> ${literal(field)}) jsonb_path_ops)`);
      }
      // The planner knows the new indexes' expressions only once they are analysed.
      await connection.query(`ANALYZE ${qualified(schema, table)}`);
    } finally {
      await connection.query('RESET lock_timeout').catch(() => undefined);
      await client.releaseConnection(connection);
    }
  }

  /** Waits for the builds under way (the runtime's close). */
  async settle(): Promise<void> {
    await Promise.allSettled([...this.building]);
  }
}
