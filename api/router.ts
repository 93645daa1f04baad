import type { ServerResponse } from 'node:http';
import Router from '@koa/router';
import type Koa from 'koa';
import getRawBody from 'raw-body';
import { BadRequestError, InputError, PayloadTooLargeError, UnsupportedMediaTypeError } from '../core/errors';
import { validateWithSchema } from '../core/schema-validator';
import { authenticateBearer } from '../services/tenancy/bearer';
import type { Caller, ServiceDependencies } from '../services/operations/context';
import { checkIdempotencyKey } from '../services/operations/idempotency';
import { admit, execute } from '../services/operations/invoke';
import { isKeyless } from '../services/operations/operation';
import { asReply, inputOf, requestInput, type HandlerResult, type HttpRequest, type RouteSpec } from './route-spec';

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
  // raw-body reads the stream by its events (an async iterator cost a promise per chunk and about
  // 0.1 ms per SPARQL request), stops at the limit and reports a body cut short.
  let body: Buffer;
  try {
    body = await getRawBody(ctx.req, { limit: spec.maxBytes, length: ctx.request.length || undefined });
  } catch (error) {
    if ((error as { type?: string }).type === 'entity.too.large') throw new PayloadTooLargeError('payload_too_large', `The request body may be at most ${spec.maxBytes} bytes.`);
    throw new BadRequestError('body_incomplete', 'The request body ended before its declared length, or the connection closed while it was read.');
  }
  return { text: body.toString('utf8'), type };
}

/** Query values arrive as strings or repeated arrays; schemas coerce them. */
function readQuery(ctx: Koa.Context): Record<string, unknown> {
  return { ...ctx.query };
}

/** JSON bodies up to this size unless a route declares its own limit (maxJsonBytes). */
export const DEFAULT_JSON_BYTES = 1024 * 1024;
export const describeBytes = (bytes: number): string => (bytes % (1024 * 1024) === 0 ? `${bytes / (1024 * 1024)} MB` : `${bytes} bytes`);

/**
 * Mounts one declared route: authenticate → the operation's access (scopes, restrictions, the
 * project in the path) → validate params, query and body against the operation's schemas → invoke
 * the operation (in one transaction for writes, once per Idempotency-Key) → shape the answer. The
 * route adds transport only; every rule and schema is the operation's.
 */
function mount(router: Router, route: RouteSpec, deps: ServiceDependencies): void {
  const operation = route.operation;
  const schemas = inputOf(route);
  // The operation reads the request's parts as they are and owns its status (its Reply).
  const toInput = route.input ?? requestInput;
  router[route.method](route.path, async (ctx) => {
    // A kept key with budget in its lease is answered without a promise: awaited only when one comes back.
    const authentication = isKeyless(operation.access) ? undefined : authenticateBearer(deps, ctx);
    const principal = authentication instanceof Promise ? (await authentication).principal : authentication?.principal;
    const caller: Caller = { deps, principal, door: 'http', requestId: String(ctx.state.requestId) };
    if (route.stopsWhenClientGoes) caller.signal = abortedWhenClientGoes(ctx.res);
    await admit(caller, operation);
    const params = schemas.params ? validateWithSchema<Record<string, unknown>>(schemas.params, { ...ctx.params }, 'path') : { ...ctx.params };
    const admitted = typeof params.project_id === 'string' ? await admit(caller, operation, params.project_id) : undefined;
    const query = schemas.query ? validateWithSchema<Record<string, unknown>>(schemas.query, readQuery(ctx), 'query string', { query: true }) : {};
    const raw = route.rawBody ? await readRawBody(ctx, route.rawBody) : undefined;
    const body = schemas.body ? validateWithSchema<unknown>(schemas.body, readBody(ctx), 'request body') : raw?.text;
    const idempotencyHeader = operation.idempotent ? ctx.get('Idempotency-Key') : '';
    if (idempotencyHeader) caller.idempotencyKey = checkIdempotencyKey(idempotencyHeader);

    const request: HttpRequest = { params, query, body, bodyType: raw?.type, requestId: caller.requestId, koa: ctx };
    const input = toInput(request);
    // The parts were validated above: invoke() need not check them again.
    const { output, replayed } = await execute(caller, operation, input, { admitted, validated: true });
    const result: HandlerResult = asReply(output);
    if (replayed) ctx.set('Idempotent-Replayed', 'true');
    if (result.headers) for (const name in result.headers) ctx.set(name, result.headers[name]);
    ctx.status = result.status ?? 200;
    if (result.contentType) ctx.type = result.contentType;
    // A 204 carries no body, though the reply may have one for the other doors (an MCP tool's result).
    if (result.body !== undefined && ctx.status !== 204) ctx.body = result.body;
    else if (ctx.status !== 204) ctx.body = '';
  });
}

/** A signal that aborts when the response's connection closes before the answer was written. */
function abortedWhenClientGoes(response: ServerResponse): AbortSignal {
  const controller = new AbortController();
  response.once('close', () => {
    if (!response.writableFinished) controller.abort();
  });
  return controller.signal;
}

/** A template's segment: a literal (lowercased: routes match case-insensitively), a parameter, or neither (walks stop there). */
const PARAMETER = /^:[A-Za-z_][A-Za-z0-9_]*$/;
const LITERAL = /^[A-Za-z0-9._~-]+$/;

/** A node of the segment trie: the literal segments that go on from it, whether a parameter does, and where walks stop. */
interface SegmentNode {
  id: string;
  literals: Map<string, SegmentNode>;
  parameter?: SegmentNode;
  /** Routes here go on with both a literal and a parameter (or an unusual segment): a walk stops here. */
  mixed: boolean;
}

