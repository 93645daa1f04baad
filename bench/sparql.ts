/**
 * sparql (P5): a BSBM-like dataset (bench/support/sparql-bsbm.ts) of about 100k, 1M or 10M records
 * in all, loaded into Weft the way a user holds it (ontology terms and links, compiled and
 * activated; one managed table per kind of record, filled through the managed_table capability; a
 * read binding per table), and its query mix through the SPARQL endpoint, against two peers in the
 * same run: the hand-written SQL of each query over the same managed tables (bench/support/sparql-sql.ts),
 * served by bare Koa + pg in a process of its own (bench/support/sparql-sql-peer.ts), so both sides
 * pay HTTP; and Oxigraph (npm `oxigraph`, in-memory Store) in-process over the same triples, where
 * they fit in memory (--oxigraph-max-triples). The bench reports; it passes or fails nothing.
 *
 *   npm run bench -- sparql                          # 100k and 1M records
 *   npx tsx bench/sparql.ts --records 100k           # one scale
 *   npx tsx bench/sparql.ts --records 10M            # about 82M triples: see bench/README.md for disk and time
 *   npx tsx bench/sparql.ts --records 100k --query q5-similar,q7-product-page --runs 9
 *   npx tsx bench/sparql.ts --records 100k --explain # EXPLAIN (ANALYZE, BUFFERS) of the 10 slowest SQL queries
 *   npx tsx bench/sparql.ts --records 100k --profile # the in-process time breakdown of Weft's in-memory path
 *
 * Each scale runs in a process of its own, with a fresh Weft (database, API child process, tenant).
 * Weft's and the SQL peer's figures are an HTTP POST of the query (application/sparql-query, Accept
 * SPARQL JSON or N-Triples) with the body read in full; Oxigraph's is `store.query` with every
 * result materialised. Every figure is the median of --runs runs (default 5) after --warmup
 * warm-ups (default 2), the three taking turns run by run; the mix's figure is the geometric mean
 * of the query medians. Answers are compared at every scale: the SQL peer's and Weft's with
 * Oxigraph's where it runs, Weft's with the SQL peer's where it does not; as multisets, in order
 * where the query's ORDER BY fixes it, numbers by value.
 *
 * Weft answers over every bound record or refuses a dataset past WEFT_SPARQL_MAX_DATASET_TRIPLES
 * (422 dataset_too_large). Such a refusal of the first request is reported, and the mix is then
 * not sent to Weft (each refusal costs a full read of the records); the peers still run.
 * After the mix: the first query after a commit of 1,000 offer records (through the capability)
 * against the same query warm, and the API process's RSS.
 */
import { fork, spawn, ChildProcess } from 'node:child_process';
import path from 'node:path';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { performance } from 'node:perf_hooks';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { Parser, Quad, Store, Writer } from 'n3';
import * as oxigraph from 'oxigraph';
import { BenchRow, emit, figure, median, parseRows, row } from './support/report';
import { BenchWeft, call, freePort, startBenchWeft } from './support/weft';
import { requestText, TextResponse } from './support/http-client';
import { COUNTRY_CODES, LINKS, MAPPINGS, MIX, MixQuery, recordBatches, recordParams, recordScale, RecordScale, Row, TERMS, TRIPLES_PER_RECORD } from './support/sparql-bsbm';
import { handWrittenSql, linkIndexes, SqlQuery } from './support/sparql-sql';
import { OntologyPackage, PluginInstallation, Project, ReadBinding } from '../db/models';
import { assertCredit } from '../services/usage/credit';
import { findCapability } from '../plugins';
import { CapabilityContext } from '../plugins/capability';
import { workspaceSchema } from '../plugins/managed-table/storage';
import { capabilityContext } from '../services/endpoints/data-endpoints';
import { authenticateRequest } from '../services/tenancy/request-authentication';
import { sparqlDataset } from '../services/ontology/sparql';
import { readEndpointRecords } from '../services/endpoints/records-read';
import { OperationContext, workerDependencies } from '../services/operations/context';
import { bindingFields, mapRecord } from '../ontology/term-records';
import { evaluateQuery, KeptParses } from '../ontology/sparql-engine';
import { serializeResult } from '../ontology/sparql-results';
import { amount, benchFlags, count as positiveCount, counts, names } from './support/options';

/** Weft's kept parses, as the query threads keep them (an answer to a text seen before is not parsed again). */
const parses = new KeptParses();

const BENCHMARK = 'sparql';

// ---------------------------------------------------------------------------------------------
// Options

interface Options {
  scales: number[];
  only: string[];
  runs: number;
  warmup: number;
  serveFirst: number;
  batch: number;
  oxigraphMaxTriples: number;
  sqlIndexes: boolean;
  explain: boolean;
  commitRounds: number;
  cpuProf?: string;
  profile: boolean;
  child: boolean;
}

function options(): Options {
  const flags = benchFlags('npm run bench -- sparql', {
    records: { type: 'string', help: 'scales in records in all, e.g. 100k,1M,10M (default 100k,1M)' },
    query: { type: 'string', help: `query ids (default all): ${MIX.map((q) => q.id).join(', ')}` },
    runs: { type: 'string', help: 'timed runs per query (default 5)' },
    warmup: { type: 'string', help: 'warm-up runs per query (default 2)' },
    'serve-first': { type: 'string', help: "requests of the mix's cheap texts each engine answers before the mix, as a running server has (default 2000; 0: a server that has served nothing)" },
    batch: { type: 'string', help: 'records per managed_table write while loading (default 50000)' },
    'oxigraph-max-triples': { type: 'string', help: 'run Oxigraph only up to this many triples (default 10M; about 8.2 triples per record)' },
    'sql-indexes': { type: 'boolean', help: "create expression indexes on the links that are not primary keys (an offer's and a review's product) before the mix; both Weft and the SQL peer read the same tables" },
    explain: { type: 'boolean', help: 'print EXPLAIN (ANALYZE, BUFFERS) of the 10 slowest hand-written SQL queries' },
    'commit-rounds': { type: 'string', help: 'commits of 1,000 offer records, each followed by the first query (default 3; 0 skips)' },
    'cpu-prof': { type: 'string', help: "write the API process's CPU profiles into this folder" },
    profile: { type: 'boolean', help: "break down Weft's in-memory path in this process (dataset build, evaluation, the fixed cost); only where Weft answers" },
    child: { type: 'boolean', help: 'internal: run one scale in this process' },
  });
  return {
    scales: counts(flags.records, 'records', [100_000, 1_000_000]),
    only: names(flags.query, 'query', MIX.map((q) => q.id), []),
    runs: positiveCount(flags.runs, 'runs', 5),
    warmup: Math.floor(amount(flags.warmup, 'warmup', 2)),
    serveFirst: Math.floor(amount(flags['serve-first'], 'serve-first', 2000)),
    batch: positiveCount(flags.batch, 'batch', 50_000),
    oxigraphMaxTriples: positiveCount(flags['oxigraph-max-triples'], 'oxigraph-max-triples', 10_000_000),
    sqlIndexes: flags['sql-indexes'] ?? false,
    explain: flags.explain ?? false,
    commitRounds: Math.floor(amount(flags['commit-rounds'], 'commit-rounds', 3)),
    cpuProf: flags['cpu-prof'],
    profile: flags.profile ?? false,
    child: flags.child ?? false,
  };
}

// ---------------------------------------------------------------------------------------------
// Timing

/** Per query and engine, timed runs stop early once they add up to this (at least one is timed). */
const BUDGET_MS = 20_000;

async function timed<T>(fn: () => T | Promise<T>): Promise<{ ms: number; value: T }> {
  const start = performance.now();
  const value = await fn();
  return { ms: performance.now() - start, value };
}

interface Timing<T> {
  median: number;
  runs: number;
  value: T;
}

async function bench<T>(fn: () => T | Promise<T>, runs: number, warmup: number): Promise<Timing<T>> {
  let value: T | undefined;
  let spent = 0;
  for (let i = 0; i < warmup && spent < BUDGET_MS / 2; i++) {
    const run = await timed(fn);
    value = run.value;
    spent += run.ms;
  }
  const times: number[] = [];
  let total = 0;
  while (times.length < runs && (times.length === 0 || total + total / times.length <= BUDGET_MS)) {
    const run = await timed(fn);
    value = run.value;
    times.push(run.ms);
    total += run.ms;
  }
  return { median: median(times), runs: times.length, value: value as T };
}

/**
 * The engines of one query, measured round by round (Weft, then Oxigraph, then Comunica in each
 * round), so a shift in the machine's load falls on all of them alike. Each gets `warmup`
 * untimed runs and up to `runs` timed ones; an engine stops early once its timed runs add up to
 * the budget, and one whose first warm-up alone exceeds the budget is reported from that cold run.
 */
async function benchTogether(fns: Array<() => unknown>, cpuClocks: Array<() => number>, runs: number, warmup: number): Promise<Array<Timing<unknown> & { cpu: number }>> {
  const state = fns.map(() => ({ times: [] as number[], cpu: [] as number[], spent: 0, cold: false, value: undefined as unknown }));
  const measure = async (i: number) => {
    const cpuBefore = cpuClocks[i]();
    const run = await timed(fns[i]);
    return { ...run, cpu: cpuClocks[i]() - cpuBefore };
  };
  for (let w = 0; w < warmup; w++) {
    for (let i = 0; i < fns.length; i++) {
      const s = state[i];
      if (s.cold || s.spent >= BUDGET_MS / 2) continue;
      const run = await measure(i);
      s.value = run.value;
      s.spent += run.ms;
      if (run.ms > BUDGET_MS) {
        s.cold = true;
        s.times = [run.ms];
        s.cpu = [run.cpu];
      }
    }
  }
  for (let round = 0; round < runs; round++) {
    for (let i = 0; i < fns.length; i++) {
      const s = state[i];
      const total = s.times.reduce((a, b) => a + b, 0);
      if (s.cold || (s.times.length > 0 && total + total / s.times.length > BUDGET_MS)) continue;
      const run = await measure(i);
      s.value = run.value;
      s.times.push(run.ms);
      s.cpu.push(run.cpu);
    }
  }
  // CPU as a mean: a median of a few runs would drop the work a run leaves to the next (GC, compilation).
  return state.map((s) => ({ median: median(s.times), cpu: s.cpu.reduce((a, b) => a + b, 0) / s.cpu.length, runs: s.cold ? 0 : s.times.length, value: s.value }));
}

/** Each thread's on-CPU time as last read, so a thread that ends (a replaced query thread) still counts what it used. */
const threadCpuNs = new Map<string, number>();

/**
 * CPU time a process has used, every thread's (query threads and V8's compiler and GC threads
 * included), in ms: what a query costs however busy the machine is. Read from each thread's
 * schedstat in nanoseconds; /proc/<pid>/stat counts 10 ms ticks, coarser than a query.
 */
