import { BadRequestError, InputError } from './errors';

/** Deeper JSON than any Weft document needs; bounding it keeps recursive code off the stack limit. */
export const MAX_JSON_DEPTH = 64;

/**
 * Walks a parsed value once: refuses nesting deeper than MAX_JSON_DEPTH and strings or keys with
 * a NUL character (PostgreSQL text and jsonb cannot store one). Iterative, so depth cannot overflow it.
 */
export function checkJsonShape(value: unknown, part: string): void {
  const stack: Array<[unknown, number, string]> = [[value, 0, '']];
  while (stack.length) {
    const [current, depth, path] = stack.pop()!;
    if (depth > MAX_JSON_DEPTH) {
      throw new BadRequestError('too_deeply_nested', `The ${part} nests deeper than ${MAX_JSON_DEPTH} levels.`);
    }
    if (typeof current === 'string') {
      if (current.includes('\u0000')) throw new InputError('invalid_character', `The ${part} contains a NUL character, which cannot be stored.`, [{ path: path || '/', message: 'contains a NUL character' }]);
    } else if (current && typeof current === 'object') {
      for (const [key, inner] of Object.entries(current)) {
        if (key.includes('\u0000')) throw new InputError('invalid_character', `The ${part} has a field name with a NUL character.`, [{ path: path || '/', message: 'has a field name with a NUL character' }]);
        stack.push([inner, depth + 1, `${path}/${key}`]);
      }
    }
  }
}


/** JSON with object keys sorted at every level: equal values give equal text, whatever the key order (request fingerprints). */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    return `{${Object.keys(value).sort().map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`).join(',')}}`;
  }
  return JSON.stringify(value ?? null);
}
