/**
 * sparql (P5): a BSBM-like dataset (bench/support/sparql-bsbm.ts) loaded into Weft the way a user
 * holds it (ontology terms and links, compiled and activated; one managed table per kind of record;
 * a read binding per table), and its query mix through the SPARQL endpoint, against Oxigraph (npm
 * `oxigraph`, in-memory Store) and Comunica over an n3 Store run in-process, on exactly the triples
 * of the endpoint's dataset. Target: Weft <= 3x Oxigraph at 100k triples on the mix's geometric mean
 * (goal 2x). The bench reports; it passes or fails nothing.
 *
 *   npm run bench -- sparql                          # 100k and 1M triples
 *   npx tsx bench/sparql.ts --triples 20000          # one smaller scale
 *   npx tsx bench/sparql.ts --triples 100000 --query q5-similar,q7-product-page --runs 9
 *   npx tsx bench/sparql.ts --triples 100000 --cpu-prof /tmp/weft-prof   # the API process under --cpu-prof
 *   npx tsx bench/sparql.ts --triples 100000 --no-profile                # skip the in-process time breakdown
 *   npx tsx bench/sparql.ts --triples 100000 --serve-first 0             # the mix on a server that has served nothing yet
 *
 * Each scale runs in a process of its own, with a fresh Weft (database, API child process, tenant).
 * Weft's figure is an HTTP POST of the query (application/sparql-query, Accept SPARQL JSON or
 * N-Triples) with the body read in full; Oxigraph's is `store.query` with every result
 * materialised; Comunica's is `queryBindings/queryQuads(...).toArray()` or `queryBoolean`. Every
 * figure is the median of --runs runs (default 5) after --warmup warm-ups (default 2), the
 * endpoint and Oxigraph taking turns run by run, then Comunica after the whole mix (its n3 Store
 * built only then, so this process holds no copy of the dataset the collector would mark while the
 * other two are timed); the mix's figure is the
 * geometric mean of the query medians. Before the mix, both engines answer the same --serve-first
 * queries (default 2,000; none of the mix's): a deployed API has served traffic before a query
 * arrives, so V8 has compiled its request path with its optimizing tier, which the mix's 84 requests
 * alone do not reach (bench/README, "sparql").
 * Next to wall time, each query's CPU time is kept (the API process's for Weft, this process's for
 * the peers): on a shared machine it moves less than wall time.
 *
 * The endpoint answers over every bound record, or refuses a dataset past WEFT_SPARQL_MAX_DATASET_TRIPLES
 * (422 dataset_too_large): such a refusal of the first request stops the scale with an error.
 */
