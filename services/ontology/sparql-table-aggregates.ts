import type * as RDF from '@rdfjs/types';
import type { Knex } from 'knex';
import { DataFactory } from 'n3';
import type { SparqlQuery } from 'sparqljs';
import type { PackageTerms } from '../../db/models';
import { NS } from '../../ontology/compile';
import type { SparqlResult } from '../../ontology/sparql-engine';
import { templateFields } from '../../ontology/term-records';
import { arithmetic, integer, lexicalForm, numericTypeIri, parseNumeric } from '../../ontology/sparql-evaluator/numeric';
import { qualified, run, workspaceSchema } from '../../plugins/managed-table/storage';
import { SqlParams } from '../../plugins/sql/builder';
import type { OtherGraphs, ReachTable } from './sparql-reach-reads';

// Counting queries over one bound table, answered by PostgreSQL: no records leave the database.
// The shape covered is the one a table's size makes unreadable otherwise:
//
//   SELECT ?g (COUNT(*) AS ?n) (COUNT(DISTINCT ?v) AS ?m) WHERE { ?s a :C ; :p ?g ; :q ?v } GROUP BY ?g
//
// one subject variable, constant predicates that only this table yields (not the package, not
// another binding), distinct object variables, COUNT aggregates, GROUP BY on the star's variables
// or none. The SQL counts the solutions the mapping's triples give: records grouped by the text
// their subject IRI is made of (records with one IRI merge their triples), each field's values
// (or array elements) as the distinct lexical forms the mapping writes, and solutions as the
// product of each subject's distinct values. Where a value's lexical form is not one PostgreSQL
// writes as JavaScript does (a number in exponent notation, an object), the answer is not used
// and the query is read and evaluated as any other.

const { literal, namedNode } = DataFactory;
const RDF_TYPE = `${NS.rdf}type`;
const XSD_INTEGER = 'http://www.w3.org/2001/XMLSchema#integer';

type Term = { termType: string; value: string };

/** COUNT of the star's subject variable. */
const SUBJECT = '\u0000subject';

/** A triple of the star: what it reads of the record. */
type StarTriple =
  | { kind: 'type' }
  | { kind: 'property'; variable: string; field: string; datatype: string }
  | { kind: 'link'; variable: string; field: string; before: string; after: string };

interface Projection {
  name: string;
  /** A group variable, or an aggregate: COUNT(*) (of: undefined) or COUNT([DISTINCT] ?of). */
  group?: string;
  count?: { of?: string; distinct: boolean };
  /** SUM(?of) or AVG(?of) of an xsd:integer or xsd:decimal property. */
  total?: { of: string; average: boolean };
}

/** Lexical forms of the numeric datatypes totals are computed for, as the evaluator reads them (numeric.ts). */
const NUMERIC_LEXICAL: Record<string, string> = { 'xsd:integer': '^[+-]?[0-9]+$', 'xsd:decimal': '^[+-]?([0-9]+([.][0-9]*)?|[.][0-9]+)$' };

export interface CountingQuery {
  triples: StarTriple[];
  groupBy: string[];
  projections: Projection[];
  subject: { field: string; before: string; after: string };
}

const isVariable = (term: unknown): term is Term => (term as Term | undefined)?.termType === 'Variable';

