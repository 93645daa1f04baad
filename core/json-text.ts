/**
 * JSON written once, where it is made, instead of parsed into objects and written again. A records
 * read's page comes from PostgreSQL as JSON text; parsing its hundred records and serializing them
 * again for the answer was a sixth of the API's CPU per read.
 */

/** An answer that writes its own JSON (UTF-8): exactly the bytes of JSON.stringify of it (its toJSON). */
export interface WritesJson {
  toJsonBytes(): Buffer;
}

export const writesJson = (value: unknown): value is WritesJson =>
  typeof value === 'object' && value !== null && typeof (value as Partial<WritesJson>).toJsonBytes === 'function';

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COLON = 0x3a;
const MINUS = 0x2d;
const DOT = 0x2e;
const ZERO = 0x30;
const NINE = 0x39;

const isWhitespace = (byte: number) => byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09;
const isDigit = (byte: number) => byte >= ZERO && byte <= NINE;

/**
 * Does JavaScript write this number (bytes from..to, as PostgreSQL's numeric wrote it: digits, an
 * optional sign and fraction, never an exponent) with the same characters? Yes for at most 15
 * digits (any such decimal is the shortest text of its double) without a fraction ending in 0, and
 * for neither -0 nor a magnitude below 1e-6 (written with an exponent). Other numbers answer no,
 * also some JavaScript would write the same: the caller then parses.
 */
function writtenAlike(bytes: Uint8Array, from: number, to: number): boolean {
  const start = bytes[from] === MINUS ? from + 1 : from;
  let digits = 0;
  let dot = -1;
  for (let i = start; i < to; i++) {
    if (isDigit(bytes[i])) digits++;
    else if (bytes[i] === DOT && dot < 0) dot = i;
    else return false;
  }
  if (digits === 0 || digits > 15) return false;
  if (bytes[start] === ZERO && dot !== start + 1 && to - start > 1) return false;
  if (dot < 0) return !(start > from && to - start === 1 && bytes[start] === ZERO);
  if (dot === to - 1 || bytes[to - 1] === ZERO) return false;
  // 0.000000x (below 1e-6): six zeros after the point.
  if (bytes[start] === ZERO) {
    let zeros = 0;
    while (bytes[dot + 1 + zeros] === ZERO) zeros++;
    if (zeros >= 6) return false;
  }
  return true;
}

/**
 * Compacts PostgreSQL's JSON text (UTF-8, in place) to what JSON.stringify(JSON.parse(text)) writes;
 * the new length, or undefined where it cannot promise the same bytes: a number JavaScript may
 * write otherwise (writtenAlike), or a key of digits (JavaScript lists array-index keys first).
 */
function compactInPlace(bytes: Uint8Array): number | undefined {
  const length = bytes.length;
  let out = 0;
  let i = 0;
  while (i < length) {
    const byte = bytes[i];
    if (byte === QUOTE) {
      // A string, copied as it is: both escape the same characters the same way.
      let digitsOnly = true;
      bytes[out++] = byte;
      i++;
      for (;;) {
        if (i >= length) return undefined;
        const inner = bytes[i++];
        bytes[out++] = inner;
        if (inner === QUOTE) break;
        if (inner === BACKSLASH) {
          bytes[out++] = bytes[i++];
          digitsOnly = false;
        } else if (!isDigit(inner)) digitsOnly = false;
      }
      if (digitsOnly && bytes[out - 2] !== QUOTE) {
        let next = i;
        while (isWhitespace(bytes[next])) next++;
        if (bytes[next] === COLON) return undefined;
      }
    } else if (isWhitespace(byte)) {
      i++;
    } else if (byte === MINUS || isDigit(byte)) {
      const start = i;
      while (i < length && (isDigit(bytes[i]) || bytes[i] === DOT || bytes[i] === MINUS || bytes[i] === 0x2b || bytes[i] === 0x65 || bytes[i] === 0x45)) i++;
      if (!writtenAlike(bytes, start, i)) return undefined;
      for (let k = start; k < i; k++) bytes[out++] = bytes[k];
    } else {
      bytes[out++] = byte;
      i++;
    }
  }
  return out;
}

/**
 * PostgreSQL's text of a json value built from jsonb (jsonb's output, json_agg of jsonb) as the
 * UTF-8 bytes of JSON.stringify(JSON.parse(text)), mostly without building the objects: an answer
 * passed through is the answer it was. PostgreSQL writes a space after each `:` and `,`, which are
 * dropped; strings, keys in their order and most numbers are written alike. Text with a number or
 * key JavaScript may write otherwise (compactInPlace) is parsed and written again.
 *
 * Only for text PostgreSQL wrote from json or jsonb values (well-formed, no NaN or Infinity).
 */
export function postgresJsonBytes(text: string): Buffer {
  return compactPostgresJson(text) ?? Buffer.from(JSON.stringify(JSON.parse(text)), 'utf8');
}

/** postgresJsonBytes without the parse: undefined for text with a number or key JavaScript may write otherwise. */
export function compactPostgresJson(text: string): Buffer | undefined {
  const bytes = Buffer.from(text, 'utf8');
  const length = compactInPlace(bytes);
  return length === undefined ? undefined : bytes.subarray(0, length);
}
