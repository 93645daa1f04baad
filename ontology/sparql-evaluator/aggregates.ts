import type * as Sparql from 'sparqljs';
import * as comparison from './comparison';
import * as literals from './literal-values';
import * as numerics from './numeric';
import type { Numeric } from './numeric';
import type { TermTable } from './term-table';
import * as terms from './terms';
import type { Term } from './terms';
import { UnsupportedQuery } from './unsupported';

// Imported values bound once (see index.ts: tsx turns every use of an imported name into getter calls).
const { orderTerms } = comparison;
const { literalValue } = literals;
const { arithmetic, integer, lexicalForm, NumericType, numericTypeIri, parseNumeric } = numerics;
const { simpleLiteral, typedLiteral } = terms;

// The set functions of SPARQL 1.1 §18.5.1, one accumulator per group and aggregate. A row whose
// expression fails (or is unbound) is left out of the aggregate, as Comunica does; a value the
// function cannot take (a SUM over an IRI) makes the aggregate an error, so it stays unbound.

export interface Accumulator {
  /** A value given by its id (a variable's binding); 0 for unbound. */
  addId(id: number): void;
  /** A computed value; undefined for an error. */
  addTerm(value: Term | undefined): void;
  /** The aggregate's value, or undefined for an error. */
  result(): Term | undefined;
}

const numericTerm = (value: Numeric): Term => typedLiteral(lexicalForm(value), numericTypeIri(value.type));

/** Accumulators that read values as terms: ids are decoded. */
abstract class TermAccumulator implements Accumulator {
  constructor(protected readonly table: TermTable) {}
  addId(id: number): void {
    if (id !== 0) this.addTerm(this.table.term(id));
  }
  abstract addTerm(value: Term | undefined): void;
  abstract result(): Term | undefined;
}

class Count implements Accumulator {
  private count = 0;
  addId(id: number): void {
    if (id !== 0) this.count++;
  }
  addTerm(value: Term | undefined): void {
    if (value !== undefined) this.count++;
  }
  result(): Term {
    return numericTerm(integer(this.count));
  }
}

/** Decimal places of a decimal's lexical form, when summing it as a scaled integer is exact. */
function decimalScale(lexical: string): number {
  const point = lexical.indexOf('.');
  return point < 0 ? 0 : lexical.length - point - 1;
}

const MAX_SCALE = 12;
const POWERS = Array.from({ length: MAX_SCALE + 1 }, (_, i) => 10 ** i);

/**
 * SUM: integers and decimals add up as one integer scaled by a power of ten while that is exact
 * (money-like data, the common case), the rest with decimal.js; floats and doubles as doubles.
 */
class Sum extends TermAccumulator {
  protected count = 0;
  private failed = false;
  private type = NumericType.Integer;
  /** The exact sum so far is scaled / 10^scale, plus `rest`. */
  private scaled = 0;
  private scale = 0;
  private rest: Numeric | undefined;
  /** The sum once a float or double took part. */
  private floating = 0;

  addTerm(value: Term | undefined): void {
    if (value === undefined || this.failed) return;
    const number = value.termType === 'Literal' ? literalValue(value).numeric : undefined;
    if (!number) {
      this.failed = true;
      return;
    }
    this.count++;
    if (number.type >= NumericType.Float || this.type >= NumericType.Float) {
      if (this.type < NumericType.Float) this.floating = this.exactTotal().number;
      this.type = Math.max(this.type, number.type);
      this.floating += number.number;
      if (this.type === NumericType.Float) this.floating = Math.fround(this.floating);
      return;
    }
    this.type = Math.max(this.type, number.type);
    if (!this.addScaled(number, value.value)) this.rest = this.rest ? arithmetic('+', this.rest, number) : number;
  }

  /** Adds to the scaled integer when that stays exact; false when it would not. */
  private addScaled(number: Numeric, lexical: string): boolean {
    if (!number.exact) return false;
    const scale = number.type === NumericType.Integer ? 0 : decimalScale(lexical);
    if (scale > MAX_SCALE) return false;
    const rescaled = scale > this.scale ? this.scaled * POWERS[scale - this.scale] : this.scaled;
    const at = Math.max(scale, this.scale);
    const next = rescaled + Math.round(number.number * POWERS[at]);
    if (!Number.isSafeInteger(rescaled) || !Number.isSafeInteger(next)) return false;
    this.scaled = next;
    this.scale = at;
    return true;
  }

