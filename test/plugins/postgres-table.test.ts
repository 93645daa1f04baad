import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { closePostgresTablePools, postgresTableCapability as capability } from '../../plugins/postgres-table';
import type { CapabilityContext, Condition, RecordsQuery, WriteRequest } from '../../plugins/capability';
import { env } from '../support/environment';

const database = 'weft_ext_test';
const provenance: WriteRequest['provenance'] = { kind: 'write', id: 'action-1' };
const items = { table: 'items' };
const query = (overrides: Partial<RecordsQuery> = {}): RecordsQuery => ({ where: [], orderBy: [{ field: 'id', direction: 'asc' }], limit: 100, ...overrides });
const withCode = (code: string) => (error: unknown) => {
  assert.equal((error as { code?: string }).code, code, String(error));
  return true;
};

/** A client for `name` on the test cluster, with the user and address of DATABASE_URL. */
function clientFor(name: string): pg.Client {
  const url = new URL(process.env.DATABASE_URL!);
  url.pathname = `/${name}`;
  return new pg.Client({ connectionString: url.toString() });
}

describe('postgres_table capability', () => {
  let ctx: CapabilityContext;
  let external: pg.Client;

  before(async () => {
    const admin = clientFor('postgres');
    await admin.connect();
    try {
      await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
      await admin.query(`CREATE DATABASE ${database}`);
    } finally {
      await admin.end();
    }
    external = clientFor(database);
    await external.connect();
    await external.query(`
      CREATE TABLE items (id integer PRIMARY KEY, name text NOT NULL, price numeric(10,2), tags jsonb, created_at timestamptz NOT NULL DEFAULT now());
      INSERT INTO items (id, name, price, created_at)
        SELECT n, 'item ' || n, CASE WHEN n % 6 = 0 THEN NULL ELSE (n % 4) * 2.5 END, '2026-01-01 00:00:00.000001+00'::timestamptz + n * interval '1 microsecond'
        FROM generate_series(1, 30) n;
      CREATE SCHEMA sales;
      CREATE TABLE sales."Orders" (region text, amount integer);
      INSERT INTO sales."Orders" VALUES ('north', 1), ('south', 2), ('north', 3), ('east', 1), ('north', 1);`);
    const url = new URL(process.env.DATABASE_URL!);
    ctx = {
      installation: {
        id: randomUUID(),
        workspaceId: randomUUID(),
        settings: { host: url.hostname, port: Number(url.port || 5432), database, user: decodeURIComponent(url.username), ssl: false },
        credentials: url.password ? { password: decodeURIComponent(url.password) } : {},
      },
      db: env().db,
    };
  });

  after(async () => {
    await external?.end();
    await closePostgresTablePools();
    const admin = clientFor('postgres');
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`).finally(() => admin.end());
  });

  it('checks the connection and discovers columns', async () => {
    assert.equal((await capability.checkConnection(ctx, items)).ok, true);
    const missing = await capability.checkConnection(ctx, { table: 'nope' });
    assert.equal(missing.ok, false);
    assert.match(missing.message, /no table public\.nope/);
    assert.deepEqual(await capability.discoverSchema(ctx, items), [
      { name: 'id', type: 'integer', nullable: false },
      { name: 'name', type: 'text', nullable: false },
      { name: 'price', type: 'numeric', nullable: true },
      { name: 'tags', type: 'jsonb', nullable: true },
      { name: 'created_at', type: 'timestamp with time zone', nullable: false },
    ]);
    assert.deepEqual((await capability.discoverSchema(ctx, { schema: 'sales', table: 'Orders' })).map((f) => f.name), ['region', 'amount']);
    await assert.rejects(capability.discoverSchema(ctx, { table: 'nope' }), withCode('not_found'));
  });

  it('reads with where, orderBy and select', async () => {
    const ids = async (where: Condition[]) => (await capability.readRecords(ctx, items, query({ where, select: ['id'] }))).records.map((r) => r.id);
    assert.deepEqual(await ids([{ field: 'id', op: 'eq', value: 3 }]), [3]);
    assert.deepEqual(await ids([{ field: 'id', op: 'lte', value: 8 }, { field: 'price', op: 'ne', value: 2.5 }]), [2, 3, 4, 6, 7, 8]);
    assert.deepEqual(await ids([{ field: 'id', op: 'in', values: [1, 2, 6, 99] }]), [1, 2, 6]);
    assert.deepEqual(await ids([{ field: 'price', op: 'exists', value: false }]), [6, 12, 18, 24, 30]);
    assert.deepEqual(await ids([{ field: 'price', op: 'eq', value: null }, { field: 'id', op: 'lt', value: 13 }]), [6, 12]);
    assert.deepEqual(await ids([{ field: 'id', op: 'gt', value: 27 }]), [28, 29, 30]);
    assert.deepEqual(await ids([{ field: 'id', op: 'gte', value: 29 }, { field: 'price', op: 'exists' }]), [29]);
    assert.deepEqual(await ids([{ field: 'name', op: 'in', values: ['item 4', null] }, { field: 'id', op: 'lt', value: 5 }]), [4]);

    const page = await capability.readRecords(ctx, items, query({ select: ['name', 'price'], orderBy: [{ field: 'price', direction: 'desc' }, { field: 'id', direction: 'desc' }], limit: 3 }));
    assert.deepEqual(page.records, [
      { name: 'item 27', price: '7.50' },
      { name: 'item 23', price: '7.50' },
      { name: 'item 19', price: '7.50' },
    ]);
    assert.equal(page.snapshot, undefined);
  });

  it('pages by keyset, nulls and microsecond timestamps included, every row exactly once', async () => {
    for (const orderBy of [[{ field: 'price', direction: 'desc' }], [{ field: 'price', direction: 'asc' }], [{ field: 'created_at', direction: 'desc' }]] as RecordsQuery['orderBy'][]) {
      const seen: Array<Record<string, unknown>> = [];
      let after: unknown;
      do {
        const page = await capability.readRecords(ctx, items, query({ orderBy, limit: 7, after, where: [{ field: 'id', op: 'lte', value: 30 }] }));
        seen.push(...page.records);
        after = page.continuation;
      } while (after);
      assert.deepEqual(seen.map((r) => r.id).sort((a, b) => Number(a) - Number(b)), Array.from({ length: 30 }, (_, i) => i + 1), JSON.stringify(orderBy));
      const { field, direction } = orderBy[0];
      // NULL sorts lowest: first ascending, last descending.
      const sortable = seen.map((r) => (r[field] === null ? -Infinity : Number(r[field] instanceof Date ? (r[field] as Date).getTime() : r[field])));
      const sorted = [...sortable].sort((a, b) => (direction === 'asc' ? a - b : b - a));
      assert.deepEqual(sortable, sorted);
    }
  });

  it('pages a table without a primary key by offset', async () => {
    const target = { schema: 'sales', table: 'Orders' };
    const seen: Array<Record<string, unknown>> = [];
    let after: unknown;
    do {
      const page = await capability.readRecords(ctx, target, { where: [], orderBy: [{ field: 'region', direction: 'asc' }], limit: 2, after });
      seen.push(...page.records);
      after = page.continuation;
    } while (after);
    assert.deepEqual(seen.map((r) => `${r.region}${r.amount}`), ['east1', 'north1', 'north1', 'north3', 'south2']);
  });

  it('appends, upserts, updates and deletes in one transaction each', async () => {
    const write = (request: Omit<WriteRequest, 'provenance'>) => capability.writeRecords!(ctx, items, { ...request, provenance });
    assert.deepEqual(await write({ operation: 'append', rows: [{ id: 101, name: 'new', tags: ['a', 'b'] }, { id: 102, name: 'newer', price: 1 }] }), { affected: 2 });
    assert.deepEqual(await write({ operation: 'upsert', rows: [{ id: 101, name: 'new', price: 9 }, { id: 103, name: 'third' }] }), { affected: 2 });
    assert.deepEqual(await write({ operation: 'update', where: [{ field: 'id', op: 'gt', value: 100 }], set: { price: 4 } }), { affected: 3 });
    assert.deepEqual(await write({ operation: 'delete', where: [{ field: 'id', op: 'eq', value: 102 }] }), { affected: 1 });
    // Columns an upserted row leaves out keep their values (tags of 101).
    const rows = await external.query('SELECT id, name, price, tags FROM items WHERE id > 100 ORDER BY id');
    assert.deepEqual(rows.rows, [
      { id: 101, name: 'new', price: '4.00', tags: ['a', 'b'] },
      { id: 103, name: 'third', price: '4.00', tags: null },
    ]);

    // A failing row rolls back the rows before it.
    await assert.rejects(write({ operation: 'append', rows: [{ id: 104, name: 'ok' }, { id: 101, name: 'duplicate' }] }), withCode('constraint_violation'));
    await assert.rejects(write({ operation: 'upsert', rows: [{ id: 105, name: 'x' }, { id: 105, name: 'y' }] }), withCode('duplicate_key_in_batch'));
    await assert.rejects(write({ operation: 'update', where: [{ field: 'id', op: 'eq', value: 101 }], set: { id: 1 } }), withCode('primary_key_immutable'));
    await assert.rejects(write({ operation: 'delete', where: [] }), withCode('where_required'));
    assert.equal((await external.query('SELECT count(*)::int AS n FROM items WHERE id > 100')).rows[0].n, 2);
    await assert.rejects(capability.writeRecords!(ctx, { schema: 'sales', table: 'Orders' }, { operation: 'upsert', rows: [{ region: 'x' }], provenance }), withCode('primary_key_required'));
  });

  it('refuses snapshot reads, unknown fields and injection-looking names', async () => {
    await assert.rejects(capability.readRecords(ctx, items, query({ snapshotId: randomUUID() })), withCode('snapshot_not_supported'));
    await assert.rejects(capability.readRecords(ctx, items, query({ asOf: new Date().toISOString() })), withCode('snapshot_not_supported'));
    const hostile = 'name" FROM items; DROP TABLE items; --';
    await assert.rejects(capability.readRecords(ctx, items, query({ select: ['nope'] })), withCode('unknown_field'));
    await assert.rejects(capability.readRecords(ctx, items, query({ select: [hostile] })), withCode('unknown_field'));
    await assert.rejects(capability.readRecords(ctx, items, query({ where: [{ field: hostile, op: 'exists' }] })), withCode('unknown_field'));
    await assert.rejects(capability.readRecords(ctx, items, query({ orderBy: [{ field: hostile, direction: 'asc' }] })), withCode('unknown_field'));
    await assert.rejects(capability.writeRecords!(ctx, items, { operation: 'append', rows: [{ id: 200, [hostile]: 'x' }], provenance }), withCode('unknown_field'));
    await assert.rejects(capability.writeRecords!(ctx, items, { operation: 'update', where: [{ field: 'id', op: 'eq', value: 1 }], set: { [hostile]: 1 }, provenance }), withCode('unknown_field'));
    await assert.rejects(capability.readRecords(ctx, { table: 'items"; DROP TABLE items; --' }, query()), withCode('invalid_target'));
    // Values are bound parameters, never SQL text.
    assert.deepEqual((await capability.readRecords(ctx, items, query({ where: [{ field: 'name', op: 'eq', value: "x' OR '1'='1" }] }))).records, []);
    assert.equal((await external.query('SELECT count(*)::int AS n FROM items')).rows[0].n, 32);
  });
});
