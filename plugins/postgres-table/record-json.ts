import { quoteIdentifier } from '../sql/builder';

// A record of an external table as SQL on its own database can read it: each column's value as
// the JSON of the value readRecords gives JavaScript for it (this capability's type parsers: int8
// and numeric as PostgreSQL's text, pg's defaults otherwise). SQL over these JSON values then
// reads the records the in-memory mapping reads (ontology/term-records.ts mapRecord), whose
// triples' lexical forms are String(value), or JSON.stringify(value) for xsd:string literals.
//
// Type by type (information_schema's names; a domain is its base type, which the driver sees too):
//  - text, character varying, character (blank-padded, as both the driver and to_jsonb give it),
//    uuid: strings; boolean: true and false; smallint, integer: numbers (JavaScript's form).
//  - bigint, numeric, date: the driver gives their text, so the JSON is their text (a string), as
//    the same session's DateStyle writes it for both.
//  - real, double precision: numbers, written by PostgreSQL from the float's text as the driver
//    reads it: the digits JavaScript writes, except where it uses exponent notation, which SQL
//    over the JSON flags (its answer is then not used). NaN and ±Infinity are numbers to
//    JavaScript, which JSON.stringify writes as null: they are made a number SQL flags.
//  - arrays of the types above but numeric and the floats (the driver reads numeric[]'s elements
//    as doubles, and a float array's NaN elements as NaN): JSON arrays of the elements' JSON;
//    bigint[]'s and date[]'s elements are their text, as the driver gives them.
// Every other type has no JSON here, and a binding mapping a column of it is read into the API
// instead: json and jsonb (JavaScript reads their numbers as doubles, so 1.0 is 1 and
// 12345678901234567890 loses digits, while PostgreSQL keeps the stored digits), timestamps (Date
// objects, which the mapping writes as toISOString does, in milliseconds), bytea (Buffer), intervals (objects), numeric[], real[] and
// double precision[], enums and other user-defined types.

const AS_JSON = new Set(['text', 'character varying', 'character', 'uuid', 'boolean', 'smallint', 'integer', 'text[]', 'varchar[]', 'bpchar[]', 'uuid[]', 'bool[]', 'int2[]', 'int4[]']);
const AS_TEXT = new Map([
  ['bigint', 'text'],
  ['numeric', 'text'],
  ['int8[]', 'text[]'],
  ['date', 'text'],
  ['date[]', 'text[]'],
]);
const FLOATS = new Set(['real', 'double precision']);

/**
 * A jsonb expression of the column's value as JavaScript's record holds it (NULL where the value
 * is NULL), or undefined for a column type whose JavaScript value has no such JSON.
 */
export function columnJson(column: string, type: string): string | undefined {
  const name = quoteIdentifier(column);
  if (AS_JSON.has(type)) return `to_jsonb(${name})`;
  const text = AS_TEXT.get(type);
  if (text) return `to_jsonb(${name}::${text})`;
  // 1e100 is written with 101 digits, which JavaScript would write in exponent notation: flagged.
  if (FLOATS.has(type)) return `CASE WHEN ${name} IN ('NaN', 'Infinity', '-Infinity') THEN '1e100'::jsonb ELSE to_jsonb(${name}) END`;
  return undefined;
}