function processCpuMs(pid: number): number {
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
    readFileSync(`/proc/${pid}/task/${tids[0]}/schedstat`, 'utf8');
  } catch {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
  }
  for (const tid of tids) {
    try {
      threadCpuNs.set(`${pid}/${tid}`, Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]));
    } catch {
      // The thread ended since the listing: its last reading stands.
    }
  }
  let ns = 0;
  for (const [key, used] of threadCpuNs) if (key.startsWith(`${pid}/`)) ns += used;
  return ns / 1e6;
}
/** Resident (VmRSS) and peak resident (VmHWM) memory of a process, in MB. */
function processMemoryMb(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (name: string) => Number(new RegExp(`${name}:\\s+(\\d+)`).exec(status)?.[1] ?? NaN);
  return { rss: kb('VmRSS') / 1024, peak: kb('VmHWM') / 1024 };
}
/**
 * A process's RSS once it stopped falling: sampled every 2 s until six samples in a row are within
 * 2 MB (at most a minute). V8 hands a burst's heap back only some seconds into idleness, so a
 * figure taken straight after the load carries the load's garbage where the load was short.
 */
async function settledMemory(pid: number): Promise<{ rss: number; samples: number[] }> {
  const samples = [processMemoryMb(pid).rss];
  while (samples.length < 30) {
    const last = samples.slice(-6);
    if (last.length === 6 && Math.max(...last) - Math.min(...last) < 2) break;
    await new Promise((resolve) => setTimeout(resolve, 2000));
    samples.push(processMemoryMb(pid).rss);
  }
  return { rss: samples[samples.length - 1], samples };
}
/**
 * Where an API process's resident memory lies: its main V8 heap (used of committed) and external
 * buffers from the Prometheus metrics it serves, and its anonymous and file-backed pages from
 * /proc, and each query thread's heap from weft_sparql_thread_heap_bytes. The rest is native
 * allocations, thread stacks and code.
 */
