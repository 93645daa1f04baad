import { timeoutError } from './sparql-evaluator/deadline';
import type * as RDF from '@rdfjs/types';
import type { QueryEngine } from '@comunica/query-sparql-rdfjs';
import { Store } from 'n3';
import { Parser as SparqlParser, SparqlQuery } from 'sparqljs';
import { BadRequestError, InputError } from '../core/errors';
import { WeightedLru } from './dataset-cache';
import { planFastEvaluation, QueryDataset } from './sparql-evaluator';
import { isQueryDataset } from './sparql-evaluator/dataset';
import { unionSource } from './sparql-evaluator/union-source';

// SPARQL 1.1 evaluation for Weft: sparqljs parses (so the HTTP layer knows a query from an update
// before it authorizes); Weft's own evaluator (sparql-evaluator/) answers the queries it covers
// directly on the n3 stores' indexes, and Comunica's RDF/JS engine evaluates the rest. The dataset
// is fixed by Weft, so FROM, FROM NAMED and SERVICE are refused; every query runs under a time and
// a result-size limit.

export type { QueryDataset } from './sparql-evaluator';

/** Which evaluator answered a query: Weft's fast path, or Comunica. */
export type EvaluationPath = 'fast' | 'comunica';

export type SparqlResult =
  | { kind: 'bindings'; variables: string[]; rows: Array<Record<string, RDF.Term>> }
  | { kind: 'boolean'; value: boolean }
  | { kind: 'quads'; quads: RDF.Quad[] };

export interface SparqlLimits {
  timeoutMs: number;
  maxResults: number;
  /** Whether the caller has gone (its client closed the connection): the evaluator stops as at its time limit. */
  stopped?: () => boolean;
}

export type QueryForm = 'SELECT' | 'ASK' | 'CONSTRUCT' | 'DESCRIBE';
export type ParsedSparql = { kind: 'query'; queryType: QueryForm; parsed: SparqlQuery } | { kind: 'update'; parsed: SparqlQuery };

type Destroyable = { destroy(): void };

/**
 * The operator streams of one evaluation. Comunica cannot cancel a query: destroying the result
 * stream leaves blocking operators (aggregates, hash joins) draining their inputs, so a timed-out
 * query would keep a core busy until it finished. Every operator's output is recorded here (see
 * `observeOperations`) and all of them are destroyed when the evaluation stops.
 */
class Evaluation {
  private readonly streams = new Set<Destroyable>();
  private stopped = false;

  record(stream: Destroyable): void {
    if (this.stopped) stream.destroy();
    else this.streams.add(stream);
  }

  /** Idempotent; destroy() without a cause, so streams nobody listens to any more emit no error. */
  stop(): void {
    this.stopped = true;
    for (const stream of this.streams) stream.destroy();
    this.streams.clear();
  }
}

/** Context entry that carries the Evaluation through Comunica (its contexts pass unknown keys on). */
const EVALUATION_KEY = '@weft/evaluation';

interface ObservableBus {
  subscribeObserver(observer: { onRun(actor: unknown, action: { context?: { get(key: { name: string }): unknown } }, output: Promise<unknown>): void }): void;
}

/**
 * Subscribes to Comunica's query-operation bus (Bus.subscribeObserver, the hook Comunica's own
 * statistics use), which sees every operator run. Reaching that bus goes through the engine's
 * actor wiring, which is not typed API: fail loudly on first use if a Comunica upgrade moves it.
 */
function observeOperations(engine: QueryEngine): void {
  type Wiring = { actorInitQuery?: { mediatorQueryProcess?: { bus?: { actors?: Array<{ mediatorQueryOperation?: { bus?: ObservableBus } }> } } } };
  const actors = (engine as unknown as Wiring).actorInitQuery?.mediatorQueryProcess?.bus?.actors ?? [];
  const bus = actors.find((actor) => actor.mediatorQueryOperation?.bus)?.mediatorQueryOperation?.bus;
  if (!bus) throw new Error('Comunica’s query-operation bus was not found: ontology/sparql-engine.ts needs updating for this Comunica version');
  bus.subscribeObserver({
    onRun(_actor, action, output) {
      const evaluation = action.context?.get({ name: EVALUATION_KEY });
      if (!(evaluation instanceof Evaluation)) return;
      output.then(
        (result) => {
          const { bindingsStream, quadStream } = (result ?? {}) as { bindingsStream?: Destroyable; quadStream?: Destroyable };
          const stream = bindingsStream ?? quadStream;
          if (stream) evaluation.record(stream);
        },
        () => undefined, // the failure reaches the query through its own chain
      );
    },
  });
}

