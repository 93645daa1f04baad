/**
 * SPARQL engines, measured side by side on the same n3 Store and the same triples in one run:
 * Weft (evaluateQuery: its own evaluator over the store's indexes, Comunica for what that does not
 * cover), Comunica (RDF/JS) alone, and Oxigraph (its npm build, Rust compiled to WebAssembly). It
 * prints ratios; it passes or fails nothing.
 *
 *   npx tsx bench/sparql-engines.ts                      # scales 10k and 100k triples, both mixes
 *   npx tsx bench/sparql-engines.ts --scale 100000       # one scale
 *   npx tsx bench/sparql-engines.ts --scale 1M --no-comunica   # Comunica takes minutes at 1M
 *   npx tsx bench/sparql-engines.ts --mix bsbm --query q5-similar,q7-product-page --runs 9
 *
 * Two query mixes. `shop`: data shaped like a Weft project's SPARQL dataset, a small ontology
 * package (classes with a subclass, properties with domain, range and labels) plus bound records
 * mapped to triples the way ontology/term-records.ts does (rdf:type of the term's class, one typed
 * literal per mapped property, one IRI per link). `bsbm`: the BSBM-like data and explore mix of
 * bench/sparql.ts (bench/support/sparql-bsbm.ts), compiled and mapped in this process. Both are
 * generated from fixed seeds, so every run sees the same triples.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { cpus } from 'node:os';
import { performance } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { QueryEngine } from '@comunica/query-sparql-rdfjs';
import type * as RDF from '@rdfjs/types';
import { DataFactory, Parser, Quad, Store, Writer } from 'n3';
import * as oxigraph from 'oxigraph';
import { compilePackage } from '../ontology/compile';
import type { OntologyDefinition } from '../ontology/definition';
import { EvaluationPath, evaluateQuery, KeptParses } from '../ontology/sparql-engine';
import { mapRecord } from '../ontology/term-records';
import type { PackageTerms } from '../db/models';
import { amount, benchFlags, count, counts, names } from './support/options';
import { generate as generateBsbm, LINKS, MIX, TERMS } from './support/sparql-bsbm';

/** Weft's kept parses, as the query threads keep them (an answer to a text seen before is not parsed again). */
const parses = new KeptParses();

const { namedNode, literal, quad } = DataFactory;

// ---------------------------------------------------------------------------------------------
// Options

type MixName = 'shop' | 'bsbm';
const MIXES: MixName[] = ['shop', 'bsbm'];

interface Options {
  scales: number[];
  mixes: MixName[];
  /** Query ids to run (all when empty). */
  only: string[];
  /** Time Comunica alone too (it takes minutes at a million triples). */
  comunica: boolean;
  runs: number;
  warmup: number;
  /** Internal: a child process that runs one scale without the header. */
  child?: boolean;
  /** Internal: the child process that measures one engine's memory. */
  memoryChild?: { engine: Engine; triples: number };
  /** Internal: the child process that times loading Oxigraph quad by quad. */
  quadLoadChild?: { triples: number; runs: number };
}

type Engine = 'n3' | 'oxigraph';

function options(): Options {
  const flags = benchFlags('npm run bench:sparql --', {
    scale: { type: 'string', help: 'approximate triples per scale, e.g. 10000,100000 (default 10k,100k)' },
    mix: { type: 'string', help: `query mixes (default all): ${MIXES.join(', ')}` },
    query: { type: 'string', help: `query ids (default all): ${[...QUERIES, ...MIX].map((q) => q.id).join(', ')}` },
    'no-comunica': { type: 'boolean', help: 'skip timing Comunica alone' },
    runs: { type: 'string', help: 'timed runs per query (default 5)' },
    warmup: { type: 'string', help: 'warm-up runs per query (default 2)' },
    child: { type: 'boolean', help: 'internal: run one scale in this process' },
    'quad-load-child': { type: 'string', help: 'internal: TRIPLES:RUNS, time loading Oxigraph quad by quad' },
    'memory-child': { type: 'string', help: "internal: ENGINE:TRIPLES, measure one engine's memory" },
  });
  const pair = (text: string | undefined, flag: string): [string, string] | undefined => {
    if (text === undefined) return undefined;
    const [first, second] = text.split(':');
    if (!first || !second) throw new Error(`--${flag} wants A:B, got ${text}`);
    return [first, second];
  };
  const quadLoad = pair(flags['quad-load-child'], 'quad-load-child');
  const memory = pair(flags['memory-child'], 'memory-child');
  return {
    scales: counts(flags.scale, 'scale', [10_000, 100_000]),
    mixes: names(flags.mix, 'mix', MIXES, MIXES),
    only: names(flags.query, 'query', [...QUERIES, ...MIX].map((q) => q.id), []),
    comunica: !flags['no-comunica'],
    runs: count(flags.runs, 'runs', 5),
    warmup: Math.floor(amount(flags.warmup, 'warmup', 2)),
    child: flags.child,
    quadLoadChild: quadLoad && { triples: count(quadLoad[0], 'quad-load-child', 0), runs: count(quadLoad[1], 'quad-load-child', 0) },
    memoryChild: memory && { engine: names(memory[0], 'memory-child', ['n3', 'oxigraph'] as const, [])[0], triples: count(memory[1], 'memory-child', 0) },
  };
}