async function memoryParts(pid: number, metricsUrl: string): Promise<string> {
  const rollup = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
  const kbOf = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+)`, 'm').exec(rollup)?.[1] ?? NaN) / 1024;
  const text = await fetch(metricsUrl).then((response) => response.text()).catch(() => '');
  const metric = (name: string) => Number(new RegExp(`^${name} (\\S+)`, 'm').exec(text)?.[1] ?? NaN) / 2 ** 20;
  const threadHeaps = [...text.matchAll(/^weft_sparql_thread_heap_bytes\{thread="(\d+)",kind="(used|committed)"\} (\S+)/gm)];
  const threads = new Map<string, { used: number; committed: number }>();
  for (const [, thread, kind, bytes] of threadHeaps) threads.set(thread, { ...(threads.get(thread) ?? { used: 0, committed: 0 }), [kind]: Number(bytes) / 2 ** 20 });
  const rss = kbOf('Rss');
  const heapTotal = metric('nodejs_heap_size_total_bytes');
  const external = metric('nodejs_external_memory_bytes');
  const threadsCommitted = [...threads.values()].reduce((sum, heap) => sum + heap.committed, 0);
  const threadFigures = [...threads].sort(([a], [b]) => Number(a) - Number(b)).map(([thread, heap]) => `thread ${thread} ${heap.used.toFixed(0)} of ${heap.committed.toFixed(0)}`).join(', ');
  return `RSS ${rss.toFixed(0)} MB: main heap ${metric('nodejs_heap_size_used_bytes').toFixed(0)} used of ${heapTotal.toFixed(0)} committed, external ${external.toFixed(0)}, query threads' heaps as their last queries left them ${threadFigures || 'none yet'}, the rest ${(rss - heapTotal - external - threadsCommitted).toFixed(0)} (native, code); anonymous ${kbOf('Anonymous').toFixed(0)}, file-backed ${(rss - kbOf('Anonymous')).toFixed(0)}`;
}
/** Starts a process's peak resident memory (VmHWM) again from its current RSS (Linux clear_refs 5); false where not allowed. */
function resetPeakMemory(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

const ownCpuMs = () => {
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1000;
};

const geomean = (xs: number[]) => Math.exp(xs.reduce((s, x) => s + Math.log(x), 0) / xs.length);
const fmt = (ms: number) => (ms >= 100 ? ms.toFixed(0) : ms >= 10 ? ms.toFixed(1) : ms.toFixed(2));
const say = (text: string) => console.log(text);

// ---------------------------------------------------------------------------------------------
// Results, as comparable strings

type Term = { termType: string; value: string; language?: string; datatype?: { value: string } };
type Results = { ask: boolean } | { quads: Array<{ subject: Term; predicate: Term; object: Term }> } | { rows: Array<Array<[string, Term]>> };
const XSD = 'http://www.w3.org/2001/XMLSchema#';
const NUMERIC = new Set(['integer', 'decimal', 'double', 'float', 'long', 'int'].map((t) => `${XSD}${t}`));

/** Numbers compare by value (Oxigraph canonicalises "10.50" to "10.5"; averages differ in their last digits). */
function termKey(term: Term | undefined): string {
  if (!term) return '-';
  if (term.termType === 'Literal') {
    if (term.datatype && NUMERIC.has(term.datatype.value)) return `${Number(Number(term.value).toPrecision(12))}^^number`;
    const dt = !term.language && term.datatype && term.datatype.value !== `${XSD}string` ? `^^${term.datatype.value}` : '';
    return `"${term.value}"${term.language ? `@${term.language}` : ''}${dt}`;
  }
  return term.termType === 'BlankNode' ? '_:b' : `<${term.value}>`;
}

/** Rows as strings, sorted (a multiset) unless `ordered`: then in the answer's order, which the query's ORDER BY fixes. */
function canonical(r: Results, ordered = false): string[] {
  if ('ask' in r) return [String(r.ask)];
  if ('quads' in r) return r.quads.map((q) => `${termKey(q.subject)} ${termKey(q.predicate)} ${termKey(q.object)}`).sort();
  const rows = r.rows.map((bindings) => bindings.filter(([, t]) => t).map(([v, t]) => `${v}=${termKey(t)}`).sort().join(' '));
  return ordered ? rows : rows.sort();
}

const count = (r: Results) => ('ask' in r ? String(r.ask) : 'quads' in r ? r.quads.length : r.rows.length);

/**
 * Every ORDER BY of the mix ends on a variable that is unique per row (a subject, or the group key),
 * so it fixes the whole order: those answers compare in order, the others as multisets.
 */
const orderedBy = (text: string) => /\bORDER BY\b/.test(text);

function compare(a: Results, b: Results, ordered = false): string | undefined {
  const x = canonical(a, ordered);
  const y = canonical(b, ordered);
  if (x.length !== y.length) return `${x.length} vs ${y.length} results`;
  for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return `${ordered ? 'in order, ' : ''}first difference at ${i}: ${x[i]} | ${y[i]}`;
  return undefined;
}

function runOxigraph(store: oxigraph.Store, query: Pick<MixQuery, 'kind'>, text: string): Results {
  const result = store.query(text);
  if (query.kind === 'ask') return { ask: result as boolean };
  if (query.kind === 'construct') return { quads: result as never };
  return { rows: (result as Map<string, Term>[]).map((m) => [...m.entries()]) };
}

interface Endpoint {
  url: string;
  key: string;
}

/** A query's time in the API's query thread, from its Server-Timing header (evaluation + serialization), or NaN. */
function threadMsOf(response: TextResponse): number {
  const timing = String(response.headers['server-timing'] ?? '');
  const durations = [...timing.matchAll(/(?:^|,)\s*(evaluation|serialization);dur=([0-9.]+)/g)].map((match) => Number(match[2]));
  return durations.length ? durations.reduce((a, b) => a + b, 0) : Number.NaN;
}

/** One request as a client makes it (bench/support/http-client.ts: node:http, one kept-alive connection); the body is read in full (the timed part ends there). */
async function post(endpoint: Endpoint, text: string, accept: string): Promise<{ status: number; body: string; threadMs: number; datasetTriples?: number }> {
  const response = await requestText(endpoint.url, { method: 'POST', headers: { Authorization: `Bearer ${endpoint.key}`, 'Content-Type': 'application/sparql-query', Accept: accept }, body: text });
  // Weft names the triples it evaluated over (0 when PostgreSQL answered); the SQL peer names none.
  const triples = response.headers['weft-dataset-triples'];
  return { status: response.status, body: response.body, threadMs: threadMsOf(response), datasetTriples: triples === undefined ? undefined : Number(triples) };
}

const acceptFor = (query: Pick<MixQuery, 'kind'>) => (query.kind === 'construct' ? 'application/n-triples' : 'application/sparql-results+json');

function weftResults(query: MixQuery, body: string): Results {
  if (query.kind === 'construct') return { quads: new Parser({ format: 'application/n-triples' }).parse(body) as never };
  const json = JSON.parse(body) as { boolean?: boolean; head: { vars: string[] }; results?: { bindings: Array<Record<string, { type: string; value: string; datatype?: string; 'xml:lang'?: string }>> } };
  if (query.kind === 'ask') return { ask: Boolean(json.boolean) };
  const term = (t: { type: string; value: string; datatype?: string; 'xml:lang'?: string }): Term =>
    t.type === 'uri' ? { termType: 'NamedNode', value: t.value } : t.type === 'bnode' ? { termType: 'BlankNode', value: t.value } : { termType: 'Literal', value: t.value, language: t['xml:lang'] ?? '', datatype: { value: t.datatype ?? (t['xml:lang'] ? '' : `${XSD}string`) } };
  return { rows: json.results!.bindings.map((b) => Object.entries(b).map(([v, t]) => [v, term(t)] as [string, Term])) };
}

// ---------------------------------------------------------------------------------------------
// Loading the dataset into Weft, as a user would (managed tables filled through the capability)

export interface Loaded {
  endpoint: Endpoint;
  baseIri: string;
  packageId: string;
  ontologyBase: string;
  bindingIds: string[];
  /** The managed_table capability's context for the tenant's installation (the commits after the mix write through it). */
  ctx: CapabilityContext;
  schema: string;
}

async function expectStatus<T>(what: string, promise: Promise<{ status: number; body: T }>, status: number): Promise<T> {
  const res = await promise;
  if (res.status !== status) throw new Error(`${what}: ${res.status} ${JSON.stringify(res.body).slice(0, 500)}`);
  return res.body;
}

/** Writes in flight at once while loading: generating the next batch in this process overlaps PostgreSQL's work on the last. */
const WRITES_IN_FLIGHT = 2;

interface LoadReport {
  loaded: Loaded;
  /** Per table: records, and the time its writes took (writes overlap, so these add up to more than the wall time). */
  tables: Map<string, { records: number; writes: number; ms: number }>;
  writeMs: number;
}

/**
 * Terms, links, compile and activate through the API; an endpoint per table; the records written
 * through the managed_table capability in batches of `batch` records (one committed snapshot each,
 * as a user's bulk load or a pipeline's commits land), generated batch by batch; then a read binding
 * per table.
 */
export async function load(weft: BenchWeft, scale: RecordScale, batch: number): Promise<LoadReport> {
  const { tenant } = weft;
  const base = `/api/v1/projects/${tenant.projectId}/ontology`;
  for (const term of TERMS) await expectStatus(`term ${term.id}`, call(weft, tenant.key, 'POST', `${base}/terms`, term), 201);
  for (const link of LINKS) await expectStatus(`link ${link.id}`, call(weft, tenant.key, 'POST', `${base}/links`, link), 201);
  const compiled = await expectStatus<{ package: { id: string } }>('compile', call(weft, tenant.key, 'POST', `${base}/compile`, {}), 201);
  await expectStatus('activate', call(weft, tenant.key, 'POST', `${base}/activate`, { packageId: compiled.package.id }), 200);
  const baseIri = (await expectStatus<{ ontology: { baseIri: string } }>('ontology', call(weft, tenant.key, 'GET', base), 200)).ontology.baseIri;

  const installation = (await PluginInstallation.query(weft.db).findById(tenant.managedInstallationId))!;
  const ctx = capabilityContext(weft.db, installation, workerDependencies(weft));
  const endpoints = new Map<string, string>();
  for (const [name, spec] of Object.entries(MAPPINGS)) {
    const endpoint = await expectStatus<{ dataEndpoint: { id: string } }>(
      `endpoint ${spec.table}`,
      call(weft, tenant.key, 'POST', '/api/v1/data-endpoints', { name: spec.table, namespace: 'bsbm', role: 'source', contractKind: 'source_stream', pluginCapabilityInstallationId: tenant.managedInstallationId, target: { table: spec.table, primaryKey: ['id'] } }),
      201,
    );
    endpoints.set(name, endpoint.dataEndpoint.id);
  }

  const tables = new Map<string, { records: number; writes: number; ms: number }>();
  const pending: Record<string, Row[]> = {};
  const inFlight = new Set<Promise<void>>();
  let failure: unknown;
  const write = (name: string, rows: Row[]) => {
    const table = MAPPINGS[name].table;
    const started = performance.now();
    const done: Promise<void> = findCapability('managed_table')
      .writeRecords!(ctx, { table, primaryKey: ['id'] }, { operation: 'append', rows, provenance: { kind: 'write', id: randomUUID() } })
      .then(
        () => {
          const t = tables.get(table) ?? { records: 0, writes: 0, ms: 0 };
          tables.set(table, { records: t.records + rows.length, writes: t.writes + 1, ms: t.ms + performance.now() - started });
        },
        (error: unknown) => {
          failure ??= error;
        },
      )
      .finally(() => inFlight.delete(done));
    inFlight.add(done);
  };
  const room = async () => {
    while (inFlight.size >= WRITES_IN_FLIGHT) await Promise.race(inFlight);
    if (failure) throw failure;
  };
  const writing = performance.now();
  // A table's writes take its lock in turn; two tables' writes run side by side.
  const products = Math.max(1, Math.floor(batch / 20));
  for (const { table: name, rows } of recordBatches(scale, products)) {
    const buffer = (pending[name] ??= []);
    buffer.push(...rows);
    if (buffer.length < batch) continue;
    pending[name] = [];
    await room();
    write(name, buffer);
  }
  for (const [name, rows] of Object.entries(pending)) {
    if (!rows.length) continue;
    await room();
    write(name, rows);
  }
  await Promise.all(inFlight);
  if (failure) throw failure;
  const writeMs = performance.now() - writing;

  const bindingIds: string[] = [];
  for (const [name, spec] of Object.entries(MAPPINGS)) {
    const binding = await expectStatus<{ binding: { id: string } }>(
      `binding ${spec.term}`,
      call(weft, tenant.key, 'POST', `${base}/read-bindings`, { ontologyPackageId: compiled.package.id, termId: spec.term, dataEndpointId: endpoints.get(name), mapping: spec.mapping }),
      201,
    );
    bindingIds.push(binding.binding.id);
  }
  await expectStatus('semantic consumer mode', call(weft, tenant.key, 'PATCH', '/api/v1/organization/settings', { semanticConsumerMode: 'read' }), 200);
  const loaded = { endpoint: { url: `${weft.baseUrl}${base}/sparql`, key: tenant.key }, baseIri, packageId: compiled.package.id, ontologyBase: base, bindingIds, ctx, schema: workspaceSchema(tenant.workspaceId) };
  return { loaded, tables, writeMs };
}

interface TableSize {
  table: string;
  rows: number;
  heapBytes: number;
  totalBytes: number;
}

/** Each managed table's current rows and size on disk (heap, and with TOAST and indexes), and the database's. */
async function tableSizes(weft: BenchWeft, schema: string): Promise<{ tables: TableSize[]; databaseBytes: number }> {
  const { rows } = await weft.db.raw<{ rows: Array<{ table: string; heap: string; total: string }> }>(
    `SELECT c.relname AS table, pg_relation_size(c.oid) AS heap, pg_total_relation_size(c.oid) AS total
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = ? AND c.relkind = 'r' AND c.relname NOT LIKE '\\_%' ORDER BY pg_total_relation_size(c.oid) DESC`,
    [schema],
  );
  const tables: TableSize[] = [];
  for (const r of rows) {
    const counted = await weft.db.raw<{ rows: Array<{ n: string }> }>(`SELECT count(*) AS n FROM "${schema}"."${r.table}" WHERE valid_to IS NULL`);
    tables.push({ table: r.table, rows: Number(counted.rows[0].n), heapBytes: Number(r.heap), totalBytes: Number(r.total) });
  }
  const database = await weft.db.raw<{ rows: Array<{ bytes: string }> }>('SELECT pg_database_size(current_database()) AS bytes');
  return { tables, databaseBytes: Number(database.rows[0].bytes) };
}

const mb = (bytes: number) => `${(bytes / 2 ** 20).toFixed(bytes >= 2 ** 30 ? 0 : 1)} MB`;

/**
 * The triples Weft maps from these records (ontology/term-records.ts, the records generated again
 * batch by batch), plus the package's: the whole dataset, as N-Triples texts of about `chunk`
 * triples handed to `each` one at a time (no copy of the whole is kept here).
 */
async function mappedTriples(weft: BenchWeft, loaded: Loaded, scale: RecordScale, each: (ntriples: string, triples: number) => void, chunk = 200_000): Promise<number> {
  const pkg = (await OntologyPackage.query(weft.db).findById(loaded.packageId))!;
  const writer = new Writer({ format: 'N-Triples' });
  const packageQuads: Quad[] = new Parser({ format: 'application/n-quads' }).parse(pkg.nquads);
  let lines: string[] = packageQuads.map((q) => writer.quadToString(q.subject, q.predicate, q.object));
  let total = 0;
  const flush = () => {
    total += lines.length;
    each(lines.join(''), lines.length);
    lines = [];
  };
  for (const { table: name, rows } of recordBatches(scale, 1000)) {
    const spec = MAPPINGS[name];
    for (const record of rows) {
      const mapped = mapRecord(record, spec.term, spec.mapping, pkg.terms, pkg.baseIri);
      if (mapped) for (const q of mapped.quads) lines.push(writer.quadToString(q.subject, q.predicate, q.object));
    }
    if (lines.length >= chunk) flush();
  }
  if (lines.length) flush();
  return total;
}

const PAGE = 10_000;

/** Triples a query may reach in bound tables (WEFT_SPARQL_MAX_REACHED_TRIPLES's default): the dataset is read back only within it. */
const REACH_BOUND = 2_000_000;

/**
 * The endpoint's whole dataset, through the endpoint, without aggregates: per predicate a
 * CONSTRUCT as N-Triples, in pages of 10,000 triples (the endpoint's result limit) until a page
 * comes back short. The predicates are the package's own (its N-Quads, from the package route) plus
 * the bound properties and links. Pages use LIMIT and OFFSET over the same kept store, so they follow one order.
 */
async function dumpThroughEndpoint(weft: BenchWeft, loaded: Loaded): Promise<{ lines: string[]; predicates: number; requests: number }> {
  // Through the bench's client: it replaces a kept-alive connection the API closed while Oxigraph's load held this process.
  const pkg = await requestText(`${weft.baseUrl}${loaded.ontologyBase}/packages/${loaded.packageId}`, { headers: { Authorization: `Bearer ${loaded.endpoint.key}`, Accept: 'application/n-quads' } });
  if (pkg.status !== 200) throw new Error(`package: ${pkg.status}`);
  const predicates = new Set(new Parser({ format: 'application/n-quads' }).parse(pkg.body).map((q) => q.predicate.value));
  predicates.add('http://www.w3.org/1999/02/22-rdf-syntax-ns#type');
  for (const spec of Object.values(MAPPINGS)) for (const name of [...Object.keys(spec.mapping.properties), ...Object.keys(spec.mapping.links ?? {})]) predicates.add(`${loaded.baseIri}${name}`);
  const lines: string[] = [];
  let requests = 0;
  const writer = new Writer({ format: 'N-Triples' });
  for (const p of predicates) {
    for (let offset = 0; ; offset += PAGE) {
      const answer = await post(loaded.endpoint, `CONSTRUCT { ?s <${p}> ?o } WHERE { ?s <${p}> ?o } LIMIT ${PAGE} OFFSET ${offset}`, 'application/n-triples');
      requests++;
      if (answer.status !== 200) throw new Error(`dump of ${p}: ${answer.status} ${answer.body.slice(0, 300)}`);
      const quads: Quad[] = new Parser({ format: 'application/n-triples' }).parse(answer.body);
      for (const q of quads) lines.push(q.subject.termType === 'BlankNode' || q.object.termType === 'BlankNode' ? `(blank) ${q.predicate.value}` : writer.quadToString(q.subject, q.predicate, q.object));
      if (quads.length < PAGE) break;
    }
  }
  return { lines, predicates: predicates.size, requests };
}

/** Reads the dataset back through the endpoint and checks it against the triples mapped in this process (blank nodes by count per predicate). */
async function readBack(weft: BenchWeft, loaded: Loaded, mapped: Set<string>, mappedBlank: Map<string, number>): Promise<number> {
  const dump = await timed(() => dumpThroughEndpoint(weft, loaded));
  const { lines } = dump.value;
  const unique = new Set(lines.filter((line) => !line.startsWith('(blank) ')));
  const blank = new Map<string, number>();
  for (const line of lines) if (line.startsWith('(blank) ')) blank.set(line, (blank.get(line) ?? 0) + 1);
  const named = lines.length - [...blank.values()].reduce((a, b) => a + b, 0);
  const sameBlank = blank.size === mappedBlank.size && [...blank].every(([k, n]) => mappedBlank.get(k) === n);
  const same = unique.size === mapped.size && [...unique].every((t) => mapped.has(t)) && sameBlank;
  const mappedCount = mapped.size + [...mappedBlank.values()].reduce((a, b) => a + b, 0);
  say(`read back through the endpoint: ${lines.length.toLocaleString('en')} triples (${unique.size === named ? 'no duplicates' : `!!! ${named - unique.size} DUPLICATES`}; ${dump.value.predicates} predicates, ${dump.value.requests} requests, ${(dump.ms / 1000).toFixed(1)} s); mapped in this process: ${mappedCount.toLocaleString('en')}, ${same ? 'the same triples' : '!!! OTHER TRIPLES'} (blank nodes compared by count)`);
  if (!same || lines.length !== mappedCount) say('!!! THE READ-BACK DATASET DIFFERS FROM THE MAPPED RECORDS');
  return lines.length;
}

// ---------------------------------------------------------------------------------------------
// The SQL peer

interface SqlPeer {
  endpoint: Endpoint;
  child: ChildProcess;
  queries: Map<string, SqlQuery>;
}

async function startSqlPeer(weft: BenchWeft, queries: Array<SqlQuery & { text: string }>): Promise<SqlPeer> {
  const port = await freePort();
  const child = fork(path.join(__dirname, 'support', 'sparql-sql-peer.ts'), [String(port)], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const ready = new Promise<void>((resolve, reject) => {
    child.once('message', () => resolve());
    child.once('exit', (code) => reject(new Error(`the SQL peer exited with ${code}`)));
  });
  child.send({ databaseUrl: weft.databaseUrl, queries });
  await ready;
  return { endpoint: { url: `http://127.0.0.1:${port}/sparql`, key: 'none' }, child, queries: new Map(queries.map((q) => [q.id, q])) };
}

/** EXPLAIN (ANALYZE, BUFFERS) of hand-written queries, each with its values, as PostgreSQL planned it on a connection of its own. */
/** Waits until no CREATE INDEX runs on the bench's database (at most 30 minutes); how many were seen running. */
async function indexBuildsDone(databaseUrl: string): Promise<number> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const seen = new Set<number>();
    for (const deadline = Date.now() + 30 * 60_000; Date.now() < deadline; ) {
      const { rows } = await client.query<{ pid: number }>('SELECT pid FROM pg_stat_progress_create_index WHERE datname = current_database()');
      if (!rows.length) break;
      for (const row of rows) seen.add(row.pid);
      await new Promise((resolve) => setTimeout(resolve, 1_000));
    }
    return seen.size;
  } finally {
    await client.end();
  }
}

