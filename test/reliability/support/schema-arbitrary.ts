import fc from 'fast-check';
import type { JsonSchema } from '../../../core/schema-validator';

/**
 * JSON Schema (2020-12, as the OpenAPI document embeds it) → fast-check arbitraries, for the
 * request fuzzer. `validArbitrary` aims at values the schema accepts (best effort: if/then rules,
 * dependentRequired and some pattern/length combinations are not modelled; the fuzzer classifies
 * every value with the server's own validator instead of trusting the generator). `invalidArbitrary`
 * aims at values it refuses: wrong types, missing required fields, extra fields, out-of-range
 * numbers, strings too long, too short, off-pattern or hostile, arrays of the wrong size, deep nesting.
 */
export interface SchemaContext {
  /** The document `$ref`s point into (#/components/schemas/…). */
  root: Record<string, unknown>;
  /** Real ids of the tenant: format uuid strings draw from them half of the time, so valid requests reach past their 404s. */
  uuids?: readonly string[];
  /** Nesting beyond this generates only required properties and minimum items. */
  maxDepth?: number;
}

type Schema = JsonSchema;
type Arb = fc.Arbitrary<unknown>;

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

function pointer(root: Record<string, unknown>, ref: string): Schema {
  if (!ref.startsWith('#/')) throw new Error(`schema-arbitrary: only local $refs are supported, not ${ref}`);
  let node: unknown = root;
  for (const part of ref.slice(2).split('/').map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'))) {
    node = isObject(node) ? node[part] : undefined;
  }
  if (!isObject(node)) throw new Error(`schema-arbitrary: $ref ${ref} does not resolve`);
  return node;
}

/** Two schemas that both apply (allOf parts, a oneOf branch and its parent): properties and required lists merge. */
function merge(a: Schema, b: Schema): Schema {
  return {
    ...a,
    ...b,
    ...(a.properties || b.properties ? { properties: { ...(a.properties as object), ...(b.properties as object) } } : {}),
    ...(a.required || b.required ? { required: [...new Set([...((a.required as string[]) ?? []), ...((b.required as string[]) ?? [])])] } : {}),
  };
}

/** Follows $ref and folds allOf into one schema. */
export function normalize(schema: Schema, ctx: SchemaContext): Schema {
  let s = schema;
  for (let hops = 0; typeof s.$ref === 'string'; hops++) {
    if (hops > 20) throw new Error('schema-arbitrary: $ref cycle');
    const { $ref, ...rest } = s;
    s = merge(pointer(ctx.root, $ref as string), rest);
  }
  if (Array.isArray(s.allOf)) {
    const { allOf, ...rest } = s;
    s = (allOf as Schema[]).reduce<Schema>((acc, part) => merge(acc, normalize(part, ctx)), rest);
  }
  return s;
}

function typesOf(s: Schema): string[] {
  if (Array.isArray(s.type)) return s.type as string[];
  if (typeof s.type === 'string') return [s.type];
  if (s.properties || s.required || s.additionalProperties !== undefined || s.minProperties !== undefined) return ['object'];
  if (s.items || s.minItems !== undefined || s.maxItems !== undefined) return ['array'];
  if (s.pattern || s.format || s.minLength !== undefined || s.maxLength !== undefined) return ['string'];
  if (s.minimum !== undefined || s.maximum !== undefined) return ['number'];
  return [];
}

/** The schema without its oneOf/anyOf (and their discriminator): the part every branch shares. */
function withoutAlternatives(s: Schema): Schema {
  const base = { ...s };
  delete base.oneOf;
  delete base.anyOf;
  delete base.discriminator;
  return base;
}

/* ---------------- valid values ---------------- */

const printable = fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c));
/** Any code point but controls and lone surrogates: one unit is one code point, as JSON Schema counts length. */
const unicodeChar = fc
  .integer({ min: 0xa0, max: 0x10ffff })
  .filter((c) => c < 0xd800 || c > 0xdfff)
  .map((c) => String.fromCodePoint(c));
const textUnit = fc.oneof({ arbitrary: printable, weight: 5 }, { arbitrary: unicodeChar, weight: 1 });

/** Strings known to match patterns fast-check cannot generate from (lookarounds). */
const PATTERN_SAMPLES: Array<[RegExp, string[]]> = [[/^\^P/, ['P1D', 'PT6H', 'P30D', 'P1Y2M3DT4H5M6S', 'PT0.5S']]];

