/**
 * ingest: records from a paginated HTTP API into a table, through a real Weft pipeline run, against
 * dlt's rest_api source and a raw COPY of the same records, in the same run on the same PostgreSQL.
 *
 *   npm run bench -- ingest                         # 100k and 1M records
 *   npx tsx bench/ingest.ts --records 20000,100000  # other scales (dev runs)
 *   npx tsx bench/ingest.ts --records 100000 --only weft --profile   # CPU profile of the worker
 *
 * The API (bench/support/ingest-api.ts) is a child process of its own, serving records 1..N with
 * cursor pagination, 1,000 per page, to every peer alike. For each scale, one after the other:
 *  - Weft: an http_dataset source endpoint over the API, a managed_table destination (primary key
 *    id, append) and a source -> destination pipeline, launched with POST …/execute. Timed from the
 *    launch until the run's workflow completes (a long poll on Temporal, so no polling loads the API
 *    or the database meanwhile); the run is then read over HTTP and must have succeeded. A small
 *    warm-up run goes first and is not measured. The worker (a child process, as `npm run worker`
 *    starts it) is sampled every 200 ms for its RSS.
 *  - dlt: bench/support/dlt_ingest.py in a bench-only venv (bench/support/dlt.ts installs it when
 *    missing): rest_api with the same cursor paginator against the same API, into a dataset (schema)
 *    of the same database. Timed around pipeline.run inside the script (imports excluded).
 *  - COPY: pages fetched from the same API (the same HTTP and JSON work), written with
 *    pg-copy-streams into one COPY of a typed table with a primary key; and, for context, the same
 *    records generated in this process with no HTTP at all.
 * Each ingest starts after a CHECKPOINT, so no one pays for another's dirty pages; row counts are
 * checked after every ingest. Besides wall time, each peer's CPU seconds are read from /proc (its own
 * process, plus the PostgreSQL backends of the bench database): on a shared machine wall-clock
 * ratios move with the load, CPU per record much less.
 */
import { ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import type { Client } from '@temporalio/client';
import { dataDir, projectRoot } from '../core/paths';
import { connectTemporal, createTemporalClient } from '../core/temporal';
import { workspaceSchema } from '../plugins/managed-table/storage';
import { BenchWeft, call, startBenchWeft, startRole, stopChild } from './support/weft';
import { BenchRow, emit, figure, row } from './support/report';
import { DLT_VERSION, ensureDlt, runDltIngest } from './support/dlt';
import { ingestRecord } from './support/ingest-records';
import { peakRssSinceStartMb, rssMb, Usage, watchUsage } from './support/ingest-proc';
import { benchFlags, counts, names } from './support/options';

const BENCHMARK = 'ingest';
const PAGE_SIZE = 1000;
const PEERS = ['weft', 'dlt', 'copy'] as const;
type Peer = (typeof PEERS)[number];

interface Options {
  scales: number[];
  only: Peer[];
  /** Write a V8 CPU profile of the worker and print where its time went. */
  profile: boolean;
  /** dlt's loader file format (default: dlt's own for postgres, insert_values; csv loads with COPY). */
  dltFormat?: string;
}

function options(): Options {
  const flags = benchFlags('npm run bench -- ingest', {
    records: { type: 'string', help: 'scales, e.g. 100k,1M (default 100k,1M)' },
    only: { type: 'string', help: 'peers to run: weft,dlt,copy (default all)' },
    profile: { type: 'boolean', help: 'write a V8 CPU profile of the worker and print where its time went' },
    'dlt-format': { type: 'string', help: "dlt's loader file format (csv loads with COPY)" },
  });
  return {
    scales: counts(flags.records, 'records', [100_000, 1_000_000]),
    only: names(flags.only, 'only', PEERS, [...PEERS]),
    profile: flags.profile ?? false,
    dltFormat: flags['dlt-format'],
  };
}

const label = (n: number): string => (n >= 1_000_000 && n % 1_000_000 === 0 ? `${n / 1_000_000}M` : n >= 1000 && n % 1000 === 0 ? `${n / 1000}k` : String(n));
const log = (message: string): void => console.log(`ingest: ${message}`);

// ---------------------------------------------------------------------------------------------
// The paginated API, in its own process

interface IngestApi {
  child: ChildProcess;
  baseUrl: string;
  stats(reset?: boolean): Promise<Record<string, { pages: number; records: number; bytes: number }>>;
}

async function startApi(): Promise<IngestApi> {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(__dirname, 'support/ingest-api.ts')], { cwd: projectRoot, stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! });
    lines.once('line', (line) => resolve((JSON.parse(line) as { port: number }).port));
    child.once('exit', (code) => reject(new Error(`the ingest API exited with ${code}`)));
  });
  const baseUrl = `http://127.0.0.1:${port}/`;
  return {
    child,
    baseUrl,
    stats: async (reset = false) => (await fetch(`${baseUrl}stats${reset ? '?reset=1' : ''}`)).json() as Promise<Record<string, { pages: number; records: number; bytes: number }>>,
  };
}

