import type * as RDF from '@rdfjs/types';
import type { Knex } from 'knex';
import { DataFactory } from 'n3';
import type { SparqlQuery } from 'sparqljs';
import type { PackageTerms } from '../../db/models';
import { NS } from '../../ontology/compile';
import type { SparqlResult } from '../../ontology/sparql-engine';
import { templateFields } from '../../ontology/term-records';
import { arithmetic, integer, lexicalForm, numericTypeIri, parseNumeric } from '../../ontology/sparql-evaluator/numeric';
import { orderTerms } from '../../ontology/sparql-evaluator/comparison';
import { LiteralTerm, Term as EvaluatorTerm } from '../../ontology/sparql-evaluator/terms';
import { qualified, run, workspaceSchema } from '../../plugins/managed-table/storage';
import { SqlParams } from '../../plugins/sql/builder';
import { OtherGraphs, primaryKeysOf, ReachTable } from './sparql-reach-reads';

// SPARQL answered in SQL over bound managed tables: no records leave the database. The shape
// covered is the one a table's size makes unreadable otherwise, stars of bound tables:
//
//   SELECT ?type (AVG(?rating) AS ?avg) (COUNT(?review) AS ?n)
//    WHERE { ?review :reviewFor ?product ; :rating1 ?rating . ?product :productType ?type }
//    GROUP BY ?type ORDER BY ?type
//
// one star per subject variable, each of constant predicates that only its table yields (not the
// package, not another binding), joined where a link's object is another star's subject; distinct
// object variables; COUNT, SUM and AVG (numeric properties) with GROUP BY on star variables, or
// plain projections (DISTINCT or not); FILTERs of numeric bounds; ORDER BY projected variables
// (sorted here in the evaluator's order) with OFFSET and LIMIT. The SQL gives the solutions the
// mapping's triples give: records grouped by the text their subject IRI is made of (records with
// one IRI merge their triples), each field's values (or array elements) as the distinct lexical
// forms the mapping writes, and a subject's solutions as the product of its distinct values. Where
// a value's lexical form is not one PostgreSQL writes as JavaScript does (a number in exponent
// notation, an object), the answer is not used and the query is read and evaluated as any other.

const { literal, namedNode } = DataFactory;
const RDF_TYPE = `${NS.rdf}type`;
const XSD = 'http://www.w3.org/2001/XMLSchema#';
const XSD_INTEGER = `${XSD}integer`;

type Term = { termType: string; value: string };


/** A triple of the star: what it reads of the record. */
type StarTriple =
  | { kind: 'type' }
  | { kind: 'property'; variable: string; field: string; datatype: string }
  | { kind: 'link'; variable: string; field: string; before: string; after: string; /** The star whose subject this link's object is. */ joins?: number };

interface Projection {
  name: string;
  /** A group variable, or an aggregate: COUNT(*) (of: undefined) or COUNT([DISTINCT] ?of). */
  group?: string;
  count?: { of?: string; distinct: boolean };
  /** A variable of a query without aggregates. */
  plain?: string;
  /** SUM(?of) or AVG(?of) of an xsd:integer or xsd:decimal property. */
  total?: { of: string; average: boolean };
}

/** Memory for each sort or hash of an answer's statement (a workspace runs at most WEFT_SPARQL_SQL_CONNECTIONS at once). */
const WORK_MEM = '64MB';

/** Solutions a query without aggregates may have here (they are sorted in this process); more are left to the evaluator. */
const MAX_SOLUTION_ROWS = 100_000;

/** Lexical forms of the numeric datatypes totals are computed for, as the evaluator reads them (numeric.ts). */
const NUMERIC_LEXICAL: Record<string, string> = { 'xsd:integer': '^[+-]?[0-9]+$', 'xsd:decimal': '^[+-]?([0-9]+([.][0-9]*)?|[.][0-9]+)$' };

/** One subject variable's triples, all yielded by one table. */
interface Star {
  /** Index into the sources given to sqlQueryOf. */
  source: number;
  variable: string;
  subject: { field: string; before: string; after: string };
  triples: StarTriple[];
}

