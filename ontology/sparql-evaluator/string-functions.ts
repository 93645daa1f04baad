import * as literals from './literal-values';
import * as numerics from './numeric';
import * as terms from './terms';
import type { LiteralTerm, Term } from './terms';

// Imported values bound once (see index.ts: tsx turns every use of an imported name into getter calls).
const { LiteralKind, literalValue } = literals;
const { NumericType } = numerics;
const { booleanTerm, isSimpleString, isStringLiteral, langLiteral, simpleLiteral, typedLiteral, XSD_INTEGER } = terms;

// SPARQL 1.1 §17.4.3 string functions. Every function returns undefined for a type error. A
// result keeps its first argument's language tag where the spec says it does.

/** A string with the first argument's language tag (or none). */
const likeArgument = (argument: LiteralTerm, value: string): LiteralTerm => (argument.language ? langLiteral(value, argument.language) : simpleLiteral(value));

const codePoints = (text: string): string[] => Array.from(text);

/** Argument compatibility (§17.4.3.1.1): both plain, or the same language, or the second plain. */
function compatible(a: Term, b: Term): a is LiteralTerm {
  if (!isStringLiteral(a) || !isStringLiteral(b)) return false;
  return b.language === '' || a.language === b.language;
}

export function strlen(argument: Term): Term | undefined {
  if (!isStringLiteral(argument)) return undefined;
  // Code points: a character beyond U+FFFF is two UTF-16 units but one character.
  const text = argument.value;
  let length = text.length;
  for (let i = 0; i < text.length - 1; i++) {
    const unit = text.charCodeAt(i);
    if (unit >= 0xd800 && unit <= 0xdbff) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) length--;
    }
  }
  return typedLiteral(String(length), XSD_INTEGER);
}

export const ucase = (argument: Term): Term | undefined => (isStringLiteral(argument) ? likeArgument(argument, argument.value.toUpperCase()) : undefined);
export const lcase = (argument: Term): Term | undefined => (isStringLiteral(argument) ? likeArgument(argument, argument.value.toLowerCase()) : undefined);

export const strstarts = (a: Term, b: Term): Term | undefined => (compatible(a, b) ? booleanTerm(a.value.startsWith(b.value)) : undefined);
export const strends = (a: Term, b: Term): Term | undefined => (compatible(a, b) ? booleanTerm(a.value.endsWith(b.value)) : undefined);
export const contains = (a: Term, b: Term): Term | undefined => (compatible(a, b) ? booleanTerm(a.value.includes(b.value)) : undefined);

/** STRBEFORE / STRAFTER: an empty simple literal when there is no match, the argument's tag otherwise. */
export function strbefore(a: Term, b: Term): Term | undefined {
  if (!compatible(a, b)) return undefined;
  const at = a.value.indexOf((b as LiteralTerm).value);
  return at < 0 ? simpleLiteral('') : likeArgument(a, a.value.slice(0, at));
}

export function strafter(a: Term, b: Term): Term | undefined {
  if (!compatible(a, b)) return undefined;
  const needle = (b as LiteralTerm).value;
  const at = a.value.indexOf(needle);
  return at < 0 ? simpleLiteral('') : likeArgument(a, a.value.slice(at + needle.length));
}

/** CONCAT: the common language tag when every argument has the same one, else a simple literal. */
export function concat(parts: Term[]): Term | undefined {
  let text = '';
  let language: string | undefined;
  for (const part of parts) {
    if (!isStringLiteral(part)) return undefined;
    text += part.value;
    language = language === undefined ? part.language : language === part.language ? language : '';
  }
  return language ? langLiteral(text, language) : simpleLiteral(text);
}

/** The integer value of an xsd:integer (or derived) argument, for SUBSTR's positions. */
function integerArgument(term: Term): number | undefined {
  if (term.termType !== 'Literal') return undefined;
  const value = literalValue(term);
  return value.kind === LiteralKind.Numeric && value.numeric!.type === NumericType.Integer ? value.numeric!.number : undefined;
}

/** SUBSTR (XPath fn:substring): 1-based code point positions, the characters from start for length. */
export function substr(source: Term, start: Term, length?: Term): Term | undefined {
  if (!isStringLiteral(source)) return undefined;
  const from = integerArgument(start);
  const count = length === undefined ? Infinity : integerArgument(length);
  if (from === undefined || count === undefined) return undefined;
  const chars = codePoints(source.value);
  const first = Math.max(from, 1);
  const end = from + count; // exclusive, 1-based
  return likeArgument(source, chars.slice(first - 1, Math.max(first - 1, end - 1)).join(''));
}

/** ENCODE_FOR_URI: percent-encodes everything but the unreserved characters of RFC 3986. */
export function encodeForUri(argument: Term): Term | undefined {
  if (!isStringLiteral(argument)) return undefined;
  return simpleLiteral(encodeURIComponent(argument.value).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`));
}

/** LANGMATCHES (RFC 4647 basic filtering): '*' matches any tag, else the range or a longer tag starting with it and '-'. */
export function langMatches(tag: Term, range: Term): Term | undefined {
  if (!isSimpleString(tag) || !isSimpleString(range)) return undefined;
  const t = tag.value.toLowerCase();
  const r = range.value.toLowerCase();
  if (r === '*') return booleanTerm(t !== '');
  return booleanTerm(t === r || t.startsWith(`${r}-`));
}

/** REGEX with a pattern compiled beforehand (regex.ts). */
export function regexTest(text: Term, pattern: RegExp): Term | undefined {
  if (!isStringLiteral(text)) return undefined;
  pattern.lastIndex = 0;
  return booleanTerm(pattern.test(text.value));
}