function patternArbitrary(pattern: string): fc.Arbitrary<string> | undefined {
  const sampled = PATTERN_SAMPLES.find(([test]) => test.test(pattern));
  if (sampled) return fc.constantFrom(...sampled[1]);
  if (/\(\?[=!<]/.test(pattern)) return undefined;
  try {
    return fc.stringMatching(new RegExp(pattern));
  } catch {
    return undefined;
  }
}

function validString(s: Schema, ctx: SchemaContext): fc.Arbitrary<string> {
  const uuids = ctx.uuids ?? [];
  switch (s.format) {
    case 'uuid':
      return uuids.length ? fc.oneof(fc.uuid(), fc.constantFrom(...uuids)) : fc.uuid();
    case 'date-time':
      return fc.date({ min: new Date('2000-01-01T00:00:00Z'), max: new Date('2099-12-31T00:00:00Z'), noInvalidDate: true }).map((d) => d.toISOString());
    case 'date':
      return fc.date({ min: new Date('2000-01-01T00:00:00Z'), max: new Date('2099-12-31T00:00:00Z'), noInvalidDate: true }).map((d) => d.toISOString().slice(0, 10));
    case 'uri':
    case 'url':
      return fc.webUrl();
    case 'email':
      return fc.emailAddress();
    default:
      break;
  }
  const min = Number(s.minLength ?? 0);
  const max = Math.min(Number(s.maxLength ?? min + 24), min + 24);
  if (typeof s.pattern === 'string') {
    const matching = patternArbitrary(s.pattern);
    // Length limits cut the matched text: a cut can break the pattern, and the classifier notices.
    if (matching) return matching.map((v) => (v.length > Number(s.maxLength ?? Infinity) ? v.slice(0, Number(s.maxLength)) : v));
    return fc.constant('sample'.padEnd(min, 'x'));
  }
  return fc.string({ unit: textUnit, minLength: min, maxLength: Math.max(min, max) });
}

function validNumber(s: Schema, integer: boolean): fc.Arbitrary<number> {
  const lower = typeof s.minimum === 'number' ? s.minimum : typeof s.exclusiveMinimum === 'number' ? s.exclusiveMinimum + (integer ? 1 : 0) : -1_000_000;
  const upper = typeof s.maximum === 'number' ? s.maximum : typeof s.exclusiveMaximum === 'number' ? s.exclusiveMaximum - (integer ? 1 : 0) : Math.max(lower, 0) + 1_000_000;
  if (integer) return fc.integer({ min: Math.ceil(lower), max: Math.floor(upper) });
  return fc.double({
    min: lower,
    max: upper,
    minExcluded: typeof s.exclusiveMinimum === 'number' && s.minimum === undefined,
    maxExcluded: typeof s.exclusiveMaximum === 'number' && s.maximum === undefined,
    noNaN: true,
    noDefaultInfinity: true,
  }).map((n) => (Object.is(n, -0) ? 0 : n));
}

const anyJson = (depth: number): Arb => fc.jsonValue({ maxDepth: Math.max(0, 2 - depth) });

const identifierKey = fc.stringMatching(/^[a-z][a-z0-9_]{0,11}$/);

function keyArbitrary(s: Schema, ctx: SchemaContext): fc.Arbitrary<string> {
  return isObject(s.propertyNames) ? (validString(normalize(s.propertyNames, ctx), ctx) as fc.Arbitrary<string>) : identifierKey;
}

function validObject(s: Schema, ctx: SchemaContext, depth: number): Arb {
  const properties = (s.properties ?? {}) as Record<string, Schema>;
  const required = ((s.required as string[] | undefined) ?? []).filter((name) => name in properties);
  const deep = depth >= (ctx.maxDepth ?? 6);
  const names = deep ? required : Object.keys(properties);
  const record = fc.record(Object.fromEntries(names.map((name) => [name, validArbitrary(properties[name], ctx, depth + 1)])), { requiredKeys: required });
  const extra = s.additionalProperties;
  const free = Object.keys(properties).length === 0;
  // Extra keys only where the schema names their shape, or for a free-form object (a target, a mapping).
  if (deep || extra === false || (!isObject(extra) && !free)) return record;
  const minKeys = free ? Number(s.minProperties ?? 0) : 0;
  const values = isObject(extra) ? validArbitrary(extra, ctx, depth + 1) : anyJson(depth + 1);
  const extras = fc.dictionary(keyArbitrary(s, ctx), values, { minKeys, maxKeys: Math.max(minKeys, Math.min(3, Number(s.maxProperties ?? 3))) });
  return fc.tuple(record, extras).map(([known, more]) => ({ ...more, ...known }));
}

function validArray(s: Schema, ctx: SchemaContext, depth: number): Arb {
  const items = isObject(s.items) ? s.items : {};
  const min = Number(s.minItems ?? 0);
  const max = depth >= (ctx.maxDepth ?? 6) ? min : Math.min(Number(s.maxItems ?? min + 3), min + 3);
  const item = validArbitrary(items, ctx, depth + 1);
  return s.uniqueItems ? fc.uniqueArray(item, { minLength: min, maxLength: max, selector: (v) => JSON.stringify(v) }) : fc.array(item, { minLength: min, maxLength: max });
}

/** Values the schema (most likely) accepts. */
export function validArbitrary(schema: Schema, ctx: SchemaContext, depth = 0): Arb {
  const s = normalize(schema, ctx);
  if ('const' in s) return fc.constant(s.const);
  if (Array.isArray(s.enum)) return fc.constantFrom(...(s.enum as unknown[]));
  const alternatives = (s.oneOf ?? s.anyOf) as Schema[] | undefined;
  if (Array.isArray(alternatives) && alternatives.length) {
    const base = withoutAlternatives(s);
    return fc.oneof(...alternatives.map((branch) => validArbitrary(merge(base, normalize(branch, ctx)), ctx, depth)));
  }
  const types = typesOf(s);
  if (types.length === 0) return anyJson(depth);
  return fc.oneof(
    ...types.map((type): Arb => {
      switch (type) {
        case 'object': return validObject(s, ctx, depth);
        case 'array': return validArray(s, ctx, depth);
        case 'string': return validString(s, ctx);
        case 'integer': return validNumber(s, true);
        case 'number': return validNumber(s, false);
        case 'boolean': return fc.boolean();
        case 'null': return fc.constant(null);
        default: return anyJson(depth);
      }
    }),
  );
}

/* ---------------- invalid values ---------------- */

/** Strings that have broken parsers, databases and loggers: NUL, lone surrogates, control and bidi characters, injection text. */
export const HOSTILE_STRINGS: readonly string[] = [
  '',
  ' ',
  'a\u0000b',
  '\u0000',
  '\ud800',
  'x\udfffy',
  '\u202e\u0041\u0042',
  '\ufeffbom',
  '\u200b',
  '😀🏳️‍🌈',
  'Ω≈ç√∫',
  '\r\n\t\b\f\v',
  "'; DROP TABLE workspaces; --",
  '" OR 1=1 --',
  '../../../etc/passwd',
  '%00%2e%2e%2f',
  '${jndi:ldap://x}',
  '{{7*7}}',
  '<script>alert(1)</script>',
  '\\',
  '\\u0000',
  '-1',
  '1e309',
  'NaN',
  'null',
  'true',
  '__proto__',
  'constructor',
];

const WRONG_TYPE_VALUES: Array<[string, unknown]> = [
  ['null', null],
  ['boolean', true],
  ['integer', 0],
  ['number', 1.5],
  ['string', 'x'],
  ['array', []],
  ['array', [1, 'a', null]],
  ['object', {}],
  ['object', { nested: { deeper: [] } }],
];

function wrongType(s: Schema): Arb {
  const allowed = new Set(typesOf(s));
  if (allowed.has('number')) allowed.add('integer');
  const candidates = WRONG_TYPE_VALUES.filter(([type]) => allowed.size === 0 ? type !== 'null' : !allowed.has(type)).map(([, value]) => value);
  // A schema without a type accepts every JSON value: only absurd nesting can be wrong.
  return candidates.length ? fc.constantFrom(...candidates) : fc.constant(deeplyNested(300));
}

/** A value nested `levels` arrays or objects deep. */
export function deeplyNested(levels: number, asObject = false): unknown {
  let value: unknown = 1;
  for (let i = 0; i < levels; i++) value = asObject ? { a: value } : [value];
  return value;
}

function invalidString(s: Schema): fc.Arbitrary<string>[] {
  const out: fc.Arbitrary<string>[] = [fc.constantFrom(...HOSTILE_STRINGS)];
  if (typeof s.maxLength === 'number') out.push(fc.constantFrom('x'.repeat(s.maxLength + 1), 'é'.repeat(s.maxLength + 1)));
  if (typeof s.minLength === 'number' && s.minLength > 0) out.push(fc.constant('x'.repeat(s.minLength - 1)));
  // Beyond every declared limit, well under the 1 MB body limit.
  out.push(fc.constant('y'.repeat(100_000)));
  if (typeof s.pattern === 'string') out.push(fc.constantFrom('has space', 'UPPER-CASE-AND-ÜNICODE', '-leading', '1leading-digit', 'trailing\n', 'a/b', '..'));
  if (s.format === 'uuid') out.push(fc.uuid().map((u) => u.toUpperCase()), fc.constantFrom('not-a-uuid', '00000000-0000-0000-0000-00000000000', '{00000000-0000-0000-0000-000000000000}', '00000000000000000000000000000000'));
  if (s.format === 'date-time' || s.format === 'date') out.push(fc.constantFrom('2024-13-45T25:61:61Z', 'yesterday', '2024-02-30', '0000-00-00T00:00:00Z', '+275760-09-13T00:00:00.001Z'));
  if (s.format === 'uri') out.push(fc.constantFrom('not a uri', 'http://', '//evil.com', 'javascript:alert(1)'));
  return out;
}

function invalidNumber(s: Schema, integer: boolean): fc.Arbitrary<unknown>[] {
  const out: fc.Arbitrary<unknown>[] = [fc.constantFrom(1e308, -1e308, Number.MAX_SAFE_INTEGER + 2, -0.000001)];
  if (typeof s.minimum === 'number') out.push(fc.constant(s.minimum - 1));
  if (typeof s.exclusiveMinimum === 'number') out.push(fc.constant(s.exclusiveMinimum));
  if (typeof s.maximum === 'number') out.push(fc.constant(s.maximum + 1));
  if (typeof s.exclusiveMaximum === 'number') out.push(fc.constant(s.exclusiveMaximum));
  if (integer) out.push(fc.constantFrom(0.5, 1.0000001));
  out.push(fc.constantFrom('1', '0x10'));
  return out;
}

/** Values the schema (most likely) refuses: one thing wrong, somewhere in an otherwise valid value. */
export function invalidArbitrary(schema: Schema, ctx: SchemaContext, depth = 0): Arb {
  const s = normalize(schema, ctx);
  const options: Arb[] = [wrongType(s)];
  if (Array.isArray(s.enum)) options.push(fc.constantFrom('not-in-enum', 'UPPER', ''));
  if ('const' in s) options.push(fc.constant(typeof s.const === 'string' ? `${s.const}_not` : 'not-the-const'));
  const alternatives = (s.oneOf ?? s.anyOf) as Schema[] | undefined;
  if (Array.isArray(alternatives) && alternatives.length && depth < 5) {
    const base = withoutAlternatives(s);
    options.push(fc.oneof(...alternatives.map((branch) => invalidArbitrary(merge(base, normalize(branch, ctx)), ctx, depth + 1))));
  }
  const types = new Set(typesOf(s));
  if (types.has('string')) options.push(...invalidString(s));
  if (types.has('integer')) options.push(...invalidNumber(s, true));
  else if (types.has('number')) options.push(...invalidNumber(s, false));
  if (types.has('array')) {
    const items = isObject(s.items) ? s.items : {};
    const valid = validArray(s, ctx, depth);
    if (typeof s.maxItems === 'number' && s.maxItems < 5000) options.push(fc.constant(Array.from({ length: s.maxItems + 1 }, (_, i) => i)));
    if (typeof s.minItems === 'number' && s.minItems > 0) options.push(fc.constant([]));
    if (depth < 5) options.push(fc.tuple(valid, invalidArbitrary(items, ctx, depth + 1)).map(([list, bad]) => [...(list as unknown[]), bad]));
    options.push(fc.constant(deeplyNested(300)));
  }
  if (types.has('object')) {
    const properties = (s.properties ?? {}) as Record<string, Schema>;
    const required = (s.required as string[] | undefined) ?? [];
    const valid = validObject(s, ctx, depth);
    if (required.length) options.push(fc.tuple(valid, fc.constantFrom(...required)).map(([value, name]) => {
      const copy = { ...(value as Record<string, unknown>) };
      delete copy[name];
      return copy;
    }));
    if (s.additionalProperties === false) options.push(valid.map((value) => ({ ...(value as object), unexpectedField: 1 })));
    const names = Object.keys(properties);
    if (names.length && depth < 5) {
      options.push(fc.constantFrom(...names).chain((name) => fc.tuple(valid, invalidArbitrary(properties[name], ctx, depth + 1)).map(([value, bad]) => ({ ...(value as object), [name]: bad }))));
    }
    options.push(valid.map((value) => ({ ...(value as object), nested: deeplyNested(300, true) })));
    options.push(fc.constant(Object.fromEntries(Array.from({ length: 2000 }, (_, i) => [`k${i}`, i]))));
  }
  return fc.oneof(...options);
}