/** `?v op constant`: a FILTER conjunct on a numeric property's value. */
interface NumericFilter {
  variable: string;
  op: '<' | '<=' | '>' | '>=' | '=' | '!=';
  value: string;
}

/** A FILTER as numeric bounds, or undefined when any of it is something else. */
function filterBounds(expression: unknown): NumericFilter[] | undefined {
  const e = expression as { type?: string; operator?: string; args?: Array<{ termType?: string; value?: string; datatype?: { value: string } }> };
  if (e?.type !== 'operation' || !e.args) return undefined;
  if (e.operator === '&&') {
    const parts = e.args.map(filterBounds);
    return parts.every(Boolean) ? parts.flat() as NumericFilter[] : undefined;
  }
  const flipped: Record<string, NumericFilter['op']> = { '<': '>', '<=': '>=', '>': '<', '>=': '<=', '=': '=', '!=': '!=' };
  if (!(String(e.operator) in flipped) || e.args.length !== 2) return undefined;
  const [left, right] = e.args;
  const constant = (term: typeof left) => term.termType === 'Literal' && (term.datatype?.value === `${XSD}integer` || term.datatype?.value === `${XSD}decimal`) && /^[+-]?([0-9]+([.][0-9]*)?|[.][0-9]+)$/.test(String(term.value));
  if (left.termType === 'Variable' && constant(right)) return [{ variable: String(left.value), op: e.operator as NumericFilter['op'], value: String(right.value) }];
  if (right.termType === 'Variable' && constant(left)) return [{ variable: String(right.value), op: flipped[String(e.operator)], value: String(left.value) }];
  return undefined;
}

export interface SqlQuery {
  stars: Star[];
  groupBy: string[];
  projections: Projection[];
  filters: NumericFilter[];
  /** Aggregates (or GROUP BY): one row per group; otherwise one row per solution, DISTINCT or not. */
  aggregated: boolean;
  distinct: boolean;
  order: Array<{ at: number; descending: boolean }>;
  offset: number;
  limit?: number;
}

const isVariable = (term: unknown): term is Term => (term as Term | undefined)?.termType === 'Variable';

/** Splits a template of one field into that field and the text around it. */
function oneFieldTemplate(template: string): { field: string; before: string; after: string } | undefined {
  const fields = templateFields(template);
  if (fields.length !== 1) return undefined;
  const [before, after] = template.split(`{${fields[0]}}`);
  return { field: fields[0], before, after };
}

/**
 * The query as a count over stars of `sources` (one star per subject variable, stars joined where a
 * link's object is another star's subject and the link's template is that star's subject
 * template), or undefined when it is not one this file answers. `othersOf(i)`: what graphs other
 * than source i hold; a star's predicates must be yielded by its source alone.
 */