let engineLoading: Promise<QueryEngine> | undefined;

/**
 * The engine, loaded on first use: Comunica's modules take about 45 MB, which a worker that never
 * evaluates SPARQL should not carry. The API process preloads it once it listens.
 */
export function sparqlEngine(): Promise<QueryEngine> {
  engineLoading ??= import('@comunica/query-sparql-rdfjs').then(({ QueryEngine: Engine }) => {
    const engine = new Engine();
    observeOperations(engine);
    return engine;
  });
  return engineLoading;
}

/** Walks the parsed query for SERVICE patterns (in groups, unions, optionals, subqueries, EXISTS). */
function usesService(node: unknown): boolean {
  if (Array.isArray(node)) return node.some(usesService);
  if (!node || typeof node !== 'object') return false;
  if ((node as { type?: string }).type === 'service') return true;
  return Object.values(node).some(usesService);
}

/**
 * sparqljs (jison) errors carry the offending token and its line; their columns are not reliable
 * (the lexer counts from the end of the previous token), so the message shows the text near it.
 * A text that does not parse is a bad request (400), as the SPARQL 1.1 Protocol requires for a
 * query or update string that is not legal (clients such as SPARQLWrapper raise QueryBadFormed on
 * it); a text that parses but asks for what Weft refuses (FROM, SERVICE) stays a 422.
 */
function syntaxError(error: unknown): BadRequestError {
  const { message, hash } = error as Error & { hash?: { token?: string | null; text?: string; loc?: { first_line: number } } };
  if (!hash?.loc) return new BadRequestError('malformed_query', `The SPARQL text does not parse: ${message.split('\n')[0]}`);
  const line = hash.loc.first_line;
  const found = hash.token === 'EOF' ? 'end of text' : `'${hash.text ?? ''}'`;
  const near = message.split('\n')[1]?.trim();
  return new BadRequestError('malformed_query', `The SPARQL text does not parse at line ${line}: unexpected ${found}${near ? ` near “${near}”` : ''}`, { line });
}

/** Parses query or update text; malformed text is a 400 naming where the parser stopped. */
export function parseSparql(text: string, options: { allowDatasetClauses?: boolean; baseIri?: string } = {}): ParsedSparql {
  let parsed: SparqlQuery;
  try {
    parsed = new SparqlParser({ sparqlStar: false, ...(options.baseIri ? { baseIRI: options.baseIri } : {}) }).parse(text);
  } catch (error) {
    throw syntaxError(error);
  }
  // sparqljs reads empty text (or a bare prologue) as an object with neither a query nor updates.
  if (parsed.type !== 'query' && !(parsed.type === 'update' && parsed.updates.length)) {
    throw new BadRequestError('malformed_query', 'The SPARQL text holds no query and no update.');
  }
  // SERVICE would have the engine call out to another endpoint, from an update as much as a query.
  if (usesService(parsed)) throw new InputError('service_refused', 'SERVICE is not accepted: queries run over this project’s dataset only.');
  if (parsed.type === 'update') return { kind: 'update', parsed };
  if (!options.allowDatasetClauses && parsed.from && (parsed.from.default.length || parsed.from.named.length)) {
    throw new InputError('external_graph_refused', 'FROM and FROM NAMED are not accepted: the dataset is the project’s active package and the bound records your key may read.');
  }
  return { kind: 'query', queryType: parsed.queryType, parsed };
}

/** The variables a SELECT names, in order; undefined for SELECT *. */
function projected(query: SparqlQuery): string[] | undefined {
  const variables = (query as { variables?: Array<{ termType?: string; value?: string; variable?: { value: string } }> }).variables;
  if (!variables || variables.some((v) => v.termType === 'Wildcard' || v.value === '*')) return undefined;
  return variables.map((v) => v.variable?.value ?? v.value!);
}

/** Rejects with query_timeout after `ms`; the caller stops the evaluation either way. */
function deadline<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(timeoutError(ms)), ms);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}

/**
 * Collects a result stream, refusing more than `max` items. toArray, not 'end' events: a stream
 * that ended while the engine was still being awaited (an empty sorted result) emits no more events.
 */
async function collect<T>(stream: { toArray(options: { limit: number }): Promise<T[]> }, max: number, what: string): Promise<T[]> {
  const items = await stream.toArray({ limit: max + 1 });
  if (items.length > max) throw new InputError('result_too_large', `The query returns more than ${max} ${what}; add a LIMIT or narrow it.`);
  return items;
}