async function explain(databaseUrl: string, queries: SqlQuery[]): Promise<Map<string, string>> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const plans = new Map<string, string>();
    for (const query of queries) {
      const { rows } = await client.query<{ 'QUERY PLAN': string }>({ text: `EXPLAIN (ANALYZE, BUFFERS) ${query.sql}`, values: query.values });
      plans.set(query.id, rows.map((r) => r['QUERY PLAN']).join('\n'));
    }
    return plans;
  } finally {
    await client.end();
  }
}

// ---------------------------------------------------------------------------------------------
// Where a request's time goes, measured in this process with Weft's own functions

interface Breakdown {
  /** A request whose evaluation is trivial (ASK {}): the endpoint's fixed cost. */
  askEmptyMs: number;
  /** An authenticated GET /organization by the same client: the request path every route shares. */
  organizationMs: number;
  /** The same client's GET of ASK {}'s answer from bare Koa + @koa/router in a process of its own: HTTP and Koa, nothing of Weft's. */
  bareKoaMs: number;
  /** Pieces of that fixed cost, in this process: key, warm dataset, ASK {} itself; then the credit check and the charge, which run beside the evaluation. */
  fixed: Array<[string, number]>;
  /** Of `fixed`, the pieces that run beside the evaluation: the request waits for the longest of them and the evaluation. */
  beside: string[];
  readMs: number;
  mapMs: number;
  storeMs: number;
  coldDatasetMs: number;
  warmDatasetMs: number;
  evaluate: Map<string, number>;
  serialize: Map<string, number>;
}