const databaseOf = (weft: BenchWeft): string => decodeURIComponent(new URL(weft.databaseUrl).pathname.slice(1));

async function checkpoint(db: BenchWeft['db']): Promise<void> {
  // Needs a superuser (the local cluster's); on an external database without one, skip it.
  await db.raw('CHECKPOINT').catch(() => undefined);
}

// ---------------------------------------------------------------------------------------------
// Weft: a real pipeline run

interface WeftResult {
  seconds: number;
  extractSeconds: number;
  commitSeconds: number;
  /** Per activity type (claimRunTurn, extractSource, commitRun): seconds from scheduled to started, and started to completed. */
  activities: Record<string, { waited: number; ran: number }>;
  rows: number;
  pagesServed: number;
  worker: Usage;
}

async function ingestWithWeft(weft: BenchWeft, temporal: Client, tenant: Awaited<ReturnType<BenchWeft['newTenant']>>, api: IngestApi, workerPid: number, n: number, tag = String(n)): Promise<WeftResult> {
  const post = async (pathname: string, body: unknown) => {
    const res = await call(weft, tenant.key, 'POST', pathname, body);
    if (res.status !== 201 && res.status !== 202) throw new Error(`POST ${pathname}: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body;
  };
  const table = `ingest_${tag}`;
  const source = await post('/api/v1/data-endpoints', {
    name: `records-${tag}`,
    namespace: 'bench',
    role: 'source',
    contractKind: 'source_stream',
    pluginCapabilityInstallationId: tenant.httpInstallationId,
    target: {
      request: { url: `${api.baseUrl}scale/${n}/records` },
      response: { format: 'json', recordsPath: 'data' },
      primaryKeys: ['id'],
      pagination: { type: 'cursor', parameter: 'cursor', responsePath: 'next_cursor', pageSizeParameter: 'limit', pageSize: PAGE_SIZE, maxPages: 10_000 },
    },
  });
  const destination = await post('/api/v1/data-endpoints', {
    name: `${table}-table`,
    namespace: 'bench',
    role: 'destination',
    contractKind: 'sink_table',
    pluginCapabilityInstallationId: tenant.managedInstallationId,
    target: { table, primaryKey: ['id'] },
  });
  const pipeline = await post(`/api/v1/projects/${tenant.projectId}/pipelines`, {
    name: `ingest-${tag}`,
    document: {
      nodes: [
        { id: 'src', type: 'source', endpointId: source.dataEndpoint.id, mode: 'full' },
        { id: 'dst', type: 'destination', endpointId: destination.dataEndpoint.id, writeMode: 'append' },
      ],
      edges: [{ from: 'src', to: 'dst' }],
    },
  });

  await checkpoint(weft.db);
  await api.stats(true);
  const sampler = watchUsage(workerPid, databaseOf(weft));
  const started = performance.now();
  const launched = await post(`/api/v1/projects/${tenant.projectId}/pipelines/${pipeline.pipeline.id}/execute`, undefined);
  // The end is when the run's workflow completes (after its commit): a long poll on Temporal, so no
  // polling of the run over HTTP adds its own load to the API and the database while it runs.
  await temporal.workflow.getHandle(launched.run.workflow.workflowId).result().catch(() => undefined);
  const seconds = (performance.now() - started) / 1000;
  const worker = sampler.stop();
  const activities = await activityTimes(temporal, launched.run.workflow.workflowId);
  const run = (await call(weft, tenant.key, 'GET', `/api/v1/projects/${tenant.projectId}/runs/${launched.run.id}`)).body.run;
  if (run.status !== 'succeeded') throw new Error(`the Weft run ended ${run.status}: ${JSON.stringify(run.error)}`);
  const src = run.nodes.find((node: any) => node.nodeId === 'src');
  const extractSeconds = (Date.parse(src.finishedAt) - Date.parse(run.startedAt)) / 1000;
  const { rows } = await weft.db.raw(`SELECT count(*)::int AS n FROM "${workspaceSchema(tenant.workspaceId)}"."${table}" WHERE valid_to IS NULL`);
  const served = (await api.stats())[String(n)];
  return { seconds, extractSeconds, commitSeconds: Math.max(0, seconds - extractSeconds), activities, rows: rows[0].n, pagesServed: served?.pages ?? 0, worker };
}

/** Seconds each activity of a run's workflow waited to start and took to run, from its history (last attempt). */
async function activityTimes(temporal: Client, workflowId: string): Promise<Record<string, { waited: number; ran: number }>> {
  const history = await temporal.workflow.getHandle(workflowId).fetchHistory();
  const at = (event: { eventTime?: { seconds?: unknown; nanos?: number | null } | null }) => Number(event.eventTime?.seconds ?? 0) + (event.eventTime?.nanos ?? 0) / 1e9;
  const events = history.events ?? [];
  const byId = new Map(events.map((event) => [String(event.eventId), event]));
  const times: Record<string, { waited: number; ran: number }> = {};
  for (const completed of events) {
    const attributes = completed.activityTaskCompletedEventAttributes;
    if (!attributes) continue;
    const scheduled = byId.get(String(attributes.scheduledEventId));
    const startedEvent = byId.get(String(attributes.startedEventId));
    const type = scheduled?.activityTaskScheduledEventAttributes?.activityType?.name;
    if (!scheduled || !startedEvent || !type) continue;
    times[type] = { waited: at(startedEvent) - at(scheduled), ran: at(completed) - at(startedEvent) };
  }
  return times;
}

// ---------------------------------------------------------------------------------------------
// COPY: the physical limit

/** COPY text format: backslash, tab, newline and carriage return escaped. */
const copyText = (value: unknown): string => (value === null || value === undefined ? '\\N' : String(value).replace(/[\\\t\n\r]/g, (c) => ({ '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' })[c]!));

async function copyIngest(databaseUrl: string, table: string, produce: (write: (line: string) => Promise<void>) => Promise<void>): Promise<number> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await client.query('CREATE SCHEMA IF NOT EXISTS bench_copy');
    await client.query(`DROP TABLE IF EXISTS bench_copy.${table}`);
    await client.query(`CREATE TABLE bench_copy.${table} (id bigint PRIMARY KEY, name text, amount numeric, status text, updated_at timestamptz)`);
    const stream = client.query(copyFrom(`COPY bench_copy.${table} (id, name, amount, status, updated_at) FROM STDIN`));
    const done = new Promise<void>((resolve, reject) => {
      stream.on('finish', resolve);
      stream.on('error', reject);
    });
    let buffered: string[] = [];
    const flush = async () => {
      if (!buffered.length) return;
      const chunk = buffered.join('');
      buffered = [];
      if (!stream.write(chunk)) await new Promise((resolve) => stream.once('drain', resolve));
    };
    await produce(async (line) => {
      buffered.push(line);
      if (buffered.length >= PAGE_SIZE) await flush();
    });
    await flush();
    stream.end();
    await done;
    const { rows } = await client.query(`SELECT count(*)::int AS n FROM bench_copy.${table}`);
    return rows[0].n as number;
  } finally {
    await client.end();
  }
}

const recordLine = (r: { id: unknown; name: unknown; amount: unknown; status: unknown; updated_at: unknown }): string =>
  `${copyText(r.id)}\t${copyText(r.name)}\t${copyText(r.amount)}\t${copyText(r.status)}\t${copyText(r.updated_at)}\n`;

/** Time and CPU of a peer's ingest: `client` is the peer's own process, `postgres` the database's backends. */
interface PeerResult {
  seconds: number;
  rows: number;
  cpu: { client: number; postgres: number | null };
}

/** Runs `work` in this process, timing it and the CPU it and the database's backends use. */
async function inThisProcess(database: string, work: () => Promise<number>): Promise<PeerResult> {
  const usage = watchUsage(undefined, database);
  const cpu = process.cpuUsage();
  const started = performance.now();
  const rows = await work();
  const seconds = (performance.now() - started) / 1000;
  const spent = process.cpuUsage(cpu);
  return { seconds, rows, cpu: { client: (spent.user + spent.system) / 1e6, postgres: usage.stop().postgresCpuSeconds } };
}

/** Pages from the API, one after the other, each parsed and written into the COPY. */
function copyFromApi(databaseUrl: string, database: string, api: IngestApi, n: number): Promise<PeerResult> {
  return inThisProcess(database, () => copyIngest(databaseUrl, `api_${n}`, async (write) => {
    let cursor: string | null = null;
    do {
      const url = `${api.baseUrl}scale/${n}/records?limit=${PAGE_SIZE}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
      const response = await fetch(url);
      if (!response.ok) throw new Error(`GET ${url}: ${response.status}`);
      const page = (await response.json()) as { data: Array<Record<string, unknown>>; next_cursor: string | null };
      for (const record of page.data) await write(recordLine(record as never));
      cursor = page.next_cursor;
    } while (cursor);
  }));
}

