import type Koa from 'koa';
import { SpanStatusCode, type Span, type Tracer } from '@opentelemetry/api';
import { httpRequestDuration, rateLimited } from './metrics';
import { activeTracer, inServerSpan } from './tracing';

/**
 * The route template of a request (never its raw path, which holds ids): the router's matched
 * layer, the probe and MCP paths answered before the router, else `unmatched`.
 */
function routeOf(ctx: Koa.Context): string {
  const matched = (ctx as unknown as { _matchedRoute?: unknown })._matchedRoute;
  if (typeof matched === 'string') return matched;
  if (ctx.path === '/healthz') return '/healthz';
  if (ctx.path === '/mcp') return '/mcp';
  if (ctx.path.startsWith('/mcp/projects/')) return '/mcp/projects/:projectId';
  return 'unmatched';
}

/** The bucket that refused a 429: the key's or the workspace's request window, or the refusal's code (SPARQL concurrency). */
function refusingBucket(body: unknown): string {
  const problem = (body ?? {}) as { code?: unknown; dimension?: unknown };
  if (problem.code === 'rate_limited' && (problem.dimension === 'api_key' || problem.dimension === 'workspace')) return problem.dimension;
  return typeof problem.code === 'string' ? problem.code : 'unknown';
}

/** Observes one request that took from `started` (performance.now()) until now; its route template. */
export function recordRequest(ctx: Koa.Context, started: number, failed: boolean): string {
  const route = routeOf(ctx);
  const status = failed ? 500 : ctx.status;
  httpRequestDuration.observe({ method: ctx.method, route, status: String(status) }, (performance.now() - started) / 1000);
  if (status === 429) rateLimited.inc({ bucket: refusingBucket(ctx.body) });
  return route;
}

/**
 * Metrics of every request (latency by route template, method and status; 429s by bucket) and,
 * when tracing is on, its server span. Off, a request costs a clock read and one histogram observe.
 * The API's own chain does the same in its request frame (api/middleware/request-frame.ts).
 */
export function observeRequests(): Koa.Middleware {
  return async (ctx, next) => {
    const tracer = activeTracer();
    if (tracer) return observeTraced(tracer, ctx, next);
    const started = performance.now();
    let failed = true;
    try {
      await next();
      failed = false;
    } finally {
      recordRequest(ctx, started, failed);
    }
  };
}

/** `serve` in the request's server span, observed as observeRequests observes a request. */
export function observeTraced(tracer: Tracer, ctx: Koa.Context, serve: () => Promise<void>): Promise<void> {
  const started = performance.now();
  return inServerSpan(tracer, ctx.method, ctx.headers, (span) => traced(ctx, serve, started, span));
}

async function traced(ctx: Koa.Context, serve: () => Promise<void>, started: number, span: Span): Promise<void> {
  let failed = true;
  try {
    await serve();
    failed = false;
  } finally {
    const route = recordRequest(ctx, started, failed);
    span.updateName(`${ctx.method} ${route}`);
    span.setAttributes({ 'http.route': route, 'http.response.status_code': failed ? 500 : ctx.status });
    if (failed || ctx.status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
  }
}