// ---------------------------------------------------------------------------------------------
// Data: an ontology package plus bound records, as triples

const NS = {
  rdf: 'http://www.w3.org/1999/02/22-rdf-syntax-ns#',
  rdfs: 'http://www.w3.org/2000/01/rdf-schema#',
  owl: 'http://www.w3.org/2002/07/owl#',
  xsd: 'http://www.w3.org/2001/XMLSchema#',
};
/** The package's base IRI (terms) and the bindings' subject templates (records). */
const BASE = 'https://weft.example/w/acme/p/shop/terms/';
const DATA = 'https://weft.example/w/acme/p/shop/data/';

const PREFIXES = `PREFIX rdf: <${NS.rdf}>
PREFIX rdfs: <${NS.rdfs}>
PREFIX xsd: <${NS.xsd}>
PREFIX t: <${BASE}>
PREFIX d: <${DATA}>
`;

/** mulberry32: small, fast and the same on every machine. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const FIRST = ['Ada', 'Grace', 'Alan', 'Edsger', 'Barbara', 'Donald', 'Frances', 'Ken', 'Margaret', 'Tim', 'Radia', 'John', 'Lynn', 'Niklaus', 'Shafi'];
const LAST = ['Lovelace', 'Hopper', 'Turing', 'Dijkstra', 'Liskov', 'Knuth', 'Allen', 'Thompson', 'Hamilton', 'Berners-Lee', 'Perlman', 'McCarthy', 'Conway', 'Wirth', 'Goldwasser'];
const STATUS = ['placed', 'paid', 'shipped', 'delivered', 'returned'];
const ORDERS_PER_CUSTOMER = 3;

interface Dataset {
  quads: Quad[];
  customers: number;
  orders: number;
}

function ontology(): Quad[] {
  const q: Quad[] = [];
  const type = namedNode(`${NS.rdf}type`);
  const label = (s: string, text: string) => q.push(quad(namedNode(s), namedNode(`${NS.rdfs}label`), literal(text, 'en')));
  for (const cls of ['Customer', 'VipCustomer', 'Order']) {
    q.push(quad(namedNode(BASE + cls), type, namedNode(`${NS.owl}Class`)));
    label(BASE + cls, cls.replace(/([a-z])([A-Z])/g, '$1 $2').toLowerCase());
  }
  q.push(quad(namedNode(`${BASE}VipCustomer`), namedNode(`${NS.rdfs}subClassOf`), namedNode(`${BASE}Customer`)));
  const props: [string, 'Datatype' | 'Object', string, string][] = [
    ['name', 'Datatype', 'Customer', `${NS.xsd}string`],
    ['age', 'Datatype', 'Customer', `${NS.xsd}integer`],
    ['referredBy', 'Object', 'Customer', `${BASE}Customer`],
    ['total', 'Datatype', 'Order', `${NS.xsd}decimal`],
    ['status', 'Datatype', 'Order', `${NS.xsd}string`],
    ['note', 'Datatype', 'Order', `${NS.xsd}string`],
    ['placedBy', 'Object', 'Order', `${BASE}Customer`],
  ];
  for (const [name, kind, domain, range] of props) {
    const p = namedNode(BASE + name);
    q.push(quad(p, type, namedNode(`${NS.owl}${kind}Property`)));
    q.push(quad(p, namedNode(`${NS.rdfs}domain`), namedNode(BASE + domain)));
    q.push(quad(p, namedNode(`${NS.rdfs}range`), namedNode(range)));
    label(BASE + name, name);
  }
  return q;
}

/**
 * About `target` triples: customers (type, name, age, a referral for most) each with three orders
 * (type, total, status, placedBy, a note for some). Totals have two decimals; a referral always
 * points to an earlier customer, so referral chains end.
 */
function dataset(target: number): Dataset {
  const random = prng(0x5eed);
  const q = ontology();
  const type = namedNode(`${NS.rdf}type`);
  const p = (name: string) => namedNode(BASE + name);
  const integer = namedNode(`${NS.xsd}integer`);
  const decimal = namedNode(`${NS.xsd}decimal`);
  // Per customer about 3.9 triples of its own plus 3 orders of about 4.3.
  const customers = Math.max(10, Math.round((target - q.length) / (3.9 + ORDERS_PER_CUSTOMER * 4.3)));
  let orders = 0;
  for (let c = 0; c < customers; c++) {
    const customer = namedNode(`${DATA}customer/${c}`);
    q.push(quad(customer, type, p(c % 10 === 0 ? 'VipCustomer' : 'Customer')));
    q.push(quad(customer, p('name'), literal(`${FIRST[Math.floor(random() * FIRST.length)]} ${LAST[Math.floor(random() * LAST.length)]} ${c}`)));
    q.push(quad(customer, p('age'), literal(String(18 + Math.floor(random() * 70)), integer)));
    if (c > 0 && random() < 0.9) q.push(quad(customer, p('referredBy'), namedNode(`${DATA}customer/${Math.floor(random() * c)}`)));
    for (let k = 0; k < ORDERS_PER_CUSTOMER; k++, orders++) {
      const order = namedNode(`${DATA}order/${orders}`);
      q.push(quad(order, type, p('Order')));
      q.push(quad(order, p('total'), literal((1 + Math.floor(random() * 99_999) / 100).toFixed(2), decimal)));
      q.push(quad(order, p('status'), literal(STATUS[Math.floor(random() * STATUS.length)])));
      q.push(quad(order, p('placedBy'), customer));
      if (random() < 0.3) q.push(quad(order, p('note'), literal(`leave at door ${orders % 97}`)));
    }
  }
  return { quads: q, customers, orders };
}