/** Engine failures on valid syntax (an unsupported feature, a type error) are the query's problem, not the server's. */
function evaluationError(error: unknown): unknown {
  if (error instanceof InputError) return error;
  return new InputError('query_failed', `The query could not be evaluated: ${(error as Error).message}`);
}

/** Runs `work` under the time limit with operator tracking, stopping every operator when it ends (in time or not). */
async function evaluate<T>(timeoutMs: number, work: (context: Record<string, unknown>) => Promise<T>, context: Record<string, unknown>): Promise<T> {
  const evaluation = new Evaluation();
  try {
    return await deadline(work({ ...context, [EVALUATION_KEY]: evaluation }), timeoutMs);
  } catch (error) {
    throw evaluationError(error);
  } finally {
    evaluation.stop();
  }
}

/**
 * Comunica's parse of a query text (its algebra), kept per text and base IRI: parsing is about a
 * fifth of evaluating a selective query, and an endpoint sees the same texts again. Comunica
 * evaluates a given algebra without changing it (its optimizers build new operations), so one
 * parse serves every later evaluation. Texts that declare BASE are parsed every time, because the
 * engine takes a BASE from the parse into the evaluation's context.
 */
const parsedByComunica = new WeightedLru<Promise<unknown>>(256, 4 * 1024 * 1024);
const MAX_KEPT_QUERY_CHARS = 16 * 1024;
const DECLARES_BASE = /(^|[\s}>])BASE\s*</i;

function comunicaQuery(text: string, context: Record<string, unknown>): Promise<unknown> | string {
  if (text.length > MAX_KEPT_QUERY_CHARS || DECLARES_BASE.test(text)) return text;
  const key = `${String(context.baseIRI ?? '')}\n${text}`;
  const kept = parsedByComunica.get(key);
  if (kept) return kept;
  const parsed = sparqlEngine().then((engine) => engine.explain(text, { sources: context.sources, ...(context.baseIRI ? { baseIRI: context.baseIRI } : {}) } as never, 'parsed')).then((explained) => explained.data);
  // A text that fails to parse is not kept: the evaluation reports the failure.
  parsed.catch(() => parsedByComunica.delete(key));
  return parsedByComunica.set(key, parsed, key.length);
}

/** One item of a query's prologue (SPARQL 1.1 §4.1): white space, a comment, BASE or PREFIX. */
const PROLOGUE_ITEM = /\s+|#[^\n\r]*|BASE\s*<[^<>"{}|^`\\\s]*>|PREFIX\s*[^\s:<>#]*:\s*<[^<>"{}|^`\\\s]*>/iy;
const QUERY_FORM = /(SELECT|CONSTRUCT|DESCRIBE|ASK)(?![A-Za-z0-9_])/iy;

/**
 * A query's form, read from the first keyword after its prologue without parsing it; undefined
 * when the text starts with anything else (an update, or text only a parse can judge). The API
 * needs no more than this to negotiate the answer's format: the query thread parses the text (and
 * refuses it as malformed) anyway, and sparqljs takes about a millisecond for a query of 800
 * characters, so parsing it in the API as well doubled that for every text not seen before.
 */
export function queryFormOf(text: string): QueryForm | undefined {
  let at = 0;
  for (;;) {
    PROLOGUE_ITEM.lastIndex = at;
    if (!PROLOGUE_ITEM.test(text)) break;
    at = PROLOGUE_ITEM.lastIndex;
  }
  QUERY_FORM.lastIndex = at;
  const form = QUERY_FORM.exec(text);
  return form ? (form[1].toUpperCase() as QueryForm) : undefined;
}

/**
 * sparqljs's parses of query texts, kept per text and options: parsing takes longer than the fast
 * path needs to answer a selective query, and kept plans are found by the parsed query. Kept
 * parses are only read (never handed to callers, who may change theirs), and a text that fails to
 * parse is not kept. Whoever runs queries owns one: the runtime (SparqlMemory), each query thread.
 */
export class KeptParses {
  private readonly parses = new WeightedLru<ParsedSparql>(256, 4 * 1024 * 1024);

  parse(text: string, options: { baseIri?: string; allowDatasetClauses?: boolean } = {}): ParsedSparql {
    if (text.length > MAX_KEPT_QUERY_CHARS) return parseSparql(text, options);
    const key = `${options.allowDatasetClauses ? 1 : 0}${options.baseIri ?? ''}\n${text}`;
    return this.parses.get(key) ?? this.parses.set(key, parseSparql(text, options), key.length);
  }
}

