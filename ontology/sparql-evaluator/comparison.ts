import * as literals from './literal-values';
import * as numerics from './numeric';
import * as terms from './terms';
import type { LiteralTerm, Term } from './terms';

// Imported values bound once (see index.ts: tsx turns every use of an imported name into getter calls).
const { LiteralKind, literalValue } = literals;
const { compareNumerics, numericEquals } = numerics;
const { sameTerm } = terms;

// SPARQL's = and < on terms (the operator table of SPARQL 1.1 §17.3, with language-tagged
// strings equal when value and tag are), and the total order ORDER BY, MIN and MAX use.

/** Strings in Unicode code point order (JS compares UTF-16 code units, which differs above U+FFFF). */
export function compareStrings(a: string, b: string): number {
  const length = Math.min(a.length, b.length);
  for (let i = 0; i < length; i++) {
    let x = a.charCodeAt(i);
    let y = b.charCodeAt(i);
    if (x === y) continue;
    // Surrogates (U+10000 and up) sort after U+E000..U+FFFF in code point order.
    if (x >= 0xd800 && y >= 0xd800) {
      x = x >= 0xe000 ? x - 0x800 : x + 0x2000;
      y = y >= 0xe000 ? y - 0x800 : y + 0x2000;
    }
    return x < y ? -1 : 1;
  }
  return a.length === b.length ? 0 : a.length < b.length ? -1 : 1;
}

/** `a = b`: true, false, or undefined for a type error. */
export function termsEqual(a: Term, b: Term): boolean | undefined {
  if (a.termType !== 'Literal' || b.termType !== 'Literal') return sameTerm(a, b);
  const x = literalValue(a);
  const y = literalValue(b);
  if (x.kind === y.kind) {
    switch (x.kind) {
      case LiteralKind.Numeric:
        return numericEquals(x.numeric!, y.numeric!);
      case LiteralKind.String:
        return a.value === b.value;
      case LiteralKind.LangString:
        return a.value === b.value && a.language === b.language;
      case LiteralKind.Boolean:
        return x.boolean === y.boolean;
      case LiteralKind.DateTime:
      case LiteralKind.Date:
        return x.instant === y.instant;
      default:
    }
  }
  // A string with a language tag and one without are different strings (as Comunica and Oxigraph read it).
  if ((x.kind === LiteralKind.String || x.kind === LiteralKind.LangString) && (y.kind === LiteralKind.String || y.kind === LiteralKind.LangString)) return false;
  // RDFterm-equal: the same term is equal; two other literals cannot be told apart (an error).
  return sameTerm(a, b) ? true : undefined;
}

/**
 * The order `<` defines: negative, zero or positive; NaN when a number is NaN (every comparison
 * is then false); undefined for a type error (operands `<` does not compare).
 */
export function compareForOperator(a: Term, b: Term): number | undefined {
  if (a.termType !== 'Literal' || b.termType !== 'Literal') return undefined;
  const x = literalValue(a);
  const y = literalValue(b);
  if (x.kind !== y.kind) return undefined;
  switch (x.kind) {
    case LiteralKind.Numeric:
      return compareNumerics(x.numeric!, y.numeric!);
    case LiteralKind.String:
      return compareStrings(a.value, b.value);
    case LiteralKind.Boolean:
      return x.boolean === y.boolean ? 0 : x.boolean ? 1 : -1;
    case LiteralKind.DateTime:
    case LiteralKind.Date:
      return x.instant - y.instant;
    default:
      return undefined;
  }
}

const TERM_RANK = { BlankNode: 1, NamedNode: 2, Literal: 3, Opaque: 4 } as const;
/** How ORDER BY sorts literals `<` does not compare with each other. */
const KIND_RANK: Record<literals.LiteralKind, number> = {
  [LiteralKind.Numeric]: 0,
  [LiteralKind.String]: 1,
  [LiteralKind.LangString]: 2,
  [LiteralKind.Boolean]: 3,
  [LiteralKind.DateTime]: 4,
  [LiteralKind.Date]: 5,
  [LiteralKind.Invalid]: 6,
  [LiteralKind.Other]: 6,
};

function orderLiterals(a: LiteralTerm, b: LiteralTerm): number {
  const x = literalValue(a);
  const y = literalValue(b);
  if (x.kind !== y.kind) return KIND_RANK[x.kind] - KIND_RANK[y.kind] || compareStrings(a.datatype, b.datatype);
  if (x.kind === LiteralKind.LangString) return compareStrings(a.value, b.value) || compareStrings(a.language, b.language);
  if (x.kind === LiteralKind.Invalid || x.kind === LiteralKind.Other) return compareStrings(a.datatype, b.datatype) || compareStrings(a.value, b.value);
  const compared = compareForOperator(a, b)!;
  // NaN sorts below every other number.
  if (Number.isNaN(compared)) return Number.isNaN(x.numeric!.number) ? (Number.isNaN(y.numeric!.number) ? 0 : -1) : 1;
  return compared;
}

/**
 * ORDER BY's order (SPARQL 1.1 §15.1): unbound (or an error) first, then blank nodes, IRIs and
 * literals; literals by `<` where it applies, otherwise by kind and datatype, so the order is total.
 */
export function orderTerms(a: Term | undefined, b: Term | undefined): number {
  if (a === undefined || b === undefined) return a === b ? 0 : a === undefined ? -1 : 1;
  if (a.termType !== b.termType) return TERM_RANK[a.termType] - TERM_RANK[b.termType];
  if (a.termType === 'Literal') return orderLiterals(a, b as LiteralTerm);
  return compareStrings(a.value, b.value);
}
