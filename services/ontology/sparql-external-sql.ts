import type { BindingMapping } from '../../db/models';
import { bindingFields } from '../../ontology/term-records';
import { callerGoneError, timeoutError } from '../../ontology/sparql-evaluator/deadline';
import type { SparqlResult } from '../../ontology/sparql-engine';
import type { CapabilityContext } from '../../plugins/capability';
import { readingRemote, RemoteReads } from '../../plugins/postgres-table';
import { columnJson } from '../../plugins/postgres-table/record-json';
import { quoteIdentifier, SqlParams } from '../../plugins/sql/builder';
import { NarrowedTest, runSqlOver, SqlQuery, SqlSource } from './sparql-in-sql';
import type { Condition, ExternalRecords, FieldTests } from './sparql-reach-reads';

// SPARQL over bindings of postgres_table endpoints of one installation, answered by the
// installation's own PostgreSQL with the statement sparql-in-sql.ts makes for managed tables: each
// bound table is a relation whose records' fields are the JSON of the values the driver gives
// (record-json.ts), so the answer is the one the in-memory mapping of the same rows gives. The
// tables are read as they are when the statement runs (they have no snapshots): answers are live,
// not repeatable. The statement runs in a read-only transaction and defines nothing there.

/** The functions the statement uses (trim_scale) are PostgreSQL 13's; an older server's tables are read into the API. */
const MIN_SERVER_VERSION = 130_000;

export interface ExternalTable {
  target: Record<string, unknown>;
  mapping: BindingMapping;
}

/**
 * The query's answer over `tables` (in the order of the query's sources; undefined for a source no
 * star of the query reads), from the installation's
 * database; undefined where SQL cannot give the in-memory mapping's answer (a mapped column of a
 * type record-json.ts has no JSON for, a value SQL writes otherwise than JavaScript, an older
 * server) or the tables are estimated under `minRecords` (the evaluator answers those faster).
 */
export async function answerOnInstallation(ctx: CapabilityContext, query: SqlQuery, tables: Array<ExternalTable | undefined>, limits: { timeoutMs: number; signal?: AbortSignal; minRecords: number }): Promise<SparqlResult | undefined> {
  const { timeoutMs, signal, minRecords } = limits;
  return readingRemote(ctx, { timeoutMs, signal, stopped: (callerGone) => (callerGone ? callerGoneError() : timeoutError(timeoutMs)) }, async (reads) => {
    const [{ version }] = await reads.query<{ version: number }>(`SELECT current_setting('server_version_num')::int AS version`, []);
    if (version < MIN_SERVER_VERSION) return undefined;
    const sources: SqlSource[] = [];
    const relations: string[] = [];
    for (const [at, table] of tables.entries()) {
      if (!table) continue;
      const source = await externalSource(reads, table.target, table.mapping);
      if (!source) return undefined;
      sources[at] = source.source;
      relations.push(source.relation);
    }
    if (minRecords > 0 && (await estimatedRows(reads, relations)) < minRecords) return undefined;
    try {
      return await runSqlOver((sql, params) => reads.query(sql, params.values), query, sources);
    } catch (error) {
      if (error instanceof FieldWithoutJson) return undefined;
      throw error;
    }
  });
}

/** A field the statement would read has no JSON here: the query is answered in the API instead (thrown before any statement runs). */
class FieldWithoutJson extends Error {}

/**
 * A bound table as the statement reads it, or undefined when a field of the mapping is no column.
 * A column of a type with no JSON here (jsonb, timestamps) stops only the statements that read it
 * (FieldWithoutJson), so one such column does not send every query over its binding to the API.
 */
export async function externalSource(reads: RemoteReads, target: Record<string, unknown>, mapping: BindingMapping): Promise<{ source: SqlSource; relation: string } | undefined> {
  const table = await reads.describe(target);
  const fields = new Map<string, string | undefined>();
  for (const field of bindingFields(mapping)) {
    const column = table.columns.get(field);
    if (!column) return undefined;
    fields.set(field, columnJson(field, column.type));
  }
  return {
    relation: table.sql,
    source: {
      records: () => `${table.sql} WHERE true`,
      field: (name) => {
        const json = fields.get(name);
        if (!json) throw new FieldWithoutJson(`${name} has no JSON the mapping writes`);
        return { json, text: `(${json}) #>> '{}'` };
      },
      primaryKey: table.primaryKey.length ? table.primaryKey : undefined,
      narrowing: (name, test, params) => columnNarrowing(name, table.columns.get(name)?.type, test, params),
    },
  };
}