/**
 * The routes in one @koa/router per group of templates that can match the same paths, found by
 * walking the path's segments. @koa/router tests every route's regular expression on every request
 * (about 6 µs for 130 routes, a tenth of an authenticated GET); the walk hands a request to the one
 * small router whose routes can match it, which then matches, decodes parameters and runs the
 * route exactly as the full one would. A walk follows a literal segment where the routes going on
 * from a node are all literals, or any non-empty segment where they are all one parameter; it stops
 * where they are mixed. Every template a path matches ends up in the router its walk reaches
 * (ctx.matched, and so the Allow header of a 405, is unchanged); a path no walk can place (a
 * literal no route has, an empty or non-ASCII segment) goes to the router holding every route.
 */
export class RouteTable {
  /** Every route: the answer for paths the walk cannot place (a 404 or 405 at worst). */
  readonly all = new Router();
  private readonly groups = new Map<string, Router>();
  private readonly root: SegmentNode = { id: '', literals: new Map(), mixed: false };
  private readonly dispatchers = new Map<Router, Koa.Middleware>();

  constructor(templates: readonly string[]) {
    for (const template of templates) this.grow(template);
  }

  private grow(template: string): void {
    let node = this.root;
    for (const segment of segmentsOf(template)) {
      if (PARAMETER.test(segment)) node.parameter ??= { id: `${node.id}/:`, literals: new Map(), mixed: false };
      else if (LITERAL.test(segment)) {
        const literal = segment.toLowerCase();
        if (!node.literals.has(literal)) node.literals.set(literal, { id: `${node.id}/${literal}`, literals: new Map(), mixed: false });
      } else {
        node.mixed = true;
        return;
      }
      if (node.parameter && node.literals.size) node.mixed = true;
      if (node.mixed) return;
      node = PARAMETER.test(segment) ? node.parameter! : node.literals.get(segment.toLowerCase())!;
    }
  }

  /** The group a template or request path falls in; undefined when the walk cannot place a request path. */
  private groupOf(path: string, template = false): string | undefined {
    let node = this.root;
    for (const segment of segmentsOf(path)) {
      if (node.mixed) return `${node.id}/*`;
      // A template's segments are all in the trie; a request's may not be.
      const next = node.parameter && (!template || PARAMETER.test(segment))
        ? (segment === '' ? undefined : node.parameter)
        : /^[\x20-\x7e]*$/.test(segment) ? node.literals.get(segment.toLowerCase()) : undefined;
      if (!next) return undefined;
      node = next;
    }
    return `${node.id}$`;
  }

  /** Registers a route: in the router of its group and in the router of every route. */
  register(template: string, add: (router: Router) => void): void {
    const group = this.groupOf(template, true)!;
    let router = this.groups.get(group);
    if (!router) this.groups.set(group, (router = new Router()));
    add(router);
    add(this.all);
  }

  /** The router whose routes can match this path. */
  routerFor(path: string): Router {
    const group = this.groupOf(path);
    return (group && this.groups.get(group)) || this.all;
  }

  /** @koa/router's match, by the router whose routes can match the path. */
  match(path: string, method: string): ReturnType<Router['match']> {
    return this.routerFor(path).match(path, method);
  }

  /** The routes as middleware: each request dispatched by the router of its path's group. */
  routes(): Koa.Middleware {
    for (const router of [this.all, ...this.groups.values()]) this.dispatchers.set(router, router.routes() as unknown as Koa.Middleware);
    // The dispatchers of recent paths, so a path seen again is not split and walked again.
    const recent = new Map<string, Koa.Middleware>();
    return (ctx, next) => {
      const path = ctx.path;
      let dispatch = recent.get(path);
      if (!dispatch) {
        dispatch = this.dispatchers.get(this.routerFor(path))!;
        if (recent.size >= RECENT_PATHS) recent.clear();
        if (path.length <= 256) recent.set(path, dispatch);
      }
      return dispatch(ctx, next);
    };
  }
}

/** How many request paths (of at most 256 characters) RouteTable.routes() keeps the dispatcher of. */
const RECENT_PATHS = 2048;

/** A path's segments after the leading slash; one trailing slash is optional, as for @koa/router. */
function segmentsOf(path: string): string[] {
  const trimmed = path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
  return trimmed === '/' ? [] : trimmed.slice(1).split('/');
}

export function buildRouter(routes: RouteSpec[], deps: ServiceDependencies): RouteTable {
  const table = new RouteTable(routes.map((route) => route.path));
  for (const route of routes) table.register(route.path, (router) => mount(router, route, deps));
  return table;
}

const METHOD_ORDER = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'];

/**
 * Any method a path does not serve — OPTIONS, TRACE and methods no route uses (PROPFIND…)
 * included — is a 405 whose Allow header lists the methods the path does serve (HEAD wherever GET
 * is). @koa/router's allowedMethods() answered OPTIONS with an empty 200 and unknown methods with
 * 501, and its thrown 405 carried no Allow header. A path no route matches stays a 404. Called by
 * the request frame for a request the routes left unanswered (404 with no body).
 */
export function refuseUnservedMethod(ctx: Koa.Context): void {
  const matched = (ctx as unknown as { matched?: Array<{ methods: string[] }> }).matched ?? [];
  const allow = [...new Set(matched.flatMap((layer) => layer.methods))].sort((a, b) => METHOD_ORDER.indexOf(a) - METHOD_ORDER.indexOf(b));
  if (allow.length) throw Object.assign(new Error(`${ctx.method} is not allowed`), { status: 405, allow });
}