/** The median time of the bench's client getting `body` from bare Koa + @koa/router (bench/support/api-bare-koa.ts) in a process of its own. */
async function bareKoa(body: string, runs: number): Promise<number> {
  const port = await freePort();
  const child = fork(path.join(__dirname, 'support', 'api-bare-koa.ts'), [String(port)], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  try {
    const ready = new Promise<void>((resolve) => child.once('message', () => resolve()));
    child.send({ bodies: { '/ask': JSON.parse(body) } });
    await ready;
    return (await bench(() => requestText(`http://127.0.0.1:${port}/ask`), runs, 2)).median;
  } finally {
    child.kill('SIGTERM');
  }
}

/** The endpoint's fixed cost (ASK {}) over HTTP, beside GET /organization and bare Koa answering the same bytes, by the same client. */
async function fixedCostOverHttp(weft: BenchWeft, loaded: Loaded, runs: number): Promise<Pick<Breakdown, 'askEmptyMs' | 'organizationMs' | 'bareKoaMs'>> {
  const askEmpty = await bench(() => post(loaded.endpoint, 'ASK {}', 'application/sparql-results+json'), Math.max(runs, 9), 2);
  // The same client and key on the path every route shares (key, limits, Koa, HTTP): what ASK {} adds to it is the SPARQL route's own.
  const organization = await bench(() => requestText(`${weft.baseUrl}/api/v1/organization`, { headers: { Authorization: `Bearer ${weft.tenant.key}` } }), Math.max(runs, 9), 2);
  const bareKoaMs = await bareKoa(askEmpty.value.body, Math.max(runs, 9));
  return { askEmptyMs: askEmpty.median, organizationMs: organization.median, bareKoaMs };
}

async function breakdown(weft: BenchWeft, loaded: Loaded, queries: MixQuery[], texts: Map<string, string>, runs: number, httpCost: Pick<Breakdown, 'askEmptyMs' | 'organizationMs' | 'bareKoaMs'>): Promise<Breakdown> {
  const { principal } = await authenticateRequest(workerDependencies(weft), weft.tenant.key);
  const project = (await Project.query(weft.db).findById(weft.tenant.projectId))!;
  const pkg = (await OntologyPackage.query(weft.db).findById(loaded.packageId))!;
  const bindings = await ReadBinding.query(weft.db).whereIn('id', loaded.bindingIds).orderBy([{ column: 'createdAt' }, { column: 'id' }]);
  // What the SPARQL operation's services get, for calling them one at a time (no Temporal: none is reached).
  const ctx: OperationContext = { db: weft.db, deps: workerDependencies(weft), principal, project, door: 'sparql', requestId: 'bench' };

  // The steps of a cold build, one at a time: read every record page, map records to quads, index them in an n3 Store.
  let records: Array<{ binding: ReadBinding; rows: Array<Record<string, unknown>> }> = [];
  const read = await timed(async () => {
    const out: typeof records = [];
    for (const binding of bindings) {
      const rows: Array<Record<string, unknown>> = [];
      let cursor: string | undefined;
      do {
        const page = await readEndpointRecords(ctx, binding.dataEndpointId, { limit: 1000, select: bindingFields(binding.mapping).join(','), cursor });
        rows.push(...page.data);
        cursor = page.metadata.nextCursor ?? undefined;
      } while (cursor);
      out.push({ binding, rows });
    }
    return out;
  });
  records = read.value;
  const mapped = await timed(() => {
    const quads: Quad[] = new Parser({ format: 'application/n-quads' }).parse(pkg.nquads);
    for (const { binding, rows } of records) for (const record of rows) quads.push(...(mapRecord(record, binding.termId, binding.mapping, pkg.terms, pkg.baseIri)?.quads ?? []));
    return quads;
  });
  const stored = await timed(() => new Store(mapped.value));
  records = [];

  // The service function itself: the first call builds; later calls find what the service keeps.
  const cold = await timed(() => sparqlDataset(ctx));
  const warm = await bench(() => sparqlDataset(ctx), runs, 1);
  const store = stored.value;
  const evaluate = new Map<string, number>();
  const serialize = new Map<string, number>();
  for (const query of queries) {
    const text = texts.get(query.id)!;
    const evaluated = await bench(() => evaluateQuery(store, text, { timeoutMs: 60_000, maxResults: 10_000 }, { parses }), runs, 1);
    evaluate.set(query.id, evaluated.median);
    const serialized = await bench(() => serializeResult(evaluated.value, acceptFor(query)), runs, 1);
    serialize.set(query.id, serialized.median);
  }
  const piece = async (fn: () => Promise<unknown>) => (await bench(fn, Math.max(runs, 9), 2)).median;
  const fixed: Array<[string, number]> = [
    ['API key check and count (authenticateRequest)', await piece(() => authenticateRequest(workerDependencies(weft), weft.tenant.key))],
    ['catalog, snapshots and graphs, all kept (sparqlDataset)', warm.median],
    ['evaluateQuery ASK {}', await piece(() => evaluateQuery(store, 'ASK {}', { timeoutMs: 10_000, maxResults: 10_000 }, { parses }))],
    ['credit check (assertCredit)', await piece(() => assertCredit(ctx.deps, weft.db, principal.workspaceId, 'sparql_query'))],
    ['metering (charge)', await piece(() => ctx.deps.metering.charge(weft.db, { workspaceId: principal.workspaceId, projectId: project.id, kind: 'sparql_query', ref: randomUUID(), actor: principal, quantities: { query: 1 } }))],
  ];
  const beside = ['evaluateQuery ASK {}', 'credit check (assertCredit)', 'metering (charge)'];
  // The charges the pieces above made through its own metering are written, its leases returned.
  await ctx.deps.metering.close();
  return { ...httpCost, fixed, beside, readMs: read.ms, mapMs: mapped.ms, storeMs: stored.ms, coldDatasetMs: cold.ms, warmDatasetMs: warm.median, evaluate, serialize };
}

/** Reads the dataset back through the endpoint, checks it against the records mapped in this process, and keeps only its N-Triples. */
// ---------------------------------------------------------------------------------------------
// One scale

const label = (n: number) => (n >= 1_000_000 && n % 1_000_000 === 0 ? `${n / 1_000_000}M` : n >= 1000 && n % 1000 === 0 ? `${n / 1000}k` : String(n));
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

interface Answer {
  status: number;
  body: string;
}

/** The results of an answer, or undefined for a refusal. */
function resultsOf(query: MixQuery, answer: Answer): Results | undefined {
  return answer.status === 200 ? weftResults(query, answer.body) : undefined;
}

/** 1,000 new offers, ids from `firstId`: the first ten are the chosen product's, from a vendor of the queried country, cheaper than any offer before them and valid later (so q10's answer changes each round); the rest spread over the products. */
function newOffers(scale: RecordScale, firstId: number, chosenProduct: number, country: string, round: number): Row[] {
  const vendor = COUNTRY_CODES.indexOf(country);
  return Array.from({ length: 1000 }, (_, i) => {
    const id = firstId + i;
    const chosen = i < 10;
    return {
      id,
      product: chosen ? chosenProduct : (id * 7919) % scale.products,
      vendor: chosen ? vendor : id % scale.vendors,
      price: chosen ? Number((1 / (round + 1) + i / 10000).toFixed(4)) : Number((5 + ((id * 31) % 9995)).toFixed(2)),
      valid_from: '2009-01-01',
      valid_to: '2009-12-31',
      delivery_days: chosen ? 1 : 1 + (id % 7),
      webpage: `https://vendor.bsbm.example/offers/${id}`,
    };
  });
}

async function scale(target: number, opts: Options): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  const sc = recordScale(target);
  const at = `${label(target)} records`;
  const params = recordParams(sc);
  const estimatedTriples = Math.round(sc.records * TRIPLES_PER_RECORD);
  say(`\n## ${at}: ${sc.records.toLocaleString('en')} records in 8 managed tables (${sc.products.toLocaleString('en')} products, ${(sc.products * 20).toLocaleString('en')} offers, ${(sc.products * 10).toLocaleString('en')} reviews, ${sc.features.toLocaleString('en')} features, ${sc.persons.toLocaleString('en')} reviewers, ${sc.producers.toLocaleString('en')} producers, ${sc.vendors.toLocaleString('en')} vendors, ${sc.types} types); about ${estimatedTriples.toLocaleString('en')} triples mapped`);

  // --cpu-prof and V8's flags are refused in NODE_OPTIONS: they go to the API's node arguments
  // (startBenchWeft's apiNodeArgs), V8's from SPARQL_API_NODE_ARGS as in the other benches.
  const metricsPort = await freePort();
  const metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
  const settings: Parameters<typeof startBenchWeft>[0] & { apiNodeArgs?: string[] } = { name: BENCHMARK, temporal: true, apiEnv: { WEFT_METRICS_PORT: String(metricsPort) } };
  settings.apiNodeArgs = [...(opts.cpuProf ? ['--cpu-prof', `--cpu-prof-dir=${opts.cpuProf}`] : []), ...(process.env.SPARQL_API_NODE_ARGS?.split(' ').filter(Boolean) ?? [])];
  const weft = await startBenchWeft(settings);
  let peer: SqlPeer | undefined;
  let oxStore: oxigraph.Store | undefined;
  try {
    // Loading, as a user's data lands: through the capability, in large committed batches.
    const walBefore = await weft.db.raw<{ rows: Array<{ lsn: string }> }>('SELECT pg_current_wal_lsn() AS lsn');
    const loadTimer = await timed(() => load(weft, sc, opts.batch));
    const { loaded, tables: written, writeMs } = loadTimer.value;
    const wal = await weft.db.raw<{ rows: Array<{ bytes: string }> }>('SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), ?) AS bytes', [walBefore.rows[0].lsn]);
    const walBytes = Number(wal.rows[0].bytes);
    say(`loaded into Weft in ${seconds(loadTimer.ms)}: records written through the managed_table capability in ${seconds(writeMs)} (${Math.round(sc.records / (writeMs / 1000)).toLocaleString('en')} records/s, batches of ${opts.batch.toLocaleString('en')}, ${WRITES_IN_FLIGHT} writes in flight); the rest is terms, links, compile, activate, 8 endpoints and 8 bindings; ${mb(walBytes)} of WAL written`);
    say(`  writes per table: ${[...written].map(([table, t]) => `${table} ${t.records.toLocaleString('en')} in ${t.writes} write(s), ${seconds(t.ms)}`).join('; ')}`);
    // Indexes first, so ANALYZE gathers their expressions' statistics too.
    if (opts.sqlIndexes) {
      const indexed = await timed(async () => {
        for (const statement of linkIndexes(loaded.schema)) await weft.db.raw(statement);
      });
      say(`--sql-indexes: ${linkIndexes(loaded.schema).length} expression indexes on the product links of offers and reviews in ${seconds(indexed.ms)} (both Weft and the SQL peer read these tables)`);
    }
    const analyzed = await timed(async () => {
      for (const spec of Object.values(MAPPINGS)) await weft.db.raw(`ANALYZE "${loaded.schema}"."${spec.table}"`);
    });
    const sizes = await tableSizes(weft, loaded.schema);
    const tableBytes = sizes.tables.reduce((sum, t) => sum + t.totalBytes, 0);
    say(`tables on disk (ANALYZE after the load, ${seconds(analyzed.ms)}; heap / with TOAST and indexes): ${sizes.tables.map((t) => `${t.table} ${t.rows.toLocaleString('en')} rows ${mb(t.heapBytes)} / ${mb(t.totalBytes)}`).join('; ')}; all ${mb(tableBytes)} (${Math.round(tableBytes / sc.records)} bytes a record); database ${mb(sizes.databaseBytes)}`);
    rows.push(figure({ benchmark: BENCHMARK, measure: `${at}: load through managed_table`, weft: writeMs / 1000, unit: 's', note: `${sc.records.toLocaleString('en')} records, ${Math.round(sc.records / (writeMs / 1000)).toLocaleString('en')} records/s in batches of ${opts.batch.toLocaleString('en')}; whole setup ${seconds(loadTimer.ms)}; WAL ${mb(walBytes)}` }));
    rows.push(figure({ benchmark: BENCHMARK, measure: `${at}: managed tables on disk`, weft: tableBytes / 2 ** 20, unit: 'MB', note: `${Math.round(tableBytes / sc.records)} bytes a record with indexes; database ${mb(sizes.databaseBytes)}` }));

    const queries = MIX.filter((q) => !opts.only.length || opts.only.includes(q.id));
    const texts = new Map(queries.map((q) => [q.id, q.text(loaded.baseIri, params)]));
    const sqlQueries = handWrittenSql(loaded.schema, loaded.baseIri, params).filter((q) => texts.has(q.id));
    peer = await startSqlPeer(weft, sqlQueries.map((q) => ({ ...q, text: texts.get(q.id)! })));
    const sqlPeer = peer;

    // The first request builds Weft's dataset (reads every bound record, maps it, builds the store),
    // or is refused past WEFT_SPARQL_MAX_DATASET_TRIPLES; ASK { ?s ?p ?o } stops at the first triple.
    const probe = 'ASK { ?s ?p ?o }';
    const settled = await settledMemory(weft.api.pid!);
    say(`API process memory before the first request: RSS ${settled.samples[0].toFixed(0)} MB after the load, ${settled.rss.toFixed(0)} MB once settled (${settled.samples.map((mb) => mb.toFixed(0)).join(' → ')}, a sample every 2 s; peak ${processMemoryMb(weft.api.pid!).peak.toFixed(0)} MB); ${await memoryParts(weft.api.pid!, metricsUrl)}`);
    const first = await timed(() => post(loaded.endpoint, probe, 'application/sparql-results+json'));
    const refusal = first.value.status === 200 ? undefined : `${first.value.status} ${problemCode(first.value.body)}`;
    // Bound tables past WEFT_SPARQL_MAX_REACHED_TRIPLES are not read whole: a query that reaches a
    // whole table is refused (query_too_broad), and the mix's queries are read or answered in SQL one by one.
    const perQuery = first.value.status === 422 && problemCode(first.value.body) === 'query_too_broad';
    if (refusal && !perQuery && !(first.value.status === 422 && problemCode(first.value.body) === 'dataset_too_large')) throw new Error(`first request: ${first.value.status} ${first.value.body}`);
    const weftAnswers = refusal === undefined || perQuery;
    /**
     * Weft's dataset can be read back and the queries outside the mix sent: it answered the
     * whole-dataset request and its tables are within the reach bound, so a query may reach every
     * record (an ASK answers from its first records at any scale; the read-back's pages and the
     * queries outside the mix reach whole tables, which past the bound are refused as query_too_broad).
     */
    const wholeDataset = refusal === undefined && estimatedTriples <= REACH_BOUND;
    const afterFirst = processMemoryMb(weft.api.pid!);
    if (refusal === undefined && !wholeDataset) {
      say(`Weft's first request (ASK, from its first records) ${fmt(first.ms)} ms; API RSS ${afterFirst.rss.toFixed(0)} MB. About ${estimatedTriples.toLocaleString('en')} triples are past the reach bound (${REACH_BOUND.toLocaleString('en')}), so the dataset is not read back`);
      rows.push(figure({ benchmark: BENCHMARK, measure: `${at}: first query`, weft: first.ms, unit: 'ms', note: 'ASK { ?s ?p ?o }, from its first records' }));
    } else if (perQuery) {
      say(`Weft refused the whole-dataset request (${refusal}, after ${seconds(first.ms)}): its bound tables are past the reach bound, so they are not read whole; the mix is sent and its dataset is not read back. API RSS ${afterFirst.rss.toFixed(0)} MB`);
      rows.push(figure({ benchmark: BENCHMARK, measure: `${at}: Weft's whole-dataset query`, weft: first.ms, unit: 'ms', note: `refused ${refusal} (ASK { ?s ?p ?o } reaches every table whole)` }));
    } else if (weftAnswers) {
      const again = await bench(() => post(loaded.endpoint, probe, 'application/sparql-results+json'), 5, 1);
      say(`Weft's first request (ASK, builds the dataset) ${fmt(first.ms)} ms, then ${fmt(again.median)} ms; API RSS ${afterFirst.rss.toFixed(0)} MB`);
      rows.push(figure({ benchmark: BENCHMARK, measure: `${at}: first query (builds the dataset)`, weft: first.ms, unit: 'ms', note: `ASK { ?s ?p ?o }; the same query again: ${fmt(again.median)} ms` }));
    } else {
      say(`!!! Weft refused the first request: ${refusal} after ${seconds(first.ms)} (${first.value.body.slice(0, 400)}). The mix is not sent to Weft at this scale (each refusal reads every record again); the peers run.`);
      rows.push(figure({ benchmark: BENCHMARK, measure: `${at}: Weft's first query`, weft: first.ms, unit: 'ms', note: `REFUSED ${refusal}: ASK { ?s ?p ?o } over ${sc.records.toLocaleString('en')} records (about ${estimatedTriples.toLocaleString('en')} triples)` }));
    }

    // Oxigraph over the triples Weft maps from these records, where they fit in memory; where Weft
    // answers, those triples are also checked against the endpoint's own dataset, read back.
    const runOx = estimatedTriples <= opts.oxigraphMaxTriples;
    const mappedSet = new Set<string>();
    const mappedBlank = new Map<string, number>();
    let oxFailure: string | undefined;
    if (runOx || wholeDataset) {
      let store = runOx ? new oxigraph.Store() : undefined;
      let oxMs = 0;
      const mapping = await timed(() =>
        mappedTriples(weft, loaded, sc, (ntriples) => {
          // Oxigraph's WebAssembly build addresses at most 4 GiB: a store that does not fit fails here.
          try {
            if (store) oxMs += timedSync(() => store!.load(ntriples, { format: 'application/n-triples' }));
          } catch (error) {
            oxFailure = `after ${store!.size.toLocaleString('en')} quads: ${(error as Error).message}`;
            (store as unknown as { free?: () => void }).free?.();
            store = undefined;
          }
          if (!wholeDataset) return;
          for (const line of ntriples.split(/(?<=\n)/)) {
            if (!line) continue;
            if (/^_:|_:\S+ \.\n$/.test(line)) {
              const key = `(blank) ${/^\S+ <([^>]+)>/.exec(line)![1]}`;
              mappedBlank.set(key, (mappedBlank.get(key) ?? 0) + 1);
            } else mappedSet.add(line);
          }
        }),
      );
      if (store) {
        oxStore = store;
        say(`Oxigraph loaded: ${store.size.toLocaleString('en')} quads by store.load(N-Triples) in ${seconds(oxMs)} (mapping the records in this process ${seconds(mapping.ms - oxMs)}); this process's RSS ${processMemoryMb(process.pid).rss.toFixed(0)} MB`);
      }
      rows.push(figure({ benchmark: BENCHMARK, measure: `${at}: triples mapped`, weft: mapping.value, unit: 'triples', note: `the records mapped as Weft maps them, plus the package${store ? '; Oxigraph holds them' : ''}` }));
    }
    if (oxFailure) say(`!!! Oxigraph could not load the dataset (${oxFailure}); answers are compared between Weft and the SQL peer`);
    if (!runOx) say(`Oxigraph skipped: about ${estimatedTriples.toLocaleString('en')} triples, past --oxigraph-max-triples ${opts.oxigraphMaxTriples.toLocaleString('en')}; answers are compared between Weft and the SQL peer`);

    // Every engine is warmed alike before the mix, at every scale: --serve-first requests cycling
    // through the mix's texts it answers in under 20 ms, so V8 has compiled its request path and the
    // SQL peer's connections have prepared their statements. Queries outside the mix (a triple
    // pattern with an OPTIONAL, a UNION) reach whole tables: past the reach bound they are refused,
    // and under it they leave whole graphs in the API that the mix never reads, so its memory after
    // the mix would not compare across scales.
    if (opts.serveFirst > 0) {
      const warmUps: Array<{ name: string; answer: (query: MixQuery, text: string) => Promise<unknown> | unknown }> = [
        ...(weftAnswers ? [{ name: 'Weft', answer: (query: MixQuery, text: string) => post(loaded.endpoint, text, acceptFor(query)) }] : []),
        { name: 'the SQL peer', answer: (query: MixQuery, text: string) => post(sqlPeer.endpoint, text, acceptFor(query)) },
        ...(oxStore ? [{ name: 'Oxigraph', answer: (query: MixQuery, text: string) => runOxigraph(oxStore!, query, text) }] : []),
      ];
      for (const { name, answer } of warmUps) {
        // Weft's memory through the warm-up: each text's first answer (RSS after it, peak while it
        // ran) and the served-first requests, so growth before the mix can be placed.
        const apiPid = name === 'Weft' ? weft.api.pid! : undefined;
        const firstAnswers: string[] = [];
        const cheap: MixQuery[] = [];
        for (const query of queries) {
          const peakReset = apiPid !== undefined && resetPeakMemory(apiPid);
          const first = await timed(async () => answer(query, texts.get(query.id)!));
          if (first.ms < 20) cheap.push(query);
          if (peakReset) {
            const memory = processMemoryMb(apiPid!);
            const triples = (first.value as { datasetTriples?: number }).datasetTriples;
            const path = triples === undefined ? '' : triples === 0 ? ', in SQL' : `, over ${triples.toLocaleString('en')} triples`;
            firstAnswers.push(`${query.id} ${memory.rss.toFixed(0)} (peak ${memory.peak.toFixed(0)}; ${fmt(first.ms)} ms${path})`);
          }
        }
        const servedPeakReset = apiPid !== undefined && resetPeakMemory(apiPid);
        const served = await timed(async () => {
          for (let i = 0; cheap.length && i < opts.serveFirst; i++) await answer(cheap[i % cheap.length], texts.get(cheap[i % cheap.length].id)!);
        });
        say(`${name} served first: ${cheap.length ? opts.serveFirst.toLocaleString('en') : 0} requests of the mix's ${cheap.length} cheap texts in ${fmt(served.ms)} ms`);
        if (firstAnswers.length) say(`API process memory after each text's first answer (RSS, peak while it ran, MB; its time and how it was answered): ${firstAnswers.join('; ')}`);
        if (servedPeakReset) {
          const memory = processMemoryMb(apiPid!);
          say(`API process memory after the served-first requests: RSS ${memory.rss.toFixed(0)} MB, peak ${memory.peak.toFixed(0)} MB while they ran; ${await memoryParts(weft.api.pid!, metricsUrl)}`);
        }
      }
    }
    // The first reads of a bound table start its field indexes' builds (CREATE INDEX CONCURRENTLY,
    // field-indexes.ts): the mix is timed once they are built, as on a server that has run a while.
    const building = await timed(() => indexBuildsDone(weft.databaseUrl));
    if (building.value) say(`waited ${seconds(building.ms)} for ${building.value} field index build(s) Weft started`);

    // The mix: Weft, the SQL peer and Oxigraph take turns, run by run.
    const engines = ['Weft', 'SQL', 'Oxigraph'] as const;
    const table: string[][] = [];
    const medians = { weft: [] as number[], sql: [] as number[], ox: [] as number[] };
    const threadMedians: number[] = [];
    const warm = new Map<string, { weft?: number; sql: number }>();
    const sqlMedians: Array<{ id: string; ms: number }> = [];
    let differences = 0;
    // The API's memory per query: its RSS before and after the query's runs, and its peak while they ran.
    const memoryByQuery: Array<{ id: string; before: number; after: number; peak: number }> = [];
    let mixPeak = processMemoryMb(weft.api.pid!).peak;
    for (const query of queries) {
      const text = texts.get(query.id)!;
      const ordered = orderedBy(text);
      const apiPid = weft.api.pid!;
      const memoryBefore = processMemoryMb(apiPid);
      const peakReset = resetPeakMemory(apiPid);
      const threadTimes: number[] = [];
      const fns: Array<() => unknown> = [];
      const clocks: Array<() => number> = [];
      if (weftAnswers) {
        fns.push(() => post(loaded.endpoint, text, acceptFor(query)).then((answer) => (threadTimes.push(answer.threadMs), answer)));
        clocks.push(() => processCpuMs(apiPid));
      }
      fns.push(() => post(sqlPeer.endpoint, text, acceptFor(query)));
      clocks.push(() => processCpuMs(sqlPeer.child.pid!));
      if (oxStore) {
        const store = oxStore;
        fns.push(() => runOxigraph(store, query, text));
        clocks.push(ownCpuMs);
      }
      const timings = await benchTogether(fns, clocks, opts.runs, opts.warmup);
      const memoryAfter = processMemoryMb(apiPid);
      mixPeak = Math.max(mixPeak, memoryAfter.peak);
      if (peakReset) memoryByQuery.push({ id: query.id, before: memoryBefore.rss, after: memoryAfter.rss, peak: memoryAfter.peak });
      const w = weftAnswers ? (timings.shift() as Timing<Answer> & { cpu: number }) : undefined;
      const s = timings.shift() as Timing<Answer> & { cpu: number };
      const o = oxStore ? (timings.shift() as Timing<Results> & { cpu: number }) : undefined;
      if (s.value.status !== 200) throw new Error(`${query.id}: the SQL peer answered ${s.value.status} ${s.value.body.slice(0, 300)}`);
      const sr = resultsOf(query, s.value)!;
      const wr = w ? resultsOf(query, w.value) : undefined;
      const checks: string[] = [];
      if (o) {
        const sqlCheck = compare(sr, o.value, ordered);
        if (sqlCheck) checks.push(`SQL/Oxigraph ${sqlCheck}`);
      }
      if (w && !wr) checks.push(`Weft answered ${w.value.status} ${problemCode(w.value.body)}`);
      if (wr) {
        const weftCheck = o ? compare(wr, o.value, ordered) : compare(wr, sr, ordered);
        if (weftCheck) checks.push(`Weft/${o ? 'Oxigraph' : 'SQL'} ${weftCheck}`);
      }
      if (checks.length) {
        differences++;
        say(`!!! ${query.id}: ${checks.join('; ')}`);
      }
      const threadMs = median(threadTimes.slice(-opts.runs));
      const runs = [w, s, o].filter(Boolean).map((t) => t!.runs || 'cold').join('/');
      const weftCell = w ? (wr ? fmt(w.median) : `${w.value.status} ${problemCode(w.value.body)}`) : refusal ? `(${refusal})` : '';
      table.push([
        query.id,
        String(count(o?.value ?? sr)),
        checks.length ? `DIFFER: ${checks.join('; ')}` : o ? (wr ? 'same (3)' : 'same (SQL, Ox)') : wr ? 'same (Weft, SQL)' : 'SQL only',
        runs,
        weftCell,
        w && wr ? fmt(threadMs) : '',
        fmt(s.median),
        o ? fmt(o.median) : '-',
        w && wr ? (w.median / s.median).toFixed(2) : '',
        w && wr && o ? (w.median / o.median).toFixed(2) : '',
        o ? (s.median / o.median).toFixed(2) : '',
      ]);
      if (w && wr) {
        medians.weft.push(w.median);
        threadMedians.push(threadMs);
      }
      medians.sql.push(s.median);
      if (o) medians.ox.push(o.median);
      warm.set(query.id, { weft: w && wr ? w.median : undefined, sql: s.median });
      sqlMedians.push({ id: query.id, ms: s.median });
      const note = [`${count(o?.value ?? sr)} results`, o ? `Oxigraph ${fmt(o.median)} ms` : 'Oxigraph not run', checks.length ? checks.join('; ') : 'answers equal', w ? `CPU ms Weft ${fmt(w.cpu)}, SQL peer ${fmt(s.cpu)}` : `Weft: ${refusal}`].join('; ');
      if (w && wr) rows.push(row({ benchmark: BENCHMARK, measure: `${at}: ${query.id}`, weft: w.median, peer: s.median, peerName: 'hand-written SQL', unit: 'ms', note }));
      else rows.push(figure({ benchmark: BENCHMARK, measure: `${at}: ${query.id}, hand-written SQL`, weft: s.median, unit: 'ms', note: `Weft ${w ? `${w.value.status} ${problemCode(w.value.body)}` : `not sent (${refusal})`}; ${note}` }));
    }
    const gm = { weft: medians.weft.length === queries.length ? geomean(medians.weft) : Number.NaN, sql: geomean(medians.sql), ox: medians.ox.length ? geomean(medians.ox) : Number.NaN };
    const gmCell = (x: number) => (Number.isNaN(x) ? '' : fmt(x));
    const ratioCell = (a: number, b: number) => (Number.isNaN(a) || Number.isNaN(b) ? '' : (a / b).toFixed(2));
    table.push(['(geometric mean)', '', differences ? `${differences} DIFFER` : 'all equal', '', gmCell(gm.weft), weftAnswers ? fmt(geomean(threadMedians.map((ms) => Math.max(ms, 0.001)))) : '', fmt(gm.sql), gmCell(gm.ox), ratioCell(gm.weft, gm.sql), ratioCell(gm.weft, gm.ox), ratioCell(gm.sql, gm.ox)]);
    say('');
    say(markdown(['query', 'results', 'check', `runs ${engines.filter((e) => (e === 'Weft' ? weftAnswers : e === 'Oxigraph' ? Boolean(oxStore) : true)).map((e) => e[0]).join('/')}`, 'Weft ms', 'in query thread ms', 'SQL ms', 'Oxigraph ms', 'Weft/SQL', 'Weft/Ox', 'SQL/Ox'], table));
    const compared = oxStore ? (weftAnswers ? 'the SQL peer and Weft against Oxigraph' : `the SQL peer against Oxigraph (Weft refused: ${refusal})`) : weftAnswers ? 'Weft against the SQL peer (Oxigraph not run)' : `none: Weft refused (${refusal}) and Oxigraph did not run`;
    say(`answers: ${differences ? `!!! ${differences} of ${queries.length} queries DIFFER` : `all ${queries.length} equal`} (${compared}; in order where ORDER BY fixes it)`);
    rows.push(figure({ benchmark: BENCHMARK, measure: `${at}: answers equal`, weft: queries.length - differences, unit: `of ${queries.length} queries`, note: compared }));
    if (weftAnswers) {
      rows.push(row({ benchmark: BENCHMARK, measure: `${at}: mix geomean vs hand-written SQL`, weft: gm.weft, peer: gm.sql, peerName: 'hand-written SQL (bare Koa + pg)', unit: 'ms', target: target >= 1_000_000 ? '<= 3' : undefined, note: 'goal <= 1.5' }));
      if (oxStore) rows.push(row({ benchmark: BENCHMARK, measure: `${at}: mix geomean vs Oxigraph`, weft: gm.weft, peer: gm.ox, peerName: 'Oxigraph (in-process)', unit: 'ms', note: target === 1_000_000 ? 'goal <= 1' : undefined }));
    } else {
      rows.push(figure({ benchmark: BENCHMARK, measure: `${at}: mix geomean, hand-written SQL`, weft: gm.sql, unit: 'ms', note: `Weft REFUSED (${refusal}); ${oxStore ? `Oxigraph ${fmt(gm.ox)} ms` : 'Oxigraph not run'}` }));
    }
    if (oxStore) rows.push(figure({ benchmark: BENCHMARK, measure: `${at}: mix geomean, SQL/Oxigraph`, weft: gm.sql / gm.ox, unit: 'x', note: `SQL ${fmt(gm.sql)} ms, Oxigraph ${fmt(gm.ox)} ms` }));

    // The mix's memory is taken before the mix with every text new: that phase keeps a parse and a
    // reached graph per new text (bounded by WEFT_SPARQL_ENCODED_MB), which only scales Oxigraph runs at have.
    const afterMix = processMemoryMb(weft.api.pid!);
    const afterMixParts = await memoryParts(weft.api.pid!, metricsUrl);
    const memory = { rss: afterMix.rss, peak: Math.max(mixPeak, afterMix.peak) };
    // The same mix with every text new, for Weft and Oxigraph (the SQL peer answers only the mix's texts).
    if (weftAnswers && oxStore) {
      const store = oxStore;
      const freshPairs: Array<{ w: number; o: number }> = [];
      let freshRun = 0;
      const fresh = (text: string) => `${text}\n# run ${++freshRun}`;
      for (const query of queries) {
        const text = texts.get(query.id)!;
        const [w, o] = (await benchTogether([() => post(loaded.endpoint, fresh(text), acceptFor(query)), () => runOxigraph(store, query, fresh(text))], [() => 0, () => 0], opts.runs, opts.warmup)) as [Timing<Answer> & { cpu: number }, Timing<Results> & { cpu: number }];
        if (w.value.status !== 200) throw new Error(`${query.id} with a new text: ${w.value.status} ${w.value.body.slice(0, 300)}`);
        freshPairs.push({ w: w.median, o: o.median });
      }
      const freshGm = { weft: geomean(freshPairs.map((pair) => pair.w)), ox: geomean(freshPairs.map((pair) => pair.o)) };
      say(`the mix with every text new (no kept parse or plan): Weft ${fmt(freshGm.weft)} ms, Oxigraph ${fmt(freshGm.ox)} ms (${(freshGm.weft / freshGm.ox).toFixed(2)}x)`);
      rows.push(row({ benchmark: BENCHMARK, measure: `${at}: mix geomean, every text new, vs Oxigraph`, weft: freshGm.weft, peer: freshGm.ox, peerName: 'Oxigraph (in-process)', unit: 'ms', note: 'each request a text neither engine has seen (a comment names the run): no kept parse or plan' }));
    }

    if (opts.explain) {
      const slowest = [...sqlMedians].sort((a, b) => b.ms - a.ms).slice(0, 10);
      const plans = await explain(weft.databaseUrl, slowest.map(({ id }) => sqlPeer.queries.get(id)!));
      say(`\nEXPLAIN (ANALYZE, BUFFERS) of the ${slowest.length} slowest hand-written SQL queries at ${at}:`);
      for (const { id, ms } of slowest) say(`\n### ${id} (median ${fmt(ms)} ms through the peer)\n\n${plans.get(id)}`);
    }

    if (memoryByQuery.length) say(`API process memory per query (RSS before → after the query's runs, peak while they ran, MB): ${memoryByQuery.map((m) => `${m.id} ${m.before.toFixed(0)} → ${m.after.toFixed(0)} (peak ${m.peak.toFixed(0)})`).join('; ')}`);
    say(`\nAPI process memory after the mix: RSS ${memory.rss.toFixed(0)} MB (peak ${memory.peak.toFixed(0)} MB)${weftAnswers ? '' : ' (Weft refused every request)'}; the SQL peer's ${processMemoryMb(sqlPeer.child.pid!).rss.toFixed(0)} MB; ${afterMixParts}`);
    if (oxStore && weftAnswers) {
      const afterFresh = processMemoryMb(weft.api.pid!);
      say(`API process memory after the mix with every text new: RSS ${afterFresh.rss.toFixed(0)} MB (peak ${afterFresh.peak.toFixed(0)} MB)`);
    }
    rows.push(figure({ benchmark: BENCHMARK, measure: `${at}: API process RSS after the mix`, weft: memory.rss, unit: 'MB', note: `peak ${memory.peak.toFixed(0)} MB; after the first request ${afterFirst.rss.toFixed(0)} MB${weftAnswers ? '' : `; Weft refused (${refusal})`}` }));

    // The read-back comes after the mix's memory is taken: its pages reach every table whole, and
    // where that is within the reach bound the whole graphs are kept (within WEFT_SPARQL_KEPT_TRIPLES),
    // which no scale past the bound does; the mix is the workload every scale shares.
    if (wholeDataset) {
      await readBack(weft, loaded, mappedSet, mappedBlank);
      mappedSet.clear();
      mappedBlank.clear();
      const afterReadBack = processMemoryMb(weft.api.pid!);
      say(`API process memory after the read-back: RSS ${afterReadBack.rss.toFixed(0)} MB (peak ${afterReadBack.peak.toFixed(0)} MB)`);
      rows.push(figure({ benchmark: BENCHMARK, measure: `${at}: API process RSS after the read-back`, weft: afterReadBack.rss, unit: 'MB', note: `peak ${afterReadBack.peak.toFixed(0)} MB: every table read whole, its graph kept within WEFT_SPARQL_KEPT_TRIPLES` }));
    }

    // The first query after a commit of 1,000 records, against the same query warm. Oxigraph is
    // done: it has no commit path, and the answers now move.
    (oxStore as unknown as { free?: () => void } | undefined)?.free?.();
    oxStore = undefined;
    const commitQuery = queries.find((q) => q.id === 'q10-offers');
    if (opts.commitRounds > 0 && commitQuery) {
      const text = texts.get(commitQuery.id)!;
      const chosen = Number(params.product.slice(params.product.lastIndexOf('/') + 1));
      const firsts: Array<{ commit: number; weft?: number; weftThread?: number; weftSaw: boolean; sql: number; check: string; weftWarmAfter?: number; sqlWarmAfter: number }> = [];
      for (let round = 0; round < opts.commitRounds; round++) {
        const offers = newOffers(sc, sc.products * 20 + round * 1000, chosen, params.country, round);
        const commit = await timed(() => findCapability('managed_table').writeRecords!(loaded.ctx, { table: 'offers', primaryKey: ['id'] }, { operation: 'append', rows: offers, provenance: { kind: 'write', id: randomUUID() } }));
        const w = weftAnswers ? await timed(() => post(loaded.endpoint, text, acceptFor(commitQuery))) : undefined;
        const s = await timed(() => post(sqlPeer.endpoint, text, acceptFor(commitQuery)));
        const sr = resultsOf(commitQuery, s.value)!;
        const wr = w ? resultsOf(commitQuery, w.value) : undefined;
        // The cheapest of the new offers comes first in an answer that sees the commit.
        const sees = (r: Results) => 'rows' in r && r.rows.length > 0 && canonical(r, true)[0].includes(`/offers/${sc.products * 20 + round * 1000}>`);
        const difference = wr ? compare(wr, sr, true) : undefined;
        const check = !w ? 'Weft refused' : !wr ? `Weft ${w.value.status} ${problemCode(w.value.body)}` : difference ? `!!! Weft ${sees(wr) ? 'differs from SQL' : 'STALE: its answer lacks the commit'} (${difference})` : 'same as SQL';
        // The same query warm over the same data (the new offers match it too, so it reads more than
        // before the commit): three more each, whose median is this round's warm; the next round
        // starts from a warm state again.
        const weftWarm: number[] = [];
        const sqlWarm: number[] = [];
        for (let i = 0; i < 3; i++) {
          if (weftAnswers) weftWarm.push((await timed(() => post(loaded.endpoint, text, acceptFor(commitQuery)))).ms);
          sqlWarm.push((await timed(() => post(sqlPeer.endpoint, text, acceptFor(commitQuery)))).ms);
        }
        firsts.push({ commit: commit.ms, weft: w && wr ? w.ms : undefined, weftThread: w && wr ? w.value.threadMs : undefined, weftSaw: Boolean(wr && sees(wr)), sql: s.ms, check: `${check}${sees(sr) ? '' : '; !!! the SQL answer lacks the new offers'}`, weftWarmAfter: weftWarm.length ? median(weftWarm) : undefined, sqlWarmAfter: median(sqlWarm) });
      }
      const warmOf = warm.get(commitQuery.id)!;
      // A first answer that had not seen the commit (the API had not yet heard of it) is no first query after it: left out of the median, and counted.
      const seen = firsts.filter((f) => f.weftSaw && f.weft !== undefined);
      const stale = weftAnswers ? firsts.length - seen.length : 0;
      const weftFirst = seen.length ? median(seen.map((f) => f.weft!)) : Number.NaN;
      const sqlFirst = median(firsts.map((f) => f.sql));
      const weftWarmAfter = seen.length ? median(seen.map((f) => f.weftWarmAfter!)) : Number.NaN;
      const sqlWarmAfter = median(firsts.map((f) => f.sqlWarmAfter));
      say(`\nfirst ${commitQuery.id} after a commit of 1,000 offer records (${firsts.length} rounds; commits ${firsts.map((f) => fmt(f.commit)).join(', ')} ms): ${weftAnswers ? `Weft ${firsts.map((f) => (f.weft === undefined ? '-' : fmt(f.weft))).join(', ')} ms, of which in its query thread ${firsts.map((f) => (f.weftThread === undefined ? '-' : fmt(f.weftThread))).join(', ')} ms (median of the ${seen.length} that saw the commit ${fmt(weftFirst)}; warm over the same data ${fmt(weftWarmAfter)}: ${(weftFirst / weftWarmAfter).toFixed(2)}x; warm before the commit ${fmt(warmOf.weft ?? Number.NaN)}: ${(weftFirst / warmOf.weft!).toFixed(2)}x${stale ? `; ${stale} answered from the snapshot before the commit` : ''}); ` : ''}SQL ${firsts.map((f) => fmt(f.sql)).join(', ')} ms (median ${fmt(sqlFirst)}; warm over the same data ${fmt(sqlWarmAfter)}: ${(sqlFirst / sqlWarmAfter).toFixed(2)}x; warm before ${fmt(warmOf.sql)}: ${(sqlFirst / warmOf.sql).toFixed(2)}x); answers after each commit: ${firsts.map((f) => f.check).join(' | ')}`);
      if (weftAnswers) {
        rows.push(row({ benchmark: BENCHMARK, measure: `${at}: first query after a 1,000-record commit vs warm`, weft: weftFirst, peer: weftWarmAfter, peerName: 'the same query warm over the same data (Weft)', unit: 'ms', target: '<= 2', note: `${commitQuery.id}; median of the ${seen.length} of ${firsts.length} first answers that saw the commit${stale ? ` (${stale} STALE)` : ''}; SQL peer first ${fmt(sqlFirst)} ms vs warm ${fmt(sqlWarmAfter)} ms; ${firsts.map((f) => f.check).join(' | ')}` }));
        // The commit's offers are all the query's product's, so the same query reads more after it.
        rows.push(row({ benchmark: BENCHMARK, measure: `${at}: first query after a 1,000-record commit vs warm before it`, weft: weftFirst, peer: warmOf.weft!, peerName: 'the same query warm before the commit (Weft)', unit: 'ms', note: `the commit adds 1,000 offers the query matches; SQL peer ${(sqlFirst / warmOf.sql).toFixed(2)}x` }));
      }
      else rows.push(figure({ benchmark: BENCHMARK, measure: `${at}: first query after a 1,000-record commit (SQL peer)`, weft: sqlFirst, unit: 'ms', note: `${commitQuery.id}, warm ${fmt(warmOf.sql)} ms; Weft refused (${refusal})` }));
    }

    if (opts.profile && weftAnswers) {
      const httpCost = await fixedCostOverHttp(weft, loaded, opts.runs);
      const b = await breakdown(weft, loaded, queries, texts, opts.runs, httpCost);
      const evalGm = geomean(queries.map((q) => b.evaluate.get(q.id)!));
      const serGm = geomean(queries.map((q) => Math.max(b.serialize.get(q.id)!, 0.001)));
      say(`\nwhere a request's time goes (in this process, Weft's own functions; the data has moved by the commits above):`);
      say(`- cold dataset build: sparqlDataset ${fmt(b.coldDatasetMs)} ms = reading ${sc.records.toLocaleString('en')} records in pages ${fmt(b.readMs)} ms + mapping to quads ${fmt(b.mapMs)} ms + new Store ${fmt(b.storeMs)} ms (measured apart)`);
      say(`- warm dataset: ${fmt(b.warmDatasetMs)} ms; HTTP POST ASK {} ${fmt(b.askEmptyMs)} ms; its parts measured apart: ${b.fixed.map(([what, ms]) => `${what} ${fmt(ms)}`).join(', ')}; the rest: ${rest(b)}; GET /organization ${fmt(b.organizationMs)} ms; bare Koa ${fmt(b.bareKoaMs)} ms`);
      say(`- evaluateQuery geomean ${fmt(evalGm)} ms; serializeResult geomean ${fmt(serGm)} ms`);
      rows.push(figure({ benchmark: BENCHMARK, measure: `${at}: dataset build (cold)`, weft: b.coldDatasetMs, unit: 'ms', note: `read ${fmt(b.readMs)} + map ${fmt(b.mapMs)} + n3 Store ${fmt(b.storeMs)} ms; warm (kept store): ${fmt(b.warmDatasetMs)} ms` }));
      rows.push(figure({ benchmark: BENCHMARK, measure: `${at}: HTTP POST ASK {} (a request's fixed cost)`, weft: b.askEmptyMs, unit: 'ms', note: `GET /organization ${fmt(b.organizationMs)} ms; bare Koa ${fmt(b.bareKoaMs)} ms` }));
    }
  } finally {
    (oxStore as unknown as { free?: () => void } | undefined)?.free?.();
    if (peer) peer.child.kill('SIGTERM');
    await weft.stop();
  }
  return rows;
}