const INTEGER_COLUMNS = new Set(['smallint', 'integer', 'bigint']);
const TEXT_COLUMNS = new Set(['text', 'character varying']);
const INT8_RANGE = [-(2n ** 63n), 2n ** 63n - 1n];

/**
 * A FILTER's comparison as a condition on the column itself, which an index on it serves: what
 * every row whose value passes the comparison meets (the FILTER still decides). A number of an
 * integer or decimal property on an integer or numeric column (whose value is the number its
 * lexical form gives; NaN passes the condition and fails the FILTER); a string's equality on a
 * text column (equal texts are equal under any collation). Floats, other types and text order
 * (code points, not the column's collation) are not narrowed.
 */
function columnNarrowing(column: string, type: string | undefined, test: NarrowedTest, params: SqlParams): string | undefined {
  const name = quoteIdentifier(column);
  // A key in an IRI (a link's, a constant subject's): a text column's value is its text, an integer column's its digits.
  if (test.datatype === 'iri') {
    if (test.op !== '=' || !type) return undefined;
    if (TEXT_COLUMNS.has(type)) return `${name} = ${params.add(test.value)}::text`;
    if (!INTEGER_COLUMNS.has(type) || !/^-?[0-9]{1,19}$/.test(test.value)) return undefined;
    const key = BigInt(test.value);
    return key < INT8_RANGE[0] || key > INT8_RANGE[1] ? 'false' : `${name} = ${params.add(key.toString())}::bigint`;
  }
  if (test.on === 'text') return test.op === '=' && type && TEXT_COLUMNS.has(type) && test.datatype === 'xsd:string' ? `${name} = ${params.add(test.value)}::text` : undefined;
  if (test.datatype !== 'xsd:integer' && test.datatype !== 'xsd:decimal') return undefined;
  if (type === 'numeric') return `${name} ${test.op} ${params.add(test.value)}::numeric`;
  if (!type || !INTEGER_COLUMNS.has(type)) return undefined;
  // Compared with a bigint, so the column's own (integer) index serves it: a fraction is rounded the way that keeps every integer passing (>= 2.5 as >= 2).
  const bound = integerBound(test);
  if (bound === undefined || bound < INT8_RANGE[0] || bound > INT8_RANGE[1]) return undefined;
  return `${name} ${test.op} ${params.add(bound.toString())}::bigint`;
}

/** The integer an integer column is compared with for this comparison: the constant, or for a fraction its floor (above it) or ceiling (below it). */
function integerBound(test: NarrowedTest): bigint | undefined {
  const match = /^([+-]?)([0-9]*)(?:[.]([0-9]*))?$/.exec(test.value);
  if (!match) return undefined;
  const [, sign, whole, fraction = ''] = match;
  const truncated = BigInt(`${sign}${whole || '0'}`);
  if (!/[1-9]/.test(fraction)) return truncated;
  // An integer equals no fraction (the FILTER keeps no row): left to the FILTER.
  if (test.op === '=') return undefined;
  const negative = sign === '-';
  const floor = negative ? truncated - 1n : truncated;
  return test.op === '>' || test.op === '>=' ? floor : floor + 1n;
}

/** The rows PostgreSQL estimates the tables hold, or Infinity when one was never analysed or is a view. */
async function estimatedRows(reads: RemoteReads, relations: string[]): Promise<number> {
  const rows = await reads.query<{ kind: string; estimate: number }>(`SELECT c.relkind AS kind, c.reltuples::float8 AS estimate FROM unnest($1::text[]) AS r(name) JOIN pg_class c ON c.oid = to_regclass(r.name)`, [relations]);
  if (rows.length < relations.length || rows.some((row) => !['r', 'p', 'm'].includes(row.kind) || row.estimate < 0)) return Infinity;
  return rows.reduce((sum, row) => sum + row.estimate, 0);
}

/** Element types whose values the driver gives as strings (their text), numbers of integers, or booleans. */
const TEXT_VALUES = new Set(['text', 'character varying', 'varchar', 'uuid', 'date']);
const INTEGER_VALUES = new Set(['smallint', 'integer', 'bigint', 'int2', 'int4', 'int8']);
const BOOLEAN_VALUES = new Set(['boolean', 'bool']);
const INTEGER_TEXT = /^-?(0|[1-9][0-9]*)$/;
const NUMERIC_TEXT = /^(-?([0-9]+([.][0-9]*)?|[.][0-9]+)|NaN|-?Infinity)$/;
/** Columns a bound's comparison reads exactly: the number of the literal the mapping writes is the column's value. */
const EXACT_NUMBERS = new Set(['smallint', 'integer', 'bigint', 'numeric']);

