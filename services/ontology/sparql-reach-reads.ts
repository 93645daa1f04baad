import { callerGoneError, timeoutError } from '../../ontology/sparql-evaluator/deadline';
import type * as RDF from '@rdfjs/types';
import type { Knex } from 'knex';
import type { Clock } from '../../core/clock';
import type { WeightedLru } from '../../ontology/dataset-cache';
import { InputError } from '../../core/errors';
import { QueryCapacityError } from '../../ontology/sparql-threads/query-pool';
import type { BindingMapping, PackageTerms } from '../../db/models';
import { NS } from '../../ontology/compile';
import { patternVariables, ReachNode, ReachPattern } from '../../ontology/sparql-reach';
import { mapRecord, templateFields, bindingFields } from '../../ontology/term-records';
import { sparqlRecordsRead as recordsRead } from '../../observability/metrics';
import { qualified, run, workspaceSchema } from '../../plugins/managed-table/storage';
import { quoteIdentifier, SqlParams } from '../../plugins/sql/builder';

// Reads, for one query, the records of bound managed tables whose triples the query can reach
// (ontology/sparql-reach.ts says which patterns may narrow which): PostgreSQL finds them by the
// query's constants, its numeric FILTER bounds and, round after round, the values the patterns
// read before found (a semi-join), at each table's pinned snapshot. Every condition here keeps
// at least every record that can produce a matching triple (it may keep more), so the evaluator,
// answering over the triples of the records read, gives the answer it gives over the whole graph.
// Tables of postgres_table installations take part in the same rounds (ExternalRecords): their
// own PostgreSQL finds their records by conditions on the columns, and the values found in one
// database narrow the reads of another, so Weft joins bindings of different databases over the
// rows each one sends, within the same bound.

const RDF_TYPE = `${NS.rdf}type`;
const XSD = 'http://www.w3.org/2001/XMLSchema#';
/** Values a pattern narrows another by, at most; past it the other is read without that narrowing. */
const MAX_NARROWING_VALUES = 10_000;
const NUMERIC = new Set(['xsd:integer', 'xsd:decimal', 'xsd:int', 'xsd:long', 'xsd:short', 'xsd:nonNegativeInteger', 'xsd:positiveInteger']);

/** A bound table read at one snapshot: a managed table, or (`external`) a table of another database read live. */
export interface ReachTable {
  workspaceId: string;
  /** The managed table's name; an external table's, for messages. */
  table: string;
  /** The table's primary key, as the table was created (read with the records). */
  primaryKey?: string[] | null;
  termId: string;
  mapping: BindingMapping;
  /** The snapshot version the query reads, or undefined for a table never written (no records). */
  version?: string;
  /** A table of a postgres_table installation, read through its session (sparql-external-sql.ts) instead of the managed tables' storage. */
  external?: ExternalRecords;
}

/**
 * Conditions on a table's records as SQL over where they are read, each keeping at least every
 * record that can yield the triple it is for (it may keep more). `field`s are the mapping's.
 */
export interface FieldTests {
  /** Records whose field holds a value that shows as one of `texts`, itself or as an element of an array. */
  holds(field: string, texts: string[], shown: Shown, params: SqlParams): Condition;
  /** Records with a value in the field. */
  present(field: string, params: SqlParams): Condition;
  /** Records whose value in the field (of a numeric datatype) may pass every bound. */
  withinBounds(field: string, bounds: ReachPattern['objectBounds'], params: SqlParams): Condition;
}

/**
 * The records of a bound table in another database (a postgres_table endpoint): found by
 * conditions on its columns, read in the session the query holds on that database.
 */
export interface ExternalRecords {
  tests: FieldTests;
  /**
   * Records meeting `condition` (true: every one), at most `limit`, each with a key that tells
   * records apart within the query's reads (records of one key yield the same triples).
   */
  read(condition: string | true, params: SqlParams, limit: number): Promise<Array<{ key: string; data: Record<string, unknown> }>>;
  /** Whether the table holds more than `count` rows, counted in its database up to count + 1 (no row is sent). */
  holdsMoreThan(count: number): Promise<boolean>;
}

/** What the query's other graphs (the package, in-memory bindings) hold, as far as narrowing needs. */
export interface OtherGraphs {
  /** Predicates of their triples; undefined: any. */
  predicates?: Set<string>;
  /** Objects of their rdf:type triples. */
  types?: Set<string>;
}

export interface ReachedRecords {
  /** Per table (in the order given), the records read. */
  records: Array<Array<Record<string, unknown>>>;
  /**
   * Per managed table, whether a pattern nothing narrows reaches it: its every record, which the
   * caller takes from the table's whole graph (kept per snapshot and shared by every query) rather
   * than reading the table again for this query. An external table reached so is read whole here,
   * in the query's session, and its records are in `records`.
   */
  whole: boolean[];
  triples: number;
}

/** One kind of triple a bound record yields: its type, a property or a link. */
type TripleKind =
  | { kind: 'type'; predicate: string }
  | { kind: 'property'; predicate: string; field: string; datatype: string }
  | { kind: 'link'; predicate: string; field: string; template: string };