  private exactTotal(): Numeric {
    const type = this.type === NumericType.Integer ? NumericType.Integer : NumericType.Decimal;
    const scaled = parseNumeric(this.scale === 0 ? String(this.scaled) : scaledText(this.scaled, this.scale), numericTypeIri(type))!;
    return this.rest ? arithmetic('+', this.rest, scaled)! : scaled;
  }

  /** The sum, or undefined when a value was not a number. */
  protected sum(): Numeric | undefined {
    if (this.failed) return undefined;
    return this.type >= NumericType.Float ? new numerics.Numeric(this.type, this.floating, false) : this.exactTotal();
  }

  result(): Term | undefined {
    const sum = this.sum();
    return sum && numericTerm(sum);
  }
}

/** A scaled integer as decimal digits: 12345 at scale 2 is 123.45. */
function scaledText(scaled: number, scale: number): string {
  const negative = scaled < 0;
  const digits = String(Math.abs(scaled)).padStart(scale + 1, '0');
  return `${negative ? '-' : ''}${digits.slice(0, digits.length - scale)}.${digits.slice(digits.length - scale)}`;
}

class Average extends Sum {
  override result(): Term | undefined {
    const sum = this.sum();
    if (sum === undefined) return undefined;
    if (this.count === 0) return numericTerm(integer(0));
    const average = arithmetic('/', sum, integer(this.count));
    return average && numericTerm(average);
  }
}

/** MIN and MAX in ORDER BY's total order (so they never fail, whatever the mix of values). */
class Extreme extends TermAccumulator {
  private best: Term | undefined;
  constructor(
    table: TermTable,
    private readonly sign: 1 | -1,
  ) {
    super(table);
  }
  addTerm(value: Term | undefined): void {
    if (value !== undefined && (this.best === undefined || orderTerms(value, this.best) * this.sign < 0)) this.best = value;
  }
  result(): Term | undefined {
    return this.best;
  }
}

class Sample extends TermAccumulator {
  private sample: Term | undefined;
  override addId(id: number): void {
    if (this.sample === undefined && id !== 0) this.sample = this.table.term(id);
  }
  addTerm(value: Term | undefined): void {
    if (this.sample === undefined) this.sample = value;
  }
  result(): Term | undefined {
    return this.sample;
  }
}

class GroupConcat extends TermAccumulator {
  private readonly parts: string[] = [];
  constructor(
    table: TermTable,
    private readonly separator: string,
  ) {
    super(table);
  }
  addTerm(value: Term | undefined): void {
    if (value !== undefined) this.parts.push(value.value);
  }
  result(): Term {
    return simpleLiteral(this.parts.join(this.separator));
  }
}

/** DISTINCT: each value (by id) counts once. */
class Distinct implements Accumulator {
  private readonly seen = new Set<number>();
  constructor(
    private readonly inner: Accumulator,
    private readonly table: TermTable,
  ) {}
  addId(id: number): void {
    if (id === 0 || this.seen.has(id)) return;
    this.seen.add(id);
    this.inner.addId(id);
  }
  addTerm(value: Term | undefined): void {
    if (value !== undefined) this.addId(this.table.idOf(value));
  }
  result(): Term | undefined {
    return this.inner.result();
  }
}

export const SUPPORTED_AGGREGATES: ReadonlySet<string> = new Set(['count', 'sum', 'avg', 'min', 'max', 'sample', 'group_concat']);

/** A new accumulator for an aggregate expression (COUNT(*) is fed one bound value per row by the caller). */
export function accumulatorFor(aggregate: Sparql.AggregateExpression, table: TermTable): Accumulator {
  const name = aggregate.aggregation.toLowerCase();
  let accumulator: Accumulator;
  switch (name) {
    case 'count':
      accumulator = new Count();
      break;
    case 'sum':
      accumulator = new Sum(table);
      break;
    case 'avg':
      accumulator = new Average(table);
      break;
    case 'min':
      accumulator = new Extreme(table, 1);
      break;
    case 'max':
      accumulator = new Extreme(table, -1);
      break;
    case 'sample':
      accumulator = new Sample(table);
      break;
    case 'group_concat':
      accumulator = new GroupConcat(table, aggregate.separator ?? ' ');
      break;
    default:
      throw new UnsupportedQuery(`the aggregate ${name.toUpperCase()}`);
  }
  return aggregate.distinct ? new Distinct(accumulator, table) : accumulator;
}