function toNTriples(quads: Quad[]): string {
  return new Writer({ format: 'N-Triples' }).quadsToString(quads);
}

/** n3 quads handed to Oxigraph as they are (it reads RDF/JS terms): what Weft would do with its mapped quads. */
function loadOxigraphFromQuads(quads: Quad[]): oxigraph.Store {
  return new oxigraph.Store(quads as unknown as Iterable<oxigraph.Quad>);
}

/** Oxigraph's store lives in WebAssembly memory; free it now rather than whenever a finalizer runs. */
function freeOxigraph(store: oxigraph.Store): void {
  (store as unknown as { free?: () => void }).free?.();
}

function loadOxigraphFromNTriples(ntriples: string): oxigraph.Store {
  const store = new oxigraph.Store();
  store.load(ntriples, { format: 'application/n-triples' });
  return store;
}

// ---------------------------------------------------------------------------------------------
// Queries

interface BenchQuery {
  id: string;
  what: string;
  kind: 'select' | 'ask' | 'construct';
  text: (d: Dataset) => string;
}

const QUERIES: BenchQuery[] = [
  {
    id: 'lookup',
    what: 'selective triple pattern: one customer’s orders',
    kind: 'select',
    text: (d) => `${PREFIXES}SELECT ?order WHERE { ?order t:placedBy <${DATA}customer/${Math.floor(d.customers / 2)}> }`,
  },
  {
    id: 'join',
    what: 'every order with its customer’s name',
    kind: 'select',
    text: () => `${PREFIXES}SELECT ?order ?name WHERE { ?order a t:Order ; t:placedBy ?c . ?c t:name ?name }`,
  },
  {
    id: 'filter-range',
    what: 'customers aged 30 to 39',
    kind: 'select',
    text: () => `${PREFIXES}SELECT ?c ?age WHERE { ?c t:age ?age FILTER(?age >= 30 && ?age < 40) }`,
  },
  {
    id: 'aggregate',
    what: 'GROUP BY status with COUNT and SUM',
    kind: 'select',
    text: () => `${PREFIXES}SELECT ?status (COUNT(?o) AS ?orders) (SUM(?total) AS ?sum) WHERE { ?o t:status ?status ; t:total ?total } GROUP BY ?status`,
  },
  {
    id: 'aggregate-wide',
    what: 'GROUP BY customer with COUNT, MAX and HAVING',
    kind: 'select',
    text: () => `${PREFIXES}SELECT ?c (COUNT(?o) AS ?orders) (MAX(?total) AS ?top) WHERE { ?o t:placedBy ?c ; t:total ?total } GROUP BY ?c HAVING (MAX(?total) > 900)`,
  },
  {
    id: 'optional',
    what: 'orders with their note, if any',
    kind: 'select',
    text: () => `${PREFIXES}SELECT ?o ?note WHERE { ?o a t:Order . OPTIONAL { ?o t:note ?note } }`,
  },
  {
    id: 'order-limit',
    what: 'top 10 orders by total (ORDER BY + LIMIT)',
    kind: 'select',
    text: () => `${PREFIXES}SELECT ?o ?total WHERE { ?o t:total ?total } ORDER BY DESC(?total) ?o LIMIT 10`,
  },
  {
    id: 'ask',
    what: 'ASK with no match (scans every age)',
    kind: 'ask',
    text: () => `${PREFIXES}ASK { ?c t:age ?age FILTER(?age > 200) }`,
  },
  {
    id: 'construct',
    what: 'CONSTRUCT order → customer name (VIPs)',
    kind: 'construct',
    text: () => `${PREFIXES}CONSTRUCT { ?o t:customerName ?name } WHERE { ?c a t:VipCustomer ; t:name ?name . ?o t:placedBy ?c }`,
  },
  {
    id: 'path-class',
    what: 'path: rdf:type/rdfs:subClassOf* t:Customer',
    kind: 'select',
    text: () => `${PREFIXES}SELECT ?c WHERE { ?c rdf:type/rdfs:subClassOf* t:Customer }`,
  },
  {
    id: 'path-chain',
    what: 'path: referredBy+ from 100 customers (VALUES)',
    kind: 'select',
    text: (d) => `${PREFIXES}SELECT ?c ?r WHERE { VALUES ?c { ${Array.from({ length: 100 }, (_, i) => `<${DATA}customer/${d.customers - 1 - Math.floor((i * d.customers) / 100)}>`).join(' ')} } ?c t:referredBy+ ?r }`,
  },
];

