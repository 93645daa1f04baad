/**
 * JSON written as text once, where it is made, instead of parsed into objects and written again.
 * A records read's page comes from PostgreSQL as JSON text; parsing its hundred records and
 * serializing them again for the answer was a sixth of the API's CPU per read.
 */

/** An answer that writes its own JSON text: exactly what JSON.stringify writes of it (its toJSON). */
export interface WritesJsonText {
  toJsonText(): string;
}

export const writesJsonText = (value: unknown): value is WritesJsonText =>
  typeof value === 'object' && value !== null && typeof (value as Partial<WritesJsonText>).toJsonText === 'function';

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COLON = 0x3a;
const MINUS = 0x2d;
const ZERO = 0x30;
const NINE = 0x39;

const isWhitespace = (code: number) => code === 0x20 || code === 0x0a || code === 0x0d || code === 0x09;
const isNumberPart = (code: number) => (code >= ZERO && code <= NINE) || code === 0x2e || code === 0x65 || code === 0x45 || code === 0x2b || code === MINUS;

/** The quote that ends the string whose opening quote is at `open`. */
function stringEnd(text: string, open: number): number {
  let end = text.indexOf('"', open + 1);
  for (;;) {
    let backslashes = 0;
    while (text.charCodeAt(end - 1 - backslashes) === BACKSLASH) backslashes++;
    if (backslashes % 2 === 0) return end;
    end = text.indexOf('"', end + 1);
  }
}

/** A property name JavaScript treats as an array index (canonical, below 2^32 - 1): objects list those first. */
function isArrayIndex(name: string): boolean {
  if (!/^(?:0|[1-9][0-9]{0,9})$/.test(name)) return false;
  return Number(name) < 4294967295;
}

/**
 * PostgreSQL's text of a json value built from jsonb (jsonb's output, json_agg of jsonb) as
 * JSON.stringify(JSON.parse(text)) writes it, without building the objects: the same bytes, so an
 * answer passed through is the answer it was. PostgreSQL writes a space after each `:` and `,` and
 * numbers as stored (`1.50`, `12345678901234567890`, `0.0000001`); JavaScript writes neither the
 * spaces nor those digits (1.5, 12345678901234567000, 1e-7). Strings need nothing: both escape the
 * same characters the same way. Keys keep their order, except that JavaScript lists array-index
 * keys ("0", "17") first: text with such a key is parsed and written again instead.
 *
 * Only for text PostgreSQL wrote from json or jsonb values (well-formed, no NaN or Infinity).
 */
export function postgresJsonAsJavaScript(text: string): string {
  let out = '';
  let pending = 0;
  let i = 0;
  const length = text.length;
  while (i < length) {
    const code = text.charCodeAt(i);
    if (code === QUOTE) {
      const end = stringEnd(text, i);
      const first = text.charCodeAt(i + 1);
      if (first >= ZERO && first <= NINE) {
        let next = end + 1;
        while (isWhitespace(text.charCodeAt(next))) next++;
        if (text.charCodeAt(next) === COLON && isArrayIndex(text.slice(i + 1, end))) return JSON.stringify(JSON.parse(text));
      }
      i = end + 1;
    } else if (isWhitespace(code)) {
      out += text.slice(pending, i);
      while (isWhitespace(text.charCodeAt(++i)));
      pending = i;
    } else if (code === MINUS || (code >= ZERO && code <= NINE)) {
      let end = i + 1;
      while (end < length && isNumberPart(text.charCodeAt(end))) end++;
      const written = text.slice(i, end);
      const number = JSON.stringify(Number(written));
      if (number !== written) {
        out += text.slice(pending, i) + number;
        pending = end;
      }
      i = end;
    } else {
      i++;
    }
  }
  return out + text.slice(pending);
}
