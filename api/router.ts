import Router from '@koa/router';
import type Koa from 'koa';
import { InputError, PayloadTooLargeError, UnsupportedMediaTypeError } from '../core/errors';
import { validateWithSchema } from '../core/schema-validator';
import { authenticateBearer } from '../services/tenancy/bearer';
import type { Caller, ServiceDependencies } from '../services/operations/context';
import { checkIdempotencyKey } from '../services/operations/idempotency';
import { admit, execute } from '../services/operations/invoke';
import { isKeyless } from '../services/operations/operation';
import { inputOf, type HandlerResult, type HttpRequest, type RouteSpec } from './route-spec';

function readBody(ctx: Koa.Context): unknown {
  const raw = (ctx.request as unknown as { body?: unknown }).body;
  const hasBody = ctx.request.length ? ctx.request.length > 0 : Boolean(ctx.get('Transfer-Encoding'));
  if (hasBody && !ctx.is('application/json')) {
    throw new UnsupportedMediaTypeError('unsupported_media_type', 'Send the request body as JSON with Content-Type: application/json.');
  }
  return raw === undefined ? {} : raw;
}

/** Reads a non-JSON body as text: its media type must be one the route names, and it must fit maxBytes. */
async function readRawBody(ctx: Koa.Context, spec: NonNullable<RouteSpec['rawBody']>): Promise<{ text: string | undefined; type: string | undefined }> {
  const hasBody = ctx.request.length ? ctx.request.length > 0 : Boolean(ctx.get('Transfer-Encoding'));
  if (!hasBody) {
    if (spec.optional) return { text: undefined, type: undefined };
    // The media type is not the problem: the required content is missing (a 422, like a missing field).
    throw new InputError('body_required', `This request needs a body: send it as one of ${spec.mediaTypes.join(', ')}.`, [{ path: 'body', message: 'is required' }]);
  }
  const type = (ctx.request.type || '').toLowerCase();
  const refusal = spec.refusals?.[type];
  if (refusal) throw new UnsupportedMediaTypeError(refusal.code, refusal.message);
  if (!spec.mediaTypes.includes(type)) {
    throw new UnsupportedMediaTypeError('unsupported_media_type', `Send the request body as one of: ${spec.mediaTypes.join(', ')}${type ? `, not ${type}` : ''}.`);
  }
  // A JSON body was already read by the body parser, which keeps its exact text (webhook signatures need it).
  const parsedRaw = (ctx.request as unknown as { rawBody?: string }).rawBody;
  if (parsedRaw !== undefined) return { text: parsedRaw, type };
  if (ctx.request.length && ctx.request.length > spec.maxBytes) {
    throw new PayloadTooLargeError('payload_too_large', `The request body may be at most ${spec.maxBytes} bytes; this one is ${ctx.request.length}.`);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of ctx.req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > spec.maxBytes) throw new PayloadTooLargeError('payload_too_large', `The request body may be at most ${spec.maxBytes} bytes.`);
    chunks.push(chunk);
  }
  return { text: Buffer.concat(chunks).toString('utf8'), type };
}

/** Query values arrive as strings or repeated arrays; schemas coerce them. */
function readQuery(ctx: Koa.Context): Record<string, unknown> {
  return { ...ctx.query };
}

/** JSON bodies up to this size unless a route declares its own limit (maxJsonBytes). */
export const DEFAULT_JSON_BYTES = 1024 * 1024;
export const describeBytes = (bytes: number): string => (bytes % (1024 * 1024) === 0 ? `${bytes / (1024 * 1024)} MB` : `${bytes} bytes`);

const camel = (name: string) => name.replace(/_([a-z])/g, (_, letter: string) => letter.toUpperCase());
const isPlainObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** The default input mapping: path parameters in camelCase (project_id → projectId), the query, the body's fields. */
export function defaultInput(request: HttpRequest): Record<string, unknown> {
  const input: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(request.params ?? {})) input[camel(name)] = value;
  Object.assign(input, request.query);
  if (isPlainObject(request.body)) Object.assign(input, request.body);
  else if (request.body !== undefined) Object.assign(input, { body: request.body, bodyType: request.bodyType });
  return input;
}

