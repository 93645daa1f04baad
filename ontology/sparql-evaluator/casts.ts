import * as dateTimes from './date-time';
import * as literals from './literal-values';
import * as numerics from './numeric';
import type { Numeric } from './numeric';
import * as terms from './terms';
import type { Term } from './terms';

// Imported values bound once (see index.ts: tsx turns every use of an imported name into getter calls).
const { parseDateTime } = dateTimes;
const { LiteralKind, literalValue } = literals;
const { convertNumeric, floatDigits, lexicalForm, numericFromString, NumericType, numericTypeIri } = numerics;
const { booleanTerm, simpleLiteral, typedLiteral, XSD, XSD_BOOLEAN, XSD_DATE_TIME, XSD_DECIMAL, XSD_DOUBLE, XSD_FLOAT, XSD_INTEGER, XSD_STRING } = terms;

// XPath constructor functions as SPARQL 1.1 §17.5 allows them: xsd:string, xsd:integer,
// xsd:decimal, xsd:float, xsd:double, xsd:boolean and xsd:dateTime. Undefined is a failed cast.

export const CAST_FUNCTIONS: ReadonlySet<string> = new Set([XSD_STRING, XSD_INTEGER, XSD_DECIMAL, XSD_FLOAT, XSD_DOUBLE, XSD_BOOLEAN, XSD_DATE_TIME]);

const numericTerm = (value: Numeric): Term => typedLiteral(lexicalForm(value), numericTypeIri(value.type));

/** A number as XPath casts it to a string: plain decimal digits between 1e-6 and 1e6, else scientific. */
function numberAsString(value: Numeric): string {
  if (value.type <= NumericType.Decimal) {
    const text = value.type === NumericType.Integer ? lexicalForm(value) : value.decimal().toFixed();
    return text === '-0' ? '0' : text;
  }
  const x = value.number;
  const magnitude = Math.abs(x);
  if (x === 0 || (magnitude >= 1e-6 && magnitude < 1e6)) {
    const digits = value.type === NumericType.Float ? Number(x.toPrecision(floatDigits(x))).toString() : String(x);
    return Object.is(x, -0) ? '-0' : /e/i.test(digits) ? Number(digits).toFixed(20).replace(/\.?0+$/, '') : digits;
  }
  return lexicalForm(value);
}

function toString(term: Term): Term | undefined {
  if (term.termType === 'NamedNode') return simpleLiteral(term.value);
  if (term.termType !== 'Literal') return undefined;
  const value = literalValue(term);
  if (value.kind === LiteralKind.Numeric) return simpleLiteral(numberAsString(value.numeric!));
  if (value.kind === LiteralKind.Boolean) return simpleLiteral(value.boolean ? 'true' : 'false');
  return term.language ? simpleLiteral(term.value) : term.datatype === XSD_STRING ? term : simpleLiteral(term.value);
}

function toNumeric(term: Term, to: numerics.NumericType): Term | undefined {
  if (term.termType !== 'Literal' || term.language) return undefined;
  const value = literalValue(term);
  let result: Numeric | undefined;
  if (value.kind === LiteralKind.Numeric) result = convertNumeric(value.numeric!, to);
  else if (value.kind === LiteralKind.Boolean) result = numericFromString(value.boolean ? '1' : '0', to);
  else if (value.kind === LiteralKind.String) result = numericFromString(term.value, to);
  return result && numericTerm(result);
}

function toBoolean(term: Term): Term | undefined {
  if (term.termType !== 'Literal' || term.language) return undefined;
  const value = literalValue(term);
  if (value.kind === LiteralKind.Boolean) return booleanTerm(value.boolean);
  if (value.kind === LiteralKind.Numeric) return booleanTerm(value.numeric!.number !== 0 && !Number.isNaN(value.numeric!.number));
  if (value.kind !== LiteralKind.String) return undefined;
  const text = term.value;
  return text === 'true' || text === '1' ? booleanTerm(true) : text === 'false' || text === '0' ? booleanTerm(false) : undefined;
}

function toDateTime(term: Term): Term | undefined {
  if (term.termType !== 'Literal' || term.language) return undefined;
  const value = literalValue(term);
  if (value.kind === LiteralKind.DateTime) return term;
  if (value.kind !== LiteralKind.String) return undefined;
  return parseDateTime(term.value) === undefined ? undefined : typedLiteral(term.value, XSD_DATE_TIME);
}

export function cast(to: string, term: Term): Term | undefined {
  switch (to) {
    case XSD_STRING:
      return toString(term);
    case XSD_BOOLEAN:
      return toBoolean(term);
    case XSD_DATE_TIME:
      return toDateTime(term);
    case XSD_INTEGER:
      return toNumeric(term, NumericType.Integer);
    case XSD_DECIMAL:
      return toNumeric(term, NumericType.Decimal);
    case XSD_FLOAT:
      return toNumeric(term, NumericType.Float);
    case XSD_DOUBLE:
      return toNumeric(term, NumericType.Double);
    default:
      throw new Error(`not a cast the evaluator knows: ${to.replace(XSD, 'xsd:')}`);
  }
}
