import Decimal from 'decimal.js';
import * as terms from './terms';

// Imported values bound once (see index.ts: tsx turns every use of an imported name into getter calls).
const { XSD, XSD_DECIMAL, XSD_DOUBLE, XSD_FLOAT, XSD_INTEGER } = terms;

// XSD numerics with SPARQL's type promotion (integer < decimal < float < double). Integers and
// decimals are exact: a JS number carries them while that is exact (the common case, and fast),
// decimal.js otherwise. Floats are doubles rounded to single precision after every operation.

export enum NumericType {
  Integer = 0,
  Decimal = 1,
  Float = 2,
  Double = 3,
}

/** Enough digits that sums and products of realistic decimals stay exact; division rounds to it. */
const Exact = Decimal.clone({ precision: 80, rounding: Decimal.ROUND_HALF_EVEN, toExpNeg: -100, toExpPos: 100 });
type ExactDecimal = InstanceType<typeof Exact>;
/** Significant digits a decimal quotient keeps (XPath leaves it to the implementation; it must be at least 18). */
const QUOTIENT_DIGITS = 24;

/** A lexical form with at most 15 significant digits maps to a distinct double: comparing the numbers compares the values. */
const MAX_EXACT_DIGITS = 15;

export class Numeric {
  private exactValue: ExactDecimal | undefined;

  constructor(
    readonly type: NumericType,
    /** The value as a double (the value itself for float and double). */
    readonly number: number,
    /**
     * Integers and decimals: `number` identifies the value (at most 15 significant digits), so
     * comparing numbers compares values without decimal.js; an exact integer is the value itself.
     */
    readonly exact: boolean,
    /** Integers and decimals: a lexical form or decimal.js value to compute the exact value from. */
    private readonly source?: string | ExactDecimal,
  ) {}

  /** The exact value of an integer or decimal. */
  decimal(): ExactDecimal {
    if (!this.exactValue) this.exactValue = this.source instanceof Exact ? this.source : new Exact(typeof this.source === 'string' ? this.source : this.number);
    return this.exactValue;
  }
}

export const numericTypeIri = (type: NumericType): string => [XSD_INTEGER, XSD_DECIMAL, XSD_FLOAT, XSD_DOUBLE][type];

/** Derived integer types, with their value ranges (bigint bounds; undefined for none). */
const INTEGER_TYPES: Record<string, [bigint | undefined, bigint | undefined]> = {
  integer: [undefined, undefined],
  nonPositiveInteger: [undefined, 0n],
  negativeInteger: [undefined, -1n],
  long: [-(2n ** 63n), 2n ** 63n - 1n],
  int: [-(2n ** 31n), 2n ** 31n - 1n],
  short: [-32768n, 32767n],
  byte: [-128n, 127n],
  nonNegativeInteger: [0n, undefined],
  unsignedLong: [0n, 2n ** 64n - 1n],
  unsignedInt: [0n, 2n ** 32n - 1n],
  unsignedShort: [0n, 65535n],
  unsignedByte: [0n, 255n],
  positiveInteger: [1n, undefined],
};