/**
 * Mounts one declared route: authenticate → the operation's access (scopes, restrictions, the
 * project in the path) → validate params, query and body against the operation's schemas → invoke
 * the operation (in one transaction for writes, once per Idempotency-Key) → shape the answer. The
 * route adds transport only; every rule and schema is the operation's.
 */
function mount(router: Router, route: RouteSpec, deps: ServiceDependencies): void {
  const operation = route.operation;
  const schemas = inputOf(route);
  router[route.method](route.path, async (ctx) => {
    const principal = isKeyless(operation.access) ? undefined : (await authenticateBearer(deps, ctx)).principal;
    const caller: Caller = { deps, principal, door: 'http', requestId: String(ctx.state.requestId) };
    await admit(caller, operation);
    const params = schemas.params ? validateWithSchema<Record<string, unknown>>(schemas.params, { ...ctx.params }, 'path') : { ...ctx.params };
    const admitted = typeof params.project_id === 'string' ? await admit(caller, operation, params.project_id) : undefined;
    const query = schemas.query ? validateWithSchema<Record<string, unknown>>(schemas.query, readQuery(ctx), 'query string', { query: true }) : {};
    const raw = route.rawBody ? await readRawBody(ctx, route.rawBody) : undefined;
    const body = schemas.body ? validateWithSchema<unknown>(schemas.body, readBody(ctx), 'request body') : raw?.text;
    const idempotencyHeader = operation.idempotent ? ctx.get('Idempotency-Key') : '';
    if (idempotencyHeader) caller.idempotencyKey = checkIdempotencyKey(idempotencyHeader);

    const request: HttpRequest = { params, query, body, bodyType: raw?.type, requestId: caller.requestId, koa: ctx };
    const input = route.input ? route.input(request) : defaultInput(request);
    // The parts were validated above, before the input mapping: invoke() need not check them again.
    const { output, replayed } = await execute(caller, operation, input, { admitted, validated: true });
    const result: HandlerResult = route.respond ? route.respond(output, request) : { status: route.status, body: output };
    if (replayed) ctx.set('Idempotent-Replayed', 'true');
    for (const [name, value] of Object.entries(result.headers ?? {})) ctx.set(name, value);
    ctx.status = result.status ?? route.status ?? 200;
    if (result.contentType) ctx.type = result.contentType;
    if (result.body !== undefined) ctx.body = result.body;
    else if (ctx.status !== 204) ctx.body = '';
  });
}

export function buildRouter(routes: RouteSpec[], deps: ServiceDependencies): Router {
  const router = new Router();
  for (const route of routes) mount(router, route, deps);
  return router;
}

const METHOD_ORDER = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'];

/**
 * Any method a path does not serve — OPTIONS, TRACE and methods no route uses (PROPFIND…)
 * included — is a 405 whose Allow header lists the methods the path does serve (HEAD wherever GET
 * is). @koa/router's allowedMethods() answered OPTIONS with an empty 200 and unknown methods with
 * 501, and its thrown 405 carried no Allow header. A path no route matches stays a 404.
 */
export function methodNotAllowed(): Koa.Middleware {
  return async (ctx, next) => {
    await next();
    if (ctx.status !== 404 || ctx.body !== undefined) return;
    const matched = (ctx as unknown as { matched?: Array<{ methods: string[] }> }).matched ?? [];
    const allow = [...new Set(matched.flatMap((layer) => layer.methods))].sort((a, b) => METHOD_ORDER.indexOf(a) - METHOD_ORDER.indexOf(b));
    if (allow.length) throw Object.assign(new Error(`${ctx.method} is not allowed`), { status: 405, allow });
  };
}
