import Router from '@koa/router';
import type Koa from 'koa';
import { AuthenticationError, PayloadTooLargeError, UnsupportedMediaTypeError } from '../core/errors';
import { validateWithSchema } from '../core/schema-validator';
import { authorize, Principal } from '../services/tenancy/access';
import { authenticateRequest, Authentication } from '../services/tenancy/api-keys';
import { requireProject } from '../services/tenancy/projects';
import type { AppDependencies, HandlerContext, HandlerResult, RouteSpec } from './route-spec';
import { checkIdempotencyKey, requestFingerprint, runIdempotently } from './middleware/idempotency';

const BEARER = /^Bearer\s+(\S+)\s*$/i;

/**
 * Authenticates the Bearer key and counts the request against its request limits, in one database
 * round trip; sets the limit headers on every answer, a 429 included.
 */
export async function authenticate(ctx: Koa.Context, deps: AppDependencies): Promise<Authentication> {
  const header = ctx.get('Authorization');
  if (!header) throw new AuthenticationError('missing_credential', 'Send an API key in the header Authorization: Bearer <API_KEY>.');
  const match = BEARER.exec(header);
  if (!match) throw new AuthenticationError('invalid_credential', 'The Authorization header must have the form "Bearer <API_KEY>".');
  try {
    const authentication = await authenticateRequest(deps.db, match[1]);
    ctx.state.principal = authentication.principal;
    deps.keyUsage.record(authentication.principal.apiKeyId);
    setLimitHeaders(ctx, authentication.limit.limit, authentication.limit.remaining, authentication.limit.resetSeconds);
    return authentication;
  } catch (error) {
    const limit = (error as { limit?: { limit: number; remaining: number; resetSeconds: number } }).limit;
    if (limit) setLimitHeaders(ctx, limit.limit, limit.remaining, limit.resetSeconds);
    throw error;
  }
}

function setLimitHeaders(ctx: Koa.Context, limit: number, remaining: number, resetSeconds: number): void {
  ctx.set('X-RateLimit-Limit', String(limit));
  ctx.set('X-RateLimit-Remaining', String(Math.max(0, remaining)));
  ctx.set('X-RateLimit-Reset', String(resetSeconds));
}

function readBody(ctx: Koa.Context, route: RouteSpec): unknown {
  if (!route.body) return undefined;
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
    throw new UnsupportedMediaTypeError('body_required', `Send the request body as one of: ${spec.mediaTypes.join(', ')}.`);
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

/**
 * Mounts one declared route: authenticate → request limits → scope and workspace layers →
 * validate params → project allowlist → validate query and body → run (in a transaction for
 * mutations, idempotently when an Idempotency-Key is sent) → shape the response.
 */
function mount(router: Router, route: RouteSpec, deps: AppDependencies): void {
  const inTransaction = route.method !== 'get' && route.transaction !== false;
  router[route.method](route.path, async (ctx) => {
    let principal: Principal | undefined;
    if (!('public' in route.auth)) {
      principal = (await authenticate(ctx, deps)).principal;
      authorize(principal, route.auth);
    }
    const params = route.params ? validateWithSchema<Record<string, unknown>>(route.params, { ...ctx.params }, 'path') : ctx.params;
    const project = principal && !('public' in route.auth) && route.auth.projectParam
      ? await requireProject(deps.db, principal, String(ctx.params[route.auth.projectParam]))
      : undefined;
    const query = route.query ? validateWithSchema<Record<string, unknown>>(route.query, readQuery(ctx), 'query string', { query: true }) : {};
    const raw = route.rawBody ? await readRawBody(ctx, route.rawBody) : undefined;
    const body = route.body ? validateWithSchema<unknown>(route.body, readBody(ctx, route), 'request body') : raw?.text;
    const idempotencyHeader = route.idempotent ? ctx.get('Idempotency-Key') : '';
    const idempotencyKey = idempotencyHeader ? checkIdempotencyKey(idempotencyHeader) : undefined;

    const context = (db: HandlerContext<unknown, unknown, unknown>['db']): HandlerContext<unknown, unknown, unknown> => ({
      params,
      query,
      body,
      bodyType: raw?.type,
      get principal(): Principal {
        if (!principal) throw new Error(`${route.operationId} is public and has no principal`);
        return principal;
      },
      get project() {
        if (!project) throw new Error(`${route.operationId} declares no projectParam`);
        return project;
      },
      db,
      deps,
      requestId: String(ctx.state.requestId),
      koa: ctx,
    });

    let result: HandlerResult & { replayed?: boolean };
    if (!inTransaction) {
      result = await route.handler(context(deps.db));
    } else {
      result = await deps.db.transaction(async (trx) => {
        if (idempotencyKey && principal) {
          const fingerprint = requestFingerprint(`${route.method} ${route.path}`, params, body);
          return runIdempotently(trx, principal, idempotencyKey, route.operationId, fingerprint, () => route.handler(context(trx)));
        }
        return route.handler(context(trx));
      });
    }
    if (result.replayed) ctx.set('Idempotent-Replayed', 'true');
    for (const [name, value] of Object.entries(result.headers ?? {})) ctx.set(name, value);
    ctx.status = result.status ?? 200;
    if (result.contentType) ctx.type = result.contentType;
    if (result.body !== undefined) ctx.body = result.body;
    else if (ctx.status !== 204) ctx.body = '';
  });
}

export function buildRouter(routes: RouteSpec[], deps: AppDependencies): Router {
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
