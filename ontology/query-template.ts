import type * as RDF from '@rdfjs/types';
import { DataFactory } from 'n3';
import { Generator, Parser as SparqlParser, SelectQuery, SparqlQuery } from 'sparqljs';
import type { FieldProblem } from '../core/errors';

// Published query templates: a SPARQL SELECT whose input parameters are variables named in the
// input contract. Inputs are bound by replacing those variables with typed RDF terms in the parsed
// query and generating the text again, never by splicing strings, so an input cannot change the
// query's shape. The default prefix ":" is the ontology's base IRI.

const { literal, namedNode } = DataFactory;
const XSD = 'http://www.w3.org/2001/XMLSchema#';

export interface TemplateFacts {
  parsed: SelectQuery;
  projected: string[];
  variables: Set<string>;
  /** Local names of ontology terms the query names (IRIs under the base IRI). */
  terms: Set<string>;
}

function walk(node: unknown, visit: (term: { termType?: string; value?: string }) => void): void {
  if (Array.isArray(node)) return node.forEach((item) => walk(item, visit));
  if (!node || typeof node !== 'object') return;
  const term = node as { termType?: string; value?: string };
  if (typeof term.termType === 'string') visit(term);
  for (const value of Object.values(node)) walk(value, visit);
}

/** Parses a template; problems point at /sparql. */
export function analyzeTemplate(sparql: string, baseIri: string): { facts?: TemplateFacts; problems: FieldProblem[] } {
  let parsed: SparqlQuery;
  try {
    parsed = new SparqlParser({ prefixes: { '': baseIri } }).parse(sparql);
  } catch (error) {
    return { problems: [{ path: '/sparql', message: `does not parse: ${(error as Error).message.split('\n')[0]}` }] };
  }
  if (parsed.type !== 'query' || parsed.queryType !== 'SELECT') return { problems: [{ path: '/sparql', message: 'must be a SELECT query' }] };
  const select = parsed as SelectQuery;
  const problems: FieldProblem[] = [];
  if (select.from && (select.from.default.length || select.from.named.length)) problems.push({ path: '/sparql', message: 'FROM and FROM NAMED are not allowed: the dataset is the project’s' });
  const projectedTerms = select.variables as Array<{ termType?: string; value?: string; variable?: { value: string } }>;
  if (projectedTerms.some((v) => v.termType === 'Wildcard')) problems.push({ path: '/sparql', message: 'must name its result variables (no SELECT *), so the output contract can describe them' });
  const projected = projectedTerms.filter((v) => v.termType !== 'Wildcard').map((v) => v.variable?.value ?? v.value!);
  const variables = new Set<string>();
  const terms = new Set<string>();
  walk(select.where, (term) => {
    if (term.termType === 'Variable') variables.add(term.value!);
    if (term.termType === 'NamedNode' && term.value!.startsWith(baseIri)) terms.add(term.value!.slice(baseIri.length));
    if (term.termType === 'Wildcard') return;
  });
  walk([select.group, select.having, select.order, select.values], (term) => {
    if (term.termType === 'Variable') variables.add(term.value!);
  });
  return { facts: { parsed: select, projected, variables, terms }, problems };
}

/** The RDF term for an input value, typed by its contract property (string, integer, number, boolean; format uri). */
function termFor(value: unknown, schema: { type?: string; format?: string }): RDF.Term {
  if (schema.type === 'string' && (schema.format === 'uri' || schema.format === 'iri')) return namedNode(String(value));
  if (typeof value === 'boolean') return literal(String(value), namedNode(`${XSD}boolean`));
  if (typeof value === 'number') return literal(String(value), namedNode(`${XSD}${Number.isInteger(value) && schema.type === 'integer' ? 'integer' : 'decimal'}`));
  return literal(String(value));
}

/** Replaces every parameter variable with its typed term and generates the query text. */
export function bindTemplate(facts: TemplateFacts, input: Record<string, unknown>, inputSchema: { properties?: Record<string, { type?: string; format?: string }> }, options: { limit: number; offset: number }): string {
  const query = { ...facts.parsed } as SelectQuery;
  const properties = inputSchema.properties ?? {};
  // Rebuilds the plain nodes of the tree; RDF terms (immutable, with termType on their prototype) are kept or swapped whole.
  const replace = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(replace);
    if (!node || typeof node !== 'object') return node;
    if ('termType' in node) {
      const term = node as { termType: string; value: string };
      return term.termType === 'Variable' && term.value in properties && input[term.value] !== undefined ? termFor(input[term.value], properties[term.value]) : node;
    }
    return Object.fromEntries(Object.entries(node).map(([key, value]) => [key, replace(value)]));
  };
  query.where = replace(query.where) as SelectQuery['where'];
  if (query.having) query.having = replace(query.having) as SelectQuery['having'];
  if (query.values) query.values = replace(query.values) as SelectQuery['values'];
  // Paging from the execution options wraps the template's own limits.
  query.offset = (query.offset ?? 0) + options.offset;
  query.limit = query.limit === undefined ? options.limit : Math.min(Math.max(query.limit - options.offset, 0), options.limit);
  return new Generator().stringify(query);
}

/** A result term as a JSON value: numbers and booleans as such, IRIs and other literals as strings. */
export function jsonValue(term: RDF.Term | undefined): unknown {
  if (!term) return null;
  if (term.termType !== 'Literal') return term.value;
  const type = (term as RDF.Literal).datatype?.value ?? '';
  if (/#(integer|int|long|short|decimal|double|float|nonNegativeInteger|positiveInteger)$/.test(type) && Number.isFinite(Number(term.value))) return Number(term.value);
  if (type.endsWith('#boolean')) return term.value === 'true';
  return term.value;
}
