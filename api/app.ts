import { pipelineDocumentSchema } from '../pipelines/document';
import { mcpMiddleware } from '../mcp/server';
import Koa from 'koa';
import { bodyParser } from '@koa/bodyparser';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../core/paths';
import { BadRequestError, PayloadTooLargeError, UnsupportedMediaTypeError } from '../core/errors';
import { buildOpenApiDocument } from './openapi';
import { renderDocsPage } from './docs-page';
import { bodyShape } from './middleware/body-shape';
import { assignRequestId } from './middleware/request-context';
import { requestFrame } from './middleware/request-frame';
import { defineRoute, RouteSpec } from './route-spec';
import type { ServiceDependencies } from '../services/operations/context';
import { LIVENESS, staticContentOperation } from '../services/shared/health-operations';
import { buildRouter, DEFAULT_JSON_BYTES, describeBytes } from './router';
import { apiRoutes } from './routes';
import { listCapabilities } from '../plugins';
import { consoleMiddleware, isConsolePath } from '../console/server';

const version = (JSON.parse(readFileSync(path.join(projectRoot, 'package.json'), 'utf8')) as { version: string }).version;

function documentationRoutes(routes: RouteSpec[]): RouteSpec[] {
  let document: Record<string, unknown> | undefined;
  // Capability contracts are published beside the routes: an endpoint's target follows one of them.
  const capabilitySchemas = () =>
    Object.fromEntries(
      listCapabilities().flatMap(({ definition }) => [
        [`Target.${definition.name}`, { ...definition.targetSchema, description: `Endpoint target for ${definition.name} ${definition.version}. ${definition.description}` }],
      ]),
    );
  const openApi = () => (document ??= buildOpenApiDocument(routes, { version, componentSchemas: { ...capabilitySchemas(), PipelineDocument: pipelineDocumentSchema } }));
  return [
    defineRoute({
      method: 'get',
      path: '/api/v1/openapi.json',
      operation: staticContentOperation,
      tag: 'Documentation',
      internal: true,
      // HTTP's alone: staticContentOperation serves every page (this, /docs, /sparql), each its own answer.
      responses: { 200: { description: 'OpenAPI document' } },
      input: () => ({ render: () => ({ body: openApi() }) }),
    }),
    defineRoute({
      method: 'get',
      path: '/docs',
      operation: staticContentOperation,
      tag: 'Documentation',
      internal: true,
      // HTTP's alone, as the document's above.
      responses: { 200: { description: 'HTML page' } },
      input: () => ({ render: () => ({ body: renderDocsPage(openApi()), contentType: 'text/html; charset=utf-8' }) }),
    }),
  ];
}

export function allRoutes(): RouteSpec[] {
  return [...apiRoutes, ...documentationRoutes(apiRoutes)];
}

/** Media types of bodies routes read raw, as text: the SPARQL protocol's. */
const RAW_BODY_TYPES = new Set(['application/sparql-query', 'application/sparql-update', 'application/x-www-form-urlencoded']);
/** The methods whose bodies the JSON parser reads (its default). */
const PARSED_METHODS = new Set(['POST', 'PUT', 'PATCH']);
const mediaTypeOf = (contentType: string): string => {
  const parameters = contentType.indexOf(';');
  return (parameters < 0 ? contentType : contentType.slice(0, parameters)).trim().toLowerCase();
};

/** The JSON body parser of one size limit; 413 beyond it. */
function jsonParser(limitBytes: number): Koa.Middleware {
  return bodyParser({
    enableTypes: ['json'],
    jsonLimit: limitBytes,
    encoding: 'utf-8',
    onError(error) {
      const status = (error as { status?: number }).status;
      if (status === 413) throw new PayloadTooLargeError('payload_too_large', `The request body is larger than ${describeBytes(limitBytes)}, the most this operation reads.`, { maxBytes: limitBytes });
      if (status === 415) throw new UnsupportedMediaTypeError('unsupported_media_type', 'The request body must be UTF-8 JSON.');
      throw new BadRequestError('malformed_json', 'The request body is not valid JSON.');
    },
  }) as unknown as Koa.Middleware;
}

/**
 * JSON bodies are read up to the limit of the route they are sent to (routes size it from their
 * operation's bounds: a governed write of 500 rows may be far over 1 MB), 1 MB elsewhere.
 */
function jsonBodies(router: ReturnType<typeof buildRouter>, routes: RouteSpec[]): Koa.Middleware {
  const limitOf = new Map(routes.map((route) => [`${route.method.toUpperCase()} ${route.path}`, route.maxJsonBytes ?? DEFAULT_JSON_BYTES]));
  const parsers = new Map<number, Koa.Middleware>();
  const parserFor = (limit: number) => parsers.get(limit) ?? parsers.set(limit, jsonParser(limit)).get(limit)!;
  return (ctx, next) => {
    // Most requests carry no body: nothing to parse, and no route match to size the parser.
    if (!ctx.request.length && !ctx.get('Transfer-Encoding')) return next();
    // Bodies routes read as text (SPARQL, forms) are never JSON: the parser would only match their
    // media type against its JSON types (type-is, tens of µs) and leave the body it does, {}.
    if (RAW_BODY_TYPES.has(mediaTypeOf(ctx.get('Content-Type')))) {
      if (PARSED_METHODS.has(ctx.method) && (ctx.request as { body?: unknown }).body === undefined) (ctx.request as { body?: unknown }).body = {};
      return next();
    }
    const limits = router.match(ctx.path, ctx.method).pathAndMethod.map((layer) => limitOf.get(`${ctx.method} ${layer.path}`) ?? DEFAULT_JSON_BYTES);
    return parserFor(limits.length ? Math.max(...limits) : DEFAULT_JSON_BYTES)(ctx, next);
  };
}

const LIVENESS_BODY = JSON.stringify(LIVENESS);

/** GET or HEAD /healthz: the process is serving (livenessOperation's answer); true if answered. */
function answerLivenessProbe(ctx: Koa.Context): boolean {
  if (ctx.path !== '/healthz' || (ctx.method !== 'GET' && ctx.method !== 'HEAD') || ctx.querystring) return false;
  assignRequestId(ctx);
  ctx.type = 'application/json; charset=utf-8';
  ctx.body = LIVENESS_BODY;
  return true;
}

export function createApp(deps: ServiceDependencies): Koa {
  const app = new Koa();
  app.proxy = process.env.WEFT_TRUST_PROXY === 'true';
  // Errors are answered by the request frame; Koa's default handler would log them again, unredacted.
  app.silent = true;
  const routes = allRoutes();
  const router = buildRouter(routes, deps);
  const apiRoutesMiddleware = router.routes();
  // The console is a door of its own under /console (console/server): its pages and session routes.
  const consoleDoor = consoleMiddleware(deps);
  // Liveness probes come every few seconds from every orchestrator and load balancer: answered
  // first, with their request id but nothing to check and no request line to log (the route stays
  // for the API description).
  app.use(requestFrame({
    probe: answerLivenessProbe,
    beforeRoutes: [jsonBodies(router, routes), bodyShape(), mcpMiddleware(deps)],
    routes: (ctx, next) => (isConsolePath(ctx.path) ? consoleDoor(ctx, next) : apiRoutesMiddleware(ctx, next)),
  }));
  return app;
}
