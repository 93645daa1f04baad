import { createHash } from 'node:crypto';
import type * as RDF from '@rdfjs/types';
import type { Knex } from 'knex';
import { DataFactory } from 'n3';
import type * as Sparql from 'sparqljs';
import type { SparqlQuery } from 'sparqljs';
import type { PackageTerms } from '../../db/models';
import { NS } from '../../ontology/compile';
import type { SparqlResult } from '../../ontology/sparql-engine';
import { templateFields } from '../../ontology/term-records';
import { arithmetic, integer, lexicalForm, numericTypeIri, parseNumeric } from '../../ontology/sparql-evaluator/numeric';
import { orderTerms } from '../../ontology/sparql-evaluator/comparison';
import { parseDate } from '../../ontology/sparql-evaluator/date-time';
import { compileExpression } from '../../ontology/sparql-evaluator/expressions';
import { compactEntityIndex, type EntityIndex } from '../../ontology/sparql-evaluator/n3-internals';
import { TermTable } from '../../ontology/sparql-evaluator/term-table';
import type { WeightedLru } from '../../ontology/dataset-cache';
import { UnsupportedQuery } from '../../ontology/sparql-evaluator/unsupported';
import { LiteralTerm, Term as EvaluatorTerm } from '../../ontology/sparql-evaluator/terms';
import { qualified, run, workspaceSchema } from '../../plugins/managed-table/storage';
import { SqlParams } from '../../plugins/sql/builder';
import { fieldShows, OtherGraphs, primaryKeysOf, type PrimaryKeys, ReachTable } from './sparql-reach-reads';

// SPARQL answered in SQL over bound tables, managed tables at their snapshots or an external
// database's tables (SqlSource): no records leave the database. The shape
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
// (sorted here in the evaluator's order) with OFFSET and LIMIT; BINDs of expressions SQL computes
// with SPARQL's lexical forms (expressionOf); FILTER (NOT) EXISTS and MINUS over such groups, as
// correlated (NOT) EXISTS subqueries, as is a star that only its link ties to the rest where the
// solutions are read as a set (semiJoinedStars); and subqueries of such queries, joined on their variables,
// whose ORDER BY, OFFSET and LIMIT PostgreSQL applies in the evaluator's order. The SQL gives the solutions the
// mapping's triples give: records grouped by the text their subject IRI is made of (records with
// one IRI merge their triples), each field's values (or array elements) as the distinct lexical
// forms the mapping writes, and a subject's solutions as the product of its distinct values. Where
// a value's lexical form is not one PostgreSQL writes as JavaScript does (a number in exponent
// notation, an object), the answer is not used and the query is read and evaluated as any other.

const { literal, namedNode } = DataFactory;
const RDF_TYPE = `${NS.rdf}type`;
const XSD = 'http://www.w3.org/2001/XMLSchema#';
const XSD_INTEGER = `${XSD}integer`;
const XSD_STRING = `${XSD}string`;

type Term = { termType: string; value: string };


/** A triple of the star: what it reads of the record. `optional`: the OPTIONAL of its group it is in (its number in the branch). */
type StarTriple =
  | { kind: 'type' }
  | { kind: 'property'; variable: string; field: string; datatype: string; optional?: number }
  | { kind: 'link'; variable: string; field: string; before: string; after: string; optional?: number; /** The star whose subject this link's object is. */ joins?: number };

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

/**
 * Memory for each sort or hash of an answer's statement (a workspace runs at most
 * WEFT_SPARQL_SQL_CONNECTIONS at once): hashes of a few hundred thousand (subject, value) texts
 * went to disk past the default 4 MB. Set with the transaction's other settings (readingWithin).
 */
export const SQL_WORK_MEM = '64MB';

/** Solutions a query without aggregates may have here (they are sorted in this process); more are left to the evaluator. */
const MAX_SOLUTION_ROWS = 100_000;

/** Values a query's VALUES blocks may hold together (each is a parameter); larger ones are left to the evaluator. */
const MAX_VALUES = 10_000;

/** Constants a query's FILTERs may compare with together (each a parameter, and PostgreSQL takes 65,535); more are left to the evaluator. */
const MAX_FILTER_CONSTANTS = 10_000;

/** Digits a numeric constant may have (PostgreSQL's numeric refuses some longer ones); longer ones are left to the evaluator. */
const MAX_NUMBER_DIGITS = 1_000;

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

/** What a variable's values are: IRIs of a one-field template (a subject or a link), or literals of one datatype. */
type Kind = { of: 'iri'; before: string; after: string } | { of: 'literal'; datatype: string };
const kindKey = (kind: Kind): string => (kind.of === 'iri' ? `iri\n${kind.before}\n${kind.after}` : `literal\n${kind.datatype}`);
const isNumeric = (kind: Kind | undefined): boolean => kind?.of === 'literal' && kind.datatype in NUMERIC_LEXICAL;

/** A variable of the solutions, with the one kind every branch binds it to. */
interface Variable {
  name: string;
  kind: Kind;
  /** Unbound in some solutions: bound in an OPTIONAL, or not in every UNION branch, or by a BIND's error. */
  nullable: boolean;
  /** Unbound only where a BIND's expression is an error (a value no number): a total over it fails as over such a value (checked). */
  erring?: boolean;
}

/**
 * A FILTER as SQL can apply it with SPARQL's meaning: a condition is true, false or an error (SQL's
 * NULL), and SPARQL's &&, || and ! treat an error as SQL's AND, OR and NOT treat NULL (§17.2); a
 * FILTER keeps what is true. An unbound variable is an error in a comparison, so its NULL is too.
 */
type Condition =
  | { kind: 'and' | 'or'; args: Condition[] }
  | { kind: 'not'; arg: Condition }
  | { kind: 'bound'; variable: string }
  /** On the value's number (numeric properties), on its text (a string in code point order, or an IRI's key), or on a date's instant in minutes (xsd:date properties). */
  | { kind: 'compare'; variable: string; op: '<' | '<=' | '>' | '>=' | '=' | '!='; on: 'number' | 'text' | 'date'; value: string }
  /** `?iri = <c>` for an IRI no value of the variable can be: false where bound (true, negated), an error where not. */
  | { kind: 'never'; variable: string; negated: boolean }
  | { kind: 'string'; test: 'contains' | 'strstarts' | 'strends'; variable: string; value: string }
  /**
   * FILTER (NOT) EXISTS: a correlated subquery of the group's solutions joined on the variables it
   * shares with the enclosing group (the evaluator substitutes them; equal where the inner binds
   * each in every solution and its FILTERs see only its own). Never an error.
   */
  | { kind: 'exists'; negated: boolean; branch: Branch; shared: Array<{ name: string; outerNullable: boolean }> };

/**
 * A BIND's expression as SQL computes it with SPARQL's result (lexical form and datatype): a
 * variable, a string or numeric constant, STR, UCASE and LCASE (ASCII: other text is flagged),
 * STRLEN, CONCAT of strings, and +, - and * of integers and decimals (exact in both).
 */
type Expression =
  | { op: 'variable'; name: string }
  | { op: 'constant'; value: string; numeric: boolean }
  | { op: 'str'; arg: Expression; iri?: { before: string; after: string } }
  | { op: 'ucase' | 'lcase' | 'strlen'; arg: Expression }
  | { op: 'concat'; args: Expression[] }
  | { op: '+' | '-' | '*'; args: [Expression, Expression]; integer: boolean };

/** A group: the stars of its triples, its FILTERs, the conditions of its OPTIONALs' left joins and its VALUES. */
interface Branch {
  /** Indices into SqlQuery.stars. */
  stars: number[];
  filters: Condition[];
  /** By the `optional` number of their triples. */
  optionals: Condition[][];
  /** Each a table of texts (keys of IRIs, lexical forms of literals), joined to the variables' values. */
  values: Array<{ variables: string[]; rows: string[][] }>;
  /** BINDs in the group's order, each over variables bound before it. */
  binds: Array<{ variable: string; expression: Expression }>;
  /** Subqueries joined on the variables they share with the group (bound in every solution of both). */
  subqueries: SqlQuery[];
  /** MINUS: solutions compatible with one of the group's, sharing a bound variable with it, remove it. */
  minus: Array<{ branch: Branch; shared: Array<{ name: string; outerNullable: boolean; innerNullable: boolean }> }>;
}

export interface SqlQuery {
  /** Every branch's stars. */
  stars: Star[];
  /** The group, or the branches of a UNION (their solutions together, duplicates kept). */
  branches: Branch[];
  variables: Variable[];
  /** FILTERs of the group a UNION is in, over the branches' solutions. */
  filters: Condition[];
  groupBy: string[];
  projections: Projection[];
  /** Aggregates (or GROUP BY): one row per group; otherwise one row per solution, DISTINCT or not. */
  aggregated: boolean;
  distinct: boolean;
  order: OrderKey[];
  offset: number;
  limit?: number;
  /** An ASK's SELECT: whether one solution exists is the answer, so the statement stops at it. */
  exists?: boolean;
}

const isVariable = (term: unknown): term is Term => (term as Term | undefined)?.termType === 'Variable';

/**
 * An ORDER BY key: a projection (`at`), or an expression over projections (`by`, compiled), which only the
 * outermost query has: its rows are sorted in this process, so the evaluator's own expressions
 * compute the keys over the rows PostgreSQL returns (xsd:double(str(?price)), as BSBM orders offers).
 */
type OrderKey = { at: number; descending: boolean } | { by: (row: Record<string, RDF.Term>) => EvaluatorTerm | undefined; descending: boolean };
const byProjection = (key: OrderKey): key is { at: number; descending: boolean } => 'at' in key;

/** Splits a template of one field into that field and the text around it. */
function oneFieldTemplate(template: string): { field: string; before: string; after: string } | undefined {
  const fields = templateFields(template);
  if (fields.length !== 1) return undefined;
  const [before, after] = template.split(`{${fields[0]}}`);
  return { field: fields[0], before, after };
}

/** The full IRI of a datatype as the mapping writes it (term-records.ts). */
const datatypeIri = (datatype: string): string => `${XSD}${datatype.replace(/^xsd:/, '')}`;

/**
 * Whether PostgreSQL's text can hold this as a parameter: not NUL, which no stored value holds
 * (jsonb refuses it). sparqljs refuses lone surrogates, so the text is otherwise well-formed UTF-16
 * and its characters are UTF-8's.
 */
const storable = (text: string): boolean => !text.includes('\0');

/** The key text an IRI of this template is made of, or undefined when no key makes it. */
function keyOf(iri: string, kind: { before: string; after: string }): string | undefined {
  if (iri.length < kind.before.length + kind.after.length || !iri.startsWith(kind.before) || !iri.endsWith(kind.after)) return undefined;
  const encoded = iri.slice(kind.before.length, iri.length - kind.after.length);
  let key: string;
  try {
    key = decodeURIComponent(encoded);
  } catch {
    return undefined;
  }
  return key !== '' && storable(key) && encodeURIComponent(key) === encoded ? key : undefined;
}

/** The text a constant term is among a variable's values (the same term exactly), or undefined when it is none of them. */
function textOf(term: Term & { language?: string; datatype?: { value: string } }, kind: Kind): string | undefined {
  if (kind.of === 'iri') return term.termType === 'NamedNode' ? keyOf(term.value, kind) : undefined;
  return term.termType === 'Literal' && !term.language && term.datatype?.value === datatypeIri(kind.datatype) && storable(term.value) ? term.value : undefined;
}

type Constant = Term & { language?: string; datatype?: { value: string } };
const isConstant = (term: unknown): term is Constant => (term as Term | undefined)?.termType === 'Literal' || (term as Term | undefined)?.termType === 'NamedNode';
/** An xsd:integer or xsd:decimal of its datatype's lexical form ("2.5"^^xsd:integer is none: an error in a comparison, the evaluator's). */
const isNumberConstant = (term: Constant): boolean =>
  term.termType === 'Literal' && !term.language && (term.datatype?.value === XSD_INTEGER || term.datatype?.value === `${XSD}decimal`) && term.value.length <= MAX_NUMBER_DIGITS && parseNumeric(term.value, term.datatype.value) !== undefined;
const isStringConstant = (term: Constant): boolean => term.termType === 'Literal' && !term.language && term.datatype?.value === XSD_STRING && storable(term.value);

/** `?variable op constant`, where SQL compares as SPARQL does: like with like (else undefined, and the query is evaluated). */
function comparisonOf(variable: string, op: Extract<Condition, { kind: 'compare' }>['op'], constant: unknown, kindOf: (name: string) => Kind | undefined): Condition | undefined {
  const kind = kindOf(variable);
  if (!kind || !isConstant(constant)) return undefined;
  if (kind.of === 'iri') {
    if (constant.termType !== 'NamedNode' || (op !== '=' && op !== '!=')) return undefined;
    const key = keyOf(constant.value, kind);
    return key === undefined ? { kind: 'never', variable, negated: op === '!=' } : { kind: 'compare', variable, op, on: 'text', value: key };
  }
  if (isNumeric(kind)) return isNumberConstant(constant) ? { kind: 'compare', variable, op, on: 'number', value: constant.value } : undefined;
  if (kind.datatype === 'xsd:string') return isStringConstant(constant) ? { kind: 'compare', variable, op, on: 'text', value: constant.value } : undefined;
  if (kind.datatype === 'xsd:date') {
    // The constant's instant as the evaluator reads it (date-time.ts); one that is no date is the evaluator's error.
    const instant = constant.termType === 'Literal' && !constant.language && constant.datatype?.value === `${XSD}date` ? parseDate(constant.value) : undefined;
    return instant === undefined ? undefined : { kind: 'compare', variable, op, on: 'date', value: String(instant / 60_000) };
  }
  return undefined;
}