/** The same records generated in this process: COPY with no HTTP and no JSON. */
function copyGenerated(databaseUrl: string, database: string, n: number): Promise<PeerResult> {
  return inThisProcess(database, () => copyIngest(databaseUrl, `generated_${n}`, async (write) => {
    for (let id = 1; id <= n; id++) await write(recordLine(ingestRecord(id)));
  }));
}

/** CPU seconds per 100k records, client and database together. */
const cpuPer100k = (result: { rows: number; cpu: { client: number; postgres: number | null } }): number => ((result.cpu.client + (result.cpu.postgres ?? 0)) * 100_000) / result.rows;
const cpuText = (cpu: { client: number; postgres: number | null }, client: string): string =>
  `${client} ${cpu.client.toFixed(1)} s + PostgreSQL ${cpu.postgres === null ? 'n/a' : `${cpu.postgres.toFixed(1)} s`}`;

// ---------------------------------------------------------------------------------------------
// Profiles

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
}

/** Self time of a V8 .cpuprofile by function and by package or project folder, top entries. */
function summarizeProfile(file: string, window: { fromUs: number; toUs: number }): string {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as { nodes: ProfileNode[]; samples: number[]; timeDeltas: number[]; startTime: number; endTime: number };
  const byNode = new Map<number, number>();
  // Only the samples inside the window (microseconds before the profile's end): the measured runs, not start-up.
  let at = profile.startTime;
  profile.samples.forEach((id, i) => {
    const delta = profile.timeDeltas[i] ?? 0;
    at += delta;
    const beforeEnd = profile.endTime - at;
    if (beforeEnd <= window.fromUs && beforeEnd >= window.toUs) byNode.set(id, (byNode.get(id) ?? 0) + delta);
  });
  const total = [...byNode.values()].reduce((a, b) => a + b, 0);
  const byFunction = new Map<string, number>();
  const byArea = new Map<string, number>();
  for (const node of profile.nodes) {
    const time = byNode.get(node.id) ?? 0;
    if (!time) continue;
    const url = node.callFrame.url.replace(/^file:\/\//, '');
    const where = url.includes('node_modules/')
      ? url.replace(/.*node_modules\/((@[^/]+\/)?[^/]+).*/, '$1')
      : url.startsWith(projectRoot) ? path.relative(projectRoot, url).split('/').slice(0, 2).join('/') : url ? 'node:internal' : node.callFrame.functionName || '(native)';
    const fn = `${node.callFrame.functionName || '(anonymous)'} ${url ? `${path.basename(url)}:${node.callFrame.lineNumber + 1}` : ''}`;
    byFunction.set(fn, (byFunction.get(fn) ?? 0) + time);
    byArea.set(where, (byArea.get(where) ?? 0) + time);
  }
  const top = (map: Map<string, number>, count: number) => [...map].sort((a, b) => b[1] - a[1]).slice(0, count)
    .map(([name, time]) => `  ${(time / 1e6).toFixed(2).padStart(7)} s ${((100 * time) / total).toFixed(1).padStart(5)}%  ${name}`).join('\n');
  return `worker CPU profile ${file}, the measured runs only (${(total / 1e6).toFixed(1)} s sampled)\nby area:\n${top(byArea, 15)}\nby function (self time):\n${top(byFunction, 25)}`;
}

// ---------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const opts = options();
  const python = opts.only.includes('dlt') ? ensureDlt() : '';
  const api = await startApi();
  const weft = await startBenchWeft({ name: BENCHMARK, worker: !opts.profile, temporal: true });
  const profileDir = path.join(dataDir(), 'bench', 'profiles', `ingest-${Date.now()}`);
  let worker = weft.worker;
  if (opts.profile) {
    // --cpu-prof is not allowed in NODE_OPTIONS: the bench starts the worker itself, with the
    // environment startBenchWeft gives its children.
    mkdirSync(profileDir, { recursive: true });
    worker = startRole('worker', {
      ...process.env,
      DATABASE_URL: weft.databaseUrl,
      TEMPORAL_ADDRESS: weft.temporalAddress,
      WEFT_TASK_QUEUE: weft.taskQueue,
      LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn',
    }, ['--cpu-prof', `--cpu-prof-dir=${profileDir}`]);
  }
  const dltPipelines = path.join(dataDir(), 'bench', 'dlt-pipelines', String(process.pid));
  const rows: BenchRow[] = [];
  const peaks = new Map<number, number>();
  let measuredFrom: number | undefined;
  let measuredTo: number | undefined;
  let exitedAt: number | undefined;
  let failure: unknown;
  const connection = await connectTemporal(weft.temporalAddress);
  const temporal = createTemporalClient(connection);
  try {
    const tenant = await weft.newTenant({ httpBaseUrl: api.baseUrl });
    // Runs are metered per record: a Free workspace's credit ends after about 100k records, and a
    // launch past it is refused (402). A plan with overage never pauses paid work.
    await weft.db('workspaces').where({ id: tenant.workspaceId }).update({ plan: 'team' });
    const workerPid = worker!.pid!;
    // A small run first, not measured: it waits for the worker to have bundled the workflows and
    // to poll, and loads and warms the code every run goes through.
    if (opts.only.includes('weft')) {
      const warmup = await ingestWithWeft(weft, temporal, tenant, api, workerPid, 5 * PAGE_SIZE, 'warmup');
      log(`warm-up run: ${warmup.seconds.toFixed(1)} s; worker RSS after it ${rssMb(workerPid).toFixed(0)} MB`);
    }
    measuredFrom = Date.now();
    const database = databaseOf(weft);
    for (const n of opts.scales) {
      const scale = `${label(n)} records`;
      let weftResult: PeerResult | undefined;
      if (opts.only.includes('weft')) {
        const result = await ingestWithWeft(weft, temporal, tenant, api, workerPid, n);
        if (result.rows !== n) throw new Error(`Weft's table holds ${result.rows} records, not ${n}`);
        weftResult = { seconds: result.seconds, rows: n, cpu: { client: result.worker.cpuSeconds, postgres: result.worker.postgresCpuSeconds } };
        // From the worker's start (the kernel's high-water mark): its start-up and every earlier run included.
        const sinceStart = peakRssSinceStartMb(workerPid);
        peaks.set(n, sinceStart);
        const commit = result.activities.commitRun;
        const detail = `launch to succeeded ${result.seconds.toFixed(1)} s (extract and stage ${result.extractSeconds.toFixed(1)} s, then ${result.commitSeconds.toFixed(1)} s to the end`
          + `${commit ? `, of which the commit activity ran ${commit.ran.toFixed(1)} s after waiting ${commit.waited.toFixed(1)} s to start` : ''}); `
          + `${result.pagesServed} API pages served for ${Math.ceil(n / PAGE_SIZE)}; CPU ${cpuText(weftResult.cpu, 'worker')}`;
        log(`${scale}: Weft ${(n / result.seconds).toFixed(0)} records/s: ${detail}; worker RSS ${result.worker.startRssMb.toFixed(0)} MB at launch, peak ${result.worker.peakRssMb.toFixed(0)} MB during the run, ${sinceStart.toFixed(0)} MB since the worker started`);
        rows.push(figure({ benchmark: BENCHMARK, measure: `Weft records/s, ${scale}`, weft: n / result.seconds, unit: 'records/s', note: detail }));
        rows.push(figure({
          benchmark: BENCHMARK,
          measure: `worker peak RSS since its start, ${scale}`,
          weft: sinceStart,
          unit: 'MB',
          target: '<= 300',
          met: sinceStart <= 300,
          note: `${result.worker.startRssMb.toFixed(0)} MB when the run was launched, ${result.worker.peakRssMb.toFixed(0)} MB at most during it`,
        }));
      }
      const compare = (peer: PeerResult, peerName: string, what: string, target?: string, note?: string) => {
        if (!weftResult) {
          rows.push(figure({ benchmark: BENCHMARK, measure: `${peerName} records/s, ${scale}`, weft: n / peer.seconds, unit: 'records/s', note: `${peerName} alone (--only): the value column is its own` }));
          return;
        }
        rows.push(row({ benchmark: BENCHMARK, measure: `records/s vs ${what}, ${scale}`, weft: n / weftResult.seconds, peer: n / peer.seconds, peerName, unit: 'records/s', target, note }));
        rows.push(row({ benchmark: BENCHMARK, measure: `CPU s per 100k records vs ${what}, ${scale}`, weft: cpuPer100k(weftResult), peer: cpuPer100k(peer), peerName, unit: 'CPU s (lower is better)' }));
      };
      if (opts.only.includes('dlt')) {
        await checkpoint(weft.db);
        const usage = watchUsage(undefined, database);
        const dlt = await runDltIngest({ python, apiUrl: `${api.baseUrl}scale/${n}/records`, databaseUrl: weft.databaseUrl, dataset: `dlt_ingest_${n}`, table: 'records', pipelinesDir: dltPipelines, loaderFileFormat: opts.dltFormat });
        const result: PeerResult = { seconds: dlt.seconds, rows: dlt.rows, cpu: { client: dlt.cpuSeconds, postgres: usage.stop().postgresCpuSeconds } };
        if (dlt.rows !== n) throw new Error(`dlt's table holds ${dlt.rows} records, not ${n}`);
        const detail = `pipeline.run ${dlt.seconds.toFixed(1)} s (the python process ${dlt.processSeconds.toFixed(1)} s with its imports); CPU ${cpuText(result.cpu, 'python')}; peak RSS ${dlt.peakRssMb.toFixed(0)} MB`;
        log(`${scale}: dlt ${(n / dlt.seconds).toFixed(0)} records/s: ${detail}`);
        compare(result, `dlt ${DLT_VERSION}${opts.dltFormat ? ` (${opts.dltFormat})` : ''}`, 'dlt', '>= 1.5', `dlt: ${detail}`);
      }
      if (opts.only.includes('copy')) {
        await checkpoint(weft.db);
        const viaApi = await copyFromApi(weft.databaseUrl, database, api, n);
        if (viaApi.rows !== n) throw new Error(`the COPY table holds ${viaApi.rows} records, not ${n}`);
        await checkpoint(weft.db);
        const generated = await copyGenerated(weft.databaseUrl, database, n);
        if (generated.rows !== n) throw new Error(`the generated COPY table holds ${generated.rows} records, not ${n}`);
        log(`${scale}: COPY through the API ${(n / viaApi.seconds).toFixed(0)} records/s (${viaApi.seconds.toFixed(2)} s; CPU ${cpuText(viaApi.cpu, 'client')}), `
          + `COPY of generated records ${(n / generated.seconds).toFixed(0)} records/s (${generated.seconds.toFixed(2)} s; CPU ${cpuText(generated.cpu, 'client')})`);
        compare(viaApi, 'COPY, pages from the API', 'COPY', '>= 0.2');
        if (weftResult) rows.push(row({ benchmark: BENCHMARK, measure: `records/s vs COPY without HTTP, ${scale}`, weft: n / weftResult.seconds, peer: n / generated.seconds, peerName: 'COPY, records made in process', unit: 'records/s' }));
      }
    }
    measuredTo = Date.now();
    const measured = [...peaks].sort((a, b) => a[0] - b[0]);
    if (measured.length >= 2) {
      const [small, smallPeak] = measured[0];
      const [large, largePeak] = measured[measured.length - 1];
      rows.push(row({
        benchmark: BENCHMARK,
        measure: `worker peak RSS growth, ${label(small)} → ${label(large)} records`,
        weft: largePeak,
        peer: smallPeak,
        peerName: `Weft at ${label(small)} records`,
        unit: 'MB',
        target: '<= 1.1',
        note: `peaks since the worker started; flat means the peak after the ${label(large)} run stays within 10% of the one after the ${label(small)} run (${(largePeak - smallPeak).toFixed(0)} MB apart)`,
      }));
    }
  } catch (error) {
    // What was measured before the failure is still reported.
    failure = error;
  } finally {
    await connection.close();
    if (opts.profile) await stopChild(worker);
    exitedAt = Date.now();
    await weft.stop();
    await stopChild(api.child);
    rmSync(dltPipelines, { recursive: true, force: true });
  }
  emit(rows);
  if (opts.profile) {
    const file = readdirSync(profileDir).find((name) => name.includes(`.${worker!.pid}.`) && name.endsWith('.cpuprofile'));
    const exited = exitedAt ?? Date.now();
    const window = { fromUs: (exited - (measuredFrom ?? exited)) * 1000, toUs: (exited - (measuredTo ?? exited)) * 1000 };
    console.log(file ? summarizeProfile(path.join(profileDir, file), window) : `no worker profile in ${profileDir}`);
  }
  if (failure) throw failure;
}

main().then(
  () => process.exit(0),
  (error: Error) => {
    console.error(`ingest bench failed: ${error.stack ?? error.message}`);
    process.exit(1);
  },
);