function tripleKinds(source: Pick<ReachTable, 'mapping'>, terms: PackageTerms, baseIri: string): TripleKind[] {
  return [
    { kind: 'type', predicate: RDF_TYPE },
    ...Object.entries(source.mapping.properties).map(([property, field]): TripleKind => ({ kind: 'property', predicate: `${baseIri}${property}`, field, datatype: terms.properties[property]?.datatype ?? 'xsd:string' })),
    ...Object.entries(source.mapping.links ?? {}).map(([link, { field, targetTemplate }]): TripleKind => ({ kind: 'link', predicate: `${baseIri}${link}`, field, template: targetTemplate })),
  ];
}

/** A condition on a record: SQL over `data` (always parameters), or true (every record) or false (none). */
export type Condition = string | boolean;

const and = (parts: Condition[]): Condition => (parts.includes(false) ? false : parts.filter((part) => part !== true).length ? (parts.filter((part) => part !== true) as string[]).map((part) => `(${part})`).join(' AND ') : true);
const or = (parts: Condition[]): Condition => (parts.includes(true) ? true : parts.filter((part) => part !== false).length ? (parts.filter((part) => part !== false) as string[]).map((part) => `(${part})`).join(' OR ') : false);

/**
 * How a text shown in a triple came from a field's value: filled into an IRI template
 * (`String(value)`), an xsd:string literal (the string, or the JSON of another value) or a
 * literal of another datatype (the string, or `String(value)`).
 */
export type Shown = 'iri' | 'string' | 'typed';

/**
 * The JSON values a field (or an element of its array) may hold to show `text`, or undefined
 * when any value might (an object's or nested array's text). A number shows as JavaScript writes
 * it, so only the number whose text it is can show it.
 */