/**
 * `sameTerm(?variable, constant)`: the value's text against the constant's where the constant is of
 * the variable's kind (an IRI's key, a literal's lexical form of the variable's datatype), so an
 * index on the field serves it; a constant of another kind is no value of the variable (false where bound).
 */
function sameTermOf(variable: string, constant: unknown, kindOf: (name: string) => Kind | undefined): Condition | undefined {
  const kind = kindOf(variable);
  if (!kind || !isConstant(constant)) return undefined;
  const text = textOf(constant, kind);
  return text === undefined ? { kind: 'never', variable, negated: false } : { kind: 'compare', variable, op: '=', on: 'text', value: text };
}

/**
 * `&&` or `||` of these, flattened into one list where a part is of the same kind (the same
 * three-valued answer): a long IN, or a chain of `||`, nested a parenthesis a member deep is
 * more than PostgreSQL's parser takes.
 */
function junction(kind: 'and' | 'or', parts: Condition[]): Condition {
  return { kind, args: parts.flatMap((part) => (part.kind === kind ? part.args : [part])) };
}

/** The constants a condition compares with, each a parameter. */
function constantsIn(condition: Condition): number {
  if (condition.kind === 'and' || condition.kind === 'or') return condition.args.reduce((sum, arg) => sum + constantsIn(arg), 0);
  if (condition.kind === 'not') return constantsIn(condition.arg);
  if (condition.kind === 'exists') return branchConstants(condition.branch);
  return condition.kind === 'compare' || condition.kind === 'string' ? 1 : 0;
}

/** The constants a branch's conditions compare with, its MINUS groups' included. */
function branchConstants(branch: Branch): number {
  return [...branch.filters, ...branch.optionals.flat()].reduce((sum, condition) => sum + constantsIn(condition), 0) + branch.minus.reduce((sum, { branch: inner }) => sum + branchConstants(inner), 0);
}

/** A FILTER's expression as a Condition over variables of these kinds, or undefined when SQL would not give SPARQL's answer. */
function conditionOf(expression: unknown, kindOf: (name: string) => Kind | undefined, existsOf?: (pattern: Pattern, negated: boolean) => Condition | undefined): Condition | undefined {
  const e = expression as { type?: string; operator?: string; args?: unknown[] };
  if (e?.type !== 'operation' || !Array.isArray(e.args)) return undefined;
  const args = e.args;
  const operator = String(e.operator);
  if (operator === '&&' || operator === '||') {
    const parts = args.map((arg) => conditionOf(arg, kindOf, existsOf));
    return parts.length === 2 && parts.every(Boolean) ? junction(operator === '&&' ? 'and' : 'or', parts as Condition[]) : undefined;
  }
  if (operator === '!') {
    const arg = args.length === 1 ? conditionOf(args[0], kindOf, existsOf) : undefined;
    return arg && { kind: 'not', arg };
  }
  if (operator === 'exists' || operator === 'notexists') return existsOf && args.length === 1 ? existsOf(args[0] as Pattern, operator === 'notexists') : undefined;
  if (operator === 'sameterm') return args.length === 2 && isVariable(args[0]) ? sameTermOf(args[0].value, args[1], kindOf) : undefined;
  if (operator === 'bound') return args.length === 1 && isVariable(args[0]) && kindOf(args[0].value) ? { kind: 'bound', variable: args[0].value } : undefined;
  if (operator === 'in' || operator === 'notin') {
    // IN is = against each member, true if one is, else an error if one is, else false (§17.4.1.9).
    const [needle, members] = args;
    if (!isVariable(needle) || !Array.isArray(members) || !kindOf(needle.value)) return undefined;
    const parts = members.map((member) => comparisonOf(needle.value, '=', member, kindOf));
    if (!parts.every(Boolean)) return undefined;
    const any: Condition = parts.length ? junction('or', parts as Condition[]) : { kind: 'never', variable: needle.value, negated: false };
    return operator === 'in' ? any : { kind: 'not', arg: any };
  }
  if (operator === 'contains' || operator === 'strstarts' || operator === 'strends') {
    const [text, needle] = args;
    const kind = isVariable(text) ? kindOf(text.value) : undefined;
    if (kind?.of !== 'literal' || kind.datatype !== 'xsd:string' || !isConstant(needle) || !isStringConstant(needle)) return undefined;
    return { kind: 'string', test: operator, variable: (text as Term).value, value: needle.value };
  }
  const flipped: Record<string, Extract<Condition, { kind: 'compare' }>['op']> = { '<': '>', '<=': '>=', '>': '<', '>=': '<=', '=': '=', '!=': '!=' };
  if (!(operator in flipped) || args.length !== 2) return undefined;
  const [left, right] = args;
  if (isVariable(left)) return comparisonOf(left.value, operator as keyof typeof flipped & Extract<Condition, { kind: 'compare' }>['op'], right, kindOf);
  if (isVariable(right)) return comparisonOf(right.value, flipped[operator], left, kindOf);
  return undefined;
}

/** A sparqljs group pattern, as far as this file reads it. */
interface Pattern {
  type: string;
  triples?: Array<{ subject: Term; predicate: Term; object: Term }>;
  expression?: unknown;
  patterns?: Pattern[];
  values?: Array<Record<string, Term | undefined>>;
  /** A BIND's variable. */
  variable?: Term;
}

/** What a bound source yields: its term's instances, mapped from its records. */
type BoundMapping = Pick<ReachTable, 'termId' | 'mapping'>;

/** What the translation of a query and its groups shares: the sources, and every group's stars (SqlQuery.stars of the outermost query). */
interface Scope {
  sources: BoundMapping[];
  othersOf: (source: number) => OtherGraphs;
  terms: PackageTerms;
  baseIri: string;
  stars: Star[];
  /** Constant objects made variables so far (each a name no SPARQL variable can have). */
  constants: number;
}

/** Characters encodeURIComponent leaves as they are: a key of only these is its IRI's text. */
const UNRESERVED_KEY = "^[A-Za-z0-9_.!~*'()-]*$";

/** A BIND's expression over variables of these kinds, with the kind of its value; undefined where SQL would not give SPARQL's. */
type Bound = { kind: Kind; nullable: boolean; erring?: boolean };

function expressionOf(expression: unknown, variableOf: (name: string) => Bound | undefined): ({ expression: Expression } & Bound) | undefined {
  const STRING: Kind = { of: 'literal', datatype: 'xsd:string' };
  if (isVariable(expression)) {
    const variable = variableOf(expression.value);
    return variable && { expression: { op: 'variable', name: expression.value }, ...variable };
  }
  if (isConstant(expression)) {
    if (isStringConstant(expression)) return { expression: { op: 'constant', value: expression.value, numeric: false }, kind: STRING, nullable: false };
    if (isNumberConstant(expression)) return { expression: { op: 'constant', value: expression.value, numeric: true }, kind: { of: 'literal', datatype: expression.datatype!.value === XSD_INTEGER ? 'xsd:integer' : 'xsd:decimal' }, nullable: false };
    return undefined;
  }
  const e = expression as { type?: string; operator?: string; args?: unknown[] };
  if (e?.type !== 'operation' || !Array.isArray(e.args)) return undefined;
  const args = e.args.map((arg) => expressionOf(arg, variableOf));
  if (!args.every(Boolean)) return undefined;
  const parts = args as Array<NonNullable<(typeof args)[number]>>;
  const nullable = parts.some((part) => part.nullable);
  // Unbound where a variable is, or only where an expression errs.
  const absent = parts.some((part) => part.nullable && !part.erring);
  const erring = nullable && !absent;
  const isString = (kind: Kind) => kind.of === 'literal' && kind.datatype === 'xsd:string';
  const operator = String(e.operator).toLowerCase();
  if (operator === 'str' && parts.length === 1) {
    const [arg] = parts;
    // An IRI's text: its template around the key, exact where the key needs no percent-encoding (others are flagged) and nothing follows it.
    if (arg.kind.of === 'iri') return { expression: { op: 'str', arg: arg.expression, iri: { before: arg.kind.before, after: arg.kind.after } }, kind: STRING, nullable, erring };
    return { expression: { op: 'str', arg: arg.expression }, kind: STRING, nullable, erring };
  }
  if ((operator === 'ucase' || operator === 'lcase' || operator === 'strlen') && parts.length === 1 && isString(parts[0].kind)) {
    return { expression: { op: operator, arg: parts[0].expression }, kind: operator === 'strlen' ? { of: 'literal', datatype: 'xsd:integer' } : STRING, nullable, erring };
  }
  if (operator === 'concat' && parts.every((part) => isString(part.kind))) return { expression: { op: 'concat', args: parts.map((part) => part.expression) }, kind: STRING, nullable, erring };
  if ((operator === '+' || operator === '-' || operator === '*') && parts.length === 2 && parts.every((part) => isNumeric(part.kind))) {
    const integer = parts.every((part) => (part.kind as { datatype: string }).datatype === 'xsd:integer');
    // A value that is no number of its datatype makes an error: unbound.
    return { expression: { op: operator, args: [parts[0].expression, parts[1].expression], integer }, kind: { of: 'literal', datatype: integer ? 'xsd:integer' : 'xsd:decimal' }, nullable: true, erring: !absent };
  }
  return undefined;
}

/**
 * The query as stars of `sources` (one star per subject variable, stars joined where a link's
 * object is another star's subject and the link's template is that star's subject template),
 * with OPTIONALs of a star's own properties, FILTERs, VALUES and UNIONs of such groups, or
 * undefined when it is not one this file answers. `othersOf(i)`: what graphs other than source i
 * hold; a star's predicates must be yielded by its source alone.
 */
export function sqlQueryOf(query: SparqlQuery, sources: BoundMapping[], othersOf: (source: number) => OtherGraphs, terms: PackageTerms, baseIri: string): SqlQuery | undefined {
  const scope: Scope = { sources, othersOf, terms, baseIri, stars: [], constants: 0 };
  const found = queryOf(query, scope, false);
  if (!found) return undefined;
  if (valuesIn(found) > MAX_VALUES || queryConstants(found) > MAX_FILTER_CONSTANTS) return undefined;
  return found;
}

/** The VALUES cells of a query's branches and subqueries together. */
function valuesIn(query: SqlQuery): number {
  return query.branches.reduce((sum, branch) => sum + branch.values.reduce((cells, table) => cells + table.rows.length * table.variables.length, 0) + branch.subqueries.reduce((inner, subquery) => inner + valuesIn(subquery), 0), 0);
}

/** The constants a query's FILTERs compare with, its subqueries' included. */
function queryConstants(query: SqlQuery): number {
  return query.filters.reduce((sum, condition) => sum + constantsIn(condition), 0) + query.branches.reduce((sum, branch) => sum + branchConstants(branch) + branch.subqueries.reduce((inner, subquery) => inner + queryConstants(subquery), 0), 0);
}

/**
 * A SELECT, the query or one of its subqueries (`subquery`: its ORDER BY, OFFSET and LIMIT are
 * then PostgreSQL's, and it has no SUM or AVG, whose forms are made in this process).
 */