function timedSync(fn: () => unknown): number {
  const start = performance.now();
  fn();
  return performance.now() - start;
}

function problemCode(body: string): string {
  try {
    return (JSON.parse(body) as { code?: string }).code ?? '';
  } catch {
    return '';
  }
}

/** The fixed cost less its parts measured apart (the longest of those side by side); when the parts add up to more (they vary run to run), say so. */
function rest(b: Breakdown): string {
  const after = b.fixed.filter(([what]) => !b.beside.includes(what)).reduce((sum, [, ms]) => sum + ms, 0);
  const left = b.askEmptyMs - after - Math.max(0, ...b.fixed.filter(([what]) => b.beside.includes(what)).map(([, ms]) => ms));
  return left >= 0 ? `about ${fmt(left)} ms` : 'within the spread of the parts';
}

function markdown(head: string[], body: string[][]): string {
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((r) => r[i].length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => (i === 0 || i === 2 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join(' | ')} |`;
  return [line(head), `|${widths.map((w, i) => (i === 0 || i === 2 ? '-'.repeat(w + 2) : `${'-'.repeat(w + 1)}:`)).join('|')}|`, ...body.map(line)].join('\n');
}

// ---------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const opts = options();
  if (opts.child) {
    const rows = await scale(opts.scales[0], opts);
    for (const r of rows) process.stdout.write(`BENCH_RESULT ${JSON.stringify(r)}\n`);
    // The database pool may keep handles; the scale is done.
    process.exit(0);
  }
  say(`# sparql: Weft's SPARQL endpoint vs the hand-written SQL (bare Koa + pg) and Oxigraph in-process, BSBM-like data in managed tables`);
  say(`node ${process.version}, ${cpus().length} cores; median of ${opts.runs} runs after ${opts.warmup} warm-up(s), after ${opts.serveFirst.toLocaleString('en')} requests of the mix's cheap texts served first; scales ${opts.scales.map((n) => `${label(n)} records`).join(', ')}; Oxigraph up to ${opts.oxigraphMaxTriples.toLocaleString('en')} triples${opts.sqlIndexes ? '; --sql-indexes' : ''}`);
  say('\nQueries:');
  for (const q of MIX) if (!opts.only.length || opts.only.includes(q.id)) say(`- ${q.id}: ${q.what}`);
  const rows: BenchRow[] = [];
  let failed = false;
  for (const target of opts.scales) {
    // A process per scale: each gets a fresh Weft, and WebAssembly memory only grows.
    const args = [
      '--child',
      '--records',
      String(target),
      '--runs',
      String(opts.runs),
      '--warmup',
      String(opts.warmup),
      '--serve-first',
      String(opts.serveFirst),
      '--batch',
      String(opts.batch),
      '--oxigraph-max-triples',
      String(opts.oxigraphMaxTriples),
      '--commit-rounds',
      String(opts.commitRounds),
      ...(opts.only.length ? ['--query', opts.only.join(',')] : []),
      ...(opts.cpuProf ? ['--cpu-prof', opts.cpuProf] : []),
      ...(opts.profile ? ['--profile'] : []),
      ...(opts.sqlIndexes ? ['--sql-indexes'] : []),
      ...(opts.explain ? ['--explain'] : []),
    ];
    const output = await new Promise<{ code: number | null; text: string }>((resolve) => {
      const child = spawn(process.execPath, [...process.execArgv, '--max-old-space-size=8192', __filename, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
      let text = '';
      let pending = '';
      child.stdout.on('data', (chunk: Buffer) => {
        text += chunk.toString();
        pending += chunk.toString();
        const lines = pending.split('\n');
        pending = lines.pop()!;
        for (const line of lines) if (!line.startsWith('BENCH_RESULT ')) process.stdout.write(`${line}\n`);
      });
      child.on('exit', (code) => resolve({ code, text }));
    });
    rows.push(...parseRows(output.text));
    if (output.code !== 0) {
      failed = true;
      say(`\n!!! the run at ${label(target)} records failed (exit ${output.code})`);
    }
  }
  emit(rows);
  if (failed) process.exitCode = 1;
}

if (require.main === module) {
  main().catch((error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  });
}