// ---------------------------------------------------------------------------------------------
// Running a query on each engine: collect every result, return rows as canonical strings

type RdfTerm = { termType: string; value: string; language?: string; datatype?: { value: string } };

const NUMERIC = new Set(['integer', 'decimal', 'double', 'float', 'long', 'int'].map((t) => `${NS.xsd}${t}`));

/**
 * A term as a comparable string. With `byValue`, numeric literals compare by value, so an engine
 * that writes a decimal as "984.1" and one that keeps "984.10" agree (SPARQL leaves the lexical
 * form of computed values to the engine).
 */
function termKey(term: RdfTerm | undefined, byValue = false): string {
  if (!term) return '-';
  if (byValue && term.termType === 'Literal' && term.datatype && NUMERIC.has(term.datatype.value)) return `${Number(term.value)}^^number`;
  if (term.termType === 'Literal') {
    const lang = term.language ? `@${term.language}` : '';
    const dt = !lang && term.datatype && term.datatype.value !== `${NS.xsd}string` ? `^^${term.datatype.value}` : '';
    return `"${term.value}"${lang}${dt}`;
  }
  return `${term.termType === 'BlankNode' ? '_:' : ''}<${term.value}>`;
}

const quadKey = (q: { subject: RdfTerm; predicate: RdfTerm; object: RdfTerm }, byValue: boolean) => `${termKey(q.subject, byValue)} ${termKey(q.predicate, byValue)} ${termKey(q.object, byValue)}`;

/** Every result of one run, as the engine gave it: timing covers producing and collecting these, nothing else. */
type Results = { ask: boolean } | { quads: { subject: RdfTerm; predicate: RdfTerm; object: RdfTerm }[] } | { rows: Iterable<[string, RdfTerm]>[] };

const comunica = new QueryEngine();

async function runComunica(store: Store, query: Pick<BenchQuery, 'kind'>, text: string): Promise<Results> {
  const context = { sources: [store] as [Store] };
  if (query.kind === 'ask') return { ask: await comunica.queryBoolean(text, context) };
  if (query.kind === 'construct') return { quads: await (await comunica.queryQuads(text, context)).toArray() };
  const bindings = await (await comunica.queryBindings(text, context)).toArray();
  return { rows: bindings.map((b) => ({ [Symbol.iterator]: () => [...b].map(([v, t]) => [v.value, t] as [string, RdfTerm])[Symbol.iterator]() })) };
}

function runOxigraph(store: oxigraph.Store, query: Pick<BenchQuery, 'kind'>, text: string): Results {
  const result = store.query(text);
  if (query.kind === 'ask') return { ask: result as boolean };
  if (query.kind === 'construct') return { quads: result as oxigraph.Quad[] };
  return { rows: result as Map<string, oxigraph.Term>[] as unknown as Iterable<[string, RdfTerm]>[] };
}

const resultCount = (r: Results): string => ('ask' in r ? String(r.ask) : 'quads' in r ? String(r.quads.length) : String(r.rows.length));

/** The results as a multiset of strings, one a row or triple, for comparing the engines. */
function canonical(r: Results, byValue: boolean): string[] {
  if ('ask' in r) return [String(r.ask)];
  if ('quads' in r) return r.quads.map((q) => quadKey(q, byValue));
  return r.rows.map((row) => {
    const parts: string[] = [];
    for (const [variable, term] of row) parts.push(`${variable}=${termKey(term, byValue)}`);
    return parts.sort().join(' ');
  });
}

// ---------------------------------------------------------------------------------------------
// Measuring

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

async function timed<T>(fn: () => T | Promise<T>): Promise<{ ms: number; value: T }> {
  const start = performance.now();
  const value = await fn();
  return { ms: performance.now() - start, value };
}

/** Per query and engine, the timed runs stop early once they have taken this long (at least one run is timed). */
const BUDGET_MS = 8000;

interface Timing<T> {
  median: number;
  /** Timed runs; 0 when the one warm-up run alone took longer than the budget and is what `median` reports. */
  runs: number;
  value: T;
}

/**
 * Median of up to `runs` timings after `warmup` untimed runs. A query that is already slow stops
 * warming up once warm-ups have taken half the budget and times fewer runs; one whose first run
 * exceeds the whole budget is reported from that cold run alone, so the default scales finish in
 * minutes.
 * `dispose` gets every value but the last.
 */
