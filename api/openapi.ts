import type { JsonSchema } from '../core/schema-validator';
import { IDEMPOTENCY_KEY_SCHEMA } from '../services/operations/idempotency';
import { PROBLEM_CONTENT_TYPE, problemSchema } from '../core/problem';
import { isKeyless, Operation, type ResponseSpec, scopesOf } from '../services/operations/operation';
import { inputOf, responsesOf, type RouteSpec } from './route-spec';
import { DEFAULT_JSON_BYTES, describeBytes } from './router';

const errorDescriptions: Record<number, string> = {
  400: 'Malformed request (unparseable JSON, credential in the URL).',
  401: 'Missing, invalid, expired or revoked API key.',
  403: 'Insufficient scope, project outside the key’s allowlist, no workspace-resource access, or no accountable actor.',
  404: 'Not found, or it belongs to another workspace.',
  409: 'Conflicts with the current state (duplicate, references, concurrent change).',
  413: 'The request body is larger than this operation reads (see the request body’s size).',
  415: 'The body is not of a media type this operation reads.',
  422: 'Validation failed; `errors` lists each problem.',
  429: 'Request window exceeded. Wait for Retry-After seconds.',
  502: 'The remote system behind the endpoint failed or answered something unusable.',
  503: 'A dependency is unavailable (e.g. `database_unavailable` while PostgreSQL restarts); retry after Retry-After seconds.',
};

const rateLimitHeaders = {
  'X-RateLimit-Limit': { description: 'Ceiling of the constraining bucket for this window.', schema: { type: 'integer' } },
  'X-RateLimit-Remaining': { description: 'Requests left in that bucket.', schema: { type: 'integer' } },
  'X-RateLimit-Reset': { description: 'Seconds until the window resets.', schema: { type: 'integer' } },
};

const toOpenApiPath = (path: string) => path.replace(/:([A-Za-z_]+)/g, '{$1}');

function errorStatuses(route: RouteSpec): number[] {
  // A credential in the URL is refused on every route.
  const statuses = new Set<number>([400]);
  const authenticated = !isKeyless(route.operation.access);
  // Authentication reads the database: while it is away, every authenticated request is a 503.
  if (authenticated) [401, 403, 429, 503].forEach((s) => statuses.add(s));
  // The body parser reads every POST, PUT and PATCH body, a route without a body schema too: over
  // 1 MB is a 413, and a body with a NUL character is a 422 (bodyShape) before the route runs.
  const parsesBody = route.method === 'post' || route.method === 'put' || route.method === 'patch';
  const { params, query, body } = inputOf(route);
  if (body || query || params || parsesBody) statuses.add(422);
  if (body || route.rawBody) statuses.add(415);
  if (route.rawBody || parsesBody) statuses.add(413);
  if (params) statuses.add(404);
  if (route.operation.idempotent || route.method !== 'get') statuses.add(409);
  for (const extra of route.errors ?? []) statuses.add(extra.status);
  return [...statuses].sort();
}

function parameters(route: RouteSpec): unknown[] {
  const out: unknown[] = [];
  const { params, query } = inputOf(route);
  const pathProps = (params?.properties ?? {}) as Record<string, JsonSchema>;
  for (const name of (route.path.match(/:([A-Za-z_]+)/g) ?? []).map((p) => p.slice(1))) {
    out.push({ name, in: 'path', required: true, schema: pathProps[name] ?? { type: 'string' } });
  }
  const queryProps = (query?.properties ?? {}) as Record<string, JsonSchema>;
  const required = new Set((query?.required as string[] | undefined) ?? []);
  for (const [name, schema] of Object.entries(queryProps)) {
    out.push({ name, in: 'query', required: required.has(name), schema, description: schema.description });
  }
  if (route.operation.idempotent) {
    out.push({
      name: 'Idempotency-Key',
      in: 'header',
      required: false,
      description: 'Retry-safe request identity (8 to 200 visible ASCII characters, else 422 invalid_idempotency_key): the same key and payload replay the first answer for 24 hours; the same key with another payload is a 422.',
      // The schema the router checks the header with (services/operations/idempotency.ts).
      schema: { ...IDEMPOTENCY_KEY_SCHEMA },
    });
  }
  for (const header of route.headers ?? []) {
    out.push({ name: header.name, in: 'header', required: header.required ?? false, description: header.description, schema: header.schema });
  }
  return out;
}

