import { randomUUID } from 'node:crypto';

/** A JSON Schema as route declarations and the OpenAPI document carry them. */
export type SampleSchema = Record<string, any>;

/** Where `$ref`s point: the OpenAPI document's component schemas. */
export interface SchemaComponents {
  components?: { schemas?: Record<string, SampleSchema> };
}

let counter = 0;

function sampleString(schema: SampleSchema): string {
  counter += 1;
  switch (schema.format) {
    case 'uuid': return randomUUID();
    case 'date-time': return new Date(Date.now() + 86_400_000).toISOString();
    case 'date': return '2030-01-01';
    case 'uri': case 'url': return 'https://example.com/sample';
    case 'email': return 'someone@example.com';
    case 'duration': return 'P1D';
    default: break;
  }
  const min = Number(schema.minLength ?? 0);
  const max = Number(schema.maxLength ?? 200);
  const pattern = typeof schema.pattern === 'string' ? new RegExp(schema.pattern, 'u') : undefined;
  const candidates = [`sample${counter}`, `sample_${counter}`, `sample-${counter}`, `s${counter}`, `S${counter}`, String(counter), 'a', 'sample.name'];
  const fitted = candidates.map((c) => c.padEnd(min, 'x').slice(0, max));
  return fitted.find((c) => !pattern || pattern.test(c)) ?? fitted[0];
}

/**
 * A minimal value that satisfies a JSON Schema: required properties, minimum items and lengths,
 * each string unique in the process (names must not collide). `$ref`s resolve against `doc`.
 */
export function sampleValue(schema: SampleSchema, doc?: SchemaComponents): unknown {
  if (typeof schema.$ref === 'string') return sampleValue(doc?.components?.schemas?.[schema.$ref.replace('#/components/schemas/', '')] ?? {}, doc);
  if (schema.const !== undefined) return schema.const;
  if (schema.default !== undefined && schema.type !== 'object') return schema.default;
  if (Array.isArray(schema.enum)) return schema.enum[0];
  for (const keyword of ['oneOf', 'anyOf', 'allOf'] as const) {
    const alternatives = schema[keyword] as SampleSchema[] | undefined;
    if (!Array.isArray(alternatives) || alternatives.length === 0) continue;
    const rest = { ...schema };
    delete rest[keyword];
    // allOf's if/then parts constrain, they add no properties of their own.
    const parts = keyword === 'allOf' ? alternatives.filter((p) => !p.if) : [alternatives[0]];
    const merged = parts.reduce<SampleSchema>((acc, part) => ({
      ...acc,
      ...part,
      properties: { ...acc.properties, ...part.properties },
      required: [...(acc.required ?? []), ...(part.required ?? [])],
    }), rest);
    return sampleValue(merged, doc);
  }
  const types = Array.isArray(schema.type) ? schema.type : [schema.type ?? (schema.properties ? 'object' : undefined)];
  const type = types.find((t: string) => t !== 'null') ?? types[0];
  switch (type) {
    case 'object': {
      const properties = (schema.properties ?? {}) as Record<string, SampleSchema>;
      const out: Record<string, unknown> = {};
      for (const name of (schema.required as string[] | undefined) ?? []) out[name] = properties[name] ? sampleValue(properties[name], doc) : 'sample';
      for (const name of Object.keys(properties)) {
        if (Object.keys(out).length >= Number(schema.minProperties ?? 0)) break;
        if (!(name in out)) out[name] = sampleValue(properties[name], doc);
      }
      const extra = schema.additionalProperties;
      while (extra !== false && Object.keys(out).length < Number(schema.minProperties ?? 0)) {
        out[`sample${Object.keys(out).length}`] = typeof extra === 'object' && extra ? sampleValue(extra, doc) : 'sample';
      }
      return out;
    }
    case 'array':
      return Array.from({ length: Number(schema.minItems ?? 0) }, () => sampleValue(schema.items ?? {}, doc));
    case 'string':
      return sampleString(schema);
    case 'integer':
    case 'number':
      return schema.minimum ?? (typeof schema.exclusiveMinimum === 'number' ? schema.exclusiveMinimum + 1 : 1);
    case 'boolean':
      return false;
    case 'null':
      return null;
    default:
      return {};
  }
}