/** The query as a count over `source`'s star, or undefined when it is not one this file answers. */
export function countingQuery(query: SparqlQuery, source: ReachTable, terms: PackageTerms, baseIri: string, others: OtherGraphs): CountingQuery | undefined {
  if (query.type !== 'query' || query.queryType !== 'SELECT') return undefined;
  const q = query as SparqlQuery & Record<string, unknown>;
  if (q.having || q.order || q.limit !== undefined || q.offset !== undefined || q.values || q.reduced || (q as { from?: unknown }).from) return undefined;
  const where = (q.where ?? []) as Array<{ type: string; triples?: Array<{ subject: Term; predicate: Term; object: Term }> }>;
  if (where.length !== 1 || where[0].type !== 'bgp' || !where[0].triples?.length) return undefined;
  const subjectFields = templateFields(source.mapping.subjectTemplate);
  if (subjectFields.length !== 1) return undefined;
  const [before, after] = source.mapping.subjectTemplate.split(`{${subjectFields[0]}}`);
  const subjectName = where[0].triples[0].subject;
  if (!isVariable(subjectName)) return undefined;
  const seen = new Set<string>([subjectName.value]);
  const triples: StarTriple[] = [];
  const predicates = others.predicates;
  if (!predicates) return undefined;
  for (const { subject, predicate, object } of where[0].triples) {
    if (!isVariable(subject) || subject.value !== subjectName.value || predicate.termType !== 'NamedNode') return undefined;
    if (predicate.value === RDF_TYPE) {
      // Only this table's records may carry the class.
      if (object.termType !== 'NamedNode' || object.value !== `${baseIri}${source.termId}` || others.types?.has(object.value) !== false) return undefined;
      triples.push({ kind: 'type' });
      continue;
    }
    if (!isVariable(object) || seen.has(object.value) || predicates.has(predicate.value) || !predicate.value.startsWith(baseIri)) return undefined;
    seen.add(object.value);
    const local = predicate.value.slice(baseIri.length);
    const field = source.mapping.properties[local];
    const link = source.mapping.links?.[local];
    if (field !== undefined) triples.push({ kind: 'property', variable: object.value, field, datatype: terms.properties[local]?.datatype ?? 'xsd:string' });
    else if (link) {
      const fields = templateFields(link.targetTemplate);
      // A link whose IRI is made of its own field alone (the usual reference to another record).
      if (fields.length !== 1 || fields[0] !== link.field) return undefined;
      const [linkBefore, linkAfter] = link.targetTemplate.split(`{${link.field}}`);
      triples.push({ kind: 'link', variable: object.value, field: link.field, before: linkBefore, after: linkAfter });
    } else return undefined;
  }
  const groupBy: string[] = [];
  for (const group of (q.group ?? []) as Array<{ expression: Term; variable?: Term }>) {
    if (!isVariable(group.expression) || group.variable || !seen.has(group.expression.value) || group.expression.value === subjectName.value) return undefined;
    groupBy.push(group.expression.value);
  }
  const projections: Projection[] = [];
  const selected = q.variables as unknown[];
  if (!Array.isArray(selected) || selected.some((item) => (item as Term).termType === 'Wildcard')) return undefined;
  for (const item of selected) {
    if (isVariable(item)) {
      if (!groupBy.includes(item.value)) return undefined;
      projections.push({ name: item.value, group: item.value });
      continue;
    }
    const { expression, variable } = item as { expression: { type?: string; aggregation?: string; distinct?: boolean; expression?: Term }; variable: Term };
    if (expression?.type !== 'aggregate') return undefined;
    const of = expression.expression;
    const aggregation = expression.aggregation?.toLowerCase();
    if (aggregation === 'sum' || aggregation === 'avg') {
      const summed = isVariable(of) && !expression.distinct ? triples.find((triple) => triple.kind === 'property' && triple.variable === of.value) : undefined;
      if (!summed || summed.kind !== 'property' || !(summed.datatype in NUMERIC_LEXICAL)) return undefined;
      projections.push({ name: variable.value, total: { of: summed.variable, average: aggregation === 'avg' } });
      continue;
    }
    if (aggregation !== 'count') return undefined;
    if (of?.termType === 'Wildcard') projections.push({ name: variable.value, count: { distinct: Boolean(expression.distinct) } });
    else if (isVariable(of) && of.value === subjectName.value) projections.push({ name: variable.value, count: { of: SUBJECT, distinct: Boolean(expression.distinct) } });
    else if (isVariable(of) && seen.has(of.value)) projections.push({ name: variable.value, count: { of: of.value, distinct: Boolean(expression.distinct) } });
    else return undefined;
  }
  return { triples, groupBy, projections, subject: { field: subjectFields[0], before, after } };
}