function candidateValues(text: string, shown: Shown): unknown[] | undefined {
  if (shown === 'string' && /^[[{]/.test(text)) return undefined;
  // String() of an object or of a nested array (an array's element that is itself an array).
  if (shown === 'typed' && (text === '[object Object]' || text.includes(',') || text === '')) return undefined;
  const values: unknown[] = [text];
  const number = Number(text);
  if (text.trim() !== '' && Number.isFinite(number) && String(number) === text) values.push(number);
  if (text === 'true' || text === 'false') values.push(text === 'true');
  return values;
}

/** How a table's records are tested: by its columns where it is external, else by the managed tables' JSON. */
const testsOf = (source: ReachTable): FieldTests => source.external?.tests ?? managedTests(source);

/** Tests of a managed table's records (`data`, their JSON); the primary key is read when the rounds start. */
function managedTests(source: ReachTable): FieldTests {
  return {
    holds: (field, texts, shown, params) => fieldShows(field, texts, shown, source.primaryKey, params),
    present,
    withinBounds(field, bounds, params) {
      // Only records whose value is a JSON number that fails a bound are left out: a string or an array
      // is kept for the evaluator to judge (its literal may still compare, or be an error).
      const value = `(data -> ${params.add(field)}::text)`;
      const fails = bounds.map((bound) => `NOT ((${value})::numeric ${bound.op} ${params.add(bound.value)}::numeric)`).join(' OR ');
      return `jsonb_typeof(${value}) <> 'number' OR NOT (${fails})`;
    },
  };
}

/**
 * Records whose field holds a value that shows as one of `texts`, itself or as an element of an
 * array (one triple per element): jsonb containment, which a GIN index on the field answers
 * (ensureReachIndexes). A field of a one-field primary key is found by row_key (its JSON array).
 * Also the SQL path's narrowing of a star's records (sparql-in-sql.ts).
 */
export function fieldShows(field: string, texts: string[], shown: Shown, primaryKey: string[] | null | undefined, params: SqlParams): Condition {
  if (!texts.length) return false;
  const values: unknown[] = [];
  for (const text of texts) {
    const candidates = candidateValues(text, shown);
    if (!candidates) return true;
    values.push(...candidates);
  }
  if (primaryKey?.length === 1 && primaryKey[0] === field) return `row_key = ANY (${params.add(values.map((value) => JSON.stringify([value])))}::text[])`;
  return `(data -> ${params.add(field)}::text) @> ANY (${params.add(values.map((value) => JSON.stringify(value)))}::jsonb[])`;
}

/** The field values (as texts) that fill `template` into each IRI, or undefined when they cannot be told apart. */
function templateTexts(template: string, iris: string[]): Map<string, string[]> | undefined {
  const fields = templateFields(template);
  if (fields.length !== 1) return undefined;
  const [before, after] = template.split(`{${fields[0]}}`);
  const texts: string[] = [];
  for (const iri of iris) {
    if (!iri.startsWith(before) || !iri.endsWith(after) || iri.length <= before.length + after.length) continue;
    const encoded = iri.slice(before.length, iri.length - after.length);
    let text: string;
    try {
      text = decodeURIComponent(encoded);
    } catch {
      continue;
    }
    // Only what encodeURIComponent writes can come from a record.
    if (encodeURIComponent(text) === encoded) texts.push(text);
  }
  return new Map([[fields[0], texts]]);
}

/** Records whose IRI from `template` is one of `iris` (a field or one of its elements filling it). */
function templateIs(source: ReachTable, template: string, iris: string[], params: SqlParams): Condition {
  const texts = templateTexts(template, iris);
  if (!texts) return true;
  return and([...texts].map(([field, values]) => testsOf(source).holds(field, values, 'iri', params)));
}

/** The texts of literals a property of this datatype can show, from the terms a pattern matched. */
function literalTexts(terms: RDF.Term[], datatype: string): string[] {
  const wanted = `${XSD}${datatype.replace(/^xsd:/, '')}`;
  return terms.filter((term) => term.termType === 'Literal' && !(term as RDF.Literal).language && (term as RDF.Literal).datatype.value === wanted).map((term) => term.value);
}

function boundsCondition(source: ReachTable, kind: Extract<TripleKind, { kind: 'property' }>, bounds: ReachPattern['objectBounds'], params: SqlParams): Condition {
  if (!bounds.length || !NUMERIC.has(kind.datatype)) return true;
  return testsOf(source).withinBounds(kind.field, bounds, params);
}

/** Records with a value in the field (JSON null yields no triple). */
const present = (field: string, params: SqlParams) => `jsonb_typeof(data -> ${params.add(field)}::text) <> 'null'`;

/** Terms known for a pattern's variables: the values narrowing patterns matched. */
type Known = Map<string, RDF.Term[]>;

function nodeTerms(node: ReachNode, known: Known): RDF.Term[] | undefined {
  if (node.kind === 'iri') return [{ termType: 'NamedNode', value: node.value } as RDF.NamedNode];
  if (node.kind === 'literal') return [{ termType: 'Literal', value: node.value, language: node.language, datatype: { termType: 'NamedNode', value: node.datatype } } as RDF.Literal];
  if (node.kind === 'var') return known.get(node.name);
  return undefined;
}

/** The records of `source` that can yield a triple matching `pattern`, given what is known of its variables. */
function patternCondition(pattern: ReachPattern, source: ReachTable, kinds: TripleKind[], classIri: string, known: Known, params: SqlParams): Condition {
  const subjects = nodeTerms(pattern.subject, known);
  const objects = nodeTerms(pattern.object, known);
  if (subjects?.some((term) => term.termType === 'Literal') && subjects.every((term) => term.termType !== 'NamedNode')) return false;
  const subject = subjects ? templateIs(source, source.mapping.subjectTemplate, subjects.filter((term) => term.termType === 'NamedNode').map((term) => term.value), params) : true;
  if (subject === false) return false;
  const alternatives = kinds
    .filter((kind) => pattern.predicate === undefined || pattern.predicate === kind.predicate)
    .map((kind): Condition => {
      if (kind.kind === 'type') return !objects || objects.some((term) => term.termType === 'NamedNode' && term.value === classIri);
      if (kind.kind === 'property') {
        const bounds = boundsCondition(source, kind, pattern.objectBounds, params);
        if (!objects) return and([testsOf(source).present(kind.field, params), bounds]);
        const texts = literalTexts(objects, kind.datatype);
        return and([testsOf(source).holds(kind.field, texts, kind.datatype === 'xsd:string' ? 'string' : 'typed', params), bounds]);
      }
      if (!objects) return testsOf(source).present(kind.field, params);
      const iris = objects.filter((term) => term.termType === 'NamedNode').map((term) => term.value);
      if (!iris.length) return false;
      return templateIs(source, kind.template, iris, params);
    });
  return and([subject, or(alternatives)]);
}

/** Whether a pattern's matches are all read from bound tables, so its values may narrow others. */
function narrows(pattern: ReachPattern, others: OtherGraphs): boolean {
  if (pattern.predicate === undefined || !others.predicates) return false;
  if (pattern.predicate === RDF_TYPE) {
    if (!others.predicates.has(RDF_TYPE)) return true;
    return pattern.object.kind === 'iri' && !!others.types && !others.types.has(pattern.object.value);
  }
  return !others.predicates.has(pattern.predicate);
}

function matches(node: ReachNode, term: RDF.Term): boolean {
  if (node.kind === 'iri') return term.termType === 'NamedNode' && term.value === node.value;
  if (node.kind === 'literal') return term.termType === 'Literal' && term.value === node.value && (term as RDF.Literal).language === node.language && (node.language !== '' || (term as RDF.Literal).datatype.value === node.datatype);
  return true;
}

/**
 * Table reads under way per workspace, in one runtime (its pool): each workspace holds at most
 * WEFT_SPARQL_SQL_CONNECTIONS of the pool's connections for SPARQL at once, so one tenant's
 * heavy queries cannot take the connections every other request needs. A member of the
 * runtime's SparqlMemory; the clock dates each read, for the Retry-After of a refusal.
 */
export class TableReadSlots {
  private readonly taken = new Map<string, { count: number; started: number[] }>();

  constructor(private readonly clock: Clock) {}

  take(workspaceId: string, limit: number, timeoutMs: number): () => void {
    const now = this.clock.now();
    const entry = this.taken.get(workspaceId) ?? { count: 0, started: [] };
    if (entry.count >= limit) {
      const soonest = Math.min(...entry.started) + timeoutMs;
      const retryAfterSeconds = Math.max(1, Math.ceil((soonest - now) / 1000));
      throw new QueryCapacityError('sparql_concurrency_limit', `This workspace already reads bound tables for ${limit} SPARQL queries at once in this process (WEFT_SPARQL_SQL_CONNECTIONS); retry after ${retryAfterSeconds} seconds.`, { retryAfterSeconds, limit });
    }
    entry.count++;
    entry.started.push(now);
    this.taken.set(workspaceId, entry);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      entry.count--;
      entry.started.splice(entry.started.indexOf(now), 1);
      if (!entry.count) this.taken.delete(workspaceId);
    };
  }
}

/**
 * Each table's primary key as its storage was created (an endpoint's target may declare another).
 * A table's key is fixed when its storage is registered (`_tables`, never re-registered), so keys
 * found are kept in `kept` (the runtime's SparqlMemory.primaryKeys) and read once per table.
 */
export async function primaryKeysOf(trx: Knex.Transaction, sources: ReachTable[], kept: PrimaryKeys): Promise<Map<string, string[]>> {
  const keys = new Map<string, string[]>();
  const unknown = new Map<string, Set<string>>();
  for (const source of sources) {
    const schema = workspaceSchema(source.workspaceId);
    const key = kept.get(`${schema}.${source.table}`);
    if (key) keys.set(source.table, key);
    else unknown.set(schema, (unknown.get(schema) ?? new Set()).add(source.table));
  }
  for (const [schema, tables] of unknown) {
    const params = new SqlParams();
    const { rows } = await run<{ name: string; key: string[] | null }>(trx, `SELECT table_name AS name, primary_key AS key FROM ${quoteIdentifier(schema)}._tables WHERE table_name = ANY (${params.add([...tables])}::text[])`, params);
    for (const row of rows) {
      if (!row.key) continue;
      keys.set(row.name, row.key);
      kept.set(`${schema}.${row.name}`, row.key, row.name.length + row.key.join('').length);
    }
  }
  return keys;
}

/** Primary keys of managed tables' storage, by `schema.table` (primaryKeysOf). */
export type PrimaryKeys = WeightedLru<string[]>;

/** What a bound-table read's transaction runs under besides read-only. */
export interface ReadingLimits {
  timeoutMs: number;
  /** Aborted when the caller has gone: the running statement is cancelled. */
  signal?: AbortSignal;
  /** work_mem for the transaction's statements (a statement's sorts and hashes). */
  workMem?: string;
}

/**
 * Runs `work` in a read-only transaction whose statements stop at the query's time limit; a
 * statement stopped there is the evaluator's query_timeout (published queries go on as a job on
 * it). When `signal` aborts (the caller went away), the running statement is cancelled at once.
 * The settings (and the backend's pid, to cancel it by) are one round trip after BEGIN.
 */
export async function readingWithin<T>(db: Knex, { timeoutMs, signal, workMem }: ReadingLimits, work: (trx: Knex.Transaction) => Promise<T>): Promise<T> {
  if (signal?.aborted) throw callerGoneError();
  let cancel: (() => void) | undefined;
  try {
    return await db.transaction(async (trx) => {
      // No JIT: every statement here is planned afresh, so a compile (tens of ms) would be paid by
      // each query. At 100k bench records the first q10 after a commit took 2.67x the warm one with
      // JIT and 1.25x without (one run each; that the commit's new snapshot moved the plan's cost
      // past jit_above_cost is the likely reason, not yet confirmed by EXPLAIN).
      const settings = [`SET LOCAL statement_timeout = ${Math.max(1, Math.floor(timeoutMs))}`, 'SET LOCAL jit = off'];
      if (workMem !== undefined) {
        if (!/^[0-9]+(kB|MB|GB)$/.test(workMem)) throw new Error(`work_mem ${workMem} is not a size`);
        settings.push(`SET LOCAL work_mem = '${workMem}'`);
      }
      if (!signal) await trx.raw(settings.join('; '));
      else {
        // One round trip: the statements in one simple query (no parameters), answered as a result each.
        const results = await trx.raw<Array<{ rows: Array<{ pid: number }> }>>(`${settings.join('; ')}; SELECT pg_backend_pid() AS pid`);
        const { rows } = results[results.length - 1];
        // From another connection: this one is busy with the statement to stop.
        cancel = () => void db.raw('SELECT pg_cancel_backend(?)', [rows[0].pid]).catch(() => undefined);
        signal.addEventListener('abort', cancel, { once: true });
        if (signal.aborted) throw callerGoneError();
      }
      return work(trx);
    }, { readOnly: true } as Knex.TransactionConfig);
  } catch (error) {
    // 57014 query_canceled: the statement timeout, or the cancel above.
    if ((error as { code?: string }).code === '57014') throw signal?.aborted ? callerGoneError() : timeoutError(timeoutMs);
    throw error;
  } finally {
    if (cancel) signal!.removeEventListener('abort', cancel);
  }
}

export interface ReachLimits {
  /** Triples the records read may yield, at most; past it the query is refused. */
  maxTriples: number;
  timeoutMs: number;
  /** Table reads one workspace runs at once, and the runtime's reads under way. */
  connections: number;
  slots: TableReadSlots;
  /** The runtime's kept primary keys of tables' storage. */
  primaryKeys: PrimaryKeys;
  /** Aborted when the caller has gone: the read stops. */
  signal?: AbortSignal;
  /** Tables' counted triples, kept per snapshot by the caller. */
  counts?: TableCounts;
}

/** `FROM … WHERE …`: the rows of a table's records at the snapshot `source.version`. */
function snapshotRows(source: ReachTable & { version: string }, params: SqlParams): string {
  const version = params.add(source.version);
  return `FROM ${qualified(workspaceSchema(source.workspaceId), source.table)}
     WHERE valid_from <= ${version}::bigint AND (valid_to IS NULL OR valid_to > ${version}::bigint)`;
}

/** Records of a table at its snapshot, as `key` (row_key) and `data` (only the fields its mapping reads); conditions follow with AND. */
function recordsAtSnapshot(source: ReachTable & { version: string }, params: SqlParams): string {
  const fields = bindingFields(source.mapping);
  return `SELECT row_key AS key, jsonb_build_object(${fields.map((field) => `${params.add(field)}::text, data -> ${params.add(field)}::text`).join(', ')}) AS data
    ${snapshotRows(source, params)}`;
}

/** Whether a triple of one of these kinds (of a record of class `classIri`) can match the pattern. */
function produces(pattern: ReachPattern, kinds: TripleKind[], classIri: string): boolean {
  return kinds.some((kind) => (pattern.predicate === undefined || pattern.predicate === kind.predicate) && (kind.kind !== 'type' || pattern.object.kind !== 'iri' || pattern.object.value === classIri));
}

/** Whether any of the patterns can match a triple of the binding's records: a binding none reaches is not read. */
export function reachesBinding(patterns: ReachPattern[], binding: Pick<ReachTable, 'termId' | 'mapping'>, terms: PackageTerms, baseIri: string): boolean {
  const kinds = tripleKinds(binding, terms, baseIri);
  return patterns.some((pattern) => produces(pattern, kinds, `${baseIri}${binding.termId}`));
}

/**
 * Records whose triples the query's patterns can reach, read table by table, round by round:
 * managed tables in one read-only transaction on `db`, external ones in the sessions their
 * `external` reads hold.
 */
export async function readReachedRecords(db: Knex, patterns: ReachPattern[], sources: ReachTable[], terms: PackageTerms, baseIri: string, others: OtherGraphs, limits: ReachLimits): Promise<ReachedRecords> {
  const kindsOf = sources.map((source) => tripleKinds(source, terms, baseIri));
  const classOf = sources.map((source) => `${baseIri}${source.termId}`);
  const producing = patterns.map((pattern) => sources.map((_, at) => produces(pattern, kindsOf[at], classOf[at])));
  const records = sources.map(() => new Map<string, Record<string, unknown>>());
  const quadsOf = sources.map(() => new Map<string, RDF.Quad[]>());
  const resolved = new Set<number>();
  const wholeSources = new Set<number>();
  /** External tables read whole in this query's session: no later round reads them again. */
  const readWhole = new Set<number>();
  /** Values each resolved narrowing pattern matched, per variable. */
  const matched = new Map<number, Known>();
  let triples = 0;
  const pending = () => patterns.filter((pattern) => !resolved.has(pattern.index));
  const knownFor = (pattern: ReachPattern): Known => {
    const known: Known = new Map();
    for (const name of patternVariables(pattern)) {
      let best: RDF.Term[] | undefined;
      for (const by of pattern.narrowedBy) {
        const values = matched.get(by)?.get(name);
        if (values && values.length <= MAX_NARROWING_VALUES && (!best || values.length < best.length)) best = values;
      }
      if (best) known.set(name, best);
    }
    return known;
  };
  const hasConstant = (pattern: ReachPattern) => pattern.subject.kind === 'iri' || pattern.subject.kind === 'literal' || pattern.object.kind === 'iri' || pattern.object.kind === 'literal';

  const release = limits.slots.take(sources[0]?.workspaceId ?? '', limits.connections, limits.timeoutMs);
  try {
    await readRounds();
  } finally {
    release();
  }
  return { records: records.map((kept) => [...kept.values()]), whole: sources.map((_, at) => wholeSources.has(at)), triples };

  async function readRounds(): Promise<void> {
    await readingWithin(db, limits, async (trx) => {
      const managed = sources.filter((source) => !source.external && source.version !== undefined);
      const keys = await primaryKeysOf(trx, managed, limits.primaryKeys);
      for (const source of managed) source.primaryKey = keys.get(source.table) ?? null;
      for (;;) {
        const left = pending();
        if (!left.length) break;
        // Patterns no bound table yields are settled at once.
        const unproduced = left.filter((pattern) => !producing[pattern.index].some(Boolean));
        for (const pattern of unproduced) resolved.add(pattern.index);
        const open = left.filter((pattern) => producing[pattern.index].some(Boolean));
        if (!open.length) break;
        let ready = open.filter((pattern) => hasConstant(pattern) || knownFor(pattern).size > 0);
        // Nothing narrows what is left: read the first pattern as it is (its matches may narrow the rest).
        if (!ready.length) ready = [open[0]];
        for (const [at, source] of sources.entries()) {
          if (wholeSources.has(at) || readWhole.has(at)) continue;
          const reading = ready.filter((pattern) => producing[pattern.index][at]);
          if (!reading.length || (!source.external && source.version === undefined)) continue;
          const unnarrowed = reading.some((pattern) => !hasConstant(pattern) && !knownFor(pattern).size && !pattern.objectBounds.length);
          if (unnarrowed && !source.external) {
            // A managed table is taken from its whole graph, kept per snapshot for every query.
            wholeSources.add(at);
            continue;
          }
          const params = new SqlParams();
          // An external table every record of which may match is read whole here, in the query's
          // session: its rows are then of the moment its other reads see (a capability's pages each see their own).
          const condition = unnarrowed ? true : or(reading.map((pattern) => patternCondition(pattern, source, kindsOf[at], classOf[at], knownFor(pattern), params)));
          if (condition === false) continue;
          const remaining = limits.maxTriples - triples;
          let rows: Array<{ key: string; data: Record<string, unknown> }>;
          if (source.external && unnarrowed) {
            // As a read the limit cuts below: more rows than triples left could yield too many, and are
            // refused from a count before a row is sent (rows yielding none, or equal ones, count too).
            if (await source.external.holdsMoreThan(remaining + records[at].size)) throw tooBroad(limits.maxTriples, source.table);
            rows = (await source.external.read(true, params, remaining + 1 + records[at].size)).filter((row) => !records[at].has(row.key));
            readWhole.add(at);
          } else if (source.external) {
            // Live rows, read again in a later round (they have no key to leave out by in SQL). A read
            // the limit cut is refused, for the records past it could yield triples: it found more
            // than `remaining` records besides those read before.
            const limit = remaining + 1 + records[at].size;
            const found = await source.external.read(condition, params, limit);
            if (found.length >= limit) throw tooBroad(limits.maxTriples, source.table);
            rows = found.filter((row) => !records[at].has(row.key));
          } else {
            // Every record (`?s a :C` over C's table): past the bound by PostgreSQL's count, refused before a record is read.
            if (condition === true && !records[at].size) await refusePastBound(trx, { ...source, version: source.version! }, limits.maxTriples, remaining, limits.counts);
            const already = records[at].size ? params.add([...records[at].keys()]) : undefined;
            const sql = `${recordsAtSnapshot({ ...source, version: source.version! }, params)}
               AND (${condition})${already ? ` AND NOT (row_key = ANY (${already}::text[]))` : ''}
             LIMIT ${params.add(remaining + 1)}`;
            ({ rows } = await run<{ key: string; data: Record<string, unknown> }>(trx, sql, params));
          }
          recordsRead.inc({ read: 'per_query' }, rows.length);
          for (const row of rows) {
            // Rows equal in every mapped field (one key) yield the same triples, counted once.
            if (records[at].has(row.key)) continue;
            records[at].set(row.key, row.data);
            const mapped = mapRecord(row.data, source.termId, source.mapping, terms, baseIri);
            const quads = mapped?.quads ?? [];
            quadsOf[at].set(row.key, quads);
            triples += quads.length;
            if (triples > limits.maxTriples) throw tooBroad(limits.maxTriples, source.table);
          }
        }
        for (const pattern of ready) {
          resolved.add(pattern.index);
          // A table taken whole was not read here: its values are not known to narrow others by.
          if (!pattern.required || !narrows(pattern, others) || sources.some((_, at) => producing[pattern.index][at] && wholeSources.has(at))) continue;
          const known: Known = new Map();
          const variables = patternVariables(pattern);
          if (!variables.length) continue;
          const seen = new Map<string, Set<string>>(variables.map((name) => [name, new Set()]));
          for (const [at] of sources.entries()) {
            if (!producing[pattern.index][at]) continue;
            for (const quads of quadsOf[at].values()) {
              for (const quad of quads) {
                if ((pattern.predicate !== undefined && quad.predicate.value !== pattern.predicate) || !matches(pattern.subject, quad.subject) || !matches(pattern.object, quad.object)) continue;
                for (const [name, term] of [[pattern.subject, quad.subject], [pattern.object, quad.object]] as const) {
                  if (name.kind !== 'var') continue;
                  const key = `${term.termType}:${term.value}:${(term as RDF.Literal).datatype?.value ?? ''}`;
                  const set = seen.get(name.name)!;
                  if (set.has(key) || set.size > MAX_NARROWING_VALUES) continue;
                  set.add(key);
                  const list = known.get(name.name) ?? [];
                  list.push(term);
                  known.set(name.name, list);
                }
              }
            }
          }
          for (const name of variables) if (!known.has(name)) known.set(name, []);
          for (const [name, set] of seen) if (set.size > MAX_NARROWING_VALUES) known.delete(name);
          matched.set(pattern.index, known);
        }
      }
    });
  }
}

/**
 * Solutions an unordered slice may need (OFFSET plus LIMIT) to be read from first records whatever
 * the tables' size. Whole graphs for small slices filled the API with graphs no later query used:
 * at 100k bench records, 2,000 queries such as `SELECT ?s ?p ?o WHERE { ?s ?p ?o } LIMIT 2` kept
 * every table's graph (about 1.2 GB of RSS against 0.5 GB at 1M records, where tables pass the bound).
 */
const SMALL_SLICE = 1_000;

/** The first page of a read by first solutions, in records; each next page is larger, up to the last. */
const FIRST_PAGE = 100;
const LAST_PAGE = 5_000;

/** A term's identity, as the evaluator tells terms apart. */
const termKey = (term: RDF.Term) => `${term.termType}:${term.value}:${(term as RDF.Literal).datatype?.value ?? ''}:${(term as RDF.Literal).language ?? ''}`;

/**
 * Solutions of `patterns` (one BGP on one subject) among one record's own triples, added to
 * `found` as keys until it holds `needed`: a lower bound of the solutions over any graph that
 * holds these triples.
 */
function recordSolutions(patterns: ReachPattern[], quads: RDF.Quad[], found: Set<string>, needed: number): void {
  const bound = new Map<string, RDF.Term>();
  const fits = (node: ReachNode, term: RDF.Term): boolean | string => {
    if (node.kind !== 'var') return matches(node, term);
    const already = bound.get(node.name);
    if (already) return termKey(already) === termKey(term);
    return node.name;
  };
  const solve = (at: number): void => {
    if (found.size >= needed) return;
    if (at === patterns.length) {
      found.add([...bound].sort(([a], [b]) => (a < b ? -1 : 1)).map(([name, term]) => `${name}=${termKey(term)}`).join(' '));
      return;
    }
    const pattern = patterns[at];
    for (const quad of quads) {
      if (pattern.predicate !== undefined && quad.predicate.value !== pattern.predicate) continue;
      const subject = fits(pattern.subject, quad.subject);
      if (subject === false) continue;
      if (typeof subject === 'string') bound.set(subject, quad.subject);
      const object = fits(pattern.object, quad.object);
      if (object !== false) {
        if (typeof object === 'string') bound.set(object, quad.object);
        solve(at + 1);
        if (typeof object === 'string') bound.delete(object);
      }
      if (typeof subject === 'string') bound.delete(subject);
      if (found.size >= needed) return;
    }
  };
  solve(0);
}

/**
 * Reads bound tables for a query answered by its first `needed` solutions (firstSolutionsOf in
 * ontology/sparql-reach.ts): the records that can yield a triple for every pattern, page by page
 * in row_key order at each table's snapshot, table after table, until `needed` solutions are
 * found among single records' triples. Any records are a valid part of the graph for such a
 * query (its BGP is monotone), so the evaluator's slice over them is an answer over the whole.
 * A single triple pattern whose records were all read was read completely (they are the records
 * its pattern reaches); a star was not (a subject's triples may come from several records), so
 * then, or past the reach bound, this gives undefined and the query is read as any other. A large
 * slice (more than SMALL_SLICE solutions) is read so only from tables whose reachable records pass
 * the bound: under it, undefined at once (the query is answered from the whole tables' graphs,
 * which every page of an unordered paging shares, so the pages follow one order). A small slice,
 * or `anySolution` (an ASK, whose answer any solution gives), reads its first records however few
 * the tables hold, and builds no whole graph for it.
 */
export async function readFirstRecords(db: Knex, patterns: ReachPattern[], sources: ReachTable[], terms: PackageTerms, baseIri: string, needed: number, limits: ReachLimits, anySolution = false): Promise<ReachedRecords | undefined> {
  const records = sources.map(() => [] as Array<Record<string, unknown>>);
  const found = new Set<string>();
  let triples = 0;
  const release = limits.slots.take(sources[0]?.workspaceId ?? '', limits.connections, limits.timeoutMs);
  try {
    const enough = await readingWithin(db, limits, async (trx) => {
      const keys = await primaryKeysOf(trx, sources.filter((source) => source.version !== undefined), limits.primaryKeys);
      for (const source of sources) if (source.version !== undefined) source.primaryKey = keys.get(source.table) ?? null;
      // Under the bound a large slice reads what it reaches, as any other query, and is answered
      // over the whole tables' graphs; a small one is answered from first records at any size.
      if (!anySolution && needed > SMALL_SLICE && !(await reachablePastBound(trx, patterns, sources, terms, baseIri, limits))) return false;
      for (const [at, source] of sources.entries()) {
        if (source.version === undefined) continue;
        const kinds = tripleKinds(source, terms, baseIri);
        const classIri = `${baseIri}${source.termId}`;
        let after: string | undefined;
        for (let page = FIRST_PAGE; ; page = Math.min(LAST_PAGE, page * 4)) {
          const params = new SqlParams();
          // A record yields a solution only if it yields a triple for every pattern.
          const reached = and(patterns.map((pattern) => patternCondition(pattern, source, kinds, classIri, new Map(), params)));
          if (reached === false) break;
          const sql = `${recordsAtSnapshot({ ...source, version: source.version }, params)}
               AND (${reached})${after === undefined ? '' : ` AND row_key > ${params.add(after)}::text`}
             ORDER BY row_key LIMIT ${params.add(page)}`;
          const { rows } = await run<{ key: string; data: Record<string, unknown> }>(trx, sql, params);
          recordsRead.inc({ read: 'first_solutions' }, rows.length);
          for (const row of rows) {
            records[at].push(row.data);
            const quads = mapRecord(row.data, source.termId, source.mapping, terms, baseIri)?.quads ?? [];
            triples += quads.length;
            // A single pattern's records are the ones it reaches: read as any other query, they pass the bound too.
            if (triples > limits.maxTriples) {
              if (patterns.length === 1) throw tooBroad(limits.maxTriples, source.table);
              return false;
            }
            recordSolutions(patterns, quads, found, needed);
            if (found.size >= needed) return true;
          }
          if (rows.length < page) break;
          after = rows[rows.length - 1].key;
        }
      }
      return patterns.length === 1;
    });
    return enough ? { records, whole: sources.map(() => false), triples } : undefined;
  } finally {
    release();
  }
}

/** Triples a table's records make at a snapshot, as PostgreSQL counted them: at least `triples` when `atLeast`, else exactly. */
export interface CountedTriples {
  triples: number;
  atLeast: boolean;
}

/** Counted triples kept by tableCountKey (a table at a snapshot, under a mapping). */
export interface TableCounts {
  get(key: string): CountedTriples | undefined;
  set(key: string, counted: CountedTriples, weight: number): unknown;
}

export const tableCountKey = (source: ReachTable & { version: string }) => `${source.workspaceId}:${source.table}@${source.version}:${source.termId}:${JSON.stringify(source.mapping)}`;

/** The triples of `source`'s records by PostgreSQL's count, kept in `counts`: exact, or a lower bound once past `remaining`. */
async function keptCount(db: Knex, source: ReachTable & { version: string }, remaining: number, counts?: TableCounts): Promise<CountedTriples> {
  const key = tableCountKey(source);
  const kept = counts?.get(key);
  if (kept && (!kept.atLeast || kept.triples > remaining)) return kept;
  const counted = await countedTriples(db, source, remaining);
  counts?.set(key, counted, key.length);
  return counted;
}

/**
 * Refuses to read every record of `source` when their triples pass `remaining` (what is left of
 * the bound), from PostgreSQL's count (kept in `counts`), so a refusal reads no record.
 */
export async function refusePastBound(db: Knex, source: ReachTable & { version: string }, bound: number, remaining: number, counts?: TableCounts): Promise<void> {
  const counted = await keptCount(db, source, remaining, counts);
  if (counted.triples > remaining) throw tooBroad(bound, source.table, counted);
}

/**
 * Whether the records of the tables some pattern can reach make more triples than the reach
 * bound (or may: a count that stopped at the bound's records), by PostgreSQL's kept counts.
 */
async function reachablePastBound(db: Knex, patterns: ReachPattern[], sources: ReachTable[], terms: PackageTerms, baseIri: string, limits: ReachLimits): Promise<boolean> {
  let triples = 0;
  for (const source of sources) {
    if (source.version === undefined) continue;
    const kinds = tripleKinds(source, terms, baseIri);
    const reached = or(patterns.map((pattern) => patternCondition(pattern, source, kinds, `${baseIri}${source.termId}`, new Map(), new SqlParams())));
    if (reached === false) continue;
    const counted = await keptCount(db, { ...source, version: source.version }, limits.maxTriples - triples, limits.counts);
    triples += counted.triples;
    if (counted.atLeast || triples > limits.maxTriples) return true;
  }
  return false;
}

/**
 * The triples the mapping makes of a table's records at a snapshot, counted by PostgreSQL without
 * sending a record (mapRecord's rule: a record whose subject IRI can be made yields its type, one
 * triple per value or array element of each mapped property, and one per link target that can be
 * made), over at most `bound + 1` records: `atLeast` when more records follow, else exact.
 */
export async function countedTriples(db: Knex, source: ReachTable & { version: string }, bound: number): Promise<CountedTriples> {
  const params = new SqlParams();
  const value = (field: string) => `(data -> ${params.add(field)}::text)`;
  // fillTemplate's test of one value: a string but '', a number or a boolean.
  const fills = (sql: string) => `(jsonb_typeof(${sql}) IN ('string', 'number', 'boolean') AND ${sql} <> '""'::jsonb)`;
  const allFill = (fields: string[]) => (fields.length ? fields.map((field) => fills(value(field))).join(' AND ') : 'TRUE');
  const elements = (field: string, counted: (element: string) => string) =>
    `CASE WHEN ${value(field)} IS NULL OR jsonb_typeof(${value(field)}) = 'null' THEN 0 WHEN jsonb_typeof(${value(field)}) = 'array' THEN (SELECT count(*) FILTER (WHERE ${counted('element')}) FROM jsonb_array_elements(${value(field)}) element) WHEN ${counted(value(field))} THEN 1 ELSE 0 END`;
  const properties = Object.values(source.mapping.properties).map((field) => elements(field, () => 'TRUE'));
  const links = Object.values(source.mapping.links ?? {}).map(({ field, targetTemplate }) => {
    const templated = templateFields(targetTemplate);
    const others = allFill(templated.filter((name) => name !== field));
    return `CASE WHEN ${others} THEN ${elements(field, (element) => (templated.includes(field) ? fills(element) : 'TRUE'))} ELSE 0 END`;
  });
  const perRecord = `CASE WHEN ${allFill(templateFields(source.mapping.subjectTemplate))} THEN 1${[...properties, ...links].map((part) => ` + (${part})`).join('')} ELSE 0 END`;
  const { rows } = await run<{ triples: string; records: string }>(db, `SELECT COALESCE(sum(triples), 0) AS triples, count(*) AS records FROM (
      SELECT ${perRecord} AS triples ${snapshotRows(source, params)}
       LIMIT ${params.add(bound + 1)}) counted`, params);
  return { triples: Number(rows[0].triples), atLeast: Number(rows[0].records) > bound };
}

/** `counted`: the table's triples, when PostgreSQL counted them. */
export function tooBroad(bound: number, table: string, counted?: CountedTriples): InputError {
  const passed = counted ? `yields ${counted.atLeast ? 'at least ' : ''}${counted.triples.toLocaleString('en')} triples` : 'passed the bound';
  return new InputError(
    'query_too_broad',
    `This query reaches more than ${bound.toLocaleString('en')} triples of bound records (table "${table}" ${passed}, WEFT_SPARQL_MAX_REACHED_TRIPLES). Weft reads, for each query, the records of bound tables its patterns can reach, found by PostgreSQL with the query's constants, numeric FILTERs and joins: add a constant or a FILTER that narrows the records, or a LIMIT (a query without ORDER BY, aggregates or DISTINCT over one triple pattern or one subject's properties reads only the records its first solutions need), or ask the operator to raise the bound.`,
    [],
    { maxReachedTriples: bound, table, ...(counted ? { reachedTriples: counted.triples, reachedTriplesIsLowerBound: counted.atLeast } : {}) },
  );
}
