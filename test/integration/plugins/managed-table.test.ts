import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { managedTableCapability as capability } from '../../../plugins/managed-table';
import { ManagedTableMemory } from '../../../plugins/managed-table/memory';
import type { ConnectionLender } from '../../../plugins/managed-table/storage';
import { compactPostgresJson, postgresJsonBytes } from '../../../core/json-text';
import type { CapabilityContext, Condition, RecordsQuery, WriteRequest } from '../../../plugins/capability';
import { env } from '../../support/environment';
import { newManagedTableContext, newWorkspace } from '../../support/fixtures';

const run = (id = 'run-1'): WriteRequest['provenance'] => ({ kind: 'run', id });
const query = (overrides: Partial<RecordsQuery> = {}): RecordsQuery => ({ where: [], orderBy: [{ field: 'id', direction: 'asc' }], limit: 100, ...overrides });
const withCode = (code: string) => (error: unknown) => {
  assert.equal((error as { code?: string }).code, code, String(error));
  return true;
};

describe('managed_table capability', () => {
  let ctx: CapabilityContext;
  let schema: string;

  before(async () => {
    ({ ctx, schema } = await newManagedTableContext());
  });

  it('keeps every write as a snapshot readable by id and by asOf, with provenance', async () => {
    const target = { table: 'people', primaryKey: ['id'] };
    const write = (request: Omit<WriteRequest, 'provenance'>, by = run()) => capability.writeRecords!(ctx, target, { ...request, provenance: by });

    const first = await write({ operation: 'append', rows: [{ id: 1, name: 'Ada' }, { id: 2, name: 'Bob' }, { id: 3, name: 'Cy' }] });
    assert.equal(first.affected, 3);
    assert.equal(first.snapshot?.version, '1');
    const second = await write({ operation: 'upsert', rows: [{ id: 2, name: 'Bobby', team: 'x' }, { id: 4, name: 'Dee' }] }, { kind: 'write', id: 'action-7' });
    const third = await write({ operation: 'update', where: [{ field: 'id', op: 'eq', value: 1 }], set: { name: 'Ada L.' } });
    const fourth = await write({ operation: 'delete', where: [{ field: 'id', op: 'in', values: [3, 99] }] });
    assert.deepEqual([second.affected, third.affected, fourth.affected], [2, 1, 1]);
    assert.deepEqual([second, third, fourth].map((w) => w.snapshot?.version), ['2', '3', '4']);
    // Written back to back, often within one millisecond: each commit is stamped at least a
    // millisecond after the one before, so each has an asOf of its own.
    const stamps = [first, second, third, fourth].map((w) => Date.parse(w.snapshot!.committedAt!));
    assert.ok(stamps.every((stamp, i) => i === 0 || stamp > stamps[i - 1]), stamps.join(' '));

    const names = async (q: Partial<RecordsQuery>) => (await capability.readRecords(ctx, target, query(q))).records.map((r) => `${r.id}:${r.name}`);
    assert.deepEqual(await names({ snapshotId: first.snapshot!.id }), ['1:Ada', '2:Bob', '3:Cy']);
    assert.deepEqual(await names({ snapshotId: second.snapshot!.id }), ['1:Ada', '2:Bobby', '3:Cy', '4:Dee']);
    assert.deepEqual(await names({ snapshotId: third.snapshot!.id }), ['1:Ada L.', '2:Bobby', '3:Cy', '4:Dee']);
    assert.deepEqual(await names({}), ['1:Ada L.', '2:Bobby', '4:Dee']);
    assert.deepEqual(await names({ asOf: first.snapshot!.committedAt! }), ['1:Ada', '2:Bob', '3:Cy']);
    assert.deepEqual(await names({ asOf: second.snapshot!.committedAt! }), ['1:Ada', '2:Bobby', '3:Cy', '4:Dee']);
    assert.deepEqual(await names({ asOf: new Date(Date.now() + 60_000).toISOString() }), ['1:Ada L.', '2:Bobby', '4:Dee']);

    const latest = await capability.readRecords(ctx, target, query());
    assert.deepEqual(latest.snapshot, fourth.snapshot);
    // upsert merges: a field the upserted row leaves out keeps its value.
    await write({ operation: 'upsert', rows: [{ id: 2, name: 'Robert' }] });
    const merged = await capability.readRecords(ctx, target, query({ where: [{ field: 'id', op: 'eq', value: 2 }] }));
    assert.deepEqual(merged.records, [{ id: 2, name: 'Robert', team: 'x' }]);

    const versions = await env().db.raw(`SELECT version, produced_by_kind AS kind, produced_by_id AS by, operation, affected FROM "${schema}"._snapshots WHERE table_name = 'people' ORDER BY version`);
    assert.deepEqual(
      versions.rows.map((r: Record<string, unknown>) => `${r.version} ${r.operation} ${r.affected} ${r.kind}:${r.by}`),
      ['1 append 3 run:run-1', '2 upsert 2 write:action-7', '3 update 1 run:run-1', '4 delete 1 run:run-1', '5 upsert 1 run:run-1'],
    );
    const bobby = await env().db.raw(`SELECT produced_by_kind AS kind, produced_by_id AS by, produced_at AS at, valid_from AS "from", valid_to AS "to" FROM "${schema}".people WHERE data->>'name' = 'Bobby'`);
    assert.deepEqual(bobby.rows.map((r: Record<string, unknown>) => [r.kind, r.by, (r.at as Date).toISOString(), r.from, r.to]), [['write', 'action-7', second.snapshot!.committedAt, 2, 5]]);
  });

  it('answers a read of a table it has seen stored in one statement, exactly as the long way does', async () => {
    const target = { table: 'twice', primaryKey: ['id'] };
    const write = (request: Omit<WriteRequest, 'provenance'>) => capability.writeRecords!(ctx, target, { ...request, provenance: run() });
    const first = await write({ operation: 'append', rows: Array.from({ length: 7 }, (_, i) => ({ id: i, team: i % 2 ? 'odd' : 'even', score: i * 1.5 })) });
    await write({ operation: 'upsert', rows: [{ id: 3, team: 'odd', score: 99, note: 'late' }] });
    const outcome = async (q: Partial<RecordsQuery>, reader: CapabilityContext) => {
      try {
        // A page read as JSON text carries it beside its records: the same records, as JSON.stringify writes them.
        const { recordsJson, ...page } = await capability.readRecords(reader, target, query(q));
        if (recordsJson) assert.deepEqual([recordsJson.bytes.toString(), recordsJson.count], [JSON.stringify(page.records), page.records.length]);
        return { page };
      } catch (error) {
        return { error: `${(error as { code?: string }).code}: ${(error as Error).message}` };
      }
    };
    const firstPage = await capability.readRecords(ctx, target, query({ limit: 3, orderBy: [{ field: 'score', direction: 'desc' }] }));
    const reads: Array<Partial<RecordsQuery>> = [
      {},
      { where: [{ field: 'team', op: 'eq', value: 'odd' }], orderBy: [{ field: 'score', direction: 'desc' }], limit: 2, select: ['id', 'note'] },
      { limit: 3, orderBy: [{ field: 'score', direction: 'desc' }], after: firstPage.continuation },
      { snapshotId: first.snapshot!.id },
      { asOf: first.snapshot!.committedAt! },
      { asOf: '1999-01-01T00:00:00Z' },
      { snapshotId: randomUUID() },
      { snapshotId: 'not-a-uuid' },
      { asOf: 'yesterday' },
      { where: [{ field: 'nope', op: 'eq', value: 1 }] },
      { after: { order: [['id', 'asc']], key: ['[1]'], version: '999' } },
    ];
    for (const read of reads) {
      // A runtime of its own has seen no table stored: its first read takes the long way, the next one statement.
      const reader = { ...ctx, managedTables: new ManagedTableMemory(env().db) };
      const longWay = await outcome(read, reader);
      const oneStatement = await outcome(read, reader);
      assert.deepEqual(oneStatement, longWay, JSON.stringify(read));
    }
    assert.ok(reads.length > 0);
  });

  it('writes PostgreSQL’s JSON text of stored records as JSON.stringify writes the parsed records', async () => {
    // Seeded documents with the values both write differently: spacing, digits, array-index keys, escapes.
    let seed = 22;
    const next = (n: number) => Math.floor(((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648) * n);
    const parts = ['a', ' ', '"', '\\', '/', '\n', '\t', '\u0001', 'é', '😀', ':', ',', '{', ']', '7', '-', '\u2028'];
    const text = () => JSON.stringify(Array.from({ length: next(5) }, () => parts[next(parts.length)]).join(''));
    // Numbers JavaScript writes alike, then ones it writes otherwise (trailing zeros, digits past a double, exponents, -0).
    const alike = ['0', '42', '-7.25', '0.000001', '123456789012345', '-0.5', '1.125'];
    const unlike = ['-7.250', '1e21', '1E-7', '12345678901234567890', '-0', '0.1234567890123456789', '2.5e3', '-1e-300', '100.0'];
    let numbers = alike;
    let keys = () => JSON.stringify(`${parts[next(parts.length)]}k${next(50)}`);
    const value = (depth: number): string => {
      const kind = next(depth > 2 ? 4 : 6);
      if (kind === 0) return text();
      if (kind === 1) return numbers[next(numbers.length)];
      if (kind === 2) return ['true', 'false', 'null'][next(3)];
      if (kind === 3) return JSON.stringify(String(next(30)));
      if (kind === 4) return `[${Array.from({ length: next(4) }, () => value(depth + 1)).join(',')}]`;
      return document(depth + 1);
    };
    const document = (depth: number) => `{${Array.from({ length: 1 + next(5) }, () => `${keys()}: ${value(depth)}`).join(', ')}}`;
    const page = async () => {
      const { rows } = await env().db.raw(`SELECT coalesce(json_agg(d ORDER BY n), '[]'::json)::text AS page FROM unnest(?::jsonb[]) WITH ORDINALITY AS u(d, n)`, [Array.from({ length: 10 }, () => document(0))]);
      const text = rows[0].page as string;
      assert.equal(postgresJsonBytes(text).toString('utf8'), JSON.stringify(JSON.parse(text)), text);
      return text;
    };
    // Written alike: compacted without parsing.
    for (let round = 0; round < 40; round++) assert.ok(compactPostgresJson(await page()), 'compacted without parsing');
    // Written otherwise: a number or a key of digits (JavaScript lists array-index keys first) makes it parse.
    numbers = [...alike, ...unlike];
    for (let round = 0; round < 40; round++) await page();
    numbers = alike;
    keys = () => (next(4) ? text() : JSON.stringify(String(next(40))));
    // (text() may give a key of digits too, and an empty one.)
    for (let round = 0; round < 40; round++) await page();
    for (const awkward of unlike) assert.equal(compactPostgresJson(`[{"a": ${awkward}}]`), undefined, awkward);
    assert.equal(compactPostgresJson('[{"10": 1}]'), undefined);
  });

  it('matches eq and in on strings by JSON type and value, also strings that read like other JSON', async () => {
    const target = { table: 'lookalikes', primaryKey: ['k'] };
    const values: unknown[] = [5, '5', -1.5, '-1.5', true, 'true', false, 'false', { a: 1 }, '{"a": 1}', [1], '[1]', null, '', 'x', 'null'];
    await capability.writeRecords!(ctx, target, { operation: 'append', provenance: run(), rows: [...values.map((v, k) => ({ k, v })), { k: values.length }] });
    const keys = async (where: Condition[]) => (await capability.readRecords(ctx, target, query({ where, orderBy: [{ field: 'k', direction: 'asc' }], limit: 1000 }))).records.map((r) => r.k);
    const strings = values.filter((v): v is string => typeof v === 'string');
    for (const value of strings) assert.deepEqual(await keys([{ field: 'v', op: 'eq', value }]), [values.indexOf(value)], `eq ${JSON.stringify(value)}`);
    assert.deepEqual(await keys([{ field: 'v', op: 'in', values: ['5', 'x'] }]), [values.indexOf('5'), values.indexOf('x')]);
    assert.deepEqual(await keys([{ field: 'v', op: 'in', values: ['x', ''] }]), [values.indexOf(''), values.indexOf('x')]);
    assert.deepEqual(await keys([{ field: 'v', op: 'in', values: ['true', '[1]', 'absent'] }]), [values.indexOf('true'), values.indexOf('[1]')]);
  });

  it('pages with a keyset continuation pinned to the first page’s snapshot', async () => {
    const target = { table: 'scores', primaryKey: ['id'] };
    const rows = Array.from({ length: 23 }, (_, i) => ({ id: i + 1, ...(i % 5 === 0 ? {} : { score: i % 4 }) }));
    await capability.writeRecords!(ctx, target, { operation: 'append', rows, provenance: run() });

    const seen: Array<Record<string, unknown>> = [];
    let after: unknown;
    let pages = 0;
    do {
      const page = await capability.readRecords(ctx, target, query({ orderBy: [{ field: 'score', direction: 'desc' }], limit: 4, after }));
      seen.push(...page.records);
      after = page.continuation;
      pages += 1;
      assert.equal(page.snapshot?.version, '1');
      // A write between pages does not leak into the pages still to come.
      if (pages === 1) await capability.writeRecords!(ctx, target, { operation: 'append', rows: [{ id: 100, score: 2 }], provenance: run() });
    } while (after);

    assert.equal(pages, 6);
    assert.deepEqual(seen.map((r) => r.id).sort((a, b) => Number(a) - Number(b)), rows.map((r) => r.id));
    const scores = seen.map((r) => (r.score === undefined ? -1 : Number(r.score)));
    assert.deepEqual(scores, [...scores].sort((a, b) => b - a), 'descending, missing values last');
    const fresh = await capability.readRecords(ctx, target, query({ limit: 100 }));
    assert.equal(fresh.records.length, 24);
    assert.equal(fresh.snapshot?.version, '2');

    const first = await capability.readRecords(ctx, target, query({ limit: 4 }));
    await assert.rejects(capability.readRecords(ctx, target, query({ orderBy: [{ field: 'score', direction: 'asc' }], limit: 4, after: first.continuation })), withCode('invalid_continuation'));
  });

  it('reads the first page of a large table off its row_key index, not by sorting the table', async () => {
    const target = { table: 'large', primaryKey: ['id'] };
    const size = 50_000;
    await capability.commitStagedWrite!(ctx, target, {
      mode: 'append',
      rows: {
        relation: () => `SELECT jsonb_build_array(i)::text AS row_key, jsonb_build_object('id', i, 'note', 'record ' || i) AS data FROM generate_series(1, ${size}) i`,
        batches: () => { throw new Error('a managed table commits from the relation'); },
      },
      provenance: run(),
    });
    const plain = { where: [], orderBy: [], limit: 100 };
    // The first read takes the long way and remembers the table as stored; the second is the one
    // statement a console preview runs, kept in plainReads.
    await capability.readRecords(ctx, target, plain);
    const page = await capability.readRecords(ctx, target, plain);
    const expected = await env().db.raw(`SELECT (data->'id')::int AS id FROM "${schema}".large WHERE valid_to IS NULL ORDER BY row_key ASC NULLS FIRST LIMIT 100`);
    assert.deepEqual(page.records.map((r) => r.id), expected.rows.map((r: { id: number }) => r.id));

    const read = ctx.managedTables.plainReads.get(`${schema}.large:100:`);
    assert.ok(read, 'the plain read is built once and kept');
    const { text, uses } = ctx.managedTables.statements.numberedStatement(read.sql);
    const values = uses.map((index) => read.params.values[index]);
    const lender = env().db.client as unknown as ConnectionLender;
    const connection = await lender.acquireConnection();
    type PlanNode = { 'Node Type': string; 'Relation Name'?: string; 'Index Name'?: string; Plans?: PlanNode[] };
    const nodes = (node: PlanNode): PlanNode[] => [node, ...(node.Plans ?? []).flatMap(nodes)];
    const explained = async (sql: string, params: unknown[] = []) => nodes(((await connection.query({ text: `EXPLAIN (FORMAT JSON) ${sql}`, values: params })).rows[0]['QUERY PLAN'] as Array<{ Plan: PlanNode }>)[0].Plan);
    try {
      const { rows } = await connection.query(`SELECT indexname FROM pg_indexes WHERE schemaname = $1 AND tablename = 'large' AND indexdef LIKE '%(row_key) WHERE (valid_to IS NULL)'`, [schema]);
      const rowKeyIndex = rows[0].indexname as string;
      // As planned for these values, and as the named statement's generic plan (the runtime prepares it once per connection).
      const custom = await explained(text, values);
      await connection.query(`PREPARE large_first_page AS ${text}`);
      await connection.query('SET plan_cache_mode = force_generic_plan');
      const generic = await explained(`EXECUTE large_first_page(${values.map((value) => connection.escapeLiteral(String(value))).join(', ')})`);
      for (const plan of [custom, generic]) {
        const scans = plan.filter((node) => node['Relation Name'] === 'large');
        assert.deepEqual(scans.map((node) => [node['Node Type'], node['Index Name']]), [['Index Scan', rowKeyIndex]], plan.map((node) => node['Node Type']).join(' > '));
        assert.deepEqual(plan.filter((node) => node['Node Type'].includes('Sort')), [], 'nothing sorts the table for its first page');
      }
    } finally {
      // Only this test's statement: the runtime's named ones stay prepared on the pooled connection.
      await connection.query('DEALLOCATE large_first_page; RESET plan_cache_mode').catch(() => undefined);
      await lender.releaseConnection(connection);
    }
  });

  it('filters with all eight operators, orders and selects fields', async () => {
    const target = { table: 'products', primaryKey: ['sku'] };
    await capability.writeRecords!(ctx, target, {
      operation: 'append',
      provenance: run(),
      rows: [
        { sku: 'a', price: 5, color: 'red' },
        { sku: 'b', price: 10, color: 'blue' },
        { sku: 'c', price: 15 },
        { sku: 'd', price: '20', color: null },
        { sku: 'e', price: 25, color: 'red' },
      ],
    });
    const skus = async (where: Condition[], orderBy: RecordsQuery['orderBy'] = [{ field: 'sku', direction: 'asc' }]) =>
      (await capability.readRecords(ctx, target, query({ where, orderBy }))).records.map((r) => r.sku).join('');

    assert.equal(await skus([{ field: 'color', op: 'eq', value: 'red' }]), 'ae');
    assert.equal(await skus([{ field: 'color', op: 'ne', value: 'red' }]), 'bcd');
    assert.equal(await skus([{ field: 'color', op: 'in', values: ['blue', null] }]), 'bcd');
    assert.equal(await skus([{ field: 'color', op: 'exists' }]), 'abe');
    assert.equal(await skus([{ field: 'color', op: 'exists', value: false }]), 'cd');
    // Range comparisons match values of the same JSON type only: the string "20" is not a number.
    assert.equal(await skus([{ field: 'price', op: 'gt', value: 10 }]), 'ce');
    assert.equal(await skus([{ field: 'price', op: 'gte', value: 10 }]), 'bce');
    assert.equal(await skus([{ field: 'price', op: 'lt', value: 15 }]), 'ab');
    assert.equal(await skus([{ field: 'price', op: 'lte', value: 15 }]), 'abc');
    assert.equal(await skus([{ field: 'price', op: 'gte', value: 10 }, { field: 'price', op: 'lt', value: 25 }]), 'bc');
    assert.equal(await skus([], [{ field: 'color', direction: 'asc' }, { field: 'price', direction: 'desc' }]), 'cdbea');

    const selected = await capability.readRecords(ctx, target, query({ select: ['sku', 'color'], where: [{ field: 'sku', op: 'eq', value: 'c' }], orderBy: [] }));
    assert.deepEqual(selected.records, [{ sku: 'c', color: null }]);
    // A field name no record was ever written with is refused before any SQL.
    const hostile = "color') OR TRUE --";
    await assert.rejects(skus([{ field: hostile, op: 'exists' }]), withCode('unknown_field'));

    const { fields, primaryKey } = await capability.discoverSchema(ctx, target);
    assert.deepEqual(primaryKey, ['sku']);
    assert.deepEqual(fields, [
      { name: 'sku', type: 'string', nullable: false },
      { name: 'color', type: 'string', nullable: true },
      { name: 'price', type: 'json', nullable: false },
    ]);

    // A field name is only ever a bound value: once written, this one finds its record rather than breaking the SQL.
    await capability.writeRecords!(ctx, target, { operation: 'append', provenance: run(), rows: [{ sku: 'f', [hostile]: 1 }] });
    assert.equal(await skus([{ field: hostile, op: 'exists' }]), 'f');
  });

  it('refuses a write based on a stale snapshot, duplicate keys, and unknown snapshots', async () => {
    const target = { table: 'ledger', primaryKey: ['id'] };
    const first = await capability.writeRecords!(ctx, target, { operation: 'append', rows: [{ id: 1 }], provenance: run() });
    const second = await capability.writeRecords!(ctx, target, { operation: 'append', rows: [{ id: 2 }], provenance: run(), expectedSnapshot: first.snapshot });
    await assert.rejects(
      capability.writeRecords!(ctx, target, { operation: 'append', rows: [{ id: 3 }], provenance: run(), expectedSnapshot: first.snapshot }),
      withCode('snapshot_conflict'),
    );
    await assert.rejects(capability.writeRecords!(ctx, target, { operation: 'append', rows: [{ id: 2 }], provenance: run() }), withCode('duplicate_key'));
    await assert.rejects(capability.writeRecords!(ctx, { table: 'ledger' }, { operation: 'append', rows: [{ id: 9 }], provenance: run() }), withCode('primary_key_mismatch'));
    const latest = await capability.readRecords(ctx, target, query());
    assert.deepEqual(latest.snapshot, second.snapshot, 'refused writes leave no snapshot');
    assert.deepEqual(latest.records, [{ id: 1 }, { id: 2 }]);

    await assert.rejects(capability.readRecords(ctx, target, query({ snapshotId: randomUUID() })), withCode('unknown_snapshot'));
    await assert.rejects(capability.readRecords(ctx, target, query({ snapshotId: 'not-a-uuid' })), withCode('unknown_snapshot'));
    await assert.rejects(capability.readRecords(ctx, target, query({ asOf: '2001-01-01T00:00:00Z' })), withCode('unknown_snapshot'));
    await assert.rejects(capability.readRecords(ctx, { table: 'people' }, query({ snapshotId: first.snapshot!.id })), withCode('unknown_snapshot'));
    await assert.rejects(capability.readRecords(ctx, { table: 'never_written' }, query({ snapshotId: first.snapshot!.id })), withCode('unknown_snapshot'));
    assert.deepEqual(await capability.readRecords(ctx, { table: 'never_written', primaryKey: ['id'] }, query()), { records: [], continuation: null });
  });

  it('serializes concurrent writers: gapless versions per table, schema created once', async () => {
    const workspace = await newWorkspace();
    const fresh = { ...ctx, installation: { ...ctx.installation, workspaceId: workspace.workspaceId } };
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) => capability.writeRecords!(fresh, { table: i % 2 ? 'odd' : 'even' }, { operation: 'append', rows: [{ i }], provenance: run() })),
    );
    const versions = (parity: number) => results.filter((_, i) => i % 2 === parity).map((r) => Number(r.snapshot!.version)).sort();
    assert.deepEqual([versions(0), versions(1)], [[1, 2, 3, 4], [1, 2, 3, 4]]);
    const even = await capability.readRecords(fresh, { table: 'even' }, query({ orderBy: [{ field: 'i', direction: 'asc' }] }));
    assert.deepEqual(even.records, [{ i: 0 }, { i: 2 }, { i: 4 }, { i: 6 }]);
  });

  it('refuses tampered continuations and malformed asOf values as input errors', async () => {
    const target = { table: 'people' };
    const first = await capability.readRecords(ctx, target, query({ limit: 1 }));
    const cursor = first.continuation as { key: string[]; version: string };
    await assert.rejects(capability.readRecords(ctx, target, query({ limit: 1, after: { ...cursor, version: 'x' } })), withCode('invalid_continuation'));
    await assert.rejects(capability.readRecords(ctx, target, query({ limit: 1, after: { ...cursor, key: ['not json', 'k'] } })), withCode('invalid_continuation'));
    await assert.rejects(capability.readRecords(ctx, target, query({ limit: 1, after: { ...cursor, version: '999' } })), withCode('invalid_continuation'));
    await assert.rejects(capability.readRecords(ctx, target, query({ asOf: 'yesterday' })), withCode('invalid_as_of'));
  });

  it('joins a caller’s transaction, so a rollback discards the write', async () => {
    const target = { table: 'drafts' };
    await assert.rejects(
      env().db.transaction(async (trx) => {
        await capability.writeRecords!({ ...ctx, db: trx }, target, { operation: 'append', rows: [{ a: 1 }], provenance: run() });
        throw new Error('caller gives up');
      }),
      /caller gives up/,
    );
    assert.deepEqual(await capability.readRecords(ctx, target, query({ orderBy: [] })), { records: [], continuation: null });
    await assert.rejects(capability.readRecords(ctx, target, query({ select: ['a'], orderBy: [] })), withCode('unknown_field'), 'the rolled-back write registers no fields');
    const check = await capability.checkConnection(ctx, target);
    assert.equal(check.ok, true);
  });

  it('knows every field ever written, exactly, beyond any sample and across history', async () => {
    const target = { table: 'registry', primaryKey: ['id'] };
    const write = (request: Omit<WriteRequest, 'provenance'>) => capability.writeRecords!(ctx, target, { ...request, provenance: run() });
    // A table never written knows only the key its target declares.
    await assert.rejects(capability.readRecords(ctx, { table: 'registry_never' }, query()), withCode('unknown_field'));
    assert.deepEqual(await capability.readRecords(ctx, { table: 'registry_never', primaryKey: ['id'] }, query()), { records: [], continuation: null });

    // 1000 current records, then one with fields no other record has: a 1000-row sample in storage order misses them.
    await write({ operation: 'append', rows: Array.from({ length: 1000 }, (_, i) => ({ id: i + 1, name: `n${i}` })) });
    await write({ operation: 'update', where: [{ field: 'id', op: 'eq', value: 1 }], set: { note: 'set by update' } });
    await write({ operation: 'append', rows: [{ id: 1001, name: 'last', rare: true, 'odd, "name" {x}': 1 }] });
    await write({ operation: 'append', rows: [{ id: 2000, gone: 'soon' }] });
    await write({ operation: 'delete', where: [{ field: 'id', op: 'eq', value: 2000 }] });
    const expected = ['id', 'gone', 'name', 'note', 'odd, "name" {x}', 'rare'];
    // select, where and orderBy are checked against the registry: every known field, and nothing else.
    const all = await capability.readRecords(ctx, target, query({ select: expected, where: expected.map((field) => ({ field, op: 'exists', value: false })), orderBy: expected.map((field) => ({ field, direction: 'asc' })) }));
    assert.deepEqual(all.records, []);
    const unknown = await capability.readRecords(ctx, target, query({ select: ['id', 'nope'], where: [{ field: 'also_nope', op: 'exists' }], orderBy: [{ field: 'nope', direction: 'asc' }] })).then(
      () => assert.fail('expected unknown_field'),
      (error: { code?: string; message: string; details?: { errors?: Array<{ path: string }> } }) => error,
    );
    assert.equal(unknown.code, 'unknown_field');
    assert.match(unknown.message, /nope, also_nope/);
    assert.match(unknown.message, /Known fields: .*rare/);
    assert.deepEqual(unknown.details?.errors?.map((p) => p.path), ['/select/1', '/where/0/field', '/orderBy/0/field']);
    // A field only older snapshots have stays readable: it is part of the table's history.
    const { fields: discovered, primaryKey } = await capability.discoverSchema(ctx, target);
    assert.deepEqual(primaryKey, ['id']);
    assert.deepEqual(discovered.map((f) => f.name).sort(), [...expected].sort());
    assert.deepEqual(discovered[0], { name: 'id', type: 'number', nullable: false });
    assert.deepEqual(discovered.find((f) => f.name === 'gone'), { name: 'gone', type: 'unknown', nullable: true });
  });

  it('checks the catalog layout once per workspace, not on every read and write', async () => {
    const workspace = await newWorkspace();
    const fresh = { ...ctx, installation: { ...ctx.installation, workspaceId: workspace.workspaceId } };
    const target = { table: 'steady' };
    await capability.writeRecords!(fresh, target, { operation: 'append', rows: [{ a: 1 }], provenance: run() });
    const statements: string[] = [];
    const listen = (data: { sql: string }) => statements.push(data.sql);
    env().db.on('query', listen);
    try {
      await capability.readRecords(fresh, target, query({ orderBy: [{ field: 'a', direction: 'asc' }] }));
      await capability.writeRecords!(fresh, target, { operation: 'append', rows: [{ a: 2 }], provenance: run() });
      await capability.discoverSchema(fresh, target);
    } finally {
      env().db.off('query', listen);
    }
    assert.ok(statements.some((sql) => sql.includes('_snapshots')), 'the listener sees the capability’s statements');
    assert.deepEqual(statements.filter((sql) => sql.includes('pg_attribute')), [], 'no catalog layout check once the catalog is known current');
  });

  it('fills the registry of a catalog created before it existed', async () => {
    const workspace = await newWorkspace();
    let old = { ...ctx, installation: { ...ctx.installation, workspaceId: workspace.workspaceId } };
    const oldSchema = `weft_ws_${workspace.workspaceId.replace(/-/g, '')}`;
    await capability.writeRecords!(old, { table: 'legacy' }, { operation: 'append', rows: [{ a: 1 }, { b: 2 }], provenance: run() });
    await capability.writeRecords!(old, { table: 'legacy' }, { operation: 'delete', where: [{ field: 'b', op: 'exists' }], provenance: run() });
    await capability.writeRecords!(old, { table: 'other' }, { operation: 'append', rows: [{ c: 3 }], provenance: run() });
    const names = async (table: string) => (await capability.discoverSchema(old, { table })).fields.map((f) => f.name);
    // The catalog as it was before the registry: no fields column. This runtime saw it current, so the test goes on with one that has not.
    await env().db.raw(`ALTER TABLE "${oldSchema}"._tables DROP COLUMN fields`);
    old = { ...old, managedTables: new ManagedTableMemory(env().db) };
    assert.deepEqual(await names('legacy'), ['a', 'b']);
    assert.deepEqual(await names('other'), ['c']);

    await env().db.raw(`ALTER TABLE "${oldSchema}"._tables DROP COLUMN fields`);
    old = { ...old, managedTables: new ManagedTableMemory(env().db) };
    await capability.writeRecords!(old, { table: 'other' }, { operation: 'append', rows: [{ d: 4 }], provenance: run() });
    assert.deepEqual(await names('other'), ['c', 'd']);
    assert.deepEqual(await names('legacy'), ['a', 'b']);
  });
});