/**
 * The text a JSON value shows as in a triple: a string as itself, a number as JavaScript writes it
 * (PostgreSQL writes a JSON number's digits as they were stored, which is JavaScript's form except
 * in exponent notation, flagged), a boolean. `lexical`: what an object or nested array shows as.
 */
function shownText(value: string, shown: 'key' | 'string' | 'typed'): { text: string; odd: string } {
  const number = `(${value})::numeric`;
  const exponent = `(jsonb_typeof(${value}) = 'number' AND (abs(${number}) >= 1e21 OR (${number} <> 0 AND abs(${number}) < 1e-6)))`;
  const text = `CASE jsonb_typeof(${value}) WHEN 'string' THEN ${value} #>> '{}' WHEN 'number' THEN (${value})::text WHEN 'boolean' THEN (${value})::text ${shown === 'key' ? '' : `WHEN 'null' THEN 'null'`} END`;
  // A key of '' or an object makes no IRI; an xsd:string literal of an object, or a nested array, is not written here as JavaScript writes it.
  const odd = shown === 'key' ? exponent : `(${exponent} OR jsonb_typeof(${value}) IN ('object', 'array'))`;
  return { text: shown === 'key' ? `NULLIF(${text}, '')` : text, odd };
}

/** Runs the count; undefined when a value's form makes the SQL's answer unreliable. */
export async function runCountingQuery(trx: Knex.Transaction, counting: CountingQuery, source: ReachTable & { version: string }): Promise<SparqlResult | undefined> {
  const params = new SqlParams();
  const version = params.add(source.version);
  const subject = shownText(`(data -> ${params.add(counting.subject.field)}::text)`, 'key');
  const valueTriples = counting.triples.filter((triple): triple is Exclude<StarTriple, { kind: 'type' }> => triple.kind !== 'type');
  const ctes: string[] = [
    `records AS (SELECT ${subject.text} AS s, ${subject.odd} AS odd, data FROM ${qualified(workspaceSchema(source.workspaceId), source.table)}
       WHERE valid_from <= ${version}::bigint AND (valid_to IS NULL OR valid_to > ${version}::bigint))`,
    `subjects AS (SELECT DISTINCT s FROM records WHERE s IS NOT NULL)`,
  ];
  valueTriples.forEach((triple, at) => {
    const field = params.add(triple.field);
    const element = 'element.value';
    const shown = shownText(element, triple.kind === 'link' ? 'key' : triple.datatype === 'xsd:string' ? 'string' : 'typed');
    const top = `(records.data -> ${field}::text)`;
    // One triple per element of an array; JSON null yields none (an array's null element does, as "null").
    ctes.push(`v${at} AS (SELECT DISTINCT records.s, ${shown.text} AS o, ${shown.odd} AS odd${triple.kind === 'property' && triple.datatype in NUMERIC_LEXICAL ? `, CASE WHEN ${shown.text} ~ ${params.add(NUMERIC_LEXICAL[triple.datatype])}::text THEN (${shown.text})::numeric END AS num` : ''} FROM records
        CROSS JOIN LATERAL jsonb_array_elements(CASE WHEN jsonb_typeof(${top}) = 'array' THEN ${top} ELSE jsonb_build_array(${top}) END) AS element(value)
       WHERE records.s IS NOT NULL AND jsonb_typeof(${top}) <> 'null'${triple.kind === 'link' ? ` AND ${shown.text} IS NOT NULL` : ''})`);
  });
  // A solution is a subject with one value per variable: per subject, the product of its counts.
  const joined = valueTriples.map((_, at) => `JOIN v${at} ON v${at}.s = subjects.s`).join(' ');
  const variableColumn = (name: string) => `v${valueTriples.findIndex((triple) => triple.variable === name)}.o`;
  const groupColumns = counting.groupBy.map(variableColumn);
  const selects = counting.projections.map((projection, at) => {
    if (projection.group) return `${variableColumn(projection.group)} AS p${at}`;
    if (projection.total) {
      const column = variableColumn(projection.total.of).replace(/\.o$/, '.num');
      // count(num) < count(*): a value that is not a number of its datatype, which fails the total.
      return `sum(${column}) AS p${at}, count(${column}) AS n${at}, count(*) AS a${at}`;
    }
    const { of, distinct } = projection.count!;
    if (distinct && of) return `count(DISTINCT ${of === SUBJECT ? 'subjects.s' : variableColumn(of)}) AS p${at}`;
    if (distinct) return `count(DISTINCT (subjects.s${valueTriples.map((_, i) => `, v${i}.o`).join('')})) AS p${at}`;
    return `count(*) AS p${at}`;
  });
  const oddChecks = [`(SELECT bool_or(odd) FROM records WHERE s IS NOT NULL)`, ...valueTriples.map((_, at) => `(SELECT bool_or(odd) FROM v${at})`)];
  const sql = `WITH ${ctes.join(',\n')}
    SELECT ${selects.join(', ')}, (${oddChecks.map((check) => `coalesce(${check}, false)`).join(' OR ')}) AS odd
      FROM subjects ${joined}${groupColumns.length ? ` GROUP BY ${groupColumns.join(', ')}` : ''}`;
  const { rows } = await run<Record<string, unknown>>(trx, sql, params);
  if (rows.some((row) => row.odd)) return undefined;
  // A total over a value that is no number of its type is an error in SPARQL: left to the evaluator.
  if (counting.projections.some((projection, at) => projection.total && rows.some((row) => Number(row[`n${at}`]) !== Number(row[`a${at}`])))) return undefined;
  // Without GROUP BY, one row even when nothing matched (PostgreSQL answers it too, and its odd is then null).
  const variables = counting.projections.map((projection) => projection.name);
  const result: Array<Record<string, RDF.Term>> = rows.map((row) => {
    const out: Record<string, RDF.Term> = {};
    counting.projections.forEach((projection, at) => {
      const value = row[`p${at}`];
      if (projection.group) {
        const triple = valueTriples.find((candidate) => candidate.variable === projection.group)!;
        out[projection.name] = triple.kind === 'link' ? namedNode(`${triple.before}${encodeURIComponent(String(value))}${triple.after}`) : literalOf(String(value), triple.datatype);
      } else if (projection.total) {
        const triple = valueTriples.find((candidate) => candidate.variable === projection.total!.of) as Extract<StarTriple, { kind: 'property' }>;
        out[projection.name] = totalTerm(value === null || value === undefined ? undefined : String(value), Number(row[`a${at}`]), triple.datatype, projection.total.average);
      } else out[projection.name] = literal(String(value), namedNode(XSD_INTEGER));
    });
    return out;
  });
  return { kind: 'bindings', variables, rows: result };
}

function literalOf(text: string, datatype: string): RDF.Literal {
  if (datatype === 'xsd:string') return literal(text);
  return literal(text, namedNode(`http://www.w3.org/2001/XMLSchema#${datatype.replace(/^xsd:/, '')}`));
}

/** SUM or AVG as the evaluator writes them (aggregates.ts): the exact total in its type's canonical form; AVG a decimal quotient; both 0 over nothing. */
function totalTerm(sum: string | undefined, count: number, datatype: string, average: boolean): RDF.Literal {
  if (sum === undefined || count === 0) return literal('0', namedNode(XSD_INTEGER));
  const total = parseNumeric(sum, `http://www.w3.org/2001/XMLSchema#${datatype.replace(/^xsd:/, '')}`)!;
  const value = average ? arithmetic('/', total, integer(count))! : total;
  return literal(lexicalForm(value), namedNode(numericTypeIri(value.type)));
}
