import type * as RDF from '@rdfjs/types';
import { QueryEngine } from '@comunica/query-sparql-rdfjs';
import type { Store } from 'n3';
import { Parser as SparqlParser, SparqlQuery } from 'sparqljs';
import { InputError } from '../core/errors';

// SPARQL 1.1 evaluation for Weft: sparqljs parses (so the HTTP layer knows a query from an update
// before it authorizes), Comunica's RDF/JS engine evaluates over an N3 store. The dataset is
// fixed by Weft, so FROM, FROM NAMED and SERVICE are refused; every query runs under a time and
// a result-size limit.

export type SparqlResult =
  | { kind: 'bindings'; variables: string[]; rows: Array<Record<string, RDF.Term>> }
  | { kind: 'boolean'; value: boolean }
  | { kind: 'quads'; quads: RDF.Quad[] };

export interface SparqlLimits {
  timeoutMs: number;
  maxResults: number;
}

export type ParsedSparql = { kind: 'query'; queryType: 'SELECT' | 'ASK' | 'CONSTRUCT' | 'DESCRIBE'; parsed: SparqlQuery } | { kind: 'update'; parsed: SparqlQuery };

const engine = new QueryEngine();

/** Walks the parsed algebra for SERVICE patterns (in groups, unions, optionals, subqueries). */
function usesService(node: unknown): boolean {
  if (Array.isArray(node)) return node.some(usesService);
  if (!node || typeof node !== 'object') return false;
  if ((node as { type?: string }).type === 'service') return true;
  return Object.values(node).some(usesService);
}

/** Parses query or update text; malformed text is a 422 naming the parser's complaint. */
export function parseSparql(text: string, options: { allowDatasetClauses?: boolean; baseIri?: string } = {}): ParsedSparql {
  let parsed: SparqlQuery;
  try {
    parsed = new SparqlParser({ sparqlStar: false, ...(options.baseIri ? { baseIRI: options.baseIri } : {}) }).parse(text);
  } catch (error) {
    const message = (error as Error).message.split('\n').slice(0, 2).join(' ').trim();
    throw new InputError('malformed_query', `The SPARQL text does not parse: ${message}`);
  }
  if (parsed.type === 'update') return { kind: 'update', parsed };
  if (!options.allowDatasetClauses && parsed.from && (parsed.from.default.length || parsed.from.named.length)) {
    throw new InputError('external_graph_refused', 'FROM and FROM NAMED are not accepted: the dataset is the project’s active package and the bound records your key may read.');
  }
  if (usesService(parsed.where)) throw new InputError('service_refused', 'SERVICE is not accepted: queries run over this project’s dataset only.');
  return { kind: 'query', queryType: parsed.queryType, parsed };
}

/** The variables a SELECT names, in order; undefined for SELECT *. */
function projected(query: SparqlQuery): string[] | undefined {
  const variables = (query as { variables?: Array<{ termType?: string; value?: string; variable?: { value: string } }> }).variables;
  if (!variables || variables.some((v) => v.termType === 'Wildcard' || v.value === '*')) return undefined;
  return variables.map((v) => v.variable?.value ?? v.value!);
}

/** Rejects after `ms`, calling `onTimeout` first (to stop the result stream). */
function deadline<T>(work: Promise<T>, ms: number, onTimeout: () => void): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      onTimeout();
      reject(new InputError('query_timeout', `The query ran longer than ${ms / 1000} seconds and was stopped; narrow it or add a LIMIT.`));
    }, ms);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}

/**
 * Collects a result stream, refusing more than `max` items. toArray, not 'end' events: a stream
 * that ended while the engine was still being awaited (an empty sorted result) emits no more events.
 */
async function collect<T>(stream: { toArray(options: { limit: number }): Promise<T[]>; destroy(): void }, max: number, what: string): Promise<T[]> {
  const items = await stream.toArray({ limit: max + 1 });
  if (items.length > max) {
    stream.destroy();
    throw new InputError('result_too_large', `The query returns more than ${max} ${what}; add a LIMIT or narrow it.`);
  }
  return items;
}

/** Engine failures on valid syntax (an unsupported feature, a type error) are the query's problem, not the server's. */
function evaluationError(error: unknown): unknown {
  if (error instanceof InputError) return error;
  return new InputError('query_failed', `The query could not be evaluated: ${(error as Error).message}`);
}

/** Evaluates a query over the store within the limits. Updates are refused here (see evaluateUpdate). */
export async function evaluateQuery(store: Store, text: string, limits: SparqlLimits, options: { baseIri?: string; allowDatasetClauses?: boolean } = {}): Promise<SparqlResult> {
  const parsed = parseSparql(text, options);
  if (parsed.kind === 'update') throw new InputError('update_not_allowed', 'This is an update; send it to the update path.');
  const context = { sources: [store], ...(options.baseIri ? { baseIRI: options.baseIri } : {}) } as never;
  let stop = () => undefined as void;
  try {
    if (parsed.queryType === 'ASK') return { kind: 'boolean', value: await deadline(engine.queryBoolean(text, context), limits.timeoutMs, stop) };
    if (parsed.queryType === 'SELECT') {
      const work = (async () => {
        const stream = await engine.queryBindings(text, context);
        stop = () => stream.destroy();
        // Not awaited first: an empty result may never announce its metadata.
        let announced: string[] = [];
        stream.getProperty<{ variables: Array<{ variable: RDF.Variable }> }>('metadata', (metadata) => (announced = metadata.variables.map((v) => v.variable.value)));
        const bindings = await collect<{ [Symbol.iterator](): Iterator<[RDF.Variable, RDF.Term]> }>(stream as never, limits.maxResults, 'rows');
        const rows = bindings.map((binding) => Object.fromEntries([...binding].map(([variable, term]) => [variable.value, term])));
        const variables = projected(parsed.parsed) ?? announced;
        return { kind: 'bindings' as const, variables: variables.length ? variables : [...new Set(rows.flatMap((row) => Object.keys(row)))], rows };
      })();
      return await deadline(work, limits.timeoutMs, () => stop());
    }
    const work = (async () => {
      const stream = await engine.queryQuads(text, context);
      stop = () => stream.destroy();
      return { kind: 'quads' as const, quads: await collect<RDF.Quad>(stream as never, limits.maxResults, 'triples') };
    })();
    return await deadline(work, limits.timeoutMs, () => stop());
  } catch (error) {
    throw evaluationError(error);
  }
}

/** Applies a SPARQL update to a store (tests, and stores Weft owns outright). */
export async function evaluateUpdate(store: Store, text: string, limits: Pick<SparqlLimits, 'timeoutMs'>): Promise<void> {
  const parsed = parseSparql(text);
  if (parsed.kind !== 'update') throw new InputError('query_not_update', 'This is a query, not an update.');
  try {
    await deadline(engine.queryVoid(text, { sources: [store], destination: store } as never), limits.timeoutMs, () => undefined);
  } catch (error) {
    throw evaluationError(error);
  }
}