/** The content of a success response: each media type the Accept header can choose gets an entry. */
function responseContent(spec: ResponseSpec): Record<string, unknown> | undefined {
  if (!spec.schema) return undefined;
  const types = (spec.contentType ?? 'application/json').split(',').map((type) => type.trim()).filter(Boolean);
  return {
    ...Object.fromEntries(types.map((type) => [type, { schema: spec.schema }])),
    ...Object.fromEntries((spec.alternatives ?? []).map((type) => [type, { schema: { type: 'string' } }])),
  };
}

/** The operation's declared access, for people: the same declaration invoke() enforces. */
export function accessText(operation: Operation): string {
  const access = operation.access;
  if (isKeyless(access)) return 'public' in access ? `Public: ${access.public}.` : `Operator only (admin CLI): ${access.operator}.`;
  const scopes = scopesOf(access.scopes);
  return [
    'allOf' in access.scopes ? `Scopes: ${scopes.join(' and ')} (all of them).` : `Scope: ${scopes.join(' or ')}.`,
    access.unrestrictedKey ? 'Needs a key without a project restriction.' : '',
    access.workspaceResources ? 'Project-restricted keys need workspaceResources.' : '',
    access.actor === 'accountable' ? 'The key’s creating member must still be in the workspace.' : '',
    access.actor === 'administrator' ? 'The key’s creating member must still be in the workspace as an owner or admin.' : '',
    access.project ? 'The project must be in the key’s allowlist.' : '',
    access.grants ? `The named ${access.grants} grants of the endpoints it touches apply (read grants: the union over each endpoint’s read bindings; write grants: its write policy).` : '',
  ].filter(Boolean).join(' ');
}

/** OpenAPI 3.1, generated from the same route and operation declarations and JSON Schemas that validate requests. */
export function buildOpenApiDocument(routes: RouteSpec[], info: { version: string; componentSchemas?: Record<string, JsonSchema> }): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes.filter((r) => !r.internal)) {
    const auth = route.operation.access;
    const scopeText = accessText(route.operation);
    const body = inputOf(route).body;
    const responses: Record<string, unknown> = {};
    for (const [status, spec] of Object.entries(responsesOf(route))) {
      responses[status] = {
        description: spec.description,
        ...(spec.schema ? { content: responseContent(spec) } : {}),
        ...(isKeyless(auth) && !spec.headers ? {} : { headers: { ...(isKeyless(auth) ? {} : rateLimitHeaders), ...spec.headers } }),
      };
    }
    for (const status of errorStatuses(route)) {
      if (responses[status]) continue;
      const extra = route.errors?.find((e) => e.status === status)?.description;
      responses[status] = {
        description: extra ?? errorDescriptions[status] ?? 'Error',
        content: { [PROBLEM_CONTENT_TYPE]: { schema: { $ref: '#/components/schemas/Problem' } } },
        ...(status === 429 ? { headers: { 'Retry-After': { schema: { type: 'integer' } }, ...rateLimitHeaders } } : {}),
      };
    }
    paths[toOpenApiPath(route.path)] ??= {};
    paths[toOpenApiPath(route.path)][route.method] = {
      operationId: route.operation.name,
      summary: route.summary ?? route.operation.summary,
      description: [route.description, scopeText].filter(Boolean).join('\n\n'),
      tags: [route.tag],
      ...(isKeyless(auth) ? { security: [] } : { 'x-weft-scopes': scopesOf(auth.scopes), 'x-weft-access': auth }),
      parameters: parameters(route),
      ...(body ? { requestBody: { required: true, description: `JSON, at most ${describeBytes(route.maxJsonBytes ?? DEFAULT_JSON_BYTES)} (larger is a 413).`, content: { 'application/json': { schema: body } } }, 'x-weft-max-body-bytes': route.maxJsonBytes ?? DEFAULT_JSON_BYTES } : {}),
      ...(route.rawBody
        ? {
            requestBody: {
              required: !route.rawBody.optional,
              description: `${route.rawBody.description} At most ${route.rawBody.maxBytes} bytes.`,
              content: Object.fromEntries(route.rawBody.mediaTypes.map((type) => [type, { schema: { type: 'string' } }])),
            },
          }
        : {}),
      responses,
    };
  }
  return {
    openapi: '3.1.0',
    jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
    info: {
      title: 'Weft API',
      version: info.version,
      description: 'Workspace data integration: data endpoints, pipelines, ontology and published queries. Every error is application/problem+json; every response carries X-Request-Id.',
    },
    servers: [{ url: '/' }],
    security: [{ bearerAuth: [] }],
    paths,
    components: {
      securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer', description: 'An API key: Authorization: Bearer weft_sk_…' } },
      schemas: { Problem: problemSchema, ...info.componentSchemas },
    },
  };
}