async function bench<T>(fn: () => T | Promise<T>, runs: number, warmup: number, dispose?: (value: T) => void): Promise<Timing<T>> {
  let value: T | undefined;
  const keep = (next: T) => {
    if (value !== undefined) dispose?.(value);
    value = next;
  };
  let spent = 0;
  for (let i = 0; i < warmup && spent < BUDGET_MS / 2; i++) {
    const run = await timed(fn);
    keep(run.value);
    spent += run.ms;
    if (run.ms > BUDGET_MS) return { median: run.ms, runs: 0, value: run.value };
  }
  const times: number[] = [];
  let timedMs = 0;
  while (times.length < runs && (times.length === 0 || timedMs + timedMs / times.length <= BUDGET_MS)) {
    const run = await timed(fn);
    keep(run.value);
    times.push(run.ms);
    timedMs += run.ms;
  }
  return { median: median(times), runs: times.length, value: value as T };
}

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
function settle(): void {
  for (let i = 0; i < 3; i++) gc();
}

interface Memory {
  heap: number;
  external: number;
  rss: number;
}

function memoryNow(): Memory {
  const m = process.memoryUsage();
  return { heap: m.heapUsed, external: m.external, rss: m.rss };
}

/** In a fresh process, so one engine's garbage and WebAssembly memory don't land on the other's count. */
function memoryChild(engine: Engine, triples: number): void {
  const data = dataset(triples);
  const ntriples = engine === 'oxigraph' ? toNTriples(data.quads) : '';
  settle();
  const before = memoryNow();
  let store: Store | oxigraph.Store;
  if (engine === 'n3') store = new Store(data.quads);
  else store = loadOxigraphFromNTriples(ntriples);
  settle();
  const after = memoryNow();
  const size = store.size;
  // Keep the inputs alive until after the measurement, so only the store is counted.
  process.stdout.write(JSON.stringify({ size, kept: data.quads.length + ntriples.length > 0, heap: after.heap - before.heap, external: after.external - before.external, rss: after.rss - before.rss }) + '\n');
}

/**
 * Oxigraph loaded from RDF/JS quads, timed in a fresh process: each quad leaves bindings' objects for
 * the garbage collector and WebAssembly memory that only grows, which would slow whatever ran next.
 */
async function quadLoadChild(triples: number, runs: number): Promise<void> {
  const data = dataset(triples);
  const timing = await bench(() => loadOxigraphFromQuads(data.quads), runs, 2, freeOxigraph);
  process.stdout.write(JSON.stringify({ median: timing.median, runs: timing.runs, size: timing.value.size }) + '\n');
}

function isolated<T>(args: string[]): T {
  const child = spawnSync(process.execPath, [...process.execArgv, __filename, ...args], { encoding: 'utf8', maxBuffer: 1 << 20 });
  if (child.status !== 0) throw new Error(`child ${args.join(' ')} failed: ${child.stderr || child.stdout}`);
  return JSON.parse(child.stdout.trim().split('\n').pop()!) as T;
}

function measureMemory(engine: Engine, triples: number): Memory & { size: number } {
  return isolated<Memory & { size: number }>(['--memory-child', `${engine}:${triples}`]);
}

// ---------------------------------------------------------------------------------------------
// Printing

const fmtMs = (ms: number) => (ms >= 100 ? ms.toFixed(0) : ms >= 10 ? ms.toFixed(1) : ms.toFixed(2));
const fmtRatio = (r: number) => (Number.isFinite(r) ? (r >= 10 ? r.toFixed(0) : r.toFixed(1)) + '×' : 'n/a');
const fmtMb = (bytes: number) => (bytes / (1024 * 1024)).toFixed(1);

function table(head: string[], rows: string[][], right: boolean[]): string {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells: string[]) => '| ' + cells.map((c, i) => (right[i] ? c.padStart(widths[i]) : c.padEnd(widths[i]))).join(' | ') + ' |';
  return [line(head), '|' + widths.map((w, i) => (right[i] ? '-'.repeat(w + 1) + ':' : '-'.repeat(w + 2))).join('|') + '|', ...rows.map(line)].join('\n');
}

function sameRows(a: string[], b: string[], names: [string, string]): { same: boolean; example?: string } {
  const count = new Map<string, number>();
  for (const row of a) count.set(row, (count.get(row) ?? 0) + 1);
  for (const row of b) {
    const n = count.get(row) ?? 0;
    if (n === 0) return { same: false, example: `only ${names[1]}: ${row}` };
    count.set(row, n - 1);
  }
  for (const [row, n] of count) if (n > 0) return { same: false, example: `only ${names[0]}: ${row}` };
  return { same: true };
}

// ---------------------------------------------------------------------------------------------
// The BSBM-like mix: bench/sparql.ts's data and queries, compiled and mapped in this process

const BSBM_BASE = 'https://bsbm.example/ontology#';