function queryOf(query: SparqlQuery, scope: Scope, subquery: boolean): SqlQuery | undefined {
  if (query.type !== 'query' || query.queryType !== 'SELECT') return undefined;
  const q = query as SparqlQuery & Record<string, unknown>;
  if (q.having || q.reduced || (q as { from?: unknown }).from) return undefined;
  const where = (q.where ?? []) as Pattern[];
  const selected = q.variables as unknown[];
  if (!Array.isArray(selected) || selected.some((item) => (item as Term).termType === 'Wildcard')) return undefined;
  const isAggregate = (item: unknown) => (item as { expression?: { type?: string } }).expression?.type === 'aggregate';
  const aggregated = ((q.group as unknown[] | undefined)?.length ?? 0) > 0 || selected.some(isAggregate);
  // Select expressions of a query without aggregates: BINDs after each branch's patterns (an Extend of its
  // solutions), where the WHERE clause never names their variable (a FILTER there sees it unbound).
  const computed = selected.filter((item) => !isVariable(item) && !isAggregate(item)) as Array<{ expression: unknown; variable: Term }>;
  if (computed.length && (aggregated || q.values || computed.some(({ variable }) => mentions(where, variable.value)))) return undefined;
  const extend = (patterns: Pattern[]): Pattern[] => [...patterns, ...computed.map(({ expression, variable }) => ({ type: 'bind', expression, variable }))];
  // A UNION as the group's one pattern besides FILTERs: its branches' solutions, then the FILTERs.
  const unions = where.filter((pattern) => pattern.type === 'union');
  let groups: Pattern[][] = [extend(where)];
  let outerFilters: unknown[] = [];
  if (unions.length) {
    if (unions.length > 1 || where.some((pattern) => pattern.type !== 'union' && pattern.type !== 'filter')) return undefined;
    groups = (unions[0].patterns ?? []).map((branch) => extend(branch.type === 'group' ? branch.patterns ?? [] : [branch]));
    outerFilters = where.filter((pattern) => pattern.type === 'filter').map((pattern) => pattern.expression);
  }
  // A trailing VALUES joins the group's solutions before any aggregate (§18.2.4.3 is after them: left to the evaluator).
  if (q.values) {
    if (aggregated || unions.length) return undefined;
    groups = [[...where, { type: 'values', values: q.values as Pattern['values'] }]];
  }
  const branches: Branch[] = [];
  const merged = new Map<string, Variable>();
  const inBranches = new Map<string, number>();
  for (const group of groups) {
    const found = groupOf(group, scope, false);
    if (!found) return undefined;
    branches.push(found.branch);
    for (const [name, variable] of found.variables) {
      const known = merged.get(name);
      // A variable bound to IRIs in one branch and literals in another (or to two datatypes) would be told apart by neither GROUP BY nor DISTINCT in SQL.
      if (known && kindKey(known.kind) !== kindKey(variable.kind)) return undefined;
      const erring = (!variable.nullable || Boolean(variable.erring)) && (!known || !known.nullable || Boolean(known.erring));
      merged.set(name, { name, kind: variable.kind, nullable: variable.nullable || Boolean(known?.nullable), erring: erring && (variable.nullable || Boolean(known?.nullable)) });
      inBranches.set(name, (inBranches.get(name) ?? 0) + 1);
    }
  }
  for (const [name, count] of inBranches) if (count < branches.length) Object.assign(merged.get(name)!, { nullable: true, erring: false });
  const kindOf = (name: string) => merged.get(name)?.kind;
  const filters: Condition[] = [];
  for (const expression of outerFilters) {
    const condition = conditionOf(expression, kindOf);
    if (!condition) return undefined;
    filters.push(condition);
  }
  const known = (name: string) => merged.has(name);
  const groupBy: string[] = [];
  for (const group of (q.group ?? []) as Array<{ expression: Term; variable?: Term }>) {
    if (!isVariable(group.expression) || group.variable || !known(group.expression.value)) return undefined;
    groupBy.push(group.expression.value);
  }
  const projections: Projection[] = [];
  for (const item of selected) {
    if (!isVariable(item) && !isAggregate(item)) {
      // A select expression: its BIND's variable (unbound in every branch: the evaluator's).
      if (!known((item as { variable: Term }).variable.value)) return undefined;
      projections.push({ name: (item as { variable: Term }).variable.value, plain: (item as { variable: Term }).variable.value });
      continue;
    }
    if (isVariable(item)) {
      if (aggregated ? !groupBy.includes(item.value) : !known(item.value)) return undefined;
      // A subquery's variable is one column of its answer.
      if (subquery && projections.some((projection) => projection.name === item.value)) return undefined;
      projections.push(aggregated ? { name: item.value, group: item.value } : { name: item.value, plain: item.value });
      continue;
    }
    const { expression, variable } = item as { expression: { type?: string; aggregation?: string; distinct?: boolean; expression?: Term }; variable: Term };
    if (expression?.type !== 'aggregate') return undefined;
    const of = expression.expression;
    const aggregation = expression.aggregation?.toLowerCase();
    if ((aggregation === 'sum' || aggregation === 'avg') && !subquery) {
      // Over every solution's number: an unbound one would be an error of SPARQL's own.
      const summed = isVariable(of) && !expression.distinct ? merged.get(of.value) : undefined;
      if (!summed || (summed.nullable && !summed.erring) || !isNumeric(summed.kind)) return undefined;
      projections.push({ name: variable.value, total: { of: summed.name, average: aggregation === 'avg' } });
      continue;
    }
    if (aggregation !== 'count') return undefined;
    if (of?.termType === 'Wildcard') projections.push({ name: variable.value, count: { distinct: Boolean(expression.distinct) } });
    else if (isVariable(of) && known(of.value)) projections.push({ name: variable.value, count: { of: of.value, distinct: Boolean(expression.distinct) } });
    else return undefined;
  }
  // ORDER BY projected variables only, sorted here in the evaluator's order; LIMIT and OFFSET after it.
  const order: OrderKey[] = [];
  for (const condition of (q.order ?? []) as Array<{ expression: Sparql.Expression; descending?: boolean }>) {
    if (!isVariable(condition.expression)) {
      const by = subquery ? undefined : orderKeyOf(condition.expression, projections);
      if (!by) return undefined;
      order.push({ by, descending: Boolean(condition.descending) });
      continue;
    }
    const name = condition.expression.value;
    const at = projections.findIndex((projection) => projection.name === name);
    if (at < 0) return undefined;
    // A subquery is ordered by PostgreSQL, in the evaluator's order for the kinds it writes as SPARQL orders them.
    if (subquery && !sqlOrdered(projectionKind(projections[at], (name) => merged.get(name)!.kind))) return undefined;
    order.push({ at, descending: Boolean(condition.descending) });
  }
  // Without ORDER BY, which rows a LIMIT keeps is the evaluator's to choose: left to it.
  if ((subquery || !aggregated) && !order.length && (q.limit !== undefined || q.offset !== undefined)) return undefined;
  return { stars: scope.stars, branches, variables: [...merged.values()], filters, groupBy, projections, aggregated, distinct: Boolean(q.distinct), order, offset: (q.offset as number | undefined) ?? 0, limit: q.limit as number | undefined };
}

/**
 * An ORDER BY expression over the projections as the evaluator computes it, from a solution's
 * projected terms; undefined when it names another variable or holds what the evaluator does not
 * compute here (EXISTS, an aggregate, an unsupported function): the query is then the evaluator's.
 */
function orderKeyOf(expression: Sparql.Expression, projections: Projection[]): ((row: Record<string, RDF.Term>) => EvaluatorTerm | undefined) | undefined {
  const names = projections.map((projection) => projection.name);
  const terms = new TermTable(compactEntityIndex() as EntityIndex);
  let value;
  try {
    value = compileExpression(expression, {
      terms,
      slot(variable) {
        const at = names.indexOf(variable);
        if (at < 0) throw new UnsupportedQuery(`ORDER BY over ?${variable}, which is not projected`);
        return at;
      },
      exists() {
        throw new UnsupportedQuery('EXISTS in ORDER BY');
      },
    });
  } catch (error) {
    if (error instanceof UnsupportedQuery) return undefined;
    throw error;
  }
  const compiled = value;
  return (row) =>
    compiled(
      names.map((name) => {
        const term = evaluatorTerm(row[name]);
        return term ? terms.idOf(term) : 0;
      }),
    );
}

/** Whether this expression is of expressionOf's functions, each an error over an unbound argument, and names a variable `absent` says is. */
function unboundOver(expression: unknown, absent: (name: string) => boolean): boolean {
  const strict = (e: unknown): boolean => {
    if (isVariable(e) || isConstant(e)) return true;
    const op = e as { type?: string; operator?: string; args?: unknown[] };
    return op?.type === 'operation' && ['str', 'ucase', 'lcase', 'strlen', 'concat', '+', '-', '*'].includes(String(op.operator).toLowerCase()) && Array.isArray(op.args) && op.args.every(strict);
  };
  const names = (e: unknown): string[] => (isVariable(e) ? [e.value] : Array.isArray((e as { args?: unknown[] })?.args) ? (e as { args: unknown[] }).args.flatMap(names) : []);
  return strict(expression) && names(expression).some(absent);
}

/** Whether a parsed pattern (or expression) names this variable anywhere. */
function mentions(node: unknown, name: string): boolean {
  if (Array.isArray(node)) return node.some((each) => mentions(each, name));
  if (!node || typeof node !== 'object') return false;
  if (isVariable(node)) return node.value === name;
  return Object.values(node).some((each) => mentions(each, name));
}

/** The kind of a projection's values: its variable's, or an integer for a count. */
function projectionKind(projection: Projection, kindOf: (name: string) => Kind): Kind {
  const shown = projection.group ?? projection.plain;
  return shown !== undefined ? kindOf(shown) : { of: 'literal', datatype: 'xsd:integer' };
}

/**
 * Whether SQL orders this kind's values as the evaluator does: numbers (valid ones by value, then
 * the others by their text), strings in code point order, IRIs of a template that ends with the key
 * (by the key's text: exact where no key needs percent-encoding, which is checked).
 */
const sqlOrdered = (kind: Kind): boolean => (kind.of === 'iri' ? kind.after === '' : isNumeric(kind) || kind.datatype === 'xsd:string');

/**
 * A triple's constant terms as variables of one term each. A constant object (`?offer :product
 * <…/products/5>`) matches a value that is the same term (sameTerm, not =, pushed onto `filters`),
 * which the source may find by an index on the field (narrowingsOf); rdf:type keeps its class (the
 * star's table). A constant subject is its group's variable of that IRI (`subjects`, filled from
 * the group's own triples: an OPTIONAL's subject is one of them), so its triples make one star,
 * found by its key, and the IRI as another triple's object is a link to that star.
 */
function withVariables<T extends { subject: Term; predicate: Term; object: Term }>(triple: T, scope: Scope, filters: unknown[], subjects: Map<string, Term>): T {
  const subject = triple.subject.termType === 'NamedNode' ? subjects.get(triple.subject.value) ?? triple.subject : triple.subject;
  if (triple.predicate.value === RDF_TYPE || !isConstant(triple.object)) return { ...triple, subject };
  const linked = triple.object.termType === 'NamedNode' ? subjects.get(triple.object.value) : undefined;
  if (linked) return { ...triple, subject, object: linked };
  const variable: Term = { termType: 'Variable', value: ` constant ${scope.constants++}` };
  filters.push({ type: 'operation', operator: 'sameterm', args: [variable, triple.object] });
  return { ...triple, subject, object: variable };
}

/** The variables of the IRIs the group's own triples have as subjects, their sameTerm FILTERs pushed onto `filters`. */
function constantSubjects(patterns: Pattern[], scope: Scope, filters: unknown[]): Map<string, Term> {
  const subjects = new Map<string, Term>();
  for (const pattern of patterns) {
    if (pattern.type !== 'bgp') continue;
    for (const { subject } of pattern.triples ?? []) {
      if (subject.termType !== 'NamedNode' || subjects.has(subject.value)) continue;
      const variable: Term = { termType: 'Variable', value: ` subject ${scope.constants++}` };
      subjects.set(subject.value, variable);
      filters.push({ type: 'operation', operator: 'sameterm', args: [variable, subject] });
    }
  }
  return subjects;
}

/**
 * A group of triples, FILTERs, VALUES, OPTIONALs of a star's own properties, BINDs, MINUS and
 * subqueries as a branch, its stars added to the scope's; undefined when it is not one. Every
 * variable is bound in one place: a star's subject, one value triple (a link's object may be
 * another star's subject: the join), a BIND, or a subquery (joined to the group's other places of
 * the variable where both bind it in every solution). `nested`: the group of a MINUS or an EXISTS,
 * of triples, OPTIONALs and FILTERs only (the evaluator's EXISTS takes no BIND, VALUES, MINUS or subquery).
 */