export function sqlQueryOf(query: SparqlQuery, sources: ReachTable[], othersOf: (source: number) => OtherGraphs, terms: PackageTerms, baseIri: string): SqlQuery | undefined {
  if (query.type !== 'query' || query.queryType !== 'SELECT') return undefined;
  const q = query as SparqlQuery & Record<string, unknown>;
  if (q.having || q.values || q.reduced || (q as { from?: unknown }).from) return undefined;
  const where = (q.where ?? []) as Array<{ type: string; triples?: Array<{ subject: Term; predicate: Term; object: Term }>; expression?: unknown }>;
  // The group's triples, in however many blocks its FILTERs split them into (one conjunction).
  const triplesOfGroup = where.filter((pattern) => pattern.type === 'bgp').flatMap((pattern) => pattern.triples ?? []);
  if (!triplesOfGroup.length || where.some((pattern) => pattern.type !== 'bgp' && pattern.type !== 'filter')) return undefined;
  const filters: NumericFilter[] = [];
  for (const pattern of where) {
    if (pattern.type !== 'filter') continue;
    const bounds = filterBounds(pattern.expression);
    if (!bounds) return undefined;
    filters.push(...bounds);
  }
  const bySubject = new Map<string, Array<{ predicate: Term; object: Term }>>();
  for (const { subject, predicate, object } of triplesOfGroup) {
    if (!isVariable(subject) || predicate.termType !== 'NamedNode') return undefined;
    bySubject.set(subject.value, [...(bySubject.get(subject.value) ?? []), { predicate, object }]);
  }
  const stars: Star[] = [];
  for (const [variable, triples] of bySubject) {
    const star = starOver(variable, triples, sources, othersOf, terms, baseIri);
    if (!star) return undefined;
    stars.push(star);
  }
  // Every variable is bound in one place: a star's subject, or one value triple (a link's object may
  // be another star's subject: the join). Stars must be joined into one.
  const subjects = new Map(stars.map((star, at) => [star.variable, at]));
  const bound = new Set<string>();
  const linked = new Set<number>([0]);
  for (const star of stars) {
    for (const triple of star.triples) {
      if (triple.kind === 'type') continue;
      const target = subjects.get(triple.variable);
      if (target !== undefined) {
        const subject = stars[target].subject;
        if (triple.kind !== 'link' || triple.before !== subject.before || triple.after !== subject.after) return undefined;
        triple.joins = target;
        continue;
      }
      if (bound.has(triple.variable)) return undefined;
      bound.add(triple.variable);
    }
  }
  for (let grew = true; grew; ) {
    grew = false;
    stars.forEach((star, at) => {
      for (const triple of star.triples) {
        if (triple.kind !== 'link' || triple.joins === undefined) continue;
        if (linked.has(at) !== linked.has(triple.joins)) {
          linked.add(at);
          linked.add(triple.joins);
          grew = true;
        }
      }
    });
  }
  if (linked.size !== stars.length) return undefined;
  const known = (name: string) => bound.has(name) || subjects.has(name);
  const groupBy: string[] = [];
  for (const group of (q.group ?? []) as Array<{ expression: Term; variable?: Term }>) {
    if (!isVariable(group.expression) || group.variable || !known(group.expression.value)) return undefined;
    groupBy.push(group.expression.value);
  }
  const property = (name: string) => stars.flatMap((star) => star.triples).find((triple): triple is Extract<StarTriple, { kind: 'property' }> => triple.kind === 'property' && triple.variable === name);
  // A FILTER is kept only when PostgreSQL can apply all of it: numeric bounds on numeric properties.
  if (filters.some((filter) => !((property(filter.variable)?.datatype ?? '') in NUMERIC_LEXICAL))) return undefined;
  const projections: Projection[] = [];
  const selected = q.variables as unknown[];
  if (!Array.isArray(selected) || selected.some((item) => (item as Term).termType === 'Wildcard')) return undefined;
  const aggregated = groupBy.length > 0 || selected.some((item) => !isVariable(item));
  for (const item of selected) {
    if (isVariable(item)) {
      if (aggregated ? !groupBy.includes(item.value) : !known(item.value)) return undefined;
      projections.push(aggregated ? { name: item.value, group: item.value } : { name: item.value, plain: item.value });
      continue;
    }
    const { expression, variable } = item as { expression: { type?: string; aggregation?: string; distinct?: boolean; expression?: Term }; variable: Term };
    if (expression?.type !== 'aggregate') return undefined;
    const of = expression.expression;
    const aggregation = expression.aggregation?.toLowerCase();
    if (aggregation === 'sum' || aggregation === 'avg') {
      const summed = isVariable(of) && !expression.distinct ? property(of.value) : undefined;
      if (!summed || !(summed.datatype in NUMERIC_LEXICAL)) return undefined;
      projections.push({ name: variable.value, total: { of: summed.variable, average: aggregation === 'avg' } });
      continue;
    }
    if (aggregation !== 'count') return undefined;
    if (of?.termType === 'Wildcard') projections.push({ name: variable.value, count: { distinct: Boolean(expression.distinct) } });
    else if (isVariable(of) && known(of.value)) projections.push({ name: variable.value, count: { of: of.value, distinct: Boolean(expression.distinct) } });
    else return undefined;
  }
  // ORDER BY projected variables only, sorted here in the evaluator's order; LIMIT and OFFSET after it.
  const order: Array<{ at: number; descending: boolean }> = [];
  for (const condition of (q.order ?? []) as Array<{ expression: Term; descending?: boolean }>) {
    const at = isVariable(condition.expression) ? projections.findIndex((projection) => projection.name === condition.expression.value) : -1;
    if (at < 0) return undefined;
    order.push({ at, descending: Boolean(condition.descending) });
  }
  // Without ORDER BY, which rows a LIMIT keeps is the evaluator's to choose: left to it.
  if (!aggregated && !order.length && (q.limit !== undefined || q.offset !== undefined)) return undefined;
  return { stars, groupBy, projections, filters, aggregated, distinct: Boolean(q.distinct), order, offset: (q.offset as number | undefined) ?? 0, limit: q.limit as number | undefined };
}