/** The package of the BSBM terms and links plus every record mapped to triples, as the endpoint maps them. */
async function bsbmDataset(target: number): Promise<{ quads: Quad[]; queries: ResolvedQuery[]; description: string }> {
  const data = generateBsbm(target);
  const definition = { terms: TERMS, links: LINKS, shapes: [], constraints: [], imports: [] } as unknown as OntologyDefinition;
  const pkg = await compilePackage(definition, { baseIri: BSBM_BASE, packages: new Map(), documents: new Map() });
  const quads: Quad[] = new Parser({ format: 'application/n-quads' }).parse(pkg.nquads);
  const terms: PackageTerms = {
    classes: TERMS.filter((t) => t.kind === 'class').map((t) => t.id),
    properties: Object.fromEntries(TERMS.filter((t) => t.kind === 'property').map((t) => [t.id, { domain: t.domain!, datatype: t.datatype! }])),
    links: Object.fromEntries(LINKS.map((l) => [l.id, { from: l.from, to: l.to }])),
  };
  for (const spec of data.tables) for (const record of spec.rows) quads.push(...(mapRecord(record, spec.term, spec.mapping, terms, BSBM_BASE)?.quads ?? []));
  const queries = MIX.map((q) => ({ id: q.id, what: q.what, kind: q.kind, text: q.text(BSBM_BASE, data.params) }));
  return { quads, queries, description: `${data.products.toLocaleString('en')} products, ${data.records.toLocaleString('en')} records` };
}

// ---------------------------------------------------------------------------------------------

interface ResolvedQuery {
  id: string;
  what: string;
  kind: 'select' | 'ask' | 'construct';
  text: string;
}

const WEFT_LIMITS = { timeoutMs: 600_000, maxResults: 100_000_000 };

/** Weft's evaluateQuery, as the endpoint calls it; `path` says which evaluator answered. */
async function runWeft(store: Store, text: string): Promise<{ results: Results; path: EvaluationPath | undefined }> {
  let path: EvaluationPath | undefined;
  const result = await evaluateQuery(store, text, WEFT_LIMITS, { onPath: (answered) => (path = answered), parses });
  if (result.kind === 'boolean') return { results: { ask: result.value }, path };
  if (result.kind === 'quads') return { results: { quads: result.quads }, path };
  return { results: { rows: result.rows.map((row) => Object.entries(row) as Array<[string, RDF.Term]>) }, path };
}

const geomean = (xs: number[]) => Math.exp(xs.reduce((sum, x) => sum + Math.log(x), 0) / xs.length);

/** How two engines' results compare: the same, the same values written differently, or different. */
function check(a: Results, b: Results, names: [string, string]): { check: string; note?: string; mismatch: boolean } {
  const countA = resultCount(a);
  const countB = resultCount(b);
  if (countA !== countB) return { check: 'COUNT MISMATCH', note: `RESULT COUNT MISMATCH: ${names[0]} ${countA}, ${names[1]} ${countB}`, mismatch: true };
  const lexical = sameRows(canonical(a, false), canonical(b, false), names);
  if (lexical.same) return { check: 'same', mismatch: false };
  const byValue = sameRows(canonical(a, true), canonical(b, true), names);
  if (byValue.same) return { check: 'same values*', note: `same values, different lexical forms of numbers; e.g. ${lexical.example}`, mismatch: false };
  return { check: 'VALUES DIFFER', note: `RESULT VALUES DIFFER; e.g. ${byValue.example}`, mismatch: true };
}

/** Times every query on each engine over the same triples and prints one table with the ratios. */
async function runQueries(n3Store: Store, oxStore: oxigraph.Store, queries: ResolvedQuery[], opts: Options): Promise<{ mismatches: number }> {
  const rows: string[][] = [];
  const notes: string[] = [];
  const medians = { weft: [] as number[], ox: [] as number[], com: [] as number[] };
  let mismatches = 0;
  for (const query of queries.filter((q) => !opts.only.length || opts.only.includes(q.id))) {
    let w: Timing<{ results: Results; path: EvaluationPath | undefined }>;
    let o: Timing<Results>;
    let c: Timing<Results> | undefined;
    try {
      w = await bench(() => runWeft(n3Store, query.text), opts.runs, opts.warmup);
      o = await bench(() => runOxigraph(oxStore, query, query.text), opts.runs, opts.warmup);
      if (opts.comunica) c = await bench(() => runComunica(n3Store, query, query.text), opts.runs, opts.warmup);
    } catch (error) {
      mismatches++;
      notes.push(`!!! ${query.id}: FAILED: ${(error as Error).message}`);
      rows.push([query.id, 'error', 'error', '', '', '', '', '', 'n/a', 'n/a']);
      continue;
    }
    medians.weft.push(Math.max(w.median, 0.001));
    medians.ox.push(Math.max(o.median, 0.001));
    if (c) medians.com.push(Math.max(c.median, 0.001));
    const checks = [check(w.value.results, o.value, ['Weft', 'Oxigraph']), ...(c ? [check(c.value, o.value, ['Comunica', 'Oxigraph'])] : [])];
    for (const [i, result] of checks.entries()) {
      if (result.note) notes.push(`${result.mismatch ? '!!!' : '*'} ${query.id} (${i === 0 ? 'Weft' : 'Comunica'}): ${result.note}`);
      if (result.mismatch) mismatches++;
    }
    const runs = [w, o, ...(c ? [c] : [])].map((t) => t.runs || 'cold').join('/');
    rows.push([
      query.id,
      resultCount(o.value),
      checks.map((result) => result.check).join(' / '),
      runs,
      w.value.path ?? '?',
      fmtMs(w.median),
      fmtMs(o.median),
      c ? fmtMs(c.median) : '-',
      fmtRatio(w.median / o.median),
      c ? fmtRatio(c.median / w.median) : '-',
    ]);
  }
  if (medians.weft.length) {
    const gm = { weft: geomean(medians.weft), ox: geomean(medians.ox), com: medians.com.length ? geomean(medians.com) : NaN };
    rows.push(['(geometric mean)', '', '', '', '', fmtMs(gm.weft), fmtMs(gm.ox), Number.isNaN(gm.com) ? '-' : fmtMs(gm.com), fmtRatio(gm.weft / gm.ox), Number.isNaN(gm.com) ? '-' : fmtRatio(gm.com / gm.weft)]);
    if (!Number.isNaN(gm.com)) notes.unshift(`Comunica alone / Oxigraph, geometric mean: ${fmtRatio(gm.com / gm.ox)}`);
  }
  // Weft/Ox above 1× means Oxigraph is faster; Comunica/Weft is how many times faster Weft is than Comunica alone.
  console.log(table(['query', 'results', 'check (W/Ox, C/Ox)', `runs W/Ox${opts.comunica ? '/C' : ''}`, 'Weft path', 'Weft (ms)', 'Oxigraph (ms)', 'Comunica (ms)', 'Weft/Ox', 'Comunica/Weft'], rows, [false, true, false, true, false, true, true, true, true, true]));
  if (notes.length) console.log('\n' + notes.join('\n'));
  return { mismatches };
}

