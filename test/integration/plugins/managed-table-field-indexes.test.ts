import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { FieldIndexes, fieldIndexName } from '../../../plugins/managed-table/field-indexes';
import { env } from '../../support/environment';
import { until } from '../../support/polling';

// The GIN indexes SPARQL finds bound records by (plugins/managed-table/field-indexes.ts), built
// with CREATE INDEX CONCURRENTLY: a build waits for every transaction older than it on the table,
// and a query running when it starts must not make it fail (at 10M bench records the offers'
// product index stayed invalid while 20 s queries ran, and every lookup by product scanned).

describe('Field indexes of bound tables', function () {
  this.timeout(120_000);
  const schema = `field_indexes_${randomUUID().replace(/-/g, '').slice(0, 12)}`;
  const table = 'offers';

  before(async () => {
    const { db } = env();
    await db.raw(`CREATE SCHEMA ${schema}`);
    await db.raw(`CREATE TABLE ${schema}.${table} (row_key text, data jsonb)`);
    await db.raw(`INSERT INTO ${schema}.${table} SELECT i::text, jsonb_build_object('product', i % 50) FROM generate_series(1, 5000) i`);
  });
  after(() => env().db.raw(`DROP SCHEMA ${schema} CASCADE`));

  const validity = async (field: string): Promise<boolean | undefined> => {
    const { rows } = await env().db.raw<{ rows: Array<{ valid: boolean }> }>(
      `SELECT i.indisvalid AS valid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = ? AND c.relname = ?`,
      [schema, fieldIndexName(table, field)],
    );
    return rows[0]?.valid;
  };

  it('is built while a query that started before it runs longer than 5 s on the table', async () => {
    const { db } = env();
    const indexes = new FieldIndexes();
    // A statement whose snapshot the build must outlast, from a connection of its own.
    const query = `SELECT pg_sleep(7) FROM ${schema}.${table} LIMIT 1 -- ${schema}`;
    const running = db.raw(query).then(() => undefined);
    await until('the long query to run', async () => (await db.raw<{ rows: unknown[] }>(`SELECT 1 FROM pg_stat_activity WHERE state = 'active' AND query = ?`, [query])).rows.length > 0, 10_000);
    indexes.ensure(db, schema, table, ['product']);
    await indexes.settle();
    await running;
    assert.equal(await validity('product'), true, 'the index is valid');
    // The planner reads the table by it.
    const { rows } = await db.raw<{ rows: Array<{ 'QUERY PLAN': string }> }>(`EXPLAIN SELECT * FROM ${schema}.${table} WHERE (data -> 'product') @> ANY (?::jsonb[])`, [['7', '"7"']]);
    assert.match(rows.map((row) => row['QUERY PLAN']).join('\n'), new RegExp(fieldIndexName(table, 'product')));
  });
});