function groupOf(patterns: Pattern[], scope: Scope, nested: boolean): { branch: Branch; variables: Map<string, Bound> } | undefined {
  const { stars } = scope;
  const triples: Array<{ subject: Term; predicate: Term; object: Term; optional?: number }> = [];
  const filterExpressions: unknown[] = [];
  /** Each OPTIONAL's FILTERs, and the variables the group's triples bind before it. */
  const optionalFilters: Array<{ expressions: unknown[]; before: Set<string> }> = [];
  const valuesBlocks: Array<Array<Record<string, Term | undefined>>> = [];
  /** The variables the patterns so far bind (where a BIND or MINUS sees them). */
  const bound = new Set<string>();
  const binding = (subject: Term, object: Term) => [subject, object].filter(isVariable).forEach((term) => bound.add(term.value));
  const bindPatterns: Array<{ variable: string; expression: unknown; before: Set<string> }> = [];
  const minusPatterns: Array<{ patterns: Pattern[]; before: Set<string> }> = [];
  const subqueries: SqlQuery[] = [];
  const constantSubjectVariables = constantSubjects(patterns, scope, filterExpressions);
  for (const pattern of patterns) {
    if (pattern.type === 'bgp') {
      for (const triple of pattern.triples ?? []) {
        const rewritten = withVariables(triple, scope, filterExpressions, constantSubjectVariables);
        triples.push(rewritten);
        binding(rewritten.subject, rewritten.object);
      }
    } else if (pattern.type === 'filter') filterExpressions.push(pattern.expression);
    else if (pattern.type === 'values' && !nested) valuesBlocks.push(pattern.values ?? []);
    else if (pattern.type === 'bind' && !nested && isVariable(pattern.variable)) {
      bindPatterns.push({ variable: pattern.variable.value, expression: pattern.expression, before: new Set(bound) });
      bound.add(pattern.variable.value);
    } else if (pattern.type === 'minus' && !nested) minusPatterns.push({ patterns: pattern.patterns ?? [], before: new Set(bound) });
    else if (!nested && (pattern.type === 'query' || (pattern.type === 'group' && pattern.patterns?.length === 1 && pattern.patterns[0].type === 'query'))) {
      // A subquery is a group's one pattern, or (a UNION branch of it alone) the branch itself.
      const inner = queryOf((pattern.type === 'query' ? pattern : pattern.patterns![0]) as unknown as SparqlQuery, scope, true);
      if (!inner) return undefined;
      subqueries.push(inner);
      for (const projection of inner.projections) bound.add(projection.name);
    } else if (pattern.type === 'optional') {
      const inner = pattern.patterns ?? [];
      // A constant object's sameTerm is the OPTIONAL's own FILTER: part of its left join's condition.
      const expressions: unknown[] = [];
      const own = inner.flatMap((each) => (each.type === 'bgp' ? each.triples ?? [] : [])).map((triple) => withVariables(triple, scope, expressions, constantSubjectVariables));
      if (!own.length || inner.some((each) => each.type !== 'bgp' && each.type !== 'filter')) return undefined;
      // Of one subject the group's triples bound before it: the left join then commutes with the group's later
      // patterns, which cannot share its new variables (each is bound in one place).
      const subject = own[0].subject;
      if (!isVariable(subject) || own.some((triple) => !isVariable(triple.subject) || triple.subject.value !== subject.value || triple.predicate.value === RDF_TYPE)) return undefined;
      if (!triples.some((triple) => triple.optional === undefined && isVariable(triple.subject) && triple.subject.value === subject.value)) return undefined;
      optionalFilters.push({
        expressions: [...expressions, ...inner.filter((each) => each.type === 'filter').map((each) => each.expression)],
        before: new Set(triples.filter((triple) => triple.optional === undefined).flatMap((triple) => [triple.subject, triple.object].filter(isVariable).map((term) => term.value))),
      });
      triples.push(...own.map((triple) => ({ ...triple, optional: optionalFilters.length - 1 })));
      for (const triple of own) binding(triple.subject, triple.object);
    } else return undefined;
  }
  if (!triples.some((triple) => triple.optional === undefined) && !subqueries.length) return undefined;
  const bySubject = new Map<string, Array<{ predicate: Term; object: Term; optional?: number }>>();
  for (const { subject, predicate, object, optional } of triples) {
    if (!isVariable(subject) || predicate.termType !== 'NamedNode') return undefined;
    bySubject.set(subject.value, [...(bySubject.get(subject.value) ?? []), { predicate, object, optional }]);
  }
  const first = stars.length;
  for (const [variable, starTriples] of bySubject) {
    const star = starOver(variable, starTriples, scope);
    if (!star) return undefined;
    stars.push(star);
  }
  const own = stars.slice(first);
  const subjects = new Map(own.map((star, at) => [star.variable, first + at]));
  const variables = new Map<string, Bound>(own.map((star) => [star.variable, { kind: { of: 'iri', before: star.subject.before, after: star.subject.after }, nullable: false }]));
  for (const star of own) {
    for (const triple of star.triples) {
      if (triple.kind === 'type') continue;
      const target = subjects.get(triple.variable);
      if (target !== undefined) {
        const subject = stars[target].subject;
        if (triple.kind !== 'link' || triple.optional !== undefined || triple.before !== subject.before || triple.after !== subject.after) return undefined;
        triple.joins = target;
        continue;
      }
      if (variables.has(triple.variable)) return undefined;
      variables.set(triple.variable, { kind: triple.kind === 'link' ? { of: 'iri', before: triple.before, after: triple.after } : { of: 'literal', datatype: triple.datatype }, nullable: triple.optional !== undefined });
    }
  }
  // A subquery's variables join the group's where it has them too (the same kind, bound in every solution of both).
  for (const inner of subqueries) {
    for (const projection of inner.projections) {
      const innerVariable = projection.group ?? projection.plain;
      const kind = projectionKind(projection, (name) => inner.variables.find((variable) => variable.name === name)!.kind);
      const nullable = innerVariable !== undefined && inner.variables.find((variable) => variable.name === innerVariable)!.nullable;
      const known = variables.get(projection.name);
      if (known && (known.nullable || nullable || kindKey(known.kind) !== kindKey(kind))) return undefined;
      if (!known) variables.set(projection.name, { kind, nullable });
    }
  }
  // Stars and subqueries must be joined into one: each shares a variable with another.
  const places: Array<Set<string>> = [
    ...own.map((star) => new Set([star.variable, ...star.triples.flatMap((triple) => (triple.kind === 'type' ? [] : [triple.variable]))])),
    ...subqueries.map((inner) => new Set(inner.projections.map((projection) => projection.name))),
  ];
  const linked = new Set<number>([0]);
  for (let grew = true; grew; ) {
    grew = false;
    places.forEach((names, at) => {
      if (linked.has(at) || ![...linked].some((other) => [...places[other]].some((name) => names.has(name)))) return;
      linked.add(at);
      grew = true;
    });
  }
  if (linked.size !== places.length) return undefined;
  // BINDs in order, each over the variables bound before it (later ones are unbound there: the evaluator's to answer).
  const binds: Branch['binds'] = [];
  for (const { variable, expression, before } of bindPatterns) {
    if (variables.has(variable)) return undefined;
    const found = expressionOf(expression, (name) => (before.has(name) ? variables.get(name) : undefined));
    // Over a variable the group never binds (a select expression over another UNION branch's), each of
    // these functions errs: the variable stays unbound here.
    if (!found && unboundOver(expression, (name) => !variables.has(name) && !bound.has(name))) continue;
    if (!found) return undefined;
    binds.push({ variable, expression: found.expression });
    variables.set(variable, { kind: found.kind, nullable: found.nullable, erring: found.erring });
  }
  const kindOf = (name: string) => variables.get(name)?.kind;
  // FILTER (NOT) EXISTS: the inner group's solutions that agree with the group's on the variables they share.
  const existsOf = nested ? undefined : (pattern: Pattern, negated: boolean): Condition | undefined => {
    const inner = groupOf(pattern.type === 'group' ? pattern.patterns ?? [] : [pattern], scope, true);
    if (!inner) return undefined;
    const shared: Array<{ name: string; outerNullable: boolean }> = [];
    for (const [name, variable] of inner.variables) {
      const outer = variables.get(name);
      if (!outer) continue;
      // Substituted where bound: equal to the inner's where it binds the variable in every solution, of the same kind.
      if (variable.nullable || kindKey(variable.kind) !== kindKey(outer.kind)) return undefined;
      shared.push({ name, outerNullable: outer.nullable });
    }
    return { kind: 'exists', negated, branch: inner.branch, shared };
  };
  const filters = filterExpressions.map((expression) => conditionOf(expression, kindOf, existsOf));
  // An OPTIONAL's FILTER sees the variables the group's triples bound before it and its own; one bound
  // later in the group, or by another OPTIONAL, is unbound there (the evaluator's to answer).
  const optionals = optionalFilters.map(({ expressions, before }, at) => expressions.map((expression) => conditionOf(expression, (name) => {
    const variable = variables.get(name);
    const ownTriple = own.some((star) => star.triples.some((triple) => triple.kind !== 'type' && triple.variable === name && triple.optional === at));
    return variable && (before.has(name) || ownTriple) ? variable.kind : undefined;
  })));
  if (!filters.every(Boolean) || !optionals.every((conditions) => conditions.every(Boolean))) return undefined;
  // MINUS removes a solution compatible with one of its group's that shares a variable with it: one
  // sharing none removes nothing (§18.5). Its variables bound only after it would be unbound there: the evaluator's.
  const minus: Branch['minus'] = [];
  for (const { patterns: inner, before } of minusPatterns) {
    const found = groupOf(inner, scope, true);
    if (!found) return undefined;
    const shared: Branch['minus'][number]['shared'] = [];
    for (const [name, variable] of found.variables) {
      const outer = variables.get(name);
      if (!outer) continue;
      if (!before.has(name) || kindKey(variable.kind) !== kindKey(outer.kind)) return undefined;
      shared.push({ name, outerNullable: outer.nullable, innerNullable: variable.nullable });
    }
    if (shared.length) minus.push({ branch: found.branch, shared });
  }
  const values: Branch['values'] = [];
  for (const rows of valuesBlocks) {
    const names = [...new Set(rows.flatMap((row) => Object.keys(row)))].map((key) => key.replace(/^[?$]/, ''));
    // Joined to values bound in every solution; UNDEF (compatible with any value) is left to the evaluator.
    if (!names.length || names.some((name) => !variables.has(name) || variables.get(name)!.nullable)) return undefined;
    const table: string[][] = [];
    for (const row of rows) {
      const texts = names.map((name) => {
        const term = row[`?${name}`] ?? row[`$${name}`];
        return term === undefined ? null : textOf(term, variables.get(name)!.kind);
      });
      if (texts.includes(null)) return undefined;
      // A row no solution's values can equal joins nothing (duplicates stay: each joins again).
      if (texts.every((text) => text !== undefined)) table.push(texts as string[]);
    }
    values.push({ variables: names, rows: table });
  }
  return { branch: { stars: own.map((_, at) => first + at), filters: filters as Condition[], optionals: optionals as Condition[][], values, binds, subqueries, minus }, variables };
}