/** The shop mix's stores, with load and memory figures for both (the generated triples are then let go). */
async function shopStores(target: number, opts: Options): Promise<{ n3Store: Store; oxStore: oxigraph.Store; queries: ResolvedQuery[] }> {
  const data = dataset(target);
  const ntriples = toNTriples(data.quads);
  console.log(`\n## shop mix, ${data.quads.length.toLocaleString('en')} triples (${data.customers.toLocaleString('en')} customers, ${data.orders.toLocaleString('en')} orders; N-Triples ${fmtMb(ntriples.length)} MB)\n`);

  // Load: what a request pays to build its dataset (Weft builds an n3 Store per request from mapped quads).
  // Oxigraph from N-Triples first, each load freed but the last: its store then sits in WebAssembly
  // memory, which the JS garbage collector does not walk, while n3's loads run. Oxigraph from quads
  // runs in a child of its own (see quadLoadChild). Three runs each: loads are the slow part.
  const loadRuns = Math.min(opts.runs, 3);
  // Two warm-ups: Oxigraph's first loads in a process also grow its WebAssembly memory, which a
  // long-running server pays once.
  const loadOxNt = await bench(() => loadOxigraphFromNTriples(ntriples), loadRuns, 2, freeOxigraph);
  const oxStore = loadOxNt.value;
  const loadN3 = await bench(() => new Store(data.quads), loadRuns, 2);
  const n3Store = loadN3.value;
  const loadOxQuads = isolated<Timing<unknown> & { size: number }>(['--quad-load-child', `${target}:${loadRuns}`]);
  const oxFromQuads = loadOxQuads.size;
  if (n3Store.size !== data.quads.length || oxStore.size !== data.quads.length || oxFromQuads !== data.quads.length) {
    console.log(`!!! LOAD MISMATCH: ${data.quads.length} triples generated; n3 Store holds ${n3Store.size}, Oxigraph ${oxStore.size} (N-Triples) / ${oxFromQuads} (quads)`);
  }

  // Each in its own process. Oxigraph loaded from N-Triples: loaded quad by quad it leaves the
  // bindings' garbage in WebAssembly memory too, which says nothing about the store.
  const memN3 = measureMemory('n3', target);
  const memOx = measureMemory('oxigraph', target);
  const footprint = (m: Memory) => m.heap + m.external;
  const loadMs = (t: Timing<unknown>) => fmtMs(t.median) + (t.runs ? '' : ' (cold)');

  console.log(
    table(
      ['load', 'n3 Store (ms)', 'Oxigraph (ms)', 'ratio n3/Ox'],
      [
        ['n3: new Store(quads); Ox: store.load(N-Triples)', loadMs(loadN3), loadMs(loadOxNt), fmtRatio(loadN3.median / loadOxNt.median)],
        ['n3: new Store(quads); Ox: new Store(n3 quads)', loadMs(loadN3), loadMs(loadOxQuads), fmtRatio(loadN3.median / loadOxQuads.median)],
      ],
      [false, true, true, true],
    ),
  );
  console.log('');
  console.log(
    table(
      ['memory of the loaded store (own process, after GC)', 'n3 Store (MB)', 'Oxigraph (MB)', 'ratio n3/Ox'],
      [
        ['JS heap + external (Oxigraph: WebAssembly memory)', fmtMb(footprint(memN3)), fmtMb(footprint(memOx)), fmtRatio(footprint(memN3) / footprint(memOx))],
        ['RSS delta', fmtMb(memN3.rss), fmtMb(memOx.rss), fmtRatio(memN3.rss / memOx.rss)],
      ],
      [false, true, true, true],
    ),
  );
  console.log('');
  return { n3Store, oxStore, queries: QUERIES.map((q) => ({ id: q.id, what: q.what, kind: q.kind, text: q.text(data) })) };
}

