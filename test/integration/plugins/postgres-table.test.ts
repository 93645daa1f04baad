import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:net';
import pg from 'pg';
import { connectionConfig, postgresTableCapability as capability, remoteError, rowsPerInsert, settingsOf, vetAddress } from '../../../plugins/postgres-table';
import type { CapabilityContext, Condition, InstallationContext, RecordsQuery, StagedRows, WriteRequest } from '../../../plugins/capability';
import { ManagedTableMemory } from '../../../plugins/managed-table/memory';
import { PostgresTablePools } from '../../../plugins/postgres-table/pool';
import { SnapshotNotices } from '../../../plugins/snapshot-notices';
import { env } from '../../support/environment';
import { externalDatabase } from '../../support/external-postgres';

/** This run's own external database: concurrent `npm test` runs share the cluster, never this name. */
const database = `weft_ext_test_${process.pid}`;
const provenance: WriteRequest['provenance'] = { kind: 'write', id: 'action-1' };
const items = { table: 'items' };
const query = (overrides: Partial<RecordsQuery> = {}): RecordsQuery => ({ where: [], orderBy: [{ field: 'id', direction: 'asc' }], limit: 100, ...overrides });
const withCode = (code: string) => (error: unknown) => {
  assert.equal((error as { code?: string }).code, code, String(error));
  return true;
};