import { fork, spawn } from 'node:child_process';
import path from 'node:path';
import { readdirSync, readFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { performance } from 'node:perf_hooks';
import { randomUUID } from 'node:crypto';
import { QueryEngine } from '@comunica/query-sparql-rdfjs';
import { Parser, Quad, Store, Writer } from 'n3';
import * as oxigraph from 'oxigraph';
import { BenchRow, emit, figure, median, parseRows, row } from './support/report';
import { BenchWeft, call, freePort, startBenchWeft } from './support/weft';
import { requestText, TextResponse } from './support/http-client';
import { generate, LINKS, MIX, MixQuery, TERMS, BsbmData } from './support/sparql-bsbm';
import { OntologyPackage, PluginInstallation, Project, ReadBinding } from '../db/models';
import { assertCredit, charge } from '../services/usage/usage';
import { findCapability } from '../plugins';
import { capabilityContext } from '../services/endpoints/data-endpoints';
import { authenticateRequest } from '../services/tenancy/request-authentication';
import { sparqlDataset } from '../services/ontology/sparql';
import { readEndpointRecords } from '../services/endpoints/records-read';
import { OperationContext, workerDependencies } from '../services/operations/context';
import { bindingFields, mapRecord } from '../ontology/term-records';
import { evaluateQuery } from '../ontology/sparql-engine';
import { serializeResult } from '../ontology/sparql-results';
import { amount, benchFlags, count as positiveCount, counts, names } from './support/options';

const BENCHMARK = 'sparql';

// ---------------------------------------------------------------------------------------------
// Options

interface Options {
  scales: number[];
  only: string[];
  runs: number;
  warmup: number;
  serveFirst: number;
  cpuProf?: string;
  profile: boolean;
  child: boolean;
}

function options(): Options {
  const flags = benchFlags('npm run bench -- sparql', {
    triples: { type: 'string', help: 'scales, e.g. 100k,1M (default 100k,1M)' },
    query: { type: 'string', help: `query ids (default all): ${MIX.map((q) => q.id).join(', ')}` },
    runs: { type: 'string', help: 'timed runs per query (default 5)' },
    warmup: { type: 'string', help: 'warm-up runs per query (default 2)' },
    'serve-first': { type: 'string', help: "queries outside the mix both engines answer before it, as a running server has (default 2000; 0: a server that has served nothing)" },
    'cpu-prof': { type: 'string', help: "write the API process's CPU profiles into this folder" },
    'no-profile': { type: 'boolean', help: 'skip the breakdown of the fixed cost' },
    child: { type: 'boolean', help: 'internal: run one scale in this process' },
  });
  return {
    scales: counts(flags.triples, 'triples', [100_000, 1_000_000]),
    only: names(flags.query, 'query', MIX.map((q) => q.id), []),
    runs: positiveCount(flags.runs, 'runs', 5),
    warmup: Math.floor(amount(flags.warmup, 'warmup', 2)),
    serveFirst: Math.floor(amount(flags['serve-first'], 'serve-first', 2000)),
    cpuProf: flags['cpu-prof'],
    profile: !flags['no-profile'],
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

function canonical(r: Results): string[] {
  if ('ask' in r) return [String(r.ask)];
  if ('quads' in r) return r.quads.map((q) => `${termKey(q.subject)} ${termKey(q.predicate)} ${termKey(q.object)}`).sort();
  return r.rows.map((bindings) => bindings.filter(([, t]) => t).map(([v, t]) => `${v}=${termKey(t)}`).sort().join(' ')).sort();
}

const count = (r: Results) => ('ask' in r ? String(r.ask) : 'quads' in r ? r.quads.length : r.rows.length);

function compare(a: Results, b: Results): string | undefined {
  const x = canonical(a);
  const y = canonical(b);
  if (x.length !== y.length) return `${x.length} vs ${y.length} results`;
  for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return `first difference: ${x[i]} | ${y[i]}`;
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// The three engines

const comunica = new QueryEngine();

async function runComunica(store: Store, query: MixQuery, text: string): Promise<Results> {
  const context = { sources: [store] as [Store] };
  if (query.kind === 'ask') return { ask: await comunica.queryBoolean(text, context) };
  if (query.kind === 'construct') return { quads: (await (await comunica.queryQuads(text, context)).toArray()) as never };
  const bindings = await (await comunica.queryBindings(text, context)).toArray();
  return { rows: bindings.map((b) => [...b].map(([v, t]) => [v.value, t as Term] as [string, Term])) };
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
async function post(endpoint: Endpoint, text: string, accept: string): Promise<{ status: number; body: string; threadMs: number }> {
  const response = await requestText(endpoint.url, { method: 'POST', headers: { Authorization: `Bearer ${endpoint.key}`, 'Content-Type': 'application/sparql-query', Accept: accept }, body: text });
  return { status: response.status, body: response.body, threadMs: threadMsOf(response) };
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

/**
 * Queries none of the mix's, over no term of its vocabulary, that a running server has answered
 * many times before the mix: one of each common form (a join, OPTIONAL, FILTER, UNION, BIND,
 * VALUES, NOT EXISTS, a subquery, GROUP BY with aggregates, DISTINCT, ORDER BY with LIMIT, ASK,
 * CONSTRUCT), each cheap (a LIMIT or a bounded subquery). They exercise the request path (key,
 * limits, dataset, thread hop, each answer format) and the engines' operators, so V8 has compiled
 * both as it has in a server that has run for a while, not the mix's own queries.
 */
const SERVED_FIRST: Array<Pick<MixQuery, 'kind'> & { text: string }> = [
  'ASK {}',
  'ASK { ?s ?p ?o }',
  'SELECT ?s ?p ?o WHERE { ?s ?p ?o } LIMIT 2',
  'CONSTRUCT { ?s ?p ?o } WHERE { ?s ?p ?o } LIMIT 2',
  'SELECT ?s ?o ?x WHERE { ?s ?p ?o . OPTIONAL { ?s ?q ?x FILTER(?q != ?p) } FILTER(isIRI(?s)) } LIMIT 3',
  'SELECT ?s ?v WHERE { { ?s ?p ?o } UNION { ?o ?p ?s } BIND(STR(?s) AS ?v) } LIMIT 3',
  'SELECT ?p (COUNT(?o) AS ?n) (MAX(STR(?o)) AS ?m) WHERE { { SELECT ?p ?o WHERE { ?s ?p ?o } LIMIT 20 } } GROUP BY ?p ORDER BY DESC(?n) ?p LIMIT 3',
  'SELECT DISTINCT ?p WHERE { { SELECT ?p WHERE { ?s ?p ?o } LIMIT 50 } } ORDER BY ?p LIMIT 5',
  'SELECT ?s ?k WHERE { { SELECT ?s WHERE { ?s ?p ?o } LIMIT 2 } VALUES ?k { 1 2 } }',
  'SELECT ?s ?o WHERE { ?s ?p ?o . ?o ?q ?x FILTER NOT EXISTS { ?x ?q ?s } } LIMIT 2',
].map((text) => ({ kind: /^ASK/.test(text) ? 'ask' : /^CONSTRUCT/.test(text) ? 'construct' : 'select', text }));

/** `count` of those queries, in turns, to the endpoint and to Oxigraph alike; every answer must be a 200. */
async function serveFirst(endpoint: Endpoint, oxStore: oxigraph.Store, count: number): Promise<void> {
  for (let i = 0; i < count; i++) {
    const query = SERVED_FIRST[i % SERVED_FIRST.length];
    const answer = await post(endpoint, query.text, acceptFor(query));
    if (answer.status !== 200) throw new Error(`served first: ${query.text}: ${answer.status} ${answer.body.slice(0, 300)}`);
    runOxigraph(oxStore, query, query.text);
  }
}

// ---------------------------------------------------------------------------------------------
// Loading the dataset into Weft, as a user would (managed tables filled through the capability)

export interface Loaded {
  endpoint: Endpoint;
  baseIri: string;
  packageId: string;
  ontologyBase: string;
  bindingIds: string[];
}

async function expectStatus<T>(what: string, promise: Promise<{ status: number; body: T }>, status: number): Promise<T> {
  const res = await promise;
  if (res.status !== status) throw new Error(`${what}: ${res.status} ${JSON.stringify(res.body).slice(0, 500)}`);
  return res.body;
}

const WRITE_BATCH = 10_000;

export async function load(weft: BenchWeft, data: BsbmData): Promise<Loaded> {
  const { tenant } = weft;
  const base = `/api/v1/projects/${tenant.projectId}/ontology`;
  for (const term of TERMS) await expectStatus(`term ${term.id}`, call(weft, tenant.key, 'POST', `${base}/terms`, term), 201);
  for (const link of LINKS) await expectStatus(`link ${link.id}`, call(weft, tenant.key, 'POST', `${base}/links`, link), 201);
  const compiled = await expectStatus<{ package: { id: string } }>('compile', call(weft, tenant.key, 'POST', `${base}/compile`, {}), 201);
  await expectStatus('activate', call(weft, tenant.key, 'POST', `${base}/activate`, { packageId: compiled.package.id }), 200);
  const baseIri = (await expectStatus<{ ontology: { baseIri: string } }>('ontology', call(weft, tenant.key, 'GET', base), 200)).ontology.baseIri;

  const installation = (await PluginInstallation.query(weft.db).findById(tenant.managedInstallationId))!;
  const ctx = capabilityContext(weft.db, installation, weft.encryptionKey);
  const bindingIds: string[] = [];
  for (const spec of data.tables) {
    const target = { table: spec.table, primaryKey: ['id'] };
    const endpoint = await expectStatus<{ dataEndpoint: { id: string } }>(
      `endpoint ${spec.table}`,
      call(weft, tenant.key, 'POST', '/api/v1/data-endpoints', { name: spec.table, namespace: 'bsbm', role: 'source', contractKind: 'source_stream', pluginCapabilityInstallationId: tenant.managedInstallationId, target }),
      201,
    );
    for (let i = 0; i < spec.rows.length; i += WRITE_BATCH) {
      await findCapability('managed_table').writeRecords!(ctx, target, { operation: 'append', rows: spec.rows.slice(i, i + WRITE_BATCH), provenance: { kind: 'write', id: randomUUID() } });
    }
    const binding = await expectStatus<{ binding: { id: string } }>(
      `binding ${spec.term}`,
      call(weft, tenant.key, 'POST', `${base}/read-bindings`, { ontologyPackageId: compiled.package.id, termId: spec.term, dataEndpointId: endpoint.dataEndpoint.id, mapping: spec.mapping }),
      201,
    );
    bindingIds.push(binding.binding.id);
  }
  await expectStatus('semantic consumer mode', call(weft, tenant.key, 'PATCH', '/api/v1/organization/settings', { semanticConsumerMode: 'read' }), 200);
  return { endpoint: { url: `${weft.baseUrl}${base}/sparql`, key: tenant.key }, baseIri, packageId: compiled.package.id, ontologyBase: base, bindingIds };
}

/** The triples Weft maps from these records (ontology/term-records.ts), plus the package: the whole dataset. */
async function mappedInProcess(weft: BenchWeft, loaded: Loaded, data: BsbmData): Promise<{ quads: Quad[] }> {
  const pkg = (await OntologyPackage.query(weft.db).findById(loaded.packageId))!;
  const quads: Quad[] = new Parser({ format: 'application/n-quads' }).parse(pkg.nquads);
  for (const spec of data.tables) {
    for (const record of spec.rows) {
      const mapped = mapRecord(record, spec.term, spec.mapping, pkg.terms, pkg.baseIri);
      if (mapped) quads.push(...mapped.quads);
    }
  }
  return { quads };
}

const PAGE = 10_000;

/**
 * The endpoint's whole dataset, through the endpoint, without aggregates (a COUNT or GROUP BY over
 * every triple can pass the endpoint's time limit on a busy machine): per predicate a CONSTRUCT as
 * N-Triples, in pages of 10,000 triples (the endpoint's result limit) until a page comes back short.
 * The predicates are the package's own (its N-Quads, from the package route) plus the bound
 * properties and links. Pages use LIMIT and OFFSET over the same kept store, so they follow one order.
 */
async function dumpThroughEndpoint(weft: BenchWeft, loaded: Loaded, data: BsbmData): Promise<{ ntriples: string; predicates: number; requests: number }> {
  const pkg = await fetch(`${weft.baseUrl}${loaded.ontologyBase}/packages/${loaded.packageId}`, { headers: { Authorization: `Bearer ${loaded.endpoint.key}`, Accept: 'application/n-quads' } });
  if (pkg.status !== 200) throw new Error(`package: ${pkg.status}`);
  const predicates = new Set(new Parser({ format: 'application/n-quads' }).parse(await pkg.text()).map((q) => q.predicate.value));
  predicates.add('http://www.w3.org/1999/02/22-rdf-syntax-ns#type');
  for (const spec of data.tables) for (const name of [...Object.keys(spec.mapping.properties), ...Object.keys(spec.mapping.links ?? {})]) predicates.add(`${loaded.baseIri}${name}`);
  const parts: string[] = [];
  let requests = 0;
  for (const p of predicates) {
    for (let offset = 0; ; offset += PAGE) {
      const answer = await post(loaded.endpoint, `CONSTRUCT { ?s <${p}> ?o } WHERE { ?s <${p}> ?o } LIMIT ${PAGE} OFFSET ${offset}`, 'application/n-triples');
      requests++;
      if (answer.status !== 200) throw new Error(`dump of ${p}: ${answer.status} ${answer.body.slice(0, 300)}`);
      parts.push(answer.body);
      if (answer.body.split('\n').filter((line) => line.trim()).length < PAGE) break;
    }
  }
  return { ntriples: parts.join('\n'), predicates: predicates.size, requests };
}

/** Triples as N-Triples lines, blank nodes left out (their labels are the parser's), for comparing two copies. */
function namedTriples(quads: Quad[]): Set<string> {
  const writer = new Writer({ format: 'N-Triples' });
  return new Set(quads.filter((q) => q.subject.termType !== 'BlankNode' && q.object.termType !== 'BlankNode').map((q) => writer.quadToString(q.subject, q.predicate, q.object)));
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
  const { principal } = await authenticateRequest(weft.db, weft.tenant.key);
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
    const evaluated = await bench(() => evaluateQuery(store, text, { timeoutMs: 60_000, maxResults: 10_000 }), runs, 1);
    evaluate.set(query.id, evaluated.median);
    const serialized = await bench(() => serializeResult(evaluated.value, acceptFor(query)), runs, 1);
    serialize.set(query.id, serialized.median);
  }
  const piece = async (fn: () => Promise<unknown>) => (await bench(fn, Math.max(runs, 9), 2)).median;
  const fixed: Array<[string, number]> = [
    ['API key check and count (authenticateRequest)', await piece(() => authenticateRequest(weft.db, weft.tenant.key))],
    ['catalog, snapshots and graphs, all kept (sparqlDataset)', warm.median],
    ['evaluateQuery ASK {}', await piece(() => evaluateQuery(store, 'ASK {}', { timeoutMs: 10_000, maxResults: 10_000 }))],
    ['credit check (assertCredit)', await piece(() => assertCredit(weft.db, principal.workspaceId, 'sparql_query'))],
    ['metering (charge)', await piece(() => charge(weft.db, { workspaceId: principal.workspaceId, projectId: project.id, kind: 'sparql_query', ref: randomUUID(), actor: principal, quantities: { query: 1 } }))],
  ];
  const beside = ['evaluateQuery ASK {}', 'credit check (assertCredit)', 'metering (charge)'];
  return { ...httpCost, fixed, beside, readMs: read.ms, mapMs: mapped.ms, storeMs: stored.ms, coldDatasetMs: cold.ms, warmDatasetMs: warm.median, evaluate, serialize };
}

/** Reads the dataset back through the endpoint, checks it against the records mapped in this process, and keeps only its N-Triples. */
async function readBack(weft: BenchWeft, loaded: Loaded, data: BsbmData): Promise<{ ntriples: string; triples: number }> {
  const expected = (await mappedInProcess(weft, loaded, data)).quads;
  const dump = await timed(() => dumpThroughEndpoint(weft, loaded, data));
  const ntriples = dump.value.ntriples;
  const quads: Quad[] = new Parser({ format: 'application/n-triples' }).parse(ntriples);
  const unique = new Set(quads.map((q) => `${q.subject.termType}:${q.subject.value} ${q.predicate.value} ${q.object.termType}:${q.object.value}:${(q.object as { datatype?: { value: string } }).datatype?.value ?? ''}`)).size;
  const read = namedTriples(quads);
  const mapped = namedTriples(expected);
  const same = read.size === mapped.size && [...read].every((t) => mapped.has(t));
  say(`read back through the endpoint: ${quads.length.toLocaleString('en')} triples (${unique === quads.length ? 'no duplicates' : `!!! ${quads.length - unique} DUPLICATES`}; ${dump.value.predicates} predicates, ${dump.value.requests} requests, ${(dump.ms / 1000).toFixed(1)} s); mapped in this process: ${expected.length.toLocaleString('en')}, ${same ? 'the same triples' : '!!! OTHER TRIPLES'} (blank nodes compared by count)`);
  if (quads.length !== expected.length || unique !== quads.length || !same) say('!!! THE READ-BACK DATASET DIFFERS FROM THE MAPPED RECORDS');
  return { ntriples, triples: quads.length };
}

// ---------------------------------------------------------------------------------------------
// One scale

const label = (triples: number) => (triples >= 1_000_000 && triples % 1_000_000 === 0 ? `${triples / 1_000_000}M` : triples >= 1000 && triples % 1000 === 0 ? `${triples / 1000}k` : String(triples));

async function scale(target: number, opts: Options): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  const at = label(target);
  // Dropped before the timed queries (below): at 1M its records are a large live heap for this process's collector to mark.
  let data: BsbmData | undefined = generate(target);
  const records = data.records;
  say(`\n## ${at} triples: ${data.products.toLocaleString('en')} products, ${data.records.toLocaleString('en')} records in ${data.tables.length} managed tables`);

  // --cpu-prof is refused in NODE_OPTIONS: it goes to the API's node arguments (startBenchWeft's apiNodeArgs).
  const settings: Parameters<typeof startBenchWeft>[0] & { apiNodeArgs?: string[] } = { name: BENCHMARK, temporal: true };
  if (opts.cpuProf) settings.apiNodeArgs = ['--cpu-prof', `--cpu-prof-dir=${opts.cpuProf}`];
  const weft = await startBenchWeft(settings);
  try {
    const loadTimer = await timed(() => load(weft, data!));
    const loaded = loadTimer.value;
    say(`loaded into Weft in ${(loadTimer.ms / 1000).toFixed(1)} s (terms, links, compile, activate, ${data.tables.length} endpoints and bindings, records written through the managed_table capability)`);

    const queries = MIX.filter((q) => !opts.only.length || opts.only.includes(q.id));
    const texts = new Map(queries.map((q) => [q.id, q.text(loaded.baseIri, data!.params)]));

    // The first request builds the dataset (reads every bound record, maps it, builds the store);
    // ASK { ?s ?p ?o } stops at the first triple, so its time is the build's.
    const probe = 'ASK { ?s ?p ?o }';
    const first = await timed(() => post(loaded.endpoint, probe, 'application/sparql-results+json'));
    if (first.value.status === 422 && problemCode(first.value.body) === 'dataset_too_large') {
      throw new Error(`first request: 422 dataset_too_large: the dataset at ${at} passes the bound WEFT_SPARQL_MAX_DATASET_TRIPLES (raise it to run this scale): ${first.value.body}`);
    }
    if (first.value.status !== 200) throw new Error(`first request: ${first.value.status} ${first.value.body}`);
    const again = await bench(() => post(loaded.endpoint, probe, 'application/sparql-results+json'), 5, 1);
    say(`first request (ASK, builds the dataset) ${fmt(first.ms)} ms, then ${fmt(again.median)} ms`);
    rows.push(figure({ benchmark: BENCHMARK, measure: `${at}: first query (builds the dataset)`, weft: first.ms, unit: 'ms', note: `ASK { ?s ?p ?o }; the same query again: ${fmt(again.median)} ms` }));

    // The peers' triples: the endpoint's own dataset, read back through the endpoint and checked
    // against the records mapped here. Only its text is kept: every other copy of the dataset in
    // this process is garbage before the timed queries, so the collector does not mark it while
    // the endpoint and Oxigraph are timed (at 1M it did, on the two cores both need).
    const { ntriples, triples: weftTriples } = await readBack(weft, loaded, data);
    data = undefined;
    rows.push(figure({ benchmark: BENCHMARK, measure: `${at}: triples in the dataset`, weft: weftTriples, unit: 'triples', note: `peers loaded with the same ${weftTriples.toLocaleString('en')} triples, read back through the endpoint` }));

    const oxLoad = await timed(() => {
      const store = new oxigraph.Store();
      store.load(ntriples, { format: 'application/n-triples' });
      return store;
    });
    const oxStore = oxLoad.value;
    say(`Oxigraph loaded: store.load(N-Triples) ${fmt(oxLoad.ms)} ms (${oxStore.size} quads)`);

    if (opts.serveFirst > 0) {
      const served = await timed(() => serveFirst(loaded.endpoint, oxStore, opts.serveFirst));
      say(`served first: ${opts.serveFirst.toLocaleString('en')} queries outside the mix, by the endpoint and by Oxigraph, in ${fmt(served.ms)} ms`);
    }

    const table: string[][] = [];
    const medians = { weft: [] as number[], ox: [] as number[], com: [] as number[] };
    // Per query, the median of its time in the API's query thread (Server-Timing): the rest of Weft's time is the request path.
    const threadMedians: number[] = [];
    // CPU time per query: the API process's for Weft (PostgreSQL's own is not in it), this process's for the peers.
    const cpu = { weft: [] as number[], ox: [] as number[], com: [] as number[] };
    // The endpoint and Oxigraph take turns, query by query. Comunica runs after the whole mix, over
    // an n3 Store built only then: its store (a million triples at 1M) and its garbage (gigabytes)
    // would otherwise be marked and collected in this process while the other two are timed.
    const timedPairs: Array<{ w: Timing<{ status: number; body: string }> & { cpu: number }; o: Timing<Results> & { cpu: number }; threadMs: number }> = [];
    for (const query of queries) {
      const text = texts.get(query.id)!;
      const apiPid = weft.api.pid!;
      const threadTimes: number[] = [];
      const [w, o] = (await benchTogether(
        [() => post(loaded.endpoint, text, acceptFor(query)).then((answer) => (threadTimes.push(answer.threadMs), answer)), () => runOxigraph(oxStore, query, text)],
        [() => processCpuMs(apiPid), ownCpuMs],
        opts.runs,
        opts.warmup,
      )) as [Timing<{ status: number; body: string }> & { cpu: number }, Timing<Results> & { cpu: number }];
      timedPairs.push({ w, o, threadMs: median(threadTimes.slice(-opts.runs)) });
    }
    // The same mix with every text new: a comment that names the run makes each request's text one
    // neither engine has seen, so Weft's kept parses and kept plans do not apply (Oxigraph keeps
    // neither). Ad hoc queries pay this; repeated ones (dashboards, published queries, tools) the figure above.
    const freshPairs: Array<{ w: number; o: number }> = [];
    let freshRun = 0;
    const fresh = (text: string) => `${text}\n# run ${++freshRun}`;
    for (const query of queries) {
      const text = texts.get(query.id)!;
      const [w, o] = (await benchTogether([() => post(loaded.endpoint, fresh(text), acceptFor(query)), () => runOxigraph(oxStore, query, fresh(text))], [() => 0, () => 0], opts.runs, opts.warmup)) as [Timing<{ status: number; body: string }> & { cpu: number }, Timing<Results> & { cpu: number }];
      if (w.value.status !== 200) throw new Error(`${query.id} with a new text: ${w.value.status} ${w.value.body.slice(0, 300)}`);
      freshPairs.push({ w: w.median, o: o.median });
    }
    // The fixed cost over HTTP, still with nothing of Comunica's or of the in-process breakdown's in this process.
    const httpCost = opts.profile ? await fixedCostOverHttp(weft, loaded, opts.runs) : undefined;

    const n3Load = await timed(() => new Store(new Parser({ format: 'application/n-triples' }).parse(ntriples)));
    const n3Store = n3Load.value;
    say(`n3 Store for Comunica loaded: ${fmt(n3Load.ms)} ms (${n3Store.size} quads)`);
    for (const [i, query] of queries.entries()) {
      const text = texts.get(query.id)!;
      const { w, o, threadMs } = timedPairs[i];
      threadMedians.push(threadMs);
      const [c] = (await benchTogether([() => runComunica(n3Store, query, text)], [ownCpuMs], opts.runs, opts.warmup)) as [Timing<Results> & { cpu: number }];
      cpu.weft.push(Math.max(w.cpu, 0.1));
      cpu.ox.push(Math.max(o.cpu, 0.01));
      cpu.com.push(Math.max(c.cpu, 0.01));
      const runs = [w, o, c].map((t) => t.runs || 'cold').join('/');
      if (w.value.status !== 200) {
        // A refusal (e.g. 422 query_timeout) is reported with the time it took, a lower bound.
        const code = problemCode(w.value.body);
        say(`!!! ${query.id}: Weft answered ${w.value.status} ${code}`);
        table.push([query.id, String(count(o.value)), `WEFT ${w.value.status} ${code}`, runs, fmt(w.median), fmt(threadMs), fmt(o.median), fmt(c.median), `${fmt(w.cpu)}/${fmt(o.cpu)}/${fmt(c.cpu)}`, (w.median / o.median).toFixed(1), (w.median / c.median).toFixed(2)]);
        medians.weft.push(w.median);
        medians.ox.push(o.median);
        medians.com.push(c.median);
        const note = `Weft answered ${w.value.status} ${code} after ${fmt(w.median)} ms (a lower bound); Comunica in-process ${fmt(c.median)} ms`;
        rows.push(row({ benchmark: BENCHMARK, measure: `${at}: ${query.id}`, weft: w.median, peer: o.median, peerName: 'Oxigraph', unit: 'ms', note }));
        continue;
      }
      const wr = weftResults(query, w.value.body);
      const checks = [compare(wr, o.value) && `Weft/Oxigraph ${compare(wr, o.value)}`, compare(c.value, o.value) && `Comunica/Oxigraph ${compare(c.value, o.value)}`].filter(Boolean);
      const check = checks.length ? `DIFFER: ${checks.join('; ')}` : 'same';
      if (checks.length) say(`!!! ${query.id}: RESULTS DIFFER: ${checks.join('; ')}`);
      table.push([query.id, String(count(o.value)), check, runs, fmt(w.median), fmt(threadMs), fmt(o.median), fmt(c.median), `${fmt(w.cpu)}/${fmt(o.cpu)}/${fmt(c.cpu)}`, (w.median / o.median).toFixed(1), (w.median / c.median).toFixed(2)]);
      medians.weft.push(w.median);
      medians.ox.push(o.median);
      medians.com.push(c.median);
      rows.push(row({ benchmark: BENCHMARK, measure: `${at}: ${query.id}`, weft: w.median, peer: o.median, peerName: 'Oxigraph', unit: 'ms', note: `Comunica in-process ${fmt(c.median)} ms; ${count(o.value)} results${check === 'same' ? '' : `; ${check}`}` }));
    }
    const gm = { weft: geomean(medians.weft), ox: geomean(medians.ox), com: geomean(medians.com) };
    const gmCpu = { weft: geomean(cpu.weft), ox: geomean(cpu.ox), com: geomean(cpu.com) };
    const threadGm = geomean(threadMedians.map((ms) => Math.max(ms, 0.001)));
    table.push(['(geometric mean)', '', '', '', fmt(gm.weft), fmt(threadGm), fmt(gm.ox), fmt(gm.com), `${fmt(gmCpu.weft)}/${fmt(gmCpu.ox)}/${fmt(gmCpu.com)}`, (gm.weft / gm.ox).toFixed(1), (gm.weft / gm.com).toFixed(2)]);
    say('');
    say(markdown(['query', 'results', 'check', 'runs W/O/C', 'Weft ms', 'in query thread ms', 'Oxigraph ms', 'Comunica ms', 'CPU ms W/O/C', 'Weft/Ox', 'Weft/Comunica'], table));
    rows.push(row({ benchmark: BENCHMARK, measure: `${at}: mix geomean vs Oxigraph`, weft: gm.weft, peer: gm.ox, peerName: `Oxigraph (in-process)`, unit: 'ms', target: target === 100_000 ? '<= 3' : undefined, note: target === 100_000 ? 'goal <= 2' : undefined }));
    const requestPathGm = geomean(medians.weft.map((ms, i) => Math.max(ms - threadMedians[i], 0.001)));
    rows.push(figure({ benchmark: BENCHMARK, measure: `${at}: mix geomean in the query thread`, weft: threadGm, unit: 'ms', note: `evaluation and serialization (Server-Timing); the rest of each request, its path through HTTP, the key, the dataset lookup, the charge and the thread hop: geomean ${fmt(requestPathGm)} ms` }));
    const freshGm = { weft: geomean(freshPairs.map((pair) => pair.w)), ox: geomean(freshPairs.map((pair) => pair.o)) };
    say(`the mix with every text new (no kept parse or plan): Weft ${fmt(freshGm.weft)} ms, Oxigraph ${fmt(freshGm.ox)} ms (${(freshGm.weft / freshGm.ox).toFixed(2)}x); per query Weft/Oxigraph ${queries.map((q, i) => `${q.id} ${fmt(freshPairs[i].w)}/${fmt(freshPairs[i].o)}`).join(', ')}`);
    rows.push(row({ benchmark: BENCHMARK, measure: `${at}: mix geomean, every text new, vs Oxigraph`, weft: freshGm.weft, peer: freshGm.ox, peerName: 'Oxigraph (in-process)', unit: 'ms', note: 'each request a text neither engine has seen (a comment names the run): no kept parse or plan' }));
    rows.push(row({ benchmark: BENCHMARK, measure: `${at}: mix geomean vs Comunica`, weft: gm.weft, peer: gm.com, peerName: 'Comunica over n3 (in-process)', unit: 'ms' }));
    rows.push(row({ benchmark: BENCHMARK, measure: `${at}: mix geomean CPU time vs Oxigraph`, weft: gmCpu.weft, peer: gmCpu.ox, peerName: 'Oxigraph (in-process)', unit: 'CPU ms', note: `load-independent view: the API process's CPU per query (PostgreSQL's not included) against the bench process's; Comunica in-process ${fmt(gmCpu.com)} CPU ms` }));

    if (opts.profile) {
      const b = await breakdown(weft, loaded, queries, texts, opts.runs, httpCost!);
      const evalGm = geomean(queries.map((q) => b.evaluate.get(q.id)!));
      const serGm = geomean(queries.map((q) => Math.max(b.serialize.get(q.id)!, 0.001)));
      say(`\nwhere a request's time goes (in this process, Weft's own functions):`);
      say(`- cold dataset build: sparqlDataset ${fmt(b.coldDatasetMs)} ms = reading ${records.toLocaleString('en')} records in pages ${fmt(b.readMs)} ms + mapping to quads ${fmt(b.mapMs)} ms + new Store ${fmt(b.storeMs)} ms (measured apart)`);
      say(`- warm dataset (what a repeated request pays before evaluating): ${fmt(b.warmDatasetMs)} ms`);
      say(`- a whole request whose evaluation is trivial (HTTP POST ASK {}): ${fmt(b.askEmptyMs)} ms; its parts measured apart: ${b.fixed.map(([what, ms]) => `${what} ${fmt(ms)}`).join(', ')} (the last three run side by side); the rest (router: request limits and key usage; Koa; HTTP): ${rest(b)}; an authenticated GET /organization by the same client, the path every route shares: ${fmt(b.organizationMs)} ms; the same answer from bare Koa + @koa/router by the same client (HTTP and Koa alone): ${fmt(b.bareKoaMs)} ms`);
      say(`- evaluateQuery (Comunica with Weft's limits and kept parses) geomean ${fmt(evalGm)} ms; serializeResult geomean ${fmt(serGm)} ms`);
      say(markdown(['query', 'Weft HTTP ms', 'evaluateQuery ms', 'serialize ms', 'Weft − evaluate ms', 'Comunica ms'], queries.map((q, i) => [q.id, fmt(medians.weft[i]), fmt(b.evaluate.get(q.id)!), fmt(b.serialize.get(q.id)!), fmt(medians.weft[i] - b.evaluate.get(q.id)!), fmt(medians.com[i])])));
      rows.push(figure({ benchmark: BENCHMARK, measure: `${at}: dataset build (cold)`, weft: b.coldDatasetMs, unit: 'ms', note: `read ${fmt(b.readMs)} + map ${fmt(b.mapMs)} + n3 Store ${fmt(b.storeMs)} ms; warm (kept store): ${fmt(b.warmDatasetMs)} ms` }));
      rows.push(figure({ benchmark: BENCHMARK, measure: `${at}: HTTP POST ASK {} (a request's fixed cost)`, weft: b.askEmptyMs, unit: 'ms', note: `GET /organization by the same client ${fmt(b.organizationMs)} ms; bare Koa + @koa/router, same answer and client ${fmt(b.bareKoaMs)} ms; ${b.fixed.map(([what, ms]) => `${what} ${fmt(ms)}`).join('; ')}` }));
      rows.push(figure({ benchmark: BENCHMARK, measure: `${at}: evaluateQuery geomean (in-process)`, weft: evalGm, unit: 'ms', note: `Weft's own engine wiring on the kept store; serializeResult geomean ${fmt(serGm)} ms` }));
    }
    const memory = processMemoryMb(weft.api.pid!);
    say(`API process memory after the mix: RSS ${memory.rss.toFixed(0)} MB (peak ${memory.peak.toFixed(0)} MB)`);
    rows.push(figure({ benchmark: BENCHMARK, measure: `${at}: API process RSS after the mix`, weft: memory.rss, unit: 'MB', note: `peak ${memory.peak.toFixed(0)} MB; the kept dataset of ${weftTriples.toLocaleString('en')} triples is part of it` }));
    (oxStore as unknown as { free?: () => void }).free?.();
  } finally {
    await weft.stop();
  }
  return rows;
}

/** The `code` of a problem+json answer, or '' when the body is not one. */
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
    // Comunica and the database pool may keep handles; the scale is done.
    process.exit(0);
  }
  say(`# sparql: Weft's SPARQL endpoint vs Oxigraph and Comunica in-process, BSBM-like data`);
  say(`node ${process.version}, ${cpus().length} cores; median of ${opts.runs} runs after ${opts.warmup} warm-up(s), after ${opts.serveFirst.toLocaleString('en')} queries outside the mix served first; scales ${opts.scales.map(label).join(', ')}`);
  say('\nQueries:');
  for (const q of MIX) if (!opts.only.length || opts.only.includes(q.id)) say(`- ${q.id}: ${q.what}`);
  const rows: BenchRow[] = [];
  let failed = false;
  for (const target of opts.scales) {
    // A process per scale: each gets a fresh Weft, and WebAssembly memory only grows.
    const args = ['--child', '--triples', String(target), '--runs', String(opts.runs), '--warmup', String(opts.warmup), '--serve-first', String(opts.serveFirst), ...(opts.only.length ? ['--query', opts.only.join(',')] : []), ...(opts.cpuProf ? ['--cpu-prof', opts.cpuProf] : []), ...(opts.profile ? [] : ['--no-profile'])];
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
      say(`\n!!! the run at ${label(target)} triples failed (exit ${output.code})`);
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