/** A subject variable's triples as a star over the one source that alone yields all of them. */
function starOver(variable: string, triples: Array<{ predicate: Term; object: Term; optional?: number }>, { sources, othersOf, terms, baseIri }: Scope): Star | undefined {
  for (const [at, source] of sources.entries()) {
    const subject = oneFieldTemplate(source.mapping.subjectTemplate);
    const others = othersOf(at);
    if (!subject || !others.predicates || !others.types) continue;
    const out: StarTriple[] = [];
    const objects = new Set<string>();
    let fits = true;
    for (const { predicate, object, optional } of triples) {
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
        if (field !== undefined) out.push({ kind: 'property', variable: object.value, field, datatype: terms.properties[local]?.datatype ?? 'xsd:string', optional });
        // A link whose IRI is made of its own field alone (the usual reference to another record).
        else if (link && target && target.field === link.field) out.push({ kind: 'link', variable: object.value, field: link.field, before: target.before, after: target.after, optional });
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
 * A bound source as the statement reads it: a relation of its records, a row each, and each field
 * of a record as the JSON value the in-memory mapping reads (mapRecord over the record as
 * JavaScript holds it). A managed table's rows at a snapshot hold the records' JSON; an external
 * table's are its rows, each column's value made the JSON of the driver's (postgres-table/record-json.ts).
 */
export interface SqlSource {
  /** `FROM <records>`: the relation and the WHERE condition of the rows read (more follow with AND). */
  records(params: SqlParams): string;
  /** A field's JSON (jsonb, NULL where the record has none) and its text as `->>` gives it. */
  field(name: string, params: SqlParams): { json: string; text: string };
  /** The fields no two records share a value of: a star subject of this one field is read in one scan. */
  primaryKey?: string[];
  /** Whether the records never change once read (a managed table at a snapshot), so what a check found of them holds for the next query. */
  pinned?: boolean;
  /**
   * A condition on the records' own columns that keeps the record whose primary key (one field)
   * shows as the text `value` (an SQL expression), by an index; every such record meets it.
   */
  keyLookup?(value: string): string;
  /**
   * A condition on the records' own columns that every record whose field passes `test` meets
   * (it may keep more: the FILTER still decides), so an index on the column narrows the rows
   * read; undefined where the source has none for this field and test.
   */
  narrowing?(field: string, test: NarrowedTest, params: SqlParams): string | undefined;
}

/** A FILTER's comparison of a required property's value with a constant, as a source may narrow its records by it. */
export interface NarrowedTest {
  op: '<' | '<=' | '>' | '>=' | '=';
  on: 'number' | 'text';
  value: string;
  /** The property's datatype, or 'iri' for a link (its value the key in the link's template). */
  datatype: string;
}

/**
 * Runs the statement text with its parameters; the rows of its answer. `fixedJoinOrder`: every
 * relation of the statement is a few records (Statement.readsMany), so the runner may have PostgreSQL join
 * them in the written order rather than search every order: BSBM Q2's dozen triples of one
 * product took 22 to 33 ms to plan and 2 to run at 1M records, 3 to 4 ms to plan in the written order.
 */
export type SqlRunner = (sql: string, params: SqlParams, hints?: { fixedJoinOrder: boolean }) => Promise<Array<Record<string, unknown>>>;

/** A managed table's records at the snapshot `version`, read from their `data`. */
export function snapshotSource(table: ReachTable & { version: string }, primaryKey?: string[]): SqlSource {
  return {
    records: (params) => {
      const version = params.add(table.version);
      return `${qualified(workspaceSchema(table.workspaceId), table.table)} WHERE valid_from <= ${version}::bigint AND (valid_to IS NULL OR valid_to > ${version}::bigint)`;
    },
    field: (name, params) => {
      const field = params.add(name);
      return { json: `data -> ${field}::text`, text: `data ->> ${field}::text` };
    },
    primaryKey,
    pinned: true,
    // row_key is the key's values as JSON.stringify writes them ([5], ["5"], [true]); a key shown as
    // `value` is a number or a boolean of that text, or that string (as to_jsonb writes a string,
    // which is JSON.stringify's form).
    keyLookup: (value) => `row_key = ANY (ARRAY['[' || ${value} || ']', '[' || to_jsonb(${value}::text)::text || ']'])`,
    // A field's value equal to a text (a constant object, `= "US"`): the records whose field holds a
    // JSON value that shows as it, by row_key or the GIN index on the field (field-indexes.ts).
    narrowing: (name, test, params) => {
      if (test.op !== '=' || test.on !== 'text') return undefined;
      const condition = fieldShows(name, [test.value], test.datatype === 'iri' ? 'iri' : test.datatype === 'xsd:string' ? 'string' : 'typed', primaryKey, params);
      return condition === true ? undefined : condition === false ? 'false' : condition;
    },
  };
}

/** What the runtime keeps for the SQL path between queries (SparqlMemory's). */
export interface SqlPathMemory {
  primaryKeys: PrimaryKeys;
  /** One-scan stars of pinned sources found clean (checks below), by the hash of their relation's statement and parameters. */
  cleanStars: WeightedLru<true>;
}

/**
 * The query over bound managed tables at their snapshots, in the caller's transaction (runSqlOver,
 * under SQL_WORK_MEM). `sources` in the order of the query's; undefined for one no star reads.
 */
export async function runSqlQuery(trx: Knex.Transaction, query: SqlQuery, sources: Array<(ReachTable & { version: string }) | undefined>, memory: SqlPathMemory): Promise<SparqlResult | undefined> {
  const primaryKeys = await primaryKeysOf(trx, sources.filter((source) => source !== undefined), memory.primaryKeys);
  // Sparse, as the query's stars index them.
  const read: SqlSource[] = [];
  for (const [at, source] of sources.entries()) if (source) read[at] = snapshotSource(source, primaryKeys.get(source.table));
  return runSqlOver(async (sql, params, hints) => {
    if (!hints?.fixedJoinOrder) return (await run<Record<string, unknown>>(trx, sql, params)).rows;
    // For this statement only (SqlRunner): the settings go back before the next one of the transaction.
    await trx.raw('SET LOCAL join_collapse_limit = 1; SET LOCAL from_collapse_limit = 1');
    const rows = (await run<Record<string, unknown>>(trx, sql, params)).rows;
    await trx.raw('SET LOCAL join_collapse_limit TO DEFAULT; SET LOCAL from_collapse_limit TO DEFAULT');
    return rows;
  }, query, read, memory.cleanStars);
}

/**
 * Runs the query over the sources; undefined when a value's form makes the SQL's answer
 * unreliable. A star over a source keyed by its subject field is read in one scan, a record a
 * row (Ontop's self-join elimination): exact while the source holds no arrays in the star's fields
 * and one JSON type of key (5 and "5" would be one subject); otherwise the star is read per
 * triple, its values merged per subject text.
 */
export async function runSqlOver(run: SqlRunner, query: SqlQuery, sources: SqlSource[], cleanStars?: WeightedLru<true>): Promise<SparqlResult | undefined> {
  const perTriple = query.stars.map((star) => (sources[star.source].pinned && cleanStars ? perTripleKey(sources[star.source], star) : undefined));
  const fusable = query.stars.map((star, x) => sources[star.source].primaryKey?.join('\n') === star.subject.field && !(perTriple[x] && cleanStars!.get(perTriple[x]!)));
  for (;;) {
    const answer = await runSqlQueryAs(run, query, sources, fusable, cleanStars);
    if (!(answer instanceof Unfused)) return answer;
    // The stars found to need per-triple reads (every fused one where a check names none), kept so
    // for their snapshot; each round reads at least one more star per triple, so the loop ends.
    const stars = answer.stars === 'all' ? fusable.flatMap((fused, x) => (fused ? [x] : [])) : answer.stars;
    for (const x of stars) {
      fusable[x] = false;
      if (perTriple[x]) cleanStars!.set(perTriple[x]!, true, perTriple[x]!.length);
    }
  }
}

/** A one-scan attempt's verdict: these fused stars (or every one, where an unpinned source's check names none) hold what one scan cannot read exactly. */
class Unfused {
  constructor(readonly stars: number[] | 'all') {}
}

/**
 * Where the runtime's memory of clean stars (SqlPathMemory.cleanStars) also keeps the stars of a
 * pinned source found to need per-triple reads (arrays in their fields, keys of two JSON types),
 * by their records at the snapshot and fields: the next query over them skips the one-scan
 * attempt, which q2 and q3 of the bench (products with arrays of features) paid every time. Per
 * triple is exact for any star, so a star kept so is only read another way, never answered otherwise.
 */
function perTripleKey(source: SqlSource, star: Star): string {
  const params = new SqlParams();
  const fields = star.triples.flatMap((triple) => (triple.kind === 'type' ? [] : [triple.field]));
  return `per-triple ${relationKey(`${source.records(params)}\n${star.subject.field}\n${[...new Set(fields)].sort().join('\n')}`, params)}`;
}

/** A relation's statement with its parameters' values in place, hashed: the same hash reads the same rows of a pinned source. */
function relationKey(sql: string, params: SqlParams): string {
  return createHash('sha256').update(sql.replace(/\$(\d+)/g, (_, at: string) => `\u0001${JSON.stringify(params.values[Number(at) - 1])}\u0001`)).digest('base64url');
}

/** Where a variable's value is in a branch's rows: its text (NULL where unbound) and, for numeric properties, its number. */
interface Column {
  text: string;
  num?: string;
}

/** What the statement's parts collect besides a branch's own FROM and WHERE. */
interface Statement {
  params: SqlParams;
  ctes: string[];
  /** Checks that a one-scan star's table holds what it cannot read exactly (the answer is then made per triple). */
  unfusedChecks: string[];
  oddChecks: string[];
  /**
   * The checks of one-scan stars over pinned sources, apart (`key`: relationKey): a star whose checks
   * find nothing is kept clean, and the next query over the same rows runs without them, so its
   * relation is read once, where it joins, instead of whole for the checks (a star joined through
   * a link was 15 of q8's 25 ms at 1M bench records, and its checks another 20).
   */
  starChecks: Array<{ key: string; odd: string; unfused: string; star: number }>;
  /** Stars kept clean (SqlPathMemory.cleanStars), if the caller keeps them. */
  cleanStars?: WeightedLru<true>;
  /** A string compared in code point order: the database's text must then be UTF-8, whose byte order that is. */
  ordersText: boolean;
  /** Every group's stars (SqlQuery.stars), the sources they read, and which are read in one scan. */
  stars: Star[];
  sources: SqlSource[];
  fusable: boolean[];
  /** Names given so far to the statement's relations (VALUES tables, subqueries), to number the next. */
  named: number;
  /**
   * Whether a star of the statement may read more than a few records: one not narrowed to one
   * subject's records, nor looked up by key from such a star (SqlRunner's fixedJoinOrder).
   */
  readsMany: boolean;
}

async function runSqlQueryAs(run: SqlRunner, query: SqlQuery, sources: SqlSource[], fusable: boolean[], cleanStars?: WeightedLru<true>): Promise<SparqlResult | undefined | Unfused> {
  const statement: Statement = { params: new SqlParams(), ctes: [], unfusedChecks: [], oddChecks: [], starChecks: [], cleanStars, ordersText: false, stars: query.stars, sources, fusable, named: 0, readsMany: false };
  // Rows of solutions are few enough to sort here, or the query is left to the evaluator.
  const cap = query.exists ? 1 : query.aggregated ? undefined : MAX_SOLUTION_ROWS;
  answerCtes(statement, query, 'answer', cap);
  const at = new Map(query.variables.map((variable, k) => [variable.name, k]));
  const { params, ctes, oddChecks, unfusedChecks, starChecks } = statement;
  if (statement.ordersText) oddChecks.push(`current_setting('server_encoding') <> 'UTF8'`);
  const either = (checks: string[]) => (checks.length ? checks.map((check) => `coalesce(${check}, false)`).join(' OR ') : 'false');
  // Each kept star's checks once, in columns of their own (o<k> odd, u<k> unfused), which the answer's flags are made of.
  const checked = starChecks.map(({ odd, unfused }, k) => `coalesce(${odd}, false) AS o${k}, coalesce(${unfused}, false) AS u${k}`);
  const oddFlags = [either(oddChecks), ...starChecks.map((_, k) => `checks.o${k}`)].join(' OR ');
  // The oddity row is there even when nothing matched: a value written otherwise than JavaScript writes it may be why.
  const sql = `WITH ${ctes.join(',\n')},
    ${checked.length ? `checks AS (SELECT ${checked.join(', ')}),\n    ` : ''}oddity AS (SELECT ${oddFlags} AS odd, ${either(unfusedChecks)} AS unfused${starChecks.map((_, k) => `, NOT (checks.o${k} OR checks.u${k}) AS clean${k}, checks.u${k} AS unfused${k}`).join('')}${checked.length ? ' FROM checks' : ''})
    SELECT answer.*, oddity.* FROM oddity LEFT JOIN answer ON true`;
  const all = await run(sql, params, { fixedJoinOrder: !statement.readsMany });
  // A star found clean reads the same rows clean next time (the rows of a pinned source never change).
  starChecks.forEach(({ key }, k) => {
    if (all[0]?.[`clean${k}`] === true) statement.cleanStars?.set(key, true, key.length);
  });
  // Every row carries the oddity's columns (the answer is joined to its one row): `unfused`, the
  // checks of stars over unpinned sources, which name no star; `unfused<k>`, each kept star's.
  if (all[0]?.unfused) return new Unfused('all');
  const unfused = starChecks.flatMap(({ star }, k) => (all[0]?.[`unfused${k}`] === true ? [star] : []));
  if (unfused.length) return new Unfused(unfused);
  if (all.some((row) => row.odd)) return undefined;
  const rows = all.filter((row) => row.present);
  if (cap && rows.length > cap && !query.exists) return undefined;
  // A total over a value that is no number of its type is an error in SPARQL: left to the evaluator.
  if (query.projections.some((projection, p) => projection.total && rows.some((row) => Number(row[`n${p}`]) !== Number(row[`a${p}`])))) return undefined;
  // Without GROUP BY, one row even when nothing matched (PostgreSQL answers it too, and its odd is then null).
  const variables = query.projections.map((projection) => projection.name);
  const kindOf = (name: string) => query.variables[at.get(name)!].kind;
  const result: Array<Record<string, RDF.Term>> = rows.map((row) => {
    const out: Record<string, RDF.Term> = {};
    query.projections.forEach((projection, p) => {
      const value = row[`p${p}`];
      const shown = projection.group ?? projection.plain;
      // An unbound value (an OPTIONAL's, a UNION branch's) has no binding in the row.
      if (shown !== undefined) {
        if (value !== null && value !== undefined) out[projection.name] = termOf(String(value), kindOf(shown));
      } else if (projection.total) out[projection.name] = totalTerm(value === null || value === undefined ? undefined : String(value), Number(row[`a${p}`]), (kindOf(projection.total.of) as { datatype: string }).datatype, projection.total.average);
      else out[projection.name] = literal(String(value), namedNode(XSD_INTEGER));
    });
    return out;
  });
  if (query.order.length) {
    const keyOf = query.order.map((key) => (byProjection(key) ? (row: Record<string, RDF.Term>) => evaluatorTerm(row[variables[key.at]]) : key.by));
    const keys = new Map(result.map((row) => [row, keyOf.map((key) => key(row))]));
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

/**
 * A query's answer as CTEs: `<name>_solutions`, its branches' solutions as one relation (x<k> the
 * text of variable k, NULL where unbound, n<k> its number, bodd a value a BIND cannot compute
 * exactly), and `<name>`, a row per solution or group (p<p> each projection's text). The
 * outermost query's (`cap`: at most that many rows and one more) is finished in this process
 * (SUM and AVG, ORDER BY, OFFSET, LIMIT); a subquery's is PostgreSQL's (q<p> the numbers of its
 * numeric projections), ordered in the evaluator's order and sliced there.
 */
function answerCtes(statement: Statement, query: SqlQuery, name: string, cap?: number): void {
  const subquery = name !== 'answer';
  // Solutions made distinct (DISTINCT without aggregates, an ASK's): only which projections occur is read, not how often.
  const read = !query.aggregated && (query.distinct || query.exists) ? new Set([...query.projections.map((projection) => projection.name), ...query.filters.flatMap(conditionVariables)]) : undefined;
  const branches = query.branches.map((branch) => branchSql(statement, query, branch, read));
  // Only where a BIND may be flagged: a second reference makes PostgreSQL materialize the solutions.
  const flagged = query.branches.some((branch) => branch.binds.some(({ expression }) => mayBeFlagged(expression)));
  const at = new Map(query.variables.map((variable, k) => [variable.name, k]));
  const solution = (variable: string): Column => ({ text: `x${at.get(variable)}`, num: isNumeric(query.variables[at.get(variable)!].kind) ? `n${at.get(variable)}` : undefined });
  const selects = query.projections.map((projection, p) => {
    const shown = projection.group ?? projection.plain;
    if (shown !== undefined) {
      const column = solution(shown);
      const number = subquery && column.num ? `, ${projection.group ? `min(${column.num})` : column.num} AS q${p}` : '';
      return `${column.text} AS p${p}${number}`;
    }
    if (projection.total) {
      const column = solution(projection.total.of).num!;
      // count(num) < count(*): a value that is not a number of its datatype, which fails the total.
      return `sum(${column}) AS p${p}, count(${column}) AS n${p}, count(*) AS a${p}`;
    }
    const { of, distinct } = projection.count!;
    const count = of ? `count(${distinct ? 'DISTINCT ' : ''}${solution(of).text})` : distinct ? `count(DISTINCT ROW(${query.variables.map((_, k) => `x${k}`).join(', ')}))` : 'count(*)';
    return subquery ? `${count}::text AS p${p}, ${count} AS q${p}` : `${count} AS p${p}`;
  });
  const filters = query.filters.map((condition) => conditionSql(condition, solution, statement));
  const groupColumns = query.groupBy.map((variable) => solution(variable).text);
  const { ctes, oddChecks, params } = statement;
  ctes.push(`${name}_solutions AS (${branches.join('\n    UNION ALL\n    ')})`);
  if (flagged) oddChecks.push(`(SELECT bool_or(bodd) FROM ${name}_solutions)`);
  const rows = `SELECT ${query.distinct ? 'DISTINCT ' : ''}${selects.join(', ')}${subquery ? '' : ', true AS present'}
      FROM ${name}_solutions${filters.length ? ` WHERE ${filters.join(' AND ')}` : ''}${groupColumns.length ? ` GROUP BY ${groupColumns.join(', ')}` : ''}${cap ? ` LIMIT ${cap + 1}` : ''}`;
  if (!subquery || (!query.order.length && !query.offset && query.limit === undefined)) return void ctes.push(`${name} AS (${rows})`);
  // ORDER BY as orderTerms sorts one kind's values: unbound first; numbers by value, then the
  // values that are none by their text; strings and keys in code point order.
  const keys = query.order.filter(byProjection).flatMap(({ at: p, descending }) => {
    const kind = projectionKind(query.projections[p], (variable) => query.variables[at.get(variable)!].kind);
    const direction = descending ? ' DESC' : '';
    if (kind.of === 'iri') oddChecks.push(`(SELECT bool_or(p${p} !~ ${params.add(UNRESERVED_KEY)}::text) FROM ${name}_rows)`);
    else statement.ordersText ||= !isNumeric(kind);
    const text = `p${p} COLLATE "C"${direction}`;
    return [`(p${p} IS NOT NULL)${direction}`, ...(isNumeric(kind) ? [`(q${p} IS NULL)${direction}`, `q${p}${direction}`] : []), text];
  });
  ctes.push(`${name}_rows AS (${rows})`);
  ctes.push(`${name} AS (SELECT * FROM ${name}_rows ORDER BY ${keys.join(', ')}${query.limit !== undefined ? ` LIMIT ${params.add(query.limit)}::bigint` : ''}${query.offset ? ` OFFSET ${params.add(query.offset)}::bigint` : ''})`);
}

/**
 * One branch's solutions as a SELECT of every variable's columns (NULL where the branch leaves it
 * unbound): its stars' relations joined (a row a solution: each star's subject with one of each of
 * its distinct values), its OPTIONALs left joined, its subqueries and VALUES joined, its BINDs
 * computed, its FILTERs and MINUS applied; and bodd, whether a BIND's value here is flagged.
 */
function branchSql(statement: Statement, query: SqlQuery, branch: Branch, read: ReadonlySet<string> | undefined): string {
  const { columns, from, where, odd } = branchParts(statement, branch, read);
  const selected = query.variables.map((variable, k) => {
    const column = columns.get(variable.name);
    return `${column ? column.text : 'NULL::text'} AS x${k}${isNumeric(variable.kind) ? `, ${column?.num ?? 'NULL::numeric'} AS n${k}` : ''}`;
  });
  return `SELECT ${selected.join(', ')}, ${odd.length ? odd.join(' OR ') : 'false'} AS bodd FROM ${from}${where.length ? ` WHERE ${where.join(' AND ')}` : ''}`;
}

/** The narrowings of a star's subject (narrowingsOf), which every triple of the star reads by. */
const SUBJECT = -1;

/**
 * Each star's triples' narrowings (by triple index): the conditions its source gives for the
 * branch's FILTER comparisons (conjuncts of the branch's own FILTERs) of a variable a required
 * property triple of the star binds with a constant. A solution the FILTER keeps has that
 * triple's value passing the comparison, so its record meets the condition: dropping records that
 * do not drops no solution the FILTER keeps. A sameTerm of the star's subject (a constant subject)
 * narrows each of its triples, OPTIONAL ones too (`SUBJECT`).
 */
function narrowingsOf(statement: Statement, branch: Branch): Map<number, Map<number, string[]>> {
  const found = new Map<number, Map<number, string[]>>();
  const comparisons: Array<Extract<Condition, { kind: 'compare' }>> = [];
  const conjuncts = (condition: Condition): void => {
    if (condition.kind === 'and') condition.args.forEach(conjuncts);
    else if (condition.kind === 'compare' && condition.op !== '!=') comparisons.push(condition);
  };
  branch.filters.forEach(conjuncts);
  if (!comparisons.length) return found;
  const add = (x: number, i: number, condition: string | undefined) => {
    if (!condition) return;
    const byTriple = found.get(x) ?? found.set(x, new Map()).get(x)!;
    byTriple.set(i, [...(byTriple.get(i) ?? []), condition]);
  };
  for (const x of branch.stars) {
    const star = statement.stars[x];
    const source = statement.sources[star.source];
    if (!source.narrowing) continue;
    // The subject itself (BSBM Q2's one product): every record of a solution shows as that key.
    for (const { variable, op, on, value } of comparisons) {
      if (variable === star.variable && op === '=' && on === 'text') add(x, SUBJECT, source.narrowing(star.subject.field, { op, on, value, datatype: 'iri' }, statement.params));
    }
    star.triples.forEach((triple, i) => {
      if (triple.kind === 'type' || triple.optional !== undefined || (triple.kind === 'link' && triple.joins !== undefined)) return;
      for (const { variable, op, on, value } of comparisons) {
        if (variable === triple.variable && on !== 'date') add(x, i, source.narrowing!(triple.field, { op: op as NarrowedTest['op'], on, value, datatype: triple.kind === 'link' ? 'iri' : triple.datatype }, statement.params));
      }
    });
  }
  return found;
}

/** The variables a condition reads: an EXISTS's those it shares with its group. */
function conditionVariables(condition: Condition): string[] {
  switch (condition.kind) {
    case 'and':
    case 'or':
      return condition.args.flatMap(conditionVariables);
    case 'not':
      return conditionVariables(condition.arg);
    case 'exists':
      return condition.shared.map(({ name }) => name);
    default:
      return [condition.variable];
  }
}

/** The variables a BIND's expression reads. */
function expressionVariables(expression: Expression): string[] {
  if (expression.op === 'variable') return [expression.name];
  if ('arg' in expression) return expressionVariables(expression.arg);
  return 'args' in expression ? expression.args.flatMap(expressionVariables) : [];
}

/**
 * The stars of a branch read as a correlated EXISTS on the star they are linked to (a semi-join)
 * rather than joined, with the FILTERs that move with each and its own variables. `read`: the variables the branch's
 * solutions are read for, where only whether a solution of them exists counts, not how many
 * times (a DISTINCT without aggregates, an ASK, the group of an EXISTS or MINUS); undefined where
 * every solution counts. A star qualifies when one link ties it to the rest (its own to another
 * star's subject, or another's to its subject), it has no OPTIONAL, and none of its variables is
 * read, or read by anything of the branch but its own FILTERs (another star's OPTIONAL FILTER, a
 * BIND, VALUES, a subquery, a MINUS, a FILTER over other variables too): its solutions then add
 * no value to a solution, only copies of it, which the EXISTS leaves out. The join's condition and
 * the star's FILTERs are the EXISTS's, so its records, grouped by subject text, and its values'
 * errors are read as in the join.
 */
function semiJoinedStars(statement: Statement, branch: Branch, read: ReadonlySet<string> | undefined): Map<number, { filters: Condition[]; variables: Set<string> }> {
  const turned = new Map<number, { filters: Condition[]; variables: Set<string> }>();
  if (!read || branch.stars.length < 2) return turned;
  const used = new Set([
    ...read,
    ...branch.optionals.flat().flatMap(conditionVariables),
    ...branch.binds.flatMap(({ expression }) => expressionVariables(expression)),
    ...branch.values.flatMap((table) => table.variables),
    ...branch.subqueries.flatMap((subquery) => subquery.projections.map((projection) => projection.name)),
    ...branch.minus.flatMap(({ shared }) => shared.map(({ name }) => name)),
  ]);
  const links = branch.stars.flatMap((x) => statement.stars[x].triples.flatMap((triple) => (triple.kind === 'link' && triple.joins !== undefined ? [[x, triple.joins]] : [])));
  for (const x of branch.stars) {
    const star = statement.stars[x];
    const partners = links.filter((link) => link.includes(x));
    if (partners.length !== 1 || turned.has(partners[0].find((other) => other !== x)!) || star.triples.some((triple) => triple.kind !== 'type' && triple.optional !== undefined)) continue;
    // Its subject and values; a link's object is the other star's.
    const own = new Set([star.variable, ...star.triples.flatMap((triple) => (triple.kind === 'type' || (triple.kind === 'link' && triple.joins !== undefined) ? [] : [triple.variable]))]);
    if ([...own].some((name) => used.has(name))) continue;
    const filters = branch.filters.filter((condition) => conditionVariables(condition).some((name) => own.has(name)));
    if (filters.some((condition) => !conditionVariables(condition).every((name) => own.has(name)))) continue;
    turned.set(x, { filters, variables: own });
  }
  return turned;
}

/**
 * A key JavaScript writes in exponent notation (1e+21), which a number key PostgreSQL writes in
 * digits shares: a star narrowed to the records of such subjects may miss that record.
 */
const EXPONENT_KEY = '^-?[0-9]+(\\.[0-9]+)?e[+-][0-9]+$';

/**
 * The records, of a per-triple star's, whose subject is one of the pivot relation's (`pivot`,
 * already among the CTEs), as a SELECT of their rows (`records`: `<relation> WHERE <condition>`):
 * the star's other triples join nothing else. A key that makes a subject shows as its own text, so
 * these are the records whose key text is a pivot subject: looked up by key, a probe of the index
 * per pivot subject, where the subject is the source's key (a semi-join on the lookup's ANY could
 * not hash, and PostgreSQL ran it as a loop over every record: 120 s for the 10M bench's q3); else
 * a hashed set. Only a number key written in exponent notation (flagged in its own record) shows
 * otherwise in JavaScript, where its subject may be a pivot's: a pivot subject of that form is
 * flagged too (EXPONENT_KEY), and the answer is then the evaluator's.
 */
function pivotOf(statement: Statement, x: number, pivot: string): (records: string) => string {
  const { params, sources, stars, oddChecks } = statement;
  const star = stars[x];
  const source = sources[star.source];
  oddChecks.push(`(SELECT bool_or(s ~ ${params.add(EXPONENT_KEY)}::text) FROM ${pivot})`);
  if (source.keyLookup && source.primaryKey?.join('\n') === star.subject.field) {
    const lookup = source.keyLookup('pivot.s');
    return (records) => `SELECT r.* FROM (SELECT DISTINCT s FROM ${pivot}) pivot CROSS JOIN LATERAL (SELECT * FROM ${records} AND ${lookup}) r`;
  }
  const key = source.field(star.subject.field, params).text;
  return (records) => `SELECT * FROM ${records} AND ${key} IN (SELECT s FROM ${pivot})`;
}

/**
 * A branch's relations and conditions (its solutions are the rows of `FROM from WHERE where`), the
 * columns of its variables, and what flags a row whose BINDs SQL does not compute as SPARQL does.
 * Its stars' relations, its subqueries' answers and the groups of its EXISTS and MINUS are added
 * to the statement's CTEs. `read`: the variables whose distinct solutions alone are read, if so
 * (semiJoinedStars).
 */
function branchParts(statement: Statement, branch: Branch, read: ReadonlySet<string> | undefined): { columns: Map<string, Column>; from: string; where: string[]; odd: string[] } {
  const { params, ctes, unfusedChecks, oddChecks, sources, fusable } = statement;
  const from: string[] = [];
  const on: string[] = [];
  const main = { from, on };
  /** The stars read as an EXISTS (semiJoinedStars): each one's relations, and the conditions of its link and FILTERs. */
  const semi = new Map([...semiJoinedStars(statement, branch, read)].map(([x, star]) => [x, { ...star, from: [] as string[], on: [] as string[] }]));
  /** Where each variable is bound: a star's subjects, or a value triple's rows. */
  const columns = new Map<string, Column>();
  /** Each star's subject column, and the links to join to them. */
  const anchors: string[] = [];
  const links: Array<{ column: string; from: number; star: number }> = [];
  /** A one-scan star's OPTIONALs: their columns are their values where the record has all of them (and the OPTIONAL's FILTER holds). */
  const scannedOptionals: Array<{ group: number; present: string; variables: Array<{ name: string; column: Column }> }> = [];
  /** Another star's OPTIONALs: a relation of their triples left joined on the subject (and the OPTIONAL's FILTER). */
  const joinedOptionals: Array<{ group: number; relation: string; alias: string; anchor: string }> = [];
  const narrowed = narrowingsOf(statement, branch);
  /** Stars read per link by their key (below). */
  const byKey = new Set<number>();
  /** Stars of one subject's records, or looked up by key from one: a few records each (Statement.readsMany). */
  const subjectOnly = new Set<number>();
  for (const x of branch.stars) {
    const into = semi.get(x) ?? main;
    const star = statement.stars[x];
    const source = sources[star.source];
    /** `FROM ${records}`: the source's records the query reads, a row each; more conditions follow with AND. */
    const records = source.records(params);
    /** The records of a triple's relation: those its field's FILTERs may keep. */
    const recordsOf = (i: number) => [records, ...(i === SUBJECT ? [] : narrowed.get(x)?.get(i) ?? []), ...(narrowed.get(x)?.get(SUBJECT) ?? [])].join(' AND ');
    const key = source.field(star.subject.field, params);
    const subject = shownText('kt', 'kx', 'key');
    /** The record's subject field as its JSON type and text, each computed once a record (the inner selects are fenced by OFFSET 0). */
    const keyColumns = `jsonb_typeof(${key.json}) AS kt, ${key.text} AS kx`;
    if (fusable[x]) {
      // One scan: each record is a row of its subject and one value per triple (a record lacking a field yields none).
      const name = `star${x}`;
      const reads: string[] = [];
      const shownColumns: string[] = [];
      const odd: string[] = [subject.odd];
      const present: string[] = ['s IS NOT NULL'];
      const arrays: string[] = [];
      const optionalPresent = new Map<number, string[]>();
      const optionalVariables = new Map<number, Array<{ name: string; column: Column }>>();
      star.triples.forEach((triple, i) => {
        if (triple.kind === 'type') return;
        const field = source.field(triple.field, params);
        reads.push(`jsonb_typeof(${field.json}) AS vt${i}, ${field.text} AS vx${i}`);
        const shown = shownText(`vt${i}`, `vx${i}`, triple.kind === 'link' ? 'key' : triple.datatype === 'xsd:string' ? 'string' : 'typed');
        const pattern = triple.kind === 'property' && triple.datatype in NUMERIC_LEXICAL ? params.add(NUMERIC_LEXICAL[triple.datatype]) : undefined;
        shownColumns.push(`${shown.text} AS o${i}${pattern ? `, ${shown.numeric(triple.kind === 'property' && triple.datatype === 'xsd:integer', pattern)} AS n${i}` : ''}`);
        odd.push(shown.odd);
        const has = `vt${i} IS NOT NULL AND vt${i} <> 'null'${triple.kind === 'link' ? ` AND o${i} IS NOT NULL` : ''}`;
        if (triple.optional === undefined) present.push(has);
        else optionalPresent.set(triple.optional, [...(optionalPresent.get(triple.optional) ?? []), has]);
        arrays.push(`vt${i} = 'array'`);
        if (triple.kind === 'link' && triple.joins !== undefined) return void links.push({ column: `${name}.o${i}`, from: x, star: triple.joins });
        const column = { text: `${name}.o${i}`, num: pattern ? `${name}.n${i}` : undefined };
        columns.set(triple.variable, column);
        if (triple.optional !== undefined) optionalVariables.set(triple.optional, [...(optionalVariables.get(triple.optional) ?? []), { name: triple.variable, column }]);
      });
      /** Where a lookup by the joining link's value goes (see below): the records' own condition. */
      const LOOKUP = '\u0000lookup\u0000';
      const relationWith = (lookup: string) => `(SELECT * FROM (SELECT ${subject.text} AS s, ${shownColumns.length ? `${shownColumns.join(', ')}, ` : ''}${odd.join(' OR ')} AS odd, ${arrays.length ? arrays.join(' OR ') : 'false'} AS multi, kt${reads.length ? `, ${star.triples.flatMap((triple, i) => (triple.kind === 'type' ? [] : [`vt${i}`])).join(', ')}` : ''}
           FROM (SELECT ${keyColumns}${reads.length ? `, ${reads.join(', ')}` : ''} FROM ${[records, ...[...(narrowed.get(x)?.values() ?? [])].flat()].join(' AND ')}${lookup} OFFSET 0) r) r WHERE s IS NOT NULL)`;
      const template = relationWith(LOOKUP);
      const relation = template.replace(LOOKUP, '');
      // Arrays anywhere in the star's fields, or keys of two JSON types: read per triple instead.
      // Narrowed by an index, the star's records may have a subject another record has too (5 and
      // "5"): found by key lookup, or flagged where JavaScript's form of a key is exponent notation,
      // which a number key in digits may share (EXPONENT_KEY). A source without key lookup (an
      // external table) has keys of one column type, one JSON type, whose texts are its values'.
      const shared = narrowed.has(x) && source.keyLookup ? ` OR bool_or((SELECT count(*) FROM ${records} AND ${source.keyLookup!(`${name}.s`)}) > 1)` : '';
      const unfusedCheck = `(SELECT bool_or(multi) OR count(DISTINCT kt) > 1${shared} FROM ${name})`;
      const oddCheck = `(SELECT bool_or(odd${narrowed.has(x) ? ` OR s ~ ${params.add(EXPONENT_KEY)}::text` : ''}) FROM ${name} WHERE ${present.join(' AND ')})`;
      let clean = false;
      if (!source.pinned || !statement.cleanStars) {
        unfusedChecks.push(unfusedCheck);
        oddChecks.push(oddCheck);
      } else {
        const checksKey = relationKey(`${relation}\n${present.join(' AND ')}`, params);
        clean = statement.cleanStars.get(checksKey) === true;
        if (!clean) statement.starChecks.push({ key: checksKey, odd: oddCheck, unfused: unfusedCheck, star: x });
      }
      const flags = [...optionalPresent].map(([group, has]) => `, (${has.join(' AND ')}) AS g${group}`).join('');
      // A clean star another star links to (one read before it, in the same relation list or the
      // main one, in scope inside an EXISTS too) is read per link, by the records' key (an index
      // lookup), rather than whole for a hash join: exact, for a clean star's keys are one JSON
      // type, none PostgreSQL writes otherwise than JavaScript, and its subject field is the
      // table's key. Only where the linking star's rows are few: narrowed by an index, or read by
      // key itself (a lookup for each of a whole table's links was slower than the hash join: the
      // 1M bench's aggregate, 312k reviews to their products, took 1.7 s against 1.0).
      const incoming = clean && source.keyLookup ? links.find((link) => link.star === x && [into, main].includes(semi.get(link.from) ?? main) && (narrowed.has(link.from) || byKey.has(link.from))) : undefined;
      const oneSubject = narrowed.get(x)?.has(SUBJECT) || (incoming && subjectOnly.has(incoming.from));
      if (oneSubject) subjectOnly.add(x);
      else statement.readsMany = true;
      if (incoming) {
        byKey.add(x);
        into.from.push(`LATERAL (SELECT *${flags} FROM ${template.replace(LOOKUP, ` AND ${source.keyLookup!(incoming.column)}`)} ${name} WHERE ${present.join(' AND ')}) ${name}`);
      } else {
        ctes.push(`${name} AS ${relation}`);
        into.from.push(`(SELECT *${flags} FROM ${name} WHERE ${present.join(' AND ')}) ${name}`);
      }
      for (const [group, variables] of optionalVariables) scannedOptionals.push({ group, present: `${name}.g${group}`, variables });
      anchors[x] = `${name}.s`;
      columns.set(star.variable, { text: `${name}.s` });
      continue;
    }
    // Each relation reads the table itself, keeping only the text columns it needs: one that
    // carried the records' data to the others was materialized whole (the rows' jsonb), which at
    // 300,000 records spilled to disk. Grouped by subject text, so records with one IRI merge.
    const allValueTriples = star.triples.flatMap((triple, i) => (triple.kind === 'type' ? [] : [{ triple, name: `v${x}_${i}`, i }]));
    // The required triples an index narrows (q3's products of one type and one feature) lead: the
    // first one's relation is the star's anchor, and the other triples read only the records of
    // the subjects all of them found (pivotOf): a relation's, or their intersection's.
    const pivots = allValueTriples.filter(({ triple, i }) => triple.optional === undefined && narrowed.get(x)?.has(i));
    const valueTriples = [...pivots, ...allValueTriples.filter((entry) => !pivots.includes(entry))];
    const pivotName = pivots.length === 1 ? pivots[0].name : `pivot${x}`;
    const pivot = pivots.length ? pivotOf(statement, x, pivotName) : undefined;
    // A star of few records, those of one subject or of the pivots' subjects, reads them once
    // (`records<x>`, its rows whole) for every other triple: a statement of a dozen triples each
    // reading the table took longer to plan than to run (q2: 15 to 25 ms of planning at 1M).
    const starRecords = pivot || narrowed.get(x)?.has(SUBJECT) ? `records${x}` : undefined;
    if (narrowed.get(x)?.has(SUBJECT)) subjectOnly.add(x);
    else statement.readsMany = true;
    let starRecordsAdded = false;
    /** The pivots' intersection and the star's records, once the pivots' relations are among the CTEs. */
    const intersected = () => {
      if (!starRecords || starRecordsAdded) return;
      starRecordsAdded = true;
      if (pivots.length > 1) ctes.push(`${pivotName} AS (${pivots.map(({ name }) => `SELECT s FROM ${name}`).join(' INTERSECT ')})`);
      ctes.push(`${starRecords} AS MATERIALIZED (${pivot ? pivot(recordsOf(SUBJECT)) : `SELECT * FROM ${recordsOf(SUBJECT)}`})`);
    };
    const required = valueTriples.filter(({ triple }) => triple.optional === undefined);
    // A star of rdf:type (and OPTIONALs) alone is its table's subjects (every record with a subject has the type).
    const anchor = required.length ? required[0].name : `subjects${x}`;
    if (!required.length) {
      ctes.push(`${anchor} AS (SELECT s, bool_or(odd) AS odd FROM (SELECT ${subject.text} AS s, ${subject.odd} AS odd FROM (SELECT ${keyColumns} FROM ${recordsOf(SUBJECT)} OFFSET 0) r) r
         WHERE s IS NOT NULL GROUP BY s)`);
      oddChecks.push(`(SELECT bool_or(odd) FROM ${anchor})`);
      into.from.push(anchor);
    }
    anchors[x] = `${anchor}.s`;
    columns.set(star.variable, { text: `${anchor}.s` });
    const optionalRelations = new Map<number, Array<{ name: string; variable: string; numeric: boolean }>>();
    for (const entry of valueTriples) {
      const { triple, name, i } = entry;
      const field = source.field(triple.field, params);
      // Records may share a subject here: only this triple's own relation is narrowed by its FILTERs.
      const fromStarRecords = starRecords && !pivots.includes(entry);
      if (fromStarRecords) intersected();
      const tripleRecords = fromStarRecords ? `${starRecords} WHERE true` : recordsOf(i);
      const form = triple.kind === 'link' ? 'key' : triple.datatype === 'xsd:string' ? 'string' : 'typed';
      const top = `(${field.json})`;
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
           SELECT ${keyColumns}, jsonb_typeof(${top}) AS vt, ${field.text} AS vx FROM ${tripleRecords} AND jsonb_typeof(${top}) NOT IN ('null', 'array')
           UNION ALL
           SELECT kt, kx, jsonb_typeof(element.value) AS vt, element.value #>> '{}' AS vx
             FROM (SELECT ${keyColumns}, ${top} AS elements FROM ${tripleRecords} AND jsonb_typeof(${top}) = 'array' OFFSET 0) r
            CROSS JOIN LATERAL jsonb_array_elements(r.elements) AS element(value)
           OFFSET 0) r) r
         WHERE s IS NOT NULL${triple.kind === 'link' ? ' AND o IS NOT NULL' : ''} GROUP BY s, o)`);
      oddChecks.push(`(SELECT bool_or(odd) FROM ${name})`);
      if (triple.optional !== undefined) {
        optionalRelations.set(triple.optional, [...(optionalRelations.get(triple.optional) ?? []), { name, variable: triple.variable, numeric: Boolean(pattern) }]);
        continue;
      }
      into.from.push(name);
      if (name !== anchor) into.on.push(`${name}.s = ${anchor}.s`);
      if (triple.kind === 'link' && triple.joins !== undefined) {
        links.push({ column: `${name}.o`, from: x, star: triple.joins });
        continue;
      }
      columns.set(triple.variable, { text: `${name}.o`, num: pattern ? `${name}.num` : undefined });
    }
    // Every triple a pivot: the oddity check of pivotOf reads the intersection still.
    if (pivots.length > 1) intersected();
    // An OPTIONAL of several triples matches where the subject has all of them: their values' product.
    for (const [group, relations] of optionalRelations) {
      const alias = `optional${x}_${group}`;
      const selected = relations.map((relation, j) => `t${j}.o AS o${j}${relation.numeric ? `, t${j}.num AS n${j}` : ''}`);
      const joined = relations.slice(1).map((relation, j) => ` JOIN ${relation.name} t${j + 1} ON t${j + 1}.s = t0.s`).join('');
      relations.forEach((relation, j) => columns.set(relation.variable, { text: `${alias}.o${j}`, num: relation.numeric ? `${alias}.n${j}` : undefined }));
      joinedOptionals.push({ group, alias, anchor: `${anchor}.s`, relation: `(SELECT t0.s, ${selected.join(', ')} FROM ${relations[0].name} t0${joined})` });
    }
  }
  // A link's object is the star it joins: known once every star has its anchor.
  for (const link of links) (semi.get(link.from) ?? semi.get(link.star) ?? main).on.push(`${link.column} = ${anchors[link.star]}`);
  const columnOf = (name: string) => columns.get(name)!;
  // An OPTIONAL's FILTER is its left join's condition: over the values it would add, and the group's before it.
  const leftJoins = joinedOptionals.map(({ group, relation, alias, anchor }) => {
    const conditions = branch.optionals[group].map((condition) => conditionSql(condition, columnOf, statement));
    return `LEFT JOIN ${relation} ${alias} ON ${[`${alias}.s = ${anchor}`, ...conditions].join(' AND ')}`;
  });
  const scanned = scannedOptionals.map(({ group, present, variables }) => ({ variables, when: [present, ...branch.optionals[group].map((condition) => conditionSql(condition, columnOf, statement))].join(' AND ') }));
  for (const { variables, when } of scanned) {
    for (const { name, column } of variables) columns.set(name, { text: `CASE WHEN ${when} THEN ${column.text} END`, num: column.num && `CASE WHEN ${when} THEN ${column.num} END` });
  }
  // Subqueries: their answers, joined to the group's other places of their variables.
  for (const subquery of branch.subqueries) {
    const name = `subquery${statement.named++}`;
    answerCtes(statement, subquery, name);
    from.push(name);
    subquery.projections.forEach((projection, p) => {
      const kind = projectionKind(projection, (variable) => subquery.variables.find((each) => each.name === variable)!.kind);
      const column = { text: `${name}.p${p}`, num: isNumeric(kind) ? `${name}.q${p}` : undefined };
      const known = columns.get(projection.name);
      if (known) on.push(`${column.text} = ${known.text}`);
      else columns.set(projection.name, column);
    });
  }
  // BINDs, over the columns of the variables before them.
  const odd: string[] = [];
  for (const { variable, expression } of branch.binds) {
    const computed = expressionSql(expression, (name) => columns.get(name)!, statement);
    odd.push(...computed.odd);
    columns.set(variable, computed);
  }
  // VALUES: each row joins the solutions whose values are its terms, once for each time it is there.
  branch.values.forEach((table) => {
    if (!table.rows.length) return void on.push('false');
    const alias = `values${statement.named++}`;
    from.push(`(VALUES ${table.rows.map((row) => `(${row.map((text) => `${params.add(text)}::text`).join(', ')})`).join(', ')}) AS ${alias}(${table.variables.map((_, c) => `c${c}`).join(', ')})`);
    table.variables.forEach((name, c) => on.push(`${alias}.c${c} = ${columnOf(name).text}`));
  });
  for (const condition of branch.filters) ([...semi.values()].find((star) => star.filters.includes(condition)) ?? main).on.push(conditionSql(condition, columnOf, statement));
  for (const star of semi.values()) {
    on.push(`EXISTS (SELECT 1 FROM ${star.from.join(' CROSS JOIN ')} WHERE ${star.on.join(' AND ')})`);
    // Its relations are the EXISTS's alone: its variables are unbound outside it (and read nowhere there).
    for (const name of star.variables) columns.delete(name);
  }
  // MINUS: no solution of its group is compatible with this one and shares a bound variable with it.
  for (const { branch: inner, shared } of branch.minus) {
    const parts = branchParts(statement, inner, new Set(shared.map(({ name }) => name)));
    const compatible = shared.map(({ name, outerNullable, innerNullable }) => {
      const [outer, other] = [columnOf(name).text, parts.columns.get(name)!.text];
      return outerNullable || innerNullable ? `(${outer} IS NULL OR ${other} IS NULL OR ${other} = ${outer})` : `${other} = ${outer}`;
    });
    const overlap = shared.some(({ outerNullable, innerNullable }) => !outerNullable && !innerNullable)
      ? []
      : [`(${shared.map(({ name }) => `(${columnOf(name).text} IS NOT NULL AND ${parts.columns.get(name)!.text} IS NOT NULL)`).join(' OR ')})`];
    on.push(`NOT EXISTS (SELECT 1 FROM ${parts.from} WHERE ${[...parts.where, ...compatible, ...overlap].join(' AND ') || 'true'})`);
  }
  return { columns, from: `${from.join(' CROSS JOIN ')}${leftJoins.map((join) => ` ${join}`).join('')}`, where: on, odd };
}

/** Whether expressionSql may flag a value of this expression (cased text, an IRI's text). */
function mayBeFlagged(expression: Expression): boolean {
  if (expression.op === 'ucase' || expression.op === 'lcase' || (expression.op === 'str' && expression.iri)) return true;
  if ('arg' in expression) return mayBeFlagged(expression.arg);
  return 'args' in expression && expression.args.some(mayBeFlagged);
}

/** A BIND's value: its text (NULL for an error) and, when numeric, its number; `odd`: where SQL's text would not be SPARQL's. */
function expressionSql(expression: Expression, columnOf: (name: string) => Column, statement: Statement): Column & { odd: string[] } {
  const { params } = statement;
  switch (expression.op) {
    case 'variable':
      return { ...columnOf(expression.name), odd: [] };
    case 'constant': {
      const value = params.add(expression.value);
      return { text: `${value}::text`, num: expression.numeric ? `${value}::numeric` : undefined, odd: [] };
    }
    case 'str': {
      const arg = expressionSql(expression.arg, columnOf, statement);
      if (!expression.iri) return { text: arg.text, odd: arg.odd };
      // encodeURIComponent leaves a key of unreserved characters as it is; others are flagged.
      return { text: `(${params.add(expression.iri.before)}::text || ${arg.text} || ${params.add(expression.iri.after)}::text)`, odd: [...arg.odd, `(${arg.text} !~ ${params.add(UNRESERVED_KEY)}::text)`] };
    }
    case 'ucase':
    case 'lcase': {
      // PostgreSQL's C collation cases ASCII only, as JavaScript does there: other text is flagged (one byte a character).
      const arg = expressionSql(expression.arg, columnOf, statement);
      return { text: `${expression.op === 'ucase' ? 'upper' : 'lower'}(${arg.text} COLLATE "C")`, odd: [...arg.odd, `(octet_length(${arg.text}) <> length(${arg.text}))`] };
    }
    case 'strlen': {
      // Characters (UTF-8's code points), as the evaluator counts them.
      const arg = expressionSql(expression.arg, columnOf, statement);
      return { text: `length(${arg.text})::text`, num: `length(${arg.text})::numeric`, odd: arg.odd };
    }
    case 'concat': {
      const args = expression.args.map((arg) => expressionSql(arg, columnOf, statement));
      return { text: args.length ? `(${args.map((arg) => arg.text).join(' || ')})` : `''::text`, odd: args.flatMap((arg) => arg.odd) };
    }
    default: {
      const [a, b] = expression.args.map((arg) => expressionSql(arg, columnOf, statement));
      const num = `(${a.num!} ${expression.op} ${b.num!})`;
      // The canonical form the evaluator writes: no trailing zeros, and a decimal's point (lexicalForm in numeric.ts).
      const digits = `trim_scale(${num})::text`;
      return { text: expression.integer ? digits : `(CASE WHEN strpos(${digits}, '.') > 0 THEN ${digits} ELSE ${digits} || '.0' END)`, num, odd: [...a.odd, ...b.odd] };
    }
  }
}

const SQL_OPERATORS: Record<Extract<Condition, { kind: 'compare' }>['op'], string> = { '<': '<', '<=': '<=', '>': '>', '>=': '>=', '=': '=', '!=': '<>' };

/** xsd:date's lexical space as the evaluator reads it (ontology/sparql-evaluator/date-time.ts): year, month, day, timezone. */
const DATE_LEXICAL = '^(-?[0-9]{4,})-([0-9]{2})-([0-9]{2})(Z|[+-][0-9]{2}:[0-9]{2})?$';

/**
 * An xsd:date value's instant in minutes since the epoch, as the evaluator computes it (a date
 * without a timezone read in UTC), or NULL where the evaluator finds no date: a month or day out
 * of range, a timezone past 14:00, a year of more than four digits led by a zero, or past the
 * range of JavaScript's Date (10^8 days either side of 1970). The days are counted from the
 * proleptic Gregorian year (days_from_civil, as in Howard Hinnant's date algorithms), so no cast
 * that could raise an error runs on a record's text.
 */
function dateMinutes(text: string, params: SqlParams): string {
  const days = `CASE WHEN mo = 2 THEN CASE WHEN y % 4 = 0 AND (y % 100 <> 0 OR y % 400 = 0) THEN 29 ELSE 28 END WHEN mo IN (4, 6, 9, 11) THEN 30 ELSE 31 END`;
  return `(SELECT CASE WHEN abs(epoch_days) <= 100000000 THEN epoch_days * 1440 - zone END
     FROM (SELECT era * 146097 + yoe * 365 + floor(yoe / 4) - floor(yoe / 100) + (153 * ((mo + 9) % 12) + 2) / 5 + d - 1 - 719468 AS epoch_days, zone
       FROM (SELECT *, shifted - era * 400 AS yoe
         FROM (SELECT *, floor(shifted / 400) AS era
           FROM (SELECT y, mo, d, zone, y - CASE WHEN mo <= 2 THEN 1 ELSE 0 END AS shifted
             FROM (SELECT CASE WHEN length(m[1]) <= 8 THEN m[1]::numeric END AS y, m[2]::int AS mo, m[3]::int AS d,
                          CASE WHEN m[4] IS NULL OR m[4] = 'Z' THEN 0
                               WHEN substr(m[4], 2, 2)::int <= 14 AND substr(m[4], 5, 2)::int <= 59 AND NOT (substr(m[4], 2, 2)::int = 14 AND substr(m[4], 5, 2)::int > 0)
                               THEN CASE WHEN left(m[4], 1) = '-' THEN -1 ELSE 1 END * (substr(m[4], 2, 2)::int * 60 + substr(m[4], 5, 2)::int) END AS zone,
                          NOT (length(ltrim(m[1], '-')) > 4 AND left(ltrim(m[1], '-'), 1) = '0') AS year_ok
                     FROM (SELECT regexp_match(${text}, ${params.add(DATE_LEXICAL)}::text) AS m) matched WHERE m IS NOT NULL) parts
            WHERE y IS NOT NULL AND year_ok AND zone IS NOT NULL AND mo BETWEEN 1 AND 12 AND d BETWEEN 1 AND ${days}) shifted) era) yoe) days)`;
}

/** A condition in SQL: true, false, or NULL exactly where SPARQL's is an error. */
function conditionSql(condition: Condition, columnOf: (name: string) => Column, statement: Statement): string {
  const { params } = statement;
  switch (condition.kind) {
    case 'and':
    case 'or':
      return `(${condition.args.map((arg) => conditionSql(arg, columnOf, statement)).join(condition.kind === 'and' ? ' AND ' : ' OR ')})`;
    case 'not':
      return `(NOT ${conditionSql(condition.arg, columnOf, statement)})`;
    case 'bound':
      return `(${columnOf(condition.variable).text} IS NOT NULL)`;
    case 'never':
      return `(CASE WHEN ${columnOf(condition.variable).text} IS NOT NULL THEN ${condition.negated} END)`;
    case 'compare': {
      const column = columnOf(condition.variable);
      if (condition.on === 'number') return `(${column.num!} ${SQL_OPERATORS[condition.op]} ${params.add(condition.value)}::numeric)`;
      if (condition.on === 'date') return `(${dateMinutes(column.text, params)} ${SQL_OPERATORS[condition.op]} ${params.add(condition.value)}::numeric)`;
      if (condition.op !== '=' && condition.op !== '!=') statement.ordersText = true;
      // COLLATE "C": bytes, which in UTF-8 is code point order, SPARQL's (the database's own collation need not be).
      return `((${column.text}) COLLATE "C" ${SQL_OPERATORS[condition.op]} ${params.add(condition.value)}::text)`;
    }
    case 'exists': {
      // Correlated: PostgreSQL runs it as a (anti) semi-join on the shared variables.
      const parts = branchParts(statement, condition.branch, new Set(condition.shared.map(({ name }) => name)));
      const correlated = condition.shared.map(({ name, outerNullable }) => {
        const [outer, inner] = [columnOf(name).text, parts.columns.get(name)!.text];
        return outerNullable ? `(${outer} IS NULL OR ${inner} = ${outer})` : `${inner} = ${outer}`;
      });
      const where = [...parts.where, ...correlated];
      return `(${condition.negated ? 'NOT ' : ''}EXISTS (SELECT 1 FROM ${parts.from}${where.length ? ` WHERE ${where.join(' AND ')}` : ''}))`;
    }
    case 'string': {
      const text = columnOf(condition.variable).text;
      const value = `${params.add(condition.value)}::text`;
      if (condition.test === 'contains') return `(strpos(${text}, ${value}) > 0)`;
      if (condition.test === 'strstarts') return `starts_with(${text}, ${value})`;
      return `(right(${text}, length(${value})) = ${value})`;
    }
  }
}

/** A variable's term from its text: an IRI of its template (the key percent-encoded), or a literal of its datatype. */
function termOf(text: string, kind: Kind): RDF.Term {
  return kind.of === 'iri' ? namedNode(`${kind.before}${encodeURIComponent(text)}${kind.after}`) : literalOf(text, kind.datatype);
}

/** An answer's term as the evaluator's comparisons take it. */
function evaluatorTerm(term: RDF.Term | undefined): EvaluatorTerm | undefined {
  if (!term) return undefined;
  if (term.termType === 'Literal') return new LiteralTerm(term.value, term.datatype.value, term.language);
  return { termType: 'NamedNode', value: term.value };
}

function literalOf(text: string, datatype: string): RDF.Literal {
  if (datatype === 'xsd:string') return literal(text);
  return literal(text, namedNode(datatypeIri(datatype)));
}

/** SUM or AVG as the evaluator writes them (aggregates.ts): the exact total in its type's canonical form; AVG a decimal quotient; both 0 over nothing. */
function totalTerm(sum: string | undefined, count: number, datatype: string, average: boolean): RDF.Literal {
  if (sum === undefined || count === 0) return literal('0', namedNode(XSD_INTEGER));
  const total = parseNumeric(sum, `http://www.w3.org/2001/XMLSchema#${datatype.replace(/^xsd:/, '')}`)!;
  const value = average ? arithmetic('/', total, integer(count))! : total;
  return literal(lexicalForm(value), namedNode(numericTypeIri(value.type)));
}