describe('postgres_table capability', () => {
  let ctx: CapabilityContext;
  // This file's own pools (a runtime's), closed before its database is dropped.
  const pools = new PostgresTablePools();
  let external: pg.Client;

  let drop: () => Promise<void>;

  before(async () => {
    ({ client: external, drop } = await externalDatabase(database));
    await external.query(`
      CREATE TABLE items (id integer PRIMARY KEY, name text NOT NULL, price numeric(10,2), tags jsonb, created_at timestamptz NOT NULL DEFAULT now());
      INSERT INTO items (id, name, price, created_at)
        SELECT n, 'item ' || n, CASE WHEN n % 6 = 0 THEN NULL ELSE (n % 4) * 2.5 END, '2026-01-01 00:00:00.000001+00'::timestamptz + n * interval '1 microsecond'
        FROM generate_series(1, 30) n;
      CREATE SCHEMA sales;
      CREATE TABLE sales."Orders" (region text, amount integer);
      INSERT INTO sales."Orders" VALUES ('north', 1), ('south', 2), ('north', 3), ('east', 1), ('north', 1);
      CREATE TABLE big (id bigint PRIMARY KEY, amount numeric, counts bigint[]);
      INSERT INTO big VALUES (9007199254740993, 12345678901234567890.123456789, '{9007199254740993}'), (9007199254740992, 0.1, '{}');`);
    const url = new URL(process.env.DATABASE_URL!);
    ctx = {
      installation: {
        id: randomUUID(),
        workspaceId: randomUUID(),
        // The test cluster listens on loopback only: the installation must allow private networks.
        settings: { host: url.hostname, port: Number(url.port || 5432), database, user: decodeURIComponent(url.username), ssl: false, allowPrivateNetwork: true },
        credentials: url.password ? { password: decodeURIComponent(url.password) } : {},
      },
      db: env().db,
      managedTables: new ManagedTableMemory(env().db),
      postgresTablePools: pools,
      snapshotNotices: new SnapshotNotices(),
    };
  });

  after(async () => {
    await pools.close();
    await drop?.();
  });

  /** The test installation with some settings or credentials changed (a new id, so a pool of its own). */
  const installationWith = (settings: Record<string, unknown>, credentials: Record<string, unknown> = ctx.installation.credentials): CapabilityContext => ({
    ...ctx,
    installation: { ...ctx.installation, id: randomUUID(), settings: { ...ctx.installation.settings, ...settings }, credentials },
  });

  it('checks the connection and discovers columns', async () => {
    assert.equal((await capability.checkConnection(ctx, items)).ok, true);
    const missing = await capability.checkConnection(ctx, { table: 'nope' });
    assert.equal(missing.ok, false);
    assert.match(missing.message, /no table public\.nope/);
    assert.deepEqual(await capability.discoverSchema(ctx, items), {
      fields: [
        { name: 'id', type: 'integer', nullable: false },
        { name: 'name', type: 'text', nullable: false },
        { name: 'price', type: 'numeric', nullable: true },
        { name: 'tags', type: 'jsonb', nullable: true },
        { name: 'created_at', type: 'timestamp with time zone', nullable: false },
      ],
      primaryKey: ['id'],
    });
    const orders = await capability.discoverSchema(ctx, { schema: 'sales', table: 'Orders' });
    assert.deepEqual([orders.fields.map((f) => f.name), orders.primaryKey], [['region', 'amount'], []]);
    await assert.rejects(capability.discoverSchema(ctx, { table: 'nope' }), withCode('not_found'));
  });

  it('checks the fields of a read exactly against the catalog', async () => {
    const columns = ['id', 'name', 'price', 'tags', 'created_at'];
    assert.deepEqual(Object.keys((await capability.readRecords(ctx, items, query({ select: columns, limit: 1 }))).records[0]), columns);
    const orders = { schema: 'sales', table: 'Orders' };
    assert.deepEqual(Object.keys((await capability.readRecords(ctx, orders, query({ orderBy: [], limit: 1 }))).records[0]), ['region', 'amount']);
    const unknown = await capability.readRecords(ctx, orders, query({ select: ['region', 'id'], where: [{ field: 'nope', op: 'exists' }] })).then(
      () => assert.fail('expected unknown_field'),
      (error: { code?: string; message: string; details?: { errors?: Array<{ path: string }> } }) => error,
    );
    assert.equal(unknown.code, 'unknown_field');
    assert.match(unknown.message, /id, nope\. Known columns: region, amount\./);
    assert.deepEqual(unknown.details?.errors?.map((p) => p.path), ['/select/1', '/where/0/field', '/orderBy/0/field']);
    await assert.rejects(capability.readRecords(ctx, { table: 'nope' }, query()), withCode('not_found'));
  });

  it('describes the table once per read', async () => {
    const statements: string[] = [];
    const original = pg.Pool.prototype.query;
    pg.Pool.prototype.query = function (this: pg.Pool, ...args: unknown[]) {
      if (typeof args[0] === 'string') statements.push(args[0]);
      return (original as (...rest: unknown[]) => unknown).apply(this, args);
    } as typeof original;
    try {
      await capability.readRecords(ctx, items, query({ select: ['id'], where: [{ field: 'price', op: 'exists' }], limit: 3 }));
    } finally {
      pg.Pool.prototype.query = original;
    }
    assert.deepEqual([statements.filter((sql) => sql.includes('information_schema.columns')).length, statements.filter((sql) => sql.includes('pg_index')).length], [1, 1], statements.join('\n'));
  });

  it('keeps int8 and numeric values exact, whatever parser Weft sets for its own database', async () => {
    // A lossy int8 parser on the global pg module (as Weft once set for its own database) must not reach external data.
    const { INT8, NUMERIC } = pg.types.builtins;
    const previous = [pg.types.getTypeParser(INT8, 'text'), pg.types.getTypeParser(NUMERIC, 'text')];
    pg.types.setTypeParser(INT8, (value) => Number(value));
    pg.types.setTypeParser(NUMERIC, (value) => Number(value));
    try {
      const page = await capability.readRecords(ctx, { table: 'big' }, query({ orderBy: [{ field: 'id', direction: 'desc' }], limit: 1 }));
      assert.deepEqual(page.records, [{ id: '9007199254740993', amount: '12345678901234567890.123456789', counts: ['9007199254740993'] }]);
      const next = await capability.readRecords(ctx, { table: 'big' }, query({ orderBy: [{ field: 'id', direction: 'desc' }], limit: 1, after: page.continuation }));
      assert.deepEqual(next.records.map((r) => r.id), ['9007199254740992']);
      const exact = await capability.readRecords(ctx, { table: 'big' }, query({ where: [{ field: 'id', op: 'eq', value: '9007199254740993' }], select: ['id'] }));
      assert.deepEqual(exact.records, [{ id: '9007199254740993' }]);
    } finally {
      pg.types.setTypeParser(INT8, previous[0]);
      pg.types.setTypeParser(NUMERIC, previous[1]);
    }
  });

  it('refuses non-public addresses unless the installation allows private networks', async () => {
    for (const host of ['127.0.0.1', 'localhost', '[::1]']) {
      const strict = installationWith({ host, allowPrivateNetwork: false });
      const check = await capability.checkConnection(strict, items);
      assert.equal(check.ok, false, host);
      assert.equal(check.details?.code, 'address_refused', host);
      await assert.rejects(capability.readRecords(strict, items, query()), withCode('address_refused'));
      await assert.rejects(capability.discoverSchema(strict, items), withCode('address_refused'));
      await assert.rejects(capability.writeRecords!(strict, items, { operation: 'append', rows: [{ id: 900, name: 'x' }], provenance }), withCode('address_refused'));
    }
    const unset = installationWith({});
    delete unset.installation.settings.allowPrivateNetwork;
    await assert.rejects(capability.discoverSchema(unset, items), withCode('address_refused'));
    assert.equal((capability.definition.installationSchema.properties as Record<string, { default?: unknown }>).allowPrivateNetwork.default, false);
  });

  it('never connects to Weft’s own database, even with private networks allowed', async () => {
    const own = new URL(process.env.DATABASE_URL!);
    const ownDatabase = decodeURIComponent(own.pathname.slice(1));
    for (const host of [own.hostname, 'localhost', '127.0.0.2']) {
      const weft = installationWith({ host, database: ownDatabase });
      const check = await capability.checkConnection(weft, { table: 'knex_migrations' });
      assert.equal(check.ok, false, host);
      assert.equal(check.details?.code, 'address_refused', host);
      await assert.rejects(capability.readRecords(weft, { table: 'knex_migrations' }, query({ orderBy: [] })), withCode('address_refused'));
    }
  });

  it('vets a host name once and connects to the checked address, keeping the name for TLS', async () => {
    const settings = (host: string, allowPrivateNetwork = false) => settingsOf({ ...ctx.installation, settings: { host, database: 'shop', user: 'reader', ssl: true, allowPrivateNetwork } } as InstallationContext);
    const answers: Record<string, string[]> = { 'db.example.test': ['93.184.216.34'], 'inside.example.test': ['10.1.2.3'], 'mixed.example.test': ['93.184.216.34', '192.168.1.5'], 'mapped.example.test': ['::ffff:127.0.0.1'] };
    const lookup = async (name: string) => answers[name] ?? [];
    const options = { lookup, weftDatabaseUrl: 'postgres://weft@db.internal.test:5432/weft' };
    assert.equal(await vetAddress(settings('db.example.test'), options), '93.184.216.34');
    for (const host of ['inside.example.test', 'mixed.example.test', 'mapped.example.test', '169.254.169.254', '::1']) {
      await assert.rejects(vetAddress(settings(host), options), withCode('address_refused'), host);
    }
    assert.equal(await vetAddress(settings('inside.example.test', true), options), '10.1.2.3');
    await assert.rejects(vetAddress(settings('unknown.example.test'), options), withCode('upstream_unavailable'));
    // Weft's own database by another name resolving to the same server.
    answers['db.internal.test'] = ['10.9.9.9'];
    answers['alias.example.test'] = ['10.9.9.9'];
    await assert.rejects(vetAddress({ ...settings('alias.example.test', true), database: 'weft' }, options), withCode('address_refused'));
    assert.equal(await vetAddress({ ...settings('alias.example.test', true), database: 'other' }, options), '10.9.9.9');

    const config = connectionConfig(settings('db.example.test'), '93.184.216.34');
    assert.equal(config.host, '93.184.216.34');
    assert.deepEqual(config.ssl, { rejectUnauthorized: true, servername: 'db.example.test' });
    assert.ok(Number(config.statement_timeout) > 0 && Number(config.connectionTimeoutMillis) > 0);
  });

  it('reports an unreachable server, a missing database or a missing privilege as business errors without the password', async () => {
    const password = 'pw-do-not-leak-7c1f';
    const freePort = await new Promise<number>((resolve) => {
      const server = createServer().listen(0, '127.0.0.1', () => {
        const { port } = server.address() as { port: number };
        server.close(() => resolve(port));
      });
    });
    const secret = (value: unknown) => assert.doesNotMatch(JSON.stringify(value, Object.getOwnPropertyNames(value ?? {})), new RegExp(password));
    const failing: Array<[string, CapabilityContext]> = [
      ['unreachable', installationWith({ host: '127.0.0.1', port: freePort }, { password })],
      ['no database', installationWith({ database: 'weft_ext_missing' }, { password })],
    ];
    for (const [label, broken] of failing) {
      const check = await capability.checkConnection(broken, items);
      assert.equal(check.ok, false, label);
      assert.equal(check.details?.code, 'upstream_unavailable', label);
      secret(check);
      for (const call of [
        () => capability.readRecords(broken, items, query()),
        () => capability.discoverSchema(broken, items),
        () => capability.writeRecords!(broken, items, { operation: 'append', rows: [{ id: 900, name: 'x' }], provenance }),
      ]) {
        const error = await call().then(() => assert.fail(`${label}: expected a failure`), (e: unknown) => e);
        assert.equal((error as { code?: string }).code, 'upstream_unavailable', `${label}: ${String(error)}`);
        assert.equal((error as { kind?: string }).kind, 'upstream_failed');
        secret(error);
      }
    }

    const role = `weft_reader_${randomUUID().slice(0, 8)}`;
    await external.query(`CREATE ROLE ${role} LOGIN PASSWORD '${password}'; GRANT SELECT ON items TO ${role};`);
    try {
      const reader = installationWith({ user: role }, { password });
      assert.equal((await capability.readRecords(reader, items, query({ limit: 1 }))).records.length, 1);
      const error = await capability.writeRecords!(reader, items, { operation: 'append', rows: [{ id: 901, name: 'x' }], provenance }).then(() => assert.fail('expected a refusal'), (e: unknown) => e);
      assert.equal((error as { code?: string }).code, 'upstream_permission_denied', String(error));
      assert.equal((error as { kind?: string }).kind, 'forbidden');
      secret(error);
    } finally {
      await pools.close();
      await external.query(`DROP OWNED BY ${role}; DROP ROLE ${role};`);
    }
  });

  it('maps connection-class failures to upstream_unavailable and 42501 to upstream_permission_denied, scrubbing the password', () => {
    const info = { host: 'db.example.test', port: 5432, database: 'shop', user: 'reader', password: 's3cret-pw', statementTimeoutMs: 60_000 };
    const fail = (fields: Record<string, unknown>) => Object.assign(new Error(String(fields.message ?? 'failure mentioning s3cret-pw')), fields);
    for (const code of ['ECONNREFUSED', 'ENOTFOUND', 'ETIMEDOUT', 'EHOSTUNREACH', '08001', '08006', '57P01', '57P03', '3D000', '28P01', '28000', '57014']) {
      const mapped = remoteError(fail({ code }), info) as { code?: string; kind?: string; message: string };
      assert.equal(mapped.code, 'upstream_unavailable', code);
      assert.equal(mapped.kind, 'upstream_failed', code);
      assert.doesNotMatch(mapped.message, /s3cret-pw/, code);
    }
    for (const message of ['timeout exceeded when trying to connect', 'Connection terminated unexpectedly']) {
      assert.equal((remoteError(fail({ message }), info) as { code?: string }).code, 'upstream_unavailable', message);
    }
    const denied = remoteError(fail({ code: '42501', message: 'permission denied for table items (password s3cret-pw)' }), info) as { code?: string; kind?: string; message: string };
    assert.deepEqual([denied.code, denied.kind], ['upstream_permission_denied', 'forbidden']);
    assert.doesNotMatch(denied.message, /s3cret-pw/);
    assert.equal((remoteError(fail({ code: '23505' }), info) as { code?: string }).code, 'constraint_violation');
  });

  it('closes its pools idempotently, and opens new ones afterwards', async () => {
    assert.equal((await capability.checkConnection(ctx, items)).ok, true);
    await Promise.all([pools.close(), pools.close()]);
    await pools.close();
    assert.equal((await capability.checkConnection(ctx, items)).ok, true);
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

  describe('wide tables and the content snapshot', () => {
    const columns = Array.from({ length: 400 }, (_, i) => `c${i + 1}`);
    const wideRow = (id: number) => Object.fromEntries([['id', id], ...columns.map((name, i) => [name, id * 1000 + i])]);
    /** Staged rows as a run hands them over, in batches of the size asked for. */
    const staged = (rows: Array<Record<string, unknown>>): StagedRows => ({
      relation: () => {
        throw new Error('postgres_table reads staged rows in batches');
      },
      async *batches(size) {
        for (let start = 0; start < rows.length; start += size) yield rows.slice(start, start + size).map((data) => ({ key: String(data.id), data }));
      },
    });

    before(async () => {
      await external.query(`CREATE TABLE wide (id integer PRIMARY KEY, ${columns.map((name) => `${name} integer`).join(', ')})`);
      await external.query('CREATE TABLE pairs (k integer, v text)');
    });

    it('sizes INSERTs by column count: 500 rows of 401 columns (200,500 values) in a governed write and a run commit', async () => {
      assert.equal(rowsPerInsert(401), 163);
      assert.equal(rowsPerInsert(5), 1000, 'narrow tables: at most 1,000 rows per statement');
      assert.equal(rowsPerInsert(1600), 40);
      const wide = { table: 'wide' };
      const first = Array.from({ length: 500 }, (_, i) => wideRow(i + 1));
      assert.deepEqual(await capability.writeRecords!(ctx, wide, { operation: 'append', rows: first, provenance }), { affected: 500 });
      const second = Array.from({ length: 500 }, (_, i) => wideRow(i + 301));
      assert.deepEqual(await capability.commitStagedWrite!(ctx, wide, { mode: 'upsert', rows: staged(second), provenance: { kind: 'run', id: 'run-1' } }), { affected: 500 });
      const { rows } = await external.query('SELECT count(*)::int AS n, sum(c400)::bigint AS total, max(id) AS last FROM wide');
      assert.deepEqual(rows[0], { n: 800, total: String(Array.from({ length: 800 }, (_, i) => (i + 1) * 1000 + 399).reduce((a, b) => a + b, 0)), last: 800 });
      // A checked write of the wide table: the snapshot reads it, and the dry run lists every row it adds.
      const snapshot = await capability.currentSnapshot!(ctx, wide);
      assert.equal(snapshot.version, '800');
      const dryRun = await capability.writeRecords!(ctx, wide, { operation: 'append', rows: Array.from({ length: 500 }, (_, i) => wideRow(i + 1001)), provenance, expectedSnapshot: snapshot, dryRun: true });
      assert.equal(dryRun.affected, 500);
      assert.deepEqual(await capability.currentSnapshot!(ctx, wide), snapshot, 'a dry run changes nothing');
    });

    it('digests contents whatever the row order, keeps repeated rows, and tells swapped values apart', async () => {
      const pairs = { table: 'pairs' };
      const snapshotOf = async (sql: string) => {
        await external.query(`TRUNCATE pairs; ${sql}`);
        return capability.currentSnapshot!(ctx, pairs);
      };
      const empty = await snapshotOf('');
      assert.equal(empty.version, '0');
      assert.match(empty.id, /^md5:[0-9a-f]{32}$/);
      const ab = await snapshotOf("INSERT INTO pairs VALUES (1, 'a'), (2, 'b')");
      assert.deepEqual(await snapshotOf("INSERT INTO pairs VALUES (2, 'b'), (1, 'a')"), ab, 'the same rows in another order');
      // Rewriting a row moves it on disk (a new tuple) but not in the digest.
      await external.query("UPDATE pairs SET v = 'z' WHERE k = 1; UPDATE pairs SET v = 'a' WHERE k = 1");
      assert.deepEqual(await capability.currentSnapshot!(ctx, pairs), ab);
      const swapped = await snapshotOf("INSERT INTO pairs VALUES (1, 'b'), (2, 'a')");
      assert.equal(swapped.version, '2');
      assert.notEqual(swapped.id, ab.id, 'the same values in other rows');
      // A row twice is not the row once (an XOR of row digests would cancel the pair).
      const b = await snapshotOf("INSERT INTO pairs VALUES (2, 'b')");
      const aab = await snapshotOf("INSERT INTO pairs VALUES (1, 'a'), (1, 'a'), (2, 'b')");
      assert.notEqual(aab.id, b.id);
      assert.equal(aab.version, '3');
      assert.notEqual((await snapshotOf("INSERT INTO pairs VALUES (1, 'a'), (2, NULL)")).id, ab.id);
    });
  });
});