/** A subject variable's triples as a star over the one source that alone yields all of them. */
function starOver(variable: string, triples: Array<{ predicate: Term; object: Term }>, sources: ReachTable[], othersOf: (source: number) => OtherGraphs, terms: PackageTerms, baseIri: string): Star | undefined {
  for (const [at, source] of sources.entries()) {
    const subject = oneFieldTemplate(source.mapping.subjectTemplate);
    const others = othersOf(at);
    if (!subject || !others.predicates || !others.types) continue;
    const out: StarTriple[] = [];
    const objects = new Set<string>();
    let fits = true;
    for (const { predicate, object } of triples) {
      if (predicate.value === RDF_TYPE) {
        // Only this table's records may carry the class.
        if (object.termType !== 'NamedNode' || object.value !== `${baseIri}${source.termId}` || others.types.has(object.value)) fits = false;
        else out.push({ kind: 'type' });
      } else if (!isVariable(object) || object.value === variable || objects.has(object.value) || others.predicates.has(predicate.value) || !predicate.value.startsWith(baseIri)) {
        fits = false;
      } else {
        objects.add(object.value);
        const local = predicate.value.slice(baseIri.length);
        const field = source.mapping.properties[local];
        const link = source.mapping.links?.[local];
        const target = link && oneFieldTemplate(link.targetTemplate);
        if (field !== undefined) out.push({ kind: 'property', variable: object.value, field, datatype: terms.properties[local]?.datatype ?? 'xsd:string' });
        // A link whose IRI is made of its own field alone (the usual reference to another record).
        else if (link && target && target.field === link.field) out.push({ kind: 'link', variable: object.value, field: link.field, before: target.before, after: target.after });
        else fits = false;
      }
      if (!fits) break;
    }
    if (fits) return { source: at, variable, subject, triples: out };
  }
  return undefined;
}

/**
 * The text a JSON value shows as in a triple: a string as itself, a number as JavaScript writes it
 * (PostgreSQL writes a JSON number's digits as they were stored, which is JavaScript's form except
 * where JavaScript uses exponent notation, flagged), a boolean; an array's null element as "null".
 * A key of '' or an object makes no IRI; an xsd:string literal of an object, or a nested array, is
 * not written here as JavaScript writes it (flagged). Few function calls a value: they are the
 * statement's cost at a million records.
 */
