import { request } from '../../support/fixtures';
import { sampleValue } from '../../support/schema-samples';

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

export { sampleValue };

/** Every way to hand a subset of `names` to the other tenant: each non-empty subset once. */
export function nonEmptySubsets<T>(items: T[]): T[][] {
  const out: T[][] = [];
  for (let mask = 1; mask < 1 << items.length; mask++) out.push(items.filter((_, i) => mask & (1 << i)));
  return out;
}