/**
 * Evaluates a query over a store, or a dataset of stores sharing one entity index (its default
 * graph is the merge of theirs), within the limits. Updates are refused here (see
 * evaluateUpdate). `parsed` is the caller's parseSparql of the same text and options, when it has
 * one, else `parses` keeps it (as `keepPlans` needs to find a plan again); `onPath` learns which
 * evaluator answered.
 *
 * Known limit: Comunica runs some operators synchronously (a hash join feeding an aggregate, e.g. a
 * GROUP BY over a cross product); such a query holds the event loop until it finishes, and no timer
 * in this process can interrupt it. Only evaluation in a worker thread (terminated on timeout) would.
 * The fast path checks its time limit as it goes.
 */
export async function evaluateQuery(
  source: Store | QueryDataset,
  text: string,
  limits: SparqlLimits,
  options: { baseIri?: string; allowDatasetClauses?: boolean; parsed?: ParsedSparql; parses?: KeptParses; onPath?(path: EvaluationPath): void; keepPlans?: boolean } = {},
): Promise<SparqlResult> {
  const parsed = options.parsed ?? (options.parses ? options.parses.parse(text, options) : parseSparql(text, options));
  if (parsed.kind === 'update') throw new InputError('update_not_allowed', 'This is an update; send it to the update path.');
  let fast: (() => SparqlResult) | undefined;
  try {
    fast = planFastEvaluation(source, parsed.parsed as Parameters<typeof planFastEvaluation>[1], limits, { keepPlans: options.keepPlans });
    options.onPath?.(fast ? 'fast' : 'comunica');
    if (fast) return fast();
  } catch (error) {
    throw evaluationError(error);
  }
  const store = isQueryDataset(source) ? (source.stores.length === 1 ? source.stores[0] : unionSource(source)) : source;
  const base = { sources: [store], ...(options.baseIri ? { baseIRI: options.baseIri } : {}) };
  const query = async () => comunicaQuery(text, base) as never;
  const engine = await sparqlEngine();
  if (parsed.queryType === 'ASK') {
    return evaluate(limits.timeoutMs, async (context) => ({ kind: 'boolean', value: await engine.queryBoolean(await query(), context as never) }), base);
  }
  if (parsed.queryType === 'SELECT') {
    return evaluate(
      limits.timeoutMs,
      async (context) => {
        const stream = await engine.queryBindings(await query(), context as never);
        // Not awaited first: an empty result may never announce its metadata.
        let announced: string[] = [];
        stream.getProperty<{ variables: Array<{ variable: RDF.Variable }> }>('metadata', (metadata) => (announced = metadata.variables.map((v) => v.variable.value)));
        const bindings = await collect<Iterable<[RDF.Variable, RDF.Term]>>(stream as never, limits.maxResults, 'rows');
        const rows = bindings.map((binding) => Object.fromEntries([...binding].map(([variable, term]) => [variable.value, term])));
        const variables = projected(parsed.parsed) ?? announced;
        return { kind: 'bindings', variables: variables.length ? variables : [...new Set(rows.flatMap((row) => Object.keys(row)))], rows };
      },
      base,
    );
  }
  return evaluate(
    limits.timeoutMs,
    async (context) => ({ kind: 'quads', quads: await collect<RDF.Quad>((await engine.queryQuads(await query(), context as never)) as never, limits.maxResults, 'triples') }),
    base,
  );
}

/**
 * Applies a SPARQL update to a store (tests, and stores Weft owns outright). The update runs on a
 * copy and its changes are applied only once it has finished, so a request that fails or times out
 * leaves the store as it was (SPARQL 1.1 Update: a request is applied atomically).
 */
export async function evaluateUpdate(store: Store, text: string, limits: Pick<SparqlLimits, 'timeoutMs'>, options: { baseIri?: string } = {}): Promise<void> {
  const parsed = parseSparql(text, options);
  if (parsed.kind !== 'update') throw new InputError('query_not_update', 'This is a query, not an update.');
  if (parsed.parsed.type === 'update' && parsed.parsed.updates.some((operation) => 'type' in operation && operation.type === 'load')) {
    throw new InputError('load_refused', 'LOAD is not accepted: updates change this dataset only and fetch nothing.');
  }
  const engine = await sparqlEngine();
  const scratch = new Store(store.getQuads(null, null, null, null));
  const context = { sources: [scratch], destination: scratch, ...(options.baseIri ? { baseIRI: options.baseIri } : {}) };
  await evaluate(limits.timeoutMs, (withEvaluation) => engine.queryVoid(text, withEvaluation as never), context);
  const removed = store.getQuads(null, null, null, null).filter((quad) => !scratch.has(quad));
  const added = scratch.getQuads(null, null, null, null).filter((quad) => !store.has(quad));
  store.removeQuads(removed);
  store.addQuads(added);
}