function shownText(type: string, raw: string, shown: 'key' | 'string' | 'typed'): { text: string; odd: string; numeric: (integer: boolean, pattern: string) => string } {
  // JavaScript writes |n| >= 1e21 and 0 < |n| < 1e-6 in exponent notation: 22 digits or more, or a run of six zeros after a point (a few others are flagged too, harmlessly).
  const exponent = `(length(${raw}) >= 22 OR ${raw} LIKE '%0.000000%')`;
  const text = shown === 'key' ? `CASE WHEN ${type} IN ('string', 'number', 'boolean') THEN NULLIF(${raw}, '') END` : `coalesce(${raw}, 'null')`;
  const odd = `CASE ${type} WHEN 'number' THEN ${exponent}${shown === 'key' ? '' : ` WHEN 'object' THEN true WHEN 'array' THEN true`} ELSE false END`;
  // A number's text is always a decimal's lexical form (and an integer's without a point); a string's is tested.
  const numeric = (integer: boolean, pattern: string) => `CASE ${type} WHEN 'number' THEN ${integer ? `CASE WHEN strpos(${raw}, '.') = 0 THEN ${raw}::numeric END` : `${raw}::numeric`} WHEN 'string' THEN CASE WHEN ${raw} ~ ${pattern}::text THEN ${raw}::numeric END END`;
  return { text, odd, numeric };
}

/**
 * Runs the query over the sources at their snapshots; undefined when a value's form makes the SQL's
 * answer unreliable. A star over a table keyed by its subject field is read in one scan, a record a
 * row (Ontop's self-join elimination): exact while the table holds no arrays in the star's fields
 * and one JSON type of key (5 and "5" would be one subject); otherwise the star is read per
 * triple, its values merged per subject text.
 */
export async function runSqlQuery(trx: Knex.Transaction, query: SqlQuery, sources: Array<ReachTable & { version: string }>): Promise<SparqlResult | undefined> {
  const primaryKeys = await primaryKeysOf(trx, sources);
  const fusable = query.stars.map((star) => primaryKeys.get(sources[star.source].table)?.join('\n') === star.subject.field);
  const fused = await runSqlQueryAs(trx, query, sources, fusable);
  if (fused !== 'unfused') return fused;
  return (await runSqlQueryAs(trx, query, sources, fusable.map(() => false))) as SparqlResult | undefined;
}