/** The shop mix at one scale. */
async function shopScale(target: number, opts: Options): Promise<{ mismatches: number }> {
  const { n3Store, oxStore, queries } = await shopStores(target, opts);
  settle();
  const outcome = await runQueries(n3Store, oxStore, queries, opts);
  freeOxigraph(oxStore);
  return outcome;
}

/** Both stores of the BSBM-like mix, loaded from the same mapped triples (which are then let go). */
async function bsbmStores(target: number): Promise<{ n3Store: Store; oxStore: oxigraph.Store; queries: ResolvedQuery[] }> {
  const { quads, queries, description } = await bsbmDataset(target);
  const n3Store = new Store(quads);
  const oxStore = loadOxigraphFromNTriples(toNTriples(quads));
  console.log(`\n## bsbm mix, ${quads.length.toLocaleString('en')} triples (${description})\n`);
  if (n3Store.size !== quads.length || oxStore.size !== quads.length) console.log(`!!! LOAD MISMATCH: ${quads.length} triples mapped; n3 Store holds ${n3Store.size}, Oxigraph ${oxStore.size}`);
  return { n3Store, oxStore, queries };
}

/** The BSBM-like mix at one scale. */
async function bsbmScale(target: number, opts: Options): Promise<{ mismatches: number }> {
  const { n3Store, oxStore, queries } = await bsbmStores(target);
  // The generated records and quads are garbage now: collect them before timing, as a server
  // that built its dataset a while ago would have.
  settle();
  const outcome = await runQueries(n3Store, oxStore, queries, opts);
  freeOxigraph(oxStore);
  return outcome;
}

async function scale(target: number, opts: Options): Promise<{ mismatches: number }> {
  let mismatches = 0;
  if (opts.mixes.includes('shop') && (!opts.only.length || QUERIES.some((q) => opts.only.includes(q.id)))) mismatches += (await shopScale(target, opts)).mismatches;
  if (opts.mixes.includes('bsbm') && (!opts.only.length || MIX.some((q) => opts.only.includes(q.id)))) mismatches += (await bsbmScale(target, opts)).mismatches;
  return { mismatches };
}

async function main(): Promise<void> {
  const opts = options();
  if (opts.memoryChild) return memoryChild(opts.memoryChild.engine, opts.memoryChild.triples);
  if (opts.quadLoadChild) return quadLoadChild(opts.quadLoadChild.triples, opts.quadLoadChild.runs);
  if (opts.child) {
    const { mismatches } = await scale(opts.scales[0], opts);
    if (mismatches) console.log(`\n!!! ${mismatches} result mismatch(es) between the engines at this scale: see above.`);
    return;
  }
  console.log(`# SPARQL engines: Weft (its evaluator over n3 ${pkgVersion('n3')}, Comunica for the rest) and Comunica ${pkgVersion('@comunica/query-sparql-rdfjs')} alone vs Oxigraph ${pkgVersion('oxigraph')} (WebAssembly)`);
  console.log(`node ${process.version}, ${cpus().length} cores; median of ${opts.runs} runs after ${opts.warmup} warm-up(s), every result collected; Weft/Ox (and n3/Ox) above 1× means Oxigraph is faster or smaller; Comunica/Weft is Weft's speed-up over Comunica alone.`);
  console.log('\nQueries:');
  for (const q of [...(opts.mixes.includes('shop') ? QUERIES : []), ...(opts.mixes.includes('bsbm') ? MIX : [])]) if (!opts.only.length || opts.only.includes(q.id)) console.log(`- ${q.id}: ${q.what}`);
  // Each scale and mix in a fresh process: WebAssembly memory only grows, and one store's heap
  // (a million triples are a gigabyte in n3) would slow the garbage collection of the next.
  for (const target of opts.scales) {
    for (const mix of opts.mixes) {
      const args = ['--child', '--scale', String(target), '--runs', String(opts.runs), '--warmup', String(opts.warmup), '--mix', mix];
      if (opts.only.length) args.push('--query', opts.only.join(','));
      if (!opts.comunica) args.push('--no-comunica');
      const child = spawnSync(process.execPath, [...process.execArgv, __filename, ...args], { stdio: 'inherit' });
      if (child.status !== 0) console.log(`\n!!! the ${mix} run at ${target} triples failed (exit ${child.status ?? child.signal})`);
    }
  }
}

function pkgVersion(name: string): string {
  try {
    return (JSON.parse(readFileSync(join(__dirname, '..', 'node_modules', name, 'package.json'), 'utf8')) as { version: string }).version;
  } catch {
    return '?';
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
