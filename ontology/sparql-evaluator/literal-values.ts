import * as dateTimes from './date-time';
import * as numerics from './numeric';
import type { Numeric } from './numeric';
import * as terms from './terms';
import type { LiteralTerm } from './terms';

// Imported values bound once (see index.ts: tsx turns every use of an imported name into getter calls).
const { parseDate, parseDateTime } = dateTimes;
const { numericTypeOf, parseNumeric } = numerics;
const { XSD_BOOLEAN, XSD_DATE, XSD_DATE_TIME, XSD_STRING } = terms;

// What a literal means to SPARQL's operators: its category and, for numbers, booleans and dates,
// its value. Parsed once per literal object (the term table keeps one object per id).

export enum LiteralKind {
  /** Simple literal or xsd:string. */
  String,
  LangString,
  Numeric,
  Boolean,
  DateTime,
  Date,
  /** A datatype the operators know, with a lexical form that is not valid for it ("x"^^xsd:integer). */
  Invalid,
  /** Any other datatype: only identity applies. */
  Other,
}

export class LiteralValue {
  constructor(
    readonly kind: LiteralKind,
    readonly numeric: Numeric | undefined = undefined,
    readonly boolean = false,
    /** DateTime and Date: milliseconds since the epoch. */
    readonly instant = 0,
  ) {}
}

const STRING = new LiteralValue(LiteralKind.String);
const LANG_STRING = new LiteralValue(LiteralKind.LangString);
const INVALID = new LiteralValue(LiteralKind.Invalid);
const OTHER = new LiteralValue(LiteralKind.Other);
const TRUE_VALUE = new LiteralValue(LiteralKind.Boolean, undefined, true);
const FALSE_VALUE = new LiteralValue(LiteralKind.Boolean, undefined, false);

function parse(literal: LiteralTerm): LiteralValue {
  if (literal.language) return LANG_STRING;
  const datatype = literal.datatype;
  if (datatype === XSD_STRING) return STRING;
  if (numericTypeOf(datatype) !== undefined) {
    const numeric = parseNumeric(literal.value, datatype);
    return numeric ? new LiteralValue(LiteralKind.Numeric, numeric) : INVALID;
  }
  if (datatype === XSD_BOOLEAN) {
    const text = literal.value;
    return text === 'true' || text === '1' ? TRUE_VALUE : text === 'false' || text === '0' ? FALSE_VALUE : INVALID;
  }
  if (datatype === XSD_DATE_TIME) {
    const instant = parseDateTime(literal.value);
    return instant === undefined ? INVALID : new LiteralValue(LiteralKind.DateTime, undefined, false, instant);
  }
  if (datatype === XSD_DATE) {
    const instant = parseDate(literal.value);
    return instant === undefined ? INVALID : new LiteralValue(LiteralKind.Date, undefined, false, instant);
  }
  return OTHER;
}

export function literalValue(literal: LiteralTerm): LiteralValue {
  let value = literal.parsed as LiteralValue | undefined;
  if (value === undefined) {
    value = parse(literal);
    literal.parsed = value;
  }
  return value;
}

/** The numeric value of a term, or undefined when it is not a valid numeric literal. */
export function numericOf(literal: LiteralTerm): Numeric | undefined {
  return literalValue(literal).numeric;
}
