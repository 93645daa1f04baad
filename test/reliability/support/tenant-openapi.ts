import { randomUUID } from 'node:crypto';
import { request } from '../../support/fixtures';

/**
 * The operations of the running service's OpenAPI document (GET /api/v1/openapi.json), so sweeps
 * cover routes added later without being told, and minimal schema-valid samples for their
 * required query parameters and bodies (the same idea as the authorization matrix's builder).
 */
export type Schema = Record<string, any>;

export interface Operation {
  method: string;
  /** OpenAPI path: /api/v1/projects/{project_id} */
  path: string;
  operationId: string;
  pathParams: Array<{ name: string; schema: Schema }>;
  requiredQuery: Array<{ name: string; schema: Schema }>;
  queryParams: Array<{ name: string; schema: Schema }>;
  /** Takes an Idempotency-Key header. */
  idempotent: boolean;
  /** JSON body schema, or the raw media types a non-JSON body may have. */
  jsonBody?: Schema;
  rawBodyTypes?: string[];
  scopes?: string[];
  public: boolean;
}

export interface OpenApiDocument {
  paths: Record<string, Record<string, any>>;
  components?: { schemas?: Record<string, Schema> };
}

export async function fetchOpenApi(): Promise<OpenApiDocument> {
  const res = await request('GET', '/api/v1/openapi.json');
  if (res.status !== 200) throw new Error(`openapi.json: ${res.status}`);
  return res.body as OpenApiDocument;
}

export function operationsOf(doc: OpenApiDocument): Operation[] {
  const out: Operation[] = [];
  for (const [path, methods] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(methods)) {
      const parameters = (op.parameters ?? []) as Array<{ name: string; in: string; required?: boolean; schema: Schema }>;
      const content = (op.requestBody?.content ?? {}) as Record<string, { schema?: Schema }>;
      out.push({
        method: method.toUpperCase(),
        path,
        operationId: op.operationId,
        pathParams: parameters.filter((p) => p.in === 'path').map((p) => ({ name: p.name, schema: p.schema })),
        requiredQuery: parameters.filter((p) => p.in === 'query' && p.required).map((p) => ({ name: p.name, schema: p.schema })),
        queryParams: parameters.filter((p) => p.in === 'query').map((p) => ({ name: p.name, schema: p.schema })),
        idempotent: parameters.some((p) => p.in === 'header' && p.name.toLowerCase() === 'idempotency-key'),
        jsonBody: content['application/json']?.schema,
        rawBodyTypes: content['application/json'] ? undefined : Object.keys(content).length ? Object.keys(content) : undefined,
        scopes: op['x-weft-scopes'],
        public: Array.isArray(op.security) && op.security.length === 0,
      });
    }
  }
  return out;
}

export const label = (op: Pick<Operation, 'method' | 'path'>) => `${op.method} ${op.path}`;

let counter = 0;
function sampleString(schema: Schema): string {
  counter += 1;
  switch (schema.format) {
    case 'uuid': return randomUUID();
    case 'date-time': return new Date(Date.now() + 86_400_000).toISOString();
    case 'date': return '2030-01-01';
    case 'uri': case 'url': return 'https://example.com/sample';
    case 'email': return 'someone@example.com';
    default: break;
  }
  const min = Number(schema.minLength ?? 0);
  const max = Number(schema.maxLength ?? 200);
  const pattern = typeof schema.pattern === 'string' ? new RegExp(schema.pattern, 'u') : undefined;
  const candidates = [`sample${counter}`, `sample_${counter}`, `sample-${counter}`, `s${counter}`, `S${counter}`, String(counter), 'a', 'sample.name'];
  const fitted = candidates.map((c) => c.padEnd(min, 'x').slice(0, max));
  return fitted.find((c) => !pattern || pattern.test(c)) ?? fitted[0];
}

/** A minimal value that satisfies a JSON Schema: required properties, minimum items and lengths. */
export function sampleValue(schema: Schema, doc?: OpenApiDocument): unknown {
  if (typeof schema.$ref === 'string') {
    const name = schema.$ref.replace('#/components/schemas/', '');
    return sampleValue(doc?.components?.schemas?.[name] ?? {}, doc);
  }
  if (schema.const !== undefined) return schema.const;
  if (schema.default !== undefined && schema.type !== 'object') return schema.default;
  if (Array.isArray(schema.enum)) return schema.enum[0];
  for (const keyword of ['oneOf', 'anyOf', 'allOf'] as const) {
    const alternatives = schema[keyword] as Schema[] | undefined;
    if (!Array.isArray(alternatives) || alternatives.length === 0) continue;
    const rest = { ...schema };
    delete rest[keyword];
    const parts = keyword === 'allOf' ? alternatives.filter((p) => !p.if) : [alternatives[0]];
    const merged = parts.reduce<Schema>((acc, part) => ({
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
      const properties = (schema.properties ?? {}) as Record<string, Schema>;
      const out: Record<string, unknown> = {};
      for (const name of (schema.required as string[] | undefined) ?? []) out[name] = properties[name] ? sampleValue(properties[name], doc) : 'sample';
      for (const name of Object.keys(properties)) {
        if (Object.keys(out).length >= Number(schema.minProperties ?? 0)) break;
        if (!(name in out)) out[name] = sampleValue(properties[name], doc);
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

/** Every way to hand a subset of `names` to the other tenant: each non-empty subset once. */
export function nonEmptySubsets<T>(items: T[]): T[][] {
  const out: T[][] = [];
  for (let mask = 1; mask < 1 << items.length; mask++) out.push(items.filter((_, i) => mask & (1 << i)));
  return out;
}
