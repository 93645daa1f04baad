/**
 * records (P4): 100-record reads deep into a 1,000,000-row managed table through
 * GET /api/v1/data-endpoints/{id}/records (a where filter, an orderBy, cursor pages), against a
 * direct node-postgres query with the same SQL meaning plus JSON.stringify of the rows:
 *  - the peer with the target: the same stored rows (the managed table's storage, as a committed
 *    run left it), queried the way one would by hand (->> for the filter, -> for the order, the
 *    last row's value and row key as the keyset position);
 *  - context: the same records as a typed table with a primary key, queried the same way.
 * Every side is timed in this process, one request at a time (or --concurrency chains at once),
 * in alternating rounds of a few pages so load from other work on the machine falls on all alike.
 * Every side must return the same pages.
 *
 *   npm run bench -- records                       # 1,000,000 rows, 500 timed pages per side
 *   npm run bench -- records --rows 100k --iterations 100 --warmup 10   (--help lists the flags)
 *
 * RECORDS_API_NODE_ARGS passes node flags to the API process (e.g. --cpu-prof).
 */
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { managedTableCapability } from '../plugins/managed-table';
import { ManagedTableMemory } from '../plugins/managed-table/memory';
import { PostgresTablePools } from '../plugins/postgres-table/pool';
import { SnapshotNotices } from '../plugins/snapshot-notices';
import type { RecordsQuery } from '../plugins/capability';
import { qualified, workspaceSchema } from '../plugins/managed-table/storage';
import { call, startBenchWeft } from './support/weft';
import { BenchRow, emit, figure, percentile, row } from './support/report';
import { amount, benchFlags, count } from './support/options';
import { mintRecordsCursor } from './support/records-cursor';
import { fillManagedTable } from './support/managed-fill';

const BENCH = 'records';

const flags = benchFlags('npm run bench -- records', {
  rows: { type: 'string', help: 'rows in the table (default 1M)' },
  iterations: { type: 'string', help: 'timed pages per side (default 500)' },
  warmup: { type: 'string', help: 'untimed pages per side first (default 50)' },
  concurrency: { type: 'string', help: 'cursor chains read at once, each side (default 1)' },
  depth: { type: 'string', help: 'where the chains start, as a fraction of the matching rows (default 0.5)' },
  round: { type: 'string', help: 'pages per side before switching (default 5)' },
  diagnose: { type: 'boolean', help: 'also time the managed_table read called in this process, without the API around it' },
});
const ROWS = count(flags.rows, 'rows', 1_000_000);
const ITERATIONS = count(flags.iterations, 'iterations', 500);
const WARMUP = Math.round(amount(flags.warmup, 'warmup', 50));
const CONCURRENCY = count(flags.concurrency, 'concurrency', 1);
const DEPTH = amount(flags.depth, 'depth', 0.5);
const ROUND = count(flags.round, 'round', 5);
const DIAGNOSE = flags.diagnose ?? false;

const TABLE = 'events';
const LIMIT = 100;
const WHERE = [{ field: 'status', op: 'eq', value: 'open' }];
const ORDER_BY = [{ field: 'amount', direction: 'desc' as const }];

async function timed<T>(work: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const started = performance.now();
  const value = await work();
  return { ms: performance.now() - started, value };
}

interface Page {
  ids: number[];
  next: unknown;
}

/** One way of reading the pages: Weft's records API, or a peer's query. */
interface Side {
  name: string;
  /** The position a chain starts from (a cursor, or a keyset position). */
  start(chain: number): Promise<unknown>;
  page(position: unknown): Promise<{ ms: number; page: Page }>;
}

/** Peer 1: the same stored rows (the managed table's storage), queried directly, as one would write the query by hand. */
const sameRowsSql = (storage: string) => `SELECT data, row_key FROM ${storage}
  WHERE valid_to IS NULL AND data ->> 'status' = $1 AND (data -> 'amount' < $2::jsonb OR (data -> 'amount' = $2::jsonb AND row_key > $3))
  ORDER BY data -> 'amount' DESC, row_key LIMIT ${LIMIT}`;

/** Peer 2: the same records as typed columns with a primary key, read with the same filter, order, keyset and limit. */
const TYPED_SQL = `SELECT id, account, status, amount, currency, created_at, note FROM bench_peer.events
  WHERE status = $1 AND (amount < $2 OR (amount = $2 AND id > $3))
  ORDER BY amount DESC, id ASC LIMIT ${LIMIT}`;