async function runSqlQueryAs(trx: Knex.Transaction, query: SqlQuery, sources: Array<ReachTable & { version: string }>, fusable: boolean[]): Promise<SparqlResult | undefined | 'unfused'> {
  const params = new SqlParams();
  /** Checks that a one-scan star's table holds what it cannot read exactly (the answer is then made per triple). */
  const unfusedChecks: string[] = [];
  const ctes: string[] = [];
  const from: string[] = [];
  const on: string[] = [];
  const oddChecks: string[] = [];
  /** Where each variable is bound: a star's subjects, or a value triple's rows. */
  const columns = new Map<string, { column: string; num?: string; render: (value: string) => RDF.Term; triple?: Extract<StarTriple, { kind: 'property' }> }>();
  const solutionColumns: string[] = [];
  /** Each star's subject column, and the links to join to them. */
  const anchors: string[] = [];
  const links: Array<{ column: string; star: number }> = [];
  query.stars.forEach((star, x) => {
    const source = sources[star.source];
    const version = params.add(source.version);
    const table = qualified(workspaceSchema(source.workspaceId), source.table);
    const current = `valid_from <= ${version}::bigint AND (valid_to IS NULL OR valid_to > ${version}::bigint)`;
    const key = params.add(star.subject.field);
    const subject = shownText('kt', 'kx', 'key');
    /** The record's subject field as its JSON type and text, each computed once a record (the inner selects are fenced by OFFSET 0). */
    const keyColumns = `jsonb_typeof(data -> ${key}::text) AS kt, data ->> ${key}::text AS kx`;
    const subjectRender = (value: string) => namedNode(`${star.subject.before}${encodeURIComponent(value)}${star.subject.after}`);
    if (fusable[x]) {
      // One scan: each record is a row of its subject and one value per triple (a record lacking a field yields none).
      const name = `star${x}`;
      const reads: string[] = [];
      const shownColumns: string[] = [];
      const odd: string[] = [subject.odd];
      const present: string[] = ['s IS NOT NULL'];
      const arrays: string[] = [];
      star.triples.forEach((triple, i) => {
        if (triple.kind === 'type') return;
        const field = params.add(triple.field);
        reads.push(`jsonb_typeof(data -> ${field}::text) AS vt${i}, data ->> ${field}::text AS vx${i}`);
        const shown = shownText(`vt${i}`, `vx${i}`, triple.kind === 'link' ? 'key' : triple.datatype === 'xsd:string' ? 'string' : 'typed');
        const pattern = triple.kind === 'property' && triple.datatype in NUMERIC_LEXICAL ? params.add(NUMERIC_LEXICAL[triple.datatype]) : undefined;
        shownColumns.push(`${shown.text} AS o${i}${pattern ? `, ${shown.numeric(triple.kind === 'property' && triple.datatype === 'xsd:integer', pattern)} AS n${i}` : ''}`);
        odd.push(shown.odd);
        present.push(`vt${i} IS NOT NULL AND vt${i} <> 'null'${triple.kind === 'link' ? ` AND o${i} IS NOT NULL` : ''}`);
        arrays.push(`vt${i} = 'array'`);
        if (triple.kind === 'link' && triple.joins !== undefined) return void links.push({ column: `${name}.o${i}`, star: triple.joins });
        solutionColumns.push(`${name}.o${i}`);
        columns.set(triple.variable, triple.kind === 'link'
          ? { column: `${name}.o${i}`, render: (value) => namedNode(`${triple.before}${encodeURIComponent(value)}${triple.after}`) }
          : { column: `${name}.o${i}`, num: pattern ? `${name}.n${i}` : undefined, render: (value) => literalOf(value, triple.datatype), triple });
      });
      ctes.push(`${name} AS (SELECT * FROM (SELECT ${subject.text} AS s, ${shownColumns.length ? `${shownColumns.join(', ')}, ` : ''}${odd.join(' OR ')} AS odd, ${arrays.length ? arrays.join(' OR ') : 'false'} AS multi, kt${reads.length ? `, ${star.triples.flatMap((triple, i) => (triple.kind === 'type' ? [] : [`vt${i}`])).join(', ')}` : ''}
           FROM (SELECT ${keyColumns}${reads.length ? `, ${reads.join(', ')}` : ''} FROM ${table} WHERE ${current} OFFSET 0) r) r WHERE s IS NOT NULL)`);
      // Arrays anywhere in the star's fields, or keys of two JSON types: read per triple instead.
      unfusedChecks.push(`(SELECT bool_or(multi) OR count(DISTINCT kt) > 1 FROM ${name})`);
      oddChecks.push(`(SELECT bool_or(odd) FROM ${name} WHERE ${present.join(' AND ')})`);
      from.push(`(SELECT * FROM ${name} WHERE ${present.join(' AND ')}) ${name}`);
      anchors[x] = `${name}.s`;
      solutionColumns.push(`${name}.s`);
      columns.set(star.variable, { column: `${name}.s`, render: subjectRender });
      return;
    }
    // Each relation reads the table itself, keeping only the text columns it needs: one that
    // carried the records' data to the others was materialized whole (the rows' jsonb), which at
    // 300,000 records spilled to disk. Grouped by subject text, so records with one IRI merge.
    const valueTriples = star.triples.flatMap((triple, i) => (triple.kind === 'type' ? [] : [{ triple, name: `v${x}_${i}` }]));
    // A star of rdf:type alone is its table's subjects (every record with a subject has the type).
    const anchor = valueTriples.length ? valueTriples[0].name : `subjects${x}`;
    if (!valueTriples.length) {
      ctes.push(`${anchor} AS (SELECT s, bool_or(odd) AS odd FROM (SELECT ${subject.text} AS s, ${subject.odd} AS odd FROM (SELECT ${keyColumns} FROM ${table} WHERE ${current} OFFSET 0) r) r
         WHERE s IS NOT NULL GROUP BY s)`);
      oddChecks.push(`(SELECT bool_or(odd) FROM ${anchor})`);
      from.push(anchor);
    }
    anchors[x] = `${anchor}.s`;
    solutionColumns.push(`${anchor}.s`);
    columns.set(star.variable, { column: `${anchor}.s`, render: subjectRender });
    for (const { triple, name } of valueTriples) {
      const field = params.add(triple.field);
      const form = triple.kind === 'link' ? 'key' : triple.datatype === 'xsd:string' ? 'string' : 'typed';
      const top = `(data -> ${field}::text)`;
      const pattern = triple.kind === 'property' && triple.datatype in NUMERIC_LEXICAL ? params.add(NUMERIC_LEXICAL[triple.datatype]) : undefined;
      const integerValued = triple.kind === 'property' && triple.datatype === 'xsd:integer';
      // A value's columns: its text, its oddity, and its number where the property is numeric.
      const valueColumns = () => {
        const shown = shownText('vt', 'vx', form);
        return `${shown.text} AS o, ${subject.odd} OR ${shown.odd} AS odd${pattern ? `, ${shown.numeric(integerValued, pattern)} AS num` : ''}`;
      };
      // One triple per element of an array; JSON null yields none (an array's null element does, as
      // "null"). Scalars and arrays are read apart: jsonb_array_elements over every record made
      // PostgreSQL expect 100 values a record and sort whole rows instead of hashing (EXPLAIN at 60,000 records).
      // The subject's oddity is the triple's: a record without this field joins nothing through it.
      ctes.push(`${name} AS (SELECT s, o, bool_or(odd) AS odd${pattern ? ', min(num) AS num' : ''} FROM (SELECT ${subject.text} AS s, ${valueColumns()} FROM (
           SELECT ${keyColumns}, jsonb_typeof(data -> ${field}::text) AS vt, data ->> ${field}::text AS vx FROM ${table} WHERE ${current} AND jsonb_typeof(${top}) NOT IN ('null', 'array')
           UNION ALL
           SELECT kt, kx, jsonb_typeof(element.value) AS vt, element.value #>> '{}' AS vx
             FROM (SELECT ${keyColumns}, ${top} AS elements FROM ${table} WHERE ${current} AND jsonb_typeof(${top}) = 'array' OFFSET 0) r
            CROSS JOIN LATERAL jsonb_array_elements(r.elements) AS element(value)
           OFFSET 0) r) r
         WHERE s IS NOT NULL${triple.kind === 'link' ? ' AND o IS NOT NULL' : ''} GROUP BY s, o)`);
      oddChecks.push(`(SELECT bool_or(odd) FROM ${name})`);
      from.push(name);
      if (name !== anchor) on.push(`${name}.s = ${anchor}.s`);
      if (triple.kind === 'link' && triple.joins !== undefined) {
        links.push({ column: `${name}.o`, star: triple.joins });
        continue;
      }
      solutionColumns.push(`${name}.o`);
      columns.set(triple.variable, triple.kind === 'link'
        ? { column: `${name}.o`, render: (value) => namedNode(`${triple.before}${encodeURIComponent(value)}${triple.after}`) }
        : { column: `${name}.o`, num: pattern ? `${name}.num` : undefined, render: (value) => literalOf(value, triple.datatype), triple });
    }
  });
  // A link's object is the star it joins: known once every star has its anchor.
  for (const link of links) on.push(`${link.column} = ${anchors[link.star]}`);
  // A row of the join is a solution: each star's subject with one of each of its distinct values.
  const columnOf = (name: string) => columns.get(name)!.column;
  const selects = query.projections.map((projection, at) => {
    if (projection.group) return `${columnOf(projection.group)} AS p${at}`;
    if (projection.plain) return `${columnOf(projection.plain)} AS p${at}`;
    if (projection.total) {
      const column = columns.get(projection.total.of)!.num!;
      // count(num) < count(*): a value that is not a number of its datatype, which fails the total.
      return `sum(${column}) AS p${at}, count(${column}) AS n${at}, count(*) AS a${at}`;
    }
    const { of, distinct } = projection.count!;
    if (distinct && of) return `count(DISTINCT ${columnOf(of)}) AS p${at}`;
    if (distinct) return `count(DISTINCT (${solutionColumns.join(', ')})) AS p${at}`;
    return `count(*) AS p${at}`;
  });
  const groupColumns = query.groupBy.map(columnOf);
  // A FILTER's bounds on the value as the evaluator reads it: a value not of its type is an error, which no bound passes.
  for (const filter of query.filters) on.push(`${columns.get(filter.variable)!.num!} ${filter.op === '!=' ? '<>' : filter.op} ${params.add(filter.value)}::numeric`);
  // Rows of solutions are few enough to sort here, or the query is left to the evaluator.
  const cap = query.aggregated ? undefined : MAX_SOLUTION_ROWS;
  // The oddity row is there even when nothing matched: a value written otherwise than JavaScript writes it may be why.
  const sql = `WITH ${ctes.join(',\n')},
    answer AS (SELECT ${query.distinct ? 'DISTINCT ' : ''}${selects.join(', ')}, true AS present
      FROM ${from.join(', ')}${on.length ? ` WHERE ${on.join(' AND ')}` : ''}${groupColumns.length ? ` GROUP BY ${groupColumns.join(', ')}` : ''}${cap ? ` LIMIT ${cap + 1}` : ''}),
    oddity AS (SELECT (${oddChecks.map((check) => `coalesce(${check}, false)`).join(' OR ')}) AS odd, (${unfusedChecks.length ? unfusedChecks.map((check) => `coalesce(${check}, false)`).join(' OR ') : 'false'}) AS unfused)
    SELECT answer.*, oddity.odd, oddity.unfused FROM oddity LEFT JOIN answer ON true`;
  // Hashes of a few hundred thousand (subject, value) texts: past the default 4 MB they went to disk.
  await trx.raw(`SET LOCAL work_mem = '${WORK_MEM}'`);
  const { rows: all } = await run<Record<string, unknown>>(trx, sql, params);
  if (all.some((row) => row.unfused)) return 'unfused';
  if (all.some((row) => row.odd)) return undefined;
  const rows = all.filter((row) => row.present);
  if (cap && rows.length > cap) return undefined;
  // A total over a value that is no number of its type is an error in SPARQL: left to the evaluator.
  if (query.projections.some((projection, at) => projection.total && rows.some((row) => Number(row[`n${at}`]) !== Number(row[`a${at}`])))) return undefined;
  // Without GROUP BY, one row even when nothing matched (PostgreSQL answers it too, and its odd is then null).
  const variables = query.projections.map((projection) => projection.name);
  const result: Array<Record<string, RDF.Term>> = rows.map((row) => {
    const out: Record<string, RDF.Term> = {};
    query.projections.forEach((projection, at) => {
      const value = row[`p${at}`];
      if (projection.group || projection.plain) out[projection.name] = columns.get((projection.group ?? projection.plain)!)!.render(String(value));
      else if (projection.total) out[projection.name] = totalTerm(value === null || value === undefined ? undefined : String(value), Number(row[`a${at}`]), columns.get(projection.total.of)!.triple!.datatype, projection.total.average);
      else out[projection.name] = literal(String(value), namedNode(XSD_INTEGER));
    });
    return out;
  });
  if (query.order.length) {
    const keys = new Map(result.map((row) => [row, query.order.map(({ at }) => evaluatorTerm(row[variables[at]]))]));
    result.sort((a, b) => {
      for (const [i, { descending }] of query.order.entries()) {
        const order = orderTerms(keys.get(a)![i], keys.get(b)![i]);
        if (order !== 0) return descending ? -order : order;
      }
      return 0;
    });
  }
  const rows_ = result.slice(query.offset, query.limit === undefined ? undefined : query.offset + query.limit);
  return { kind: 'bindings', variables, rows: rows_ };
}

/** An answer's term as the evaluator's comparisons take it. */
function evaluatorTerm(term: RDF.Term | undefined): EvaluatorTerm | undefined {
  if (!term) return undefined;
  if (term.termType === 'Literal') return new LiteralTerm(term.value, term.datatype.value, term.language);
  return { termType: 'NamedNode', value: term.value };
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