/**
 * The records of a bound table of this installation as the per-query table reads find them
 * (sparql-reach-reads.ts): conditions on the columns that keep every row whose value can show as
 * a text the query looks for (as String() of the value the driver gives, which is what the
 * mapping writes), read in the query's session on this database. Types whose text SQL cannot
 * match exactly (blank-padded character, floats, json, timestamps, arrays of those) narrow
 * nothing: the evaluator judges their rows. Undefined fields are no columns: no row
 * holds a value there.
 */
export async function externalRecords(reads: RemoteReads, target: Record<string, unknown>, mapping: BindingMapping): Promise<ExternalRecords> {
  const table = await reads.describe(target);
  const fields = bindingFields(mapping).filter((field) => table.columns.has(field));
  const tests: FieldTests = {
    holds(field, texts, _shown, params) {
      const column = table.columns.get(field);
      if (!column) return false;
      return columnHolds(quoteIdentifier(field), column.type, texts, params);
    },
    present: (field) => (table.columns.has(field) ? `${quoteIdentifier(field)} IS NOT NULL` : false),
    withinBounds(field, bounds, params) {
      const column = table.columns.get(field);
      if (!column) return false;
      if (!EXACT_NUMBERS.has(column.type)) return true;
      // A NULL yields no triple; NaN (numeric) fails every bound but > as the evaluator's error does.
      return bounds.map((bound) => `${quoteIdentifier(field)} ${bound.op} ${params.add(bound.value)}::numeric`).join(' AND ');
    },
  };
  return {
    tests,
    async read(condition, params, limit) {
      const rows = await reads.query(`SELECT ${fields.map(quoteIdentifier).join(', ')} FROM ${table.sql} WHERE ${condition === true ? 'true' : `(${condition})`} LIMIT ${params.add(limit)}`, params.values);
      // Rows equal in every mapped field yield the same triples: one of them is enough.
      // NaN and ±Infinity are kept apart from NULL (JSON writes all three as null).
      return rows.map((data) => ({ key: JSON.stringify(fields.map((field) => data[field]), (_, value) => (typeof value === 'number' && !Number.isFinite(value) ? { number: String(value) } : value)), data }));
    },
    async holdsMoreThan(count) {
      const params = new SqlParams();
      const [row] = await reads.query(`SELECT count(*) > ${params.add(count)} AS more FROM (SELECT 1 FROM ${table.sql} LIMIT ${params.add(count + 1)}) AS counted`, params.values);
      return row.more === true;
    },
  };
}

/** Rows whose column (or an element of its array) shows as one of `texts`; true where SQL cannot tell. */
function columnHolds(name: string, type: string, texts: string[], params: SqlParams): Condition {
  const array = type.endsWith('[]');
  const element = array ? type.slice(0, -2) : type;
  // A NULL element shows as "null", a nested (multidimensional) array's element as "1,2" (or as JSON, "[1]", under xsd:string).
  if (array && texts.some((text) => text === 'null' || text.includes(',') || text.startsWith('['))) return true;
  let values: string[];
  let cast: string;
  if (TEXT_VALUES.has(element)) [values, cast] = [texts, 'text'];
  else if (INTEGER_VALUES.has(element)) [values, cast] = [texts.filter((text) => INTEGER_TEXT.test(text) && BigInt(text) >= INT8_RANGE[0] && BigInt(text) <= INT8_RANGE[1]), 'bigint'];
  else if (BOOLEAN_VALUES.has(element)) [values, cast] = [texts.filter((text) => text === 'true' || text === 'false'), 'boolean'];
  else if (!array && element === 'numeric') [values, cast] = [texts.filter((text) => NUMERIC_TEXT.test(text)), 'numeric'];
  // Floats narrow nothing: the value the driver gets depends on the session's extra_float_digits, and NaN shows as "null" under xsd:string.
  else return true;
  if (!values.length) return false;
  const param = `${params.add(values)}::${cast}[]`;
  if (array) return `${name}::${cast}[] && ${param}`;
  // Text and integer columns compared as themselves, so an index on the column serves it.
  return cast === 'text' && element !== 'text' && element !== 'character varying' ? `${name}::text = ANY (${param})` : `${name} = ANY (${param})`;
}