async function main(): Promise<void> {
  console.log(`records: ${ROWS.toLocaleString('en-US')} rows, ${ITERATIONS} timed pages per side after ${WARMUP} warm-up, concurrency ${CONCURRENCY}`);
  const weft = await startBenchWeft({ name: BENCH, temporal: true, apiNodeArgs: process.env.RECORDS_API_NODE_ARGS?.split(' ').filter(Boolean) });
  // NUMERIC as a JS number, as the records API returns jsonb numbers.
  const types = { getTypeParser: ((oid: number, format?: string) => (oid === pg.types.builtins.NUMERIC ? Number : pg.types.getTypeParser(oid, format as 'text'))) as typeof pg.types.getTypeParser };
  const setup = new pg.Pool({ connectionString: weft.databaseUrl, max: 1 });
  const peer = new pg.Pool({ connectionString: weft.databaseUrl, max: CONCURRENCY * 2, types, application_name: 'bench-peer' });
  try {
    const { tenant } = weft;
    const created = await call(weft, tenant.key, 'POST', '/api/v1/data-endpoints', {
      name: 'events', namespace: 'bench', role: 'source', contractKind: 'source_stream',
      pluginCapabilityInstallationId: tenant.managedInstallationId, target: { table: TABLE, primaryKey: ['id'] },
    });
    if (created.status !== 201) throw new Error(`creating the endpoint: ${created.status} ${JSON.stringify(created.body)}`);
    const endpointId: string = created.body.dataEndpoint.id;

    const fill = await timed(() => fillManagedTable(weft, TABLE, ROWS));
    const storage = qualified(workspaceSchema(tenant.workspaceId), TABLE);
    const typedFill = await timed(async () => {
      await setup.query('CREATE SCHEMA bench_peer');
      await setup.query(`CREATE TABLE bench_peer.events (id integer PRIMARY KEY, account text NOT NULL, status text NOT NULL, amount numeric NOT NULL,
        currency text NOT NULL, created_at timestamptz NOT NULL, note text NOT NULL)`);
      await setup.query(`INSERT INTO bench_peer.events SELECT (data->>'id')::int, data->>'account', data->>'status', (data->>'amount')::numeric,
        data->>'currency', (data->>'created_at')::timestamptz, data->>'note' FROM ${storage} ORDER BY (data->>'id')::int`);
    });
    // What autovacuum would do after a bulk load, done now so no side reads unanalyzed or unhinted pages.
    await setup.query(`VACUUM ANALYZE ${storage}`);
    await setup.query('VACUUM ANALYZE bench_peer.events');
    const sizes = await setup.query(`SELECT pg_total_relation_size('${storage}') AS weft, pg_total_relation_size('bench_peer.events') AS peer`);
    const mb = (bytes: unknown) => `${(Number(bytes) / 2 ** 20).toFixed(0)} MB`;
    console.log(`filled in ${(fill.ms / 1000).toFixed(1)} s (managed table, ${mb(sizes.rows[0].weft)}) and ${(typedFill.ms / 1000).toFixed(1)} s (typed table, ${mb(sizes.rows[0].peer)})`);

    // Where each chain starts: the matching record at DEPTH (chains spread apart), in the read's order.
    const matching = Number((await setup.query('SELECT count(*) AS n FROM bench_peer.events WHERE status = $1', ['open'])).rows[0].n);
    const starts: Array<{ amount: number; id: number }> = [];
    for (let chain = 0; chain < CONCURRENCY; chain++) {
      const offset = Math.min(matching - 1, Math.floor(matching * DEPTH) + chain * Math.ceil((WARMUP + ITERATIONS) / CONCURRENCY) * LIMIT);
      const { rows } = await peer.query(`SELECT amount, id FROM bench_peer.events WHERE status = 'open' ORDER BY amount DESC, id ASC OFFSET ${offset} LIMIT 1`);
      starts.push(rows[0]);
    }
    const remaining = matching - Math.floor(matching * DEPTH);
    if (remaining < (WARMUP + ITERATIONS) * LIMIT) console.log(`note: only ${remaining} matching records past the start; a chain reaching the end starts over`);

    const query = `where=${encodeURIComponent(JSON.stringify(WHERE))}&orderBy=${encodeURIComponent(JSON.stringify(ORDER_BY))}&limit=${LIMIT}`;
    const apiKeyId: string = (await setup.query("SELECT id FROM api_keys WHERE prefix = substring($1 from '^(weft_sk_[^_]+)_')", [tenant.key])).rows[0].id;

    const weftSide: Side = {
      name: 'Weft',
      start: (chain) => mintRecordsCursor(weft, {
        apiKeyId, endpointId, where: WHERE, orderBy: ORDER_BY, limit: LIMIT,
        // A managed-table position: the jsonb text of each orderBy value, then the row key; pinned to snapshot version 1.
        after: { order: [['amount', 'desc']], key: [JSON.stringify(starts[chain].amount), JSON.stringify([starts[chain].id])], version: '1' },
      }),
      async page(cursor) {
        const url = `${weft.baseUrl}/api/v1/data-endpoints/${endpointId}/records?${query}&cursor=${cursor as string}`;
        const started = performance.now();
        const response = await fetch(url, { headers: { Authorization: `Bearer ${tenant.key}` } });
        const text = await response.text();
        const ms = performance.now() - started;
        if (response.status !== 200) throw new Error(`records read: ${response.status} ${text}`);
        const body = JSON.parse(text) as { data: Array<{ id: number }>; metadata: { nextCursor: string | null } };
        return { ms, page: { ids: body.data.map((r) => r.id), next: body.metadata.nextCursor } };
      },
    };
    const sameRowsQuery = sameRowsSql(storage);
    const sameRows: Side = {
      name: 'pg on the same stored rows + JSON.stringify',
      start: async (chain) => ({ amount: JSON.stringify(starts[chain].amount), rowKey: JSON.stringify([starts[chain].id]) }),
      async page(position) {
        const { amount, rowKey } = position as { amount: string; rowKey: string };
        const started = performance.now();
        const { rows } = await peer.query(sameRowsQuery, ['open', amount, rowKey]);
        const text = JSON.stringify(rows.map((r) => r.data));
        const ms = performance.now() - started;
        if (!text) throw new Error('nothing serialized');
        const last = rows[rows.length - 1];
        return { ms, page: { ids: rows.map((r) => r.data.id as number), next: rows.length === LIMIT ? { amount: JSON.stringify(last.data.amount), rowKey: last.row_key } : null } };
      },
    };
    const typed: Side = {
      name: 'pg on a typed table + JSON.stringify',
      start: async (chain) => starts[chain],
      async page(position) {
        const { amount, id } = position as { amount: number; id: number };
        const started = performance.now();
        const { rows } = await peer.query(TYPED_SQL, ['open', amount, id]);
        const text = JSON.stringify(rows);
        const ms = performance.now() - started;
        if (!text) throw new Error('nothing serialized');
        const last = rows[rows.length - 1];
        return { ms, page: { ids: rows.map((r) => r.id as number), next: rows.length === LIMIT ? { amount: last.amount, id: last.id } : null } };
      },
    };
    // Diagnostic: Weft's managed_table read (the SQL it generates, and its snapshot and field lookups) called in this process, without the API around it.
    const capabilityCtx = { installation: { id: tenant.managedInstallationId, workspaceId: tenant.workspaceId, settings: {}, credentials: {} }, db: weft.db, managedTables: new ManagedTableMemory(weft.db), postgresTablePools: new PostgresTablePools(), snapshotNotices: new SnapshotNotices() };
    const inProcess: Side = {
      name: 'managed_table read in process',
      start: async (chain) => ({ order: [['amount', 'desc']], key: [JSON.stringify(starts[chain].amount), JSON.stringify([starts[chain].id])], version: '1' }),
      async page(after) {
        const started = performance.now();
        const result = await managedTableCapability.readRecords(capabilityCtx, { table: TABLE, primaryKey: ['id'] }, { where: WHERE as RecordsQuery['where'], orderBy: ORDER_BY, limit: LIMIT, after });
        const text = JSON.stringify(result.records);
        const ms = performance.now() - started;
        if (!text) throw new Error('nothing serialized');
        return { ms, page: { ids: result.records.map((r) => r.id as number), next: result.continuation ?? null } };
      },
    };
    const sides = [weftSide, sameRows, typed, ...(DIAGNOSE ? [inProcess] : [])];

    // The same meaning: the same first page everywhere, and the peers' records equal to Weft's.
    const canonical = (records: unknown[]) => JSON.stringify(JSON.parse(JSON.stringify(records)).map((r: Record<string, unknown>) => Object.fromEntries(Object.entries(r).sort(([a], [b]) => a.localeCompare(b)))));
    const weftFirst = await call(weft, tenant.key, 'GET', `/api/v1/data-endpoints/${endpointId}/records?${query}&cursor=${await weftSide.start(0) as string}`);
    if (weftFirst.status !== 200) throw new Error(`records read: ${weftFirst.status} ${JSON.stringify(weftFirst.body)}`);
    const sameFirst = (await peer.query(sameRowsQuery, ['open', JSON.stringify(starts[0].amount), JSON.stringify([starts[0].id])])).rows.map((r) => r.data);
    const typedFirst = (await peer.query(TYPED_SQL, ['open', starts[0].amount, starts[0].id])).rows;
    if (weftFirst.body.data.length !== LIMIT || canonical(weftFirst.body.data) !== canonical(sameFirst) || canonical(weftFirst.body.data) !== canonical(typedFirst)) {
      throw new Error('Weft and the peers return different first pages');
    }

    // Chains: each follows its own cursor (Weft) or keyset position (peers) from its start; a chain at the end starts over.
    const chains = new Map<Side, unknown[]>();
    for (const side of sides) chains.set(side, await Promise.all(starts.map((_, chain) => side.start(chain))));
    const samples = new Map<Side, number[]>(sides.map((side) => [side, []]));
    const pages = new Map<Side, number[][]>(sides.map((side) => [side, []]));
    const step = async (side: Side, count: number, keep: boolean) => {
      const positions = chains.get(side)!;
      let left = count;
      await Promise.all(positions.map(async (_, chain) => {
        while (left > 0) {
          left -= 1;
          const { ms, page } = await side.page(positions[chain]);
          positions[chain] = page.next ?? (await side.start(chain));
          if (!keep) continue;
          samples.get(side)!.push(ms);
          if (chain === 0) pages.get(side)!.push(page.ids);
        }
      }));
    };
    // Alternating rounds: load from elsewhere on the machine falls on every side alike.
    for (let done = 0; done < WARMUP; done += ROUND) for (const side of sides) await step(side, Math.min(ROUND, WARMUP - done), false);
    for (let done = 0; done < ITERATIONS; done += ROUND) {
      for (const side of sides) await step(side, Math.min(ROUND, ITERATIONS - done), true);
      process.stdout.write(`  ${Math.min(done + ROUND, ITERATIONS)}/${ITERATIONS} pages per side\r`);
    }
    process.stdout.write('\n');
    if (CONCURRENCY === 1) {
      for (const side of sides.slice(1)) {
        const mismatch = pages.get(weftSide)!.findIndex((ids, i) => JSON.stringify(ids) !== JSON.stringify(pages.get(side)![i]));
        if (mismatch >= 0) throw new Error(`page ${mismatch} differs between Weft and ${side.name}`);
      }
    }

    const p = (side: Side, q: number) => percentile(samples.get(side)!, q);
    const label = `${ROWS.toLocaleString('en-US')} rows, where status=open (a quarter), orderBy amount desc, ${LIMIT}-record cursor pages from ${Math.round(DEPTH * 100)}% deep; ${samples.get(weftSide)!.length} timed pages per side, concurrency ${CONCURRENCY}`;
    const rows: BenchRow[] = [
      row({ benchmark: BENCH, measure: 'records read p50', weft: p(weftSide, 50), peer: p(sameRows, 50), peerName: sameRows.name, unit: 'ms', target: '<= 2', note: label }),
      row({ benchmark: BENCH, measure: 'records read p99', weft: p(weftSide, 99), peer: p(sameRows, 99), peerName: sameRows.name, unit: 'ms', target: '<= 2' }),
      row({ benchmark: BENCH, measure: 'records read p50, typed-table peer', weft: p(weftSide, 50), peer: p(typed, 50), peerName: typed.name, unit: 'ms', note: `context, no target: the same records as typed columns (${mb(sizes.rows[0].peer)} against ${mb(sizes.rows[0].weft)} of versioned jsonb), primary key only` }),
      row({ benchmark: BENCH, measure: 'records read p99, typed-table peer', weft: p(weftSide, 99), peer: p(typed, 99), peerName: typed.name, unit: 'ms' }),
      ...(DIAGNOSE ? [figure({ benchmark: BENCH, measure: 'managed_table read in process p50', weft: p(inProcess, 50), unit: 'ms', note: 'diagnostic: Weft\'s read SQL and lookups without HTTP, auth, limits, cursor sealing or metering' })] : []),
      figure({ benchmark: BENCH, measure: 'table fill (one committed snapshot)', weft: fill.ms / 1000, unit: 's', note: `${ROWS.toLocaleString('en-US')} records through managed_table commitStagedWrite, as a run's commit writes them` }),
    ];
    emit(rows);
  } finally {
    await peer.end().catch(() => undefined);
    await setup.end().catch(() => undefined);
    await weft.stop();
  }
}

main().then(() => process.exit(0), (error: Error) => {
  console.error(error);
  process.exit(1);
});
