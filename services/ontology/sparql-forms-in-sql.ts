import type * as RDF from '@rdfjs/types';
import { DataFactory } from 'n3';
import type * as Sparql from 'sparqljs';
import { InputError } from '../../core/errors';
import { GraphTemplate } from '../../ontology/sparql-evaluator/construct';
import type { SparqlResult } from '../../ontology/sparql-engine';
import type { SqlQuery } from './sparql-in-sql';

// ASK and CONSTRUCT over bound tables, answered by PostgreSQL as the SELECT whose solutions they
// are made of (SPARQL 1.1 §16.2, §16.3): an ASK is whether one solution exists (the statement
// stops at it), a CONSTRUCT is its template instantiated here over the SELECT's rows, with the
// evaluator's own instantiation (a triple made twice is there once, blank nodes new per solution).
// A query whose SELECT the SQL does not take is left to the evaluator, as a SELECT would be.

/** How many of an ASK's variables are tried as the one its SELECT projects (any in-scope variable gives one row per solution). */
const ASK_CANDIDATES = 4;

export interface SqlForm {
  inSql: SqlQuery;
  /** The SELECT's answer as the query's, within the result bound. */
  finish(result: SparqlResult, maxResults: number): SparqlResult;
}

/** The query as PostgreSQL answers it over bound tables (`compile`: sqlQueryOf over the caller's bindings), or undefined. */
export function sqlFormOf(query: Sparql.SparqlQuery, compile: (select: Sparql.SelectQuery) => SqlQuery | undefined): SqlForm | undefined {
  if (query.type !== 'query') return undefined;
  if (query.queryType === 'SELECT') {
    const inSql = compile(query);
    return inSql && { inSql, finish: (result, maxResults) => withinRows(result, maxResults) };
  }
  // The grammar gives ASK and CONSTRUCT a SELECT's solution modifiers (sparqljs keeps them on the query).
  const { order, limit, offset, values, where, prefixes } = query as Pick<Sparql.SelectQuery, 'order' | 'limit' | 'offset' | 'values' | 'where' | 'prefixes'>;
  const selectOf = (variables: string[]): Sparql.SelectQuery =>
    ({ type: 'query', queryType: 'SELECT', prefixes, where, values, order, limit, offset, variables: variables.map((name) => DataFactory.variable(name)) }) as Sparql.SelectQuery;
  if (query.queryType === 'ASK') {
    for (const variable of scopedVariables(where ?? []).slice(0, ASK_CANDIDATES)) {
      const inSql = compile(selectOf([variable]));
      if (inSql) return { inSql: { ...inSql, exists: true }, finish: (result) => ({ kind: 'boolean', value: result.kind === 'bindings' && result.rows.length > 0 }) };
    }
    return undefined;
  }
  if (query.queryType !== 'CONSTRUCT') return undefined;
  const template = query.template ?? [];
  const variables = [...new Set(template.flatMap((triple) => [triple.subject, triple.predicate, triple.object]).filter((term): term is RDF.Variable => (term as RDF.Term).termType === 'Variable').map((term) => term.value))];
  if (!variables.length || template.some((triple) => [triple.subject, triple.predicate, triple.object].some((term) => (term as RDF.Term).termType === 'Quad'))) return undefined;
  // ORDER BY's variables are projected too (the SQL orders by projections only); more columns change no solution.
  const ordering = (order ?? []).map((condition) => condition.expression as RDF.Term).filter((term): term is RDF.Variable => term.termType === 'Variable').map((term) => term.value);
  const inSql = compile(selectOf([...new Set([...variables, ...ordering])]));
  if (!inSql) return undefined;
  return {
    inSql,
    finish(result, maxResults) {
      if (result.kind !== 'bindings') return result;
      // Bound tables hold no blank nodes, so any label is fresh.
      const graph = new GraphTemplate(template, (variable) => variable, (base) => `c_${base}`);
      for (const row of result.rows) {
        if (graph.add((variable) => row[variable]) > maxResults) throw new InputError('result_too_large', `The query returns more than ${maxResults} triples; add a LIMIT or narrow it.`);
      }
      return { kind: 'quads', quads: graph.quads };
    },
  };
}

function withinRows(result: SparqlResult, maxResults: number): SparqlResult {
  if (result.kind === 'bindings' && result.rows.length > maxResults) throw new InputError('result_too_large', `The query returns more than ${maxResults} rows; add a LIMIT or narrow it.`);
  return result;
}

/** Variables of the group's triple patterns, its own first, then its UNION branches' and groups' (never an OPTIONAL's or MINUS's first). */
function scopedVariables(patterns: Sparql.Pattern[]): string[] {
  const found = new Set<string>();
  const ofTriples = (triples: Sparql.Triple[]) => {
    for (const triple of triples) for (const term of [triple.subject, triple.object]) if ((term as RDF.Term).termType === 'Variable') found.add((term as RDF.Variable).value);
  };
  for (const pattern of patterns) if (pattern.type === 'bgp') ofTriples(pattern.triples);
  for (const pattern of patterns) {
    if (pattern.type === 'group') for (const inner of scopedVariables(pattern.patterns)) found.add(inner);
    if (pattern.type === 'union') for (const branch of pattern.patterns) for (const inner of scopedVariables(branch.type === 'group' ? branch.patterns : [branch])) found.add(inner);
  }
  return [...found];
}