const INTEGER_LEXICAL = /^[+-]?\d+$/;
const DECIMAL_LEXICAL = /^[+-]?(\d+(\.\d*)?|\.\d+)$/;
const DOUBLE_LEXICAL = /^([+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?|[+-]?INF|NaN)$/;

/** The numeric type of a datatype IRI, or undefined when it is not numeric. */
export function numericTypeOf(datatype: string): NumericType | undefined {
  if (!datatype.startsWith(XSD)) return undefined;
  const local = datatype.slice(XSD.length);
  if (local === 'decimal') return NumericType.Decimal;
  if (local === 'double') return NumericType.Double;
  if (local === 'float') return NumericType.Float;
  return local in INTEGER_TYPES ? NumericType.Integer : undefined;
}

const digitCount = (lexical: string): number => {
  let digits = 0;
  for (let i = 0; i < lexical.length; i++) {
    const c = lexical.charCodeAt(i);
    if (c >= 0x30 && c <= 0x39) digits++;
  }
  return digits;
};

function parseDouble(lexical: string): number {
  if (lexical === 'INF' || lexical === '+INF') return Infinity;
  if (lexical === '-INF') return -Infinity;
  if (lexical === 'NaN') return NaN;
  return Number(lexical);
}

/** The value of a numeric literal, or undefined when its lexical form is not valid for the type. */
export function parseNumeric(lexical: string, datatype: string): Numeric | undefined {
  const type = numericTypeOf(datatype);
  if (type === undefined) return undefined;
  switch (type) {
    case NumericType.Integer: {
      if (!INTEGER_LEXICAL.test(lexical)) return undefined;
      const [min, max] = INTEGER_TYPES[datatype.slice(XSD.length)];
      const exact = digitCount(lexical) <= MAX_EXACT_DIGITS;
      if (min !== undefined || max !== undefined) {
        const value = BigInt(lexical);
        if ((min !== undefined && value < min) || (max !== undefined && value > max)) return undefined;
      }
      return new Numeric(NumericType.Integer, Number(lexical), exact, lexical);
    }
    case NumericType.Decimal:
      if (!DECIMAL_LEXICAL.test(lexical)) return undefined;
      return new Numeric(NumericType.Decimal, Number(lexical), digitCount(lexical) <= MAX_EXACT_DIGITS, lexical.endsWith('.') ? `${lexical}0` : lexical);
    case NumericType.Float:
      if (!DOUBLE_LEXICAL.test(lexical)) return undefined;
      return new Numeric(NumericType.Float, Math.fround(parseDouble(lexical)), false);
    case NumericType.Double:
      if (!DOUBLE_LEXICAL.test(lexical)) return undefined;
      return new Numeric(NumericType.Double, parseDouble(lexical), false);
  }
}

export const integer = (value: number): Numeric => new Numeric(NumericType.Integer, value, true);

function fromExact(type: NumericType.Integer | NumericType.Decimal, value: ExactDecimal): Numeric {
  const number = value.toNumber();
  // Exact as a number when it prints back the same: then later operations can stay on numbers.
  const exact = Number.isFinite(number) && value.sd() <= MAX_EXACT_DIGITS;
  return new Numeric(type, number, exact, value);
}

function floating(type: NumericType, value: number): Numeric {
  return new Numeric(type, type === NumericType.Float ? Math.fround(value) : value, false);
}

type Operator = '+' | '-' | '*' | '/';

/** a op b with type promotion; undefined for an error (integer or decimal division by zero). */
export function arithmetic(operator: Operator, a: Numeric, b: Numeric): Numeric | undefined {
  let type = a.type > b.type ? a.type : b.type;
  if (type >= NumericType.Float) {
    const x = a.number;
    const y = b.number;
    return floating(type, operator === '+' ? x + y : operator === '-' ? x - y : operator === '*' ? x * y : x / y);
  }
  if (operator === '/') {
    if (b.exact ? b.number === 0 : b.decimal().isZero()) return undefined;
    type = NumericType.Decimal;
  }
  if (type === NumericType.Integer && a.exact && b.exact && operator !== '/') {
    // Integers below 1e15 are exact doubles, and so is their sum, difference or product while it stays below 1e15.
    const result = operator === '+' ? a.number + b.number : operator === '-' ? a.number - b.number : a.number * b.number;
    if (Math.abs(result) < 1e15) return new Numeric(type, result, true);
  }
  const x = a.decimal();
  const y = b.decimal();
  switch (operator) {
    case '+':
      return fromExact(type as NumericType.Integer, x.plus(y));
    case '-':
      return fromExact(type as NumericType.Integer, x.minus(y));
    case '*':
      return fromExact(type as NumericType.Integer, x.times(y));
    case '/':
      return fromExact(NumericType.Decimal, x.dividedBy(y).toSignificantDigits(QUOTIENT_DIGITS));
  }
}

export function negate(a: Numeric): Numeric {
  if (a.type >= NumericType.Float) return floating(a.type, -a.number);
  if (a.exact) return new Numeric(a.type, -a.number, true);
  return fromExact(a.type as NumericType.Integer, a.decimal().negated());
}

/** ABS, CEIL, FLOOR and ROUND (XPath: ROUND takes halves toward positive infinity); the type is kept. */
export function rounding(operation: 'abs' | 'ceil' | 'floor' | 'round', a: Numeric): Numeric {
  if (a.type >= NumericType.Float) {
    const x = a.number;
    return floating(a.type, operation === 'abs' ? Math.abs(x) : operation === 'ceil' ? Math.ceil(x) : operation === 'floor' ? Math.floor(x) : Math.round(x));
  }
  if (a.exact && (a.type === NumericType.Integer || operation === 'abs')) return new Numeric(a.type, operation === 'abs' ? Math.abs(a.number) : a.number, true);
  const x = a.decimal();
  const rounded = operation === 'abs' ? x.abs() : operation === 'ceil' ? x.ceil() : operation === 'floor' ? x.floor() : x.toDecimalPlaces(0, Exact.ROUND_HALF_CEIL);
  return fromExact(a.type as NumericType.Integer, rounded);
}

/**
 * -1, 0 or 1; NaN when either is NaN (every comparison with NaN is false). Integers and decimals
 * compare exactly; with a float or double both compare as doubles.
 */
export function compareNumerics(a: Numeric, b: Numeric): number {
  const x = a.number;
  const y = b.number;
  if (x < y) return -1;
  if (x > y) return 1;
  if (x === y) {
    if (a.type >= NumericType.Float || b.type >= NumericType.Float || (a.exact && b.exact)) return 0;
    return a.decimal().comparedTo(b.decimal());
  }
  return NaN;
}

/** Numeric equality: false when either is NaN. */
export const numericEquals = (a: Numeric, b: Numeric): boolean => compareNumerics(a, b) === 0;

// ---------------------------------------------------------------------------------------------
// Canonical lexical forms of computed values

/** XSD canonical double form: one digit before the point, at least one after, an exponent (1.5E2). */
function scientific(value: number, precision?: number): string {
  if (Number.isNaN(value)) return 'NaN';
  if (value === Infinity) return 'INF';
  if (value === -Infinity) return '-INF';
  if (value === 0) return Object.is(value, -0) ? '-0.0E0' : '0.0E0';
  const [mantissa, exponent] = (precision ? value.toExponential(precision - 1) : value.toExponential()).split('e');
  const trimmed = mantissa.includes('.') ? mantissa.replace(/0+$/, '').replace(/\.$/, '.0') : `${mantissa}.0`;
  return `${trimmed}E${Number(exponent)}`;
}

/** The fewest digits that read back as the same single-precision value. */
export function floatDigits(value: number): number {
  for (let digits = 1; digits < 9; digits++) if (Math.fround(Number(value.toPrecision(digits))) === value) return digits;
  return 9;
}

export function lexicalForm(value: Numeric): string {
  switch (value.type) {
    case NumericType.Integer:
      return value.exact ? String(value.number) : value.decimal().toFixed(0);
    case NumericType.Decimal: {
      const text = value.exact ? decimalText(value.number) : value.decimal().toFixed();
      return text.includes('.') ? text : `${text}.0`;
    }
    case NumericType.Float:
      return Number.isFinite(value.number) && value.number !== 0 ? scientific(value.number, floatDigits(value.number)) : scientific(value.number);
    case NumericType.Double:
      return scientific(value.number);
  }
}

/** A number's decimal digits without an exponent (String(1e-7) would give one). */
function decimalText(value: number): string {
  const text = String(value);
  return /e/i.test(text) ? new Exact(value).toFixed() : text;
}

/** Conversions for casts (xsd:integer(), xsd:decimal(), ...); undefined when the value has none (NaN, INF). */
export function convertNumeric(value: Numeric, to: NumericType): Numeric | undefined {
  if (to === value.type) return value;
  if (to >= NumericType.Float) return floating(to, value.number);
  if (!Number.isFinite(value.number)) return undefined;
  if (to === NumericType.Decimal) {
    if (value.type === NumericType.Integer) return value.exact ? new Numeric(NumericType.Decimal, value.number, true) : fromExact(NumericType.Decimal, value.decimal());
    return fromExact(NumericType.Decimal, new Exact(value.number));
  }
  // To integer: truncation toward zero.
  if (value.type >= NumericType.Float) return fromExact(NumericType.Integer, new Exact(value.number).truncated());
  if (value.exact) return new Numeric(NumericType.Integer, Math.trunc(value.number), true);
  return fromExact(NumericType.Integer, value.decimal().truncated());
}

/**
 * Casting from a string: the string must be a lexical form of the type. (XPath would collapse
 * whitespace around it first; Comunica and Oxigraph do not, and Weft keeps their answer.)
 */
export function numericFromString(text: string, to: NumericType): Numeric | undefined {
  return parseNumeric(text, numericTypeIri(to));
}
