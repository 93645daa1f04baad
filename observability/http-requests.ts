import type Koa from 'koa';
import { SpanStatusCode, type Span } from '@opentelemetry/api';
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

function record(ctx: Koa.Context, started: number, failed: boolean): string {
  const route = routeOf(ctx);
  const status = failed ? 500 : ctx.status;
  httpRequestDuration.observe({ method: ctx.method, route, status: String(status) }, (performance.now() - started) / 1000);
  if (status === 429) rateLimited.inc({ bucket: refusingBucket(ctx.body) });
  return route;
}

/**
 * Metrics of every request (latency by route template, method and status; 429s by bucket) and,
 * when tracing is on, its server span. Off, a request costs a clock read and one histogram observe.
 */
export function observeRequests(): Koa.Middleware {
  return async (ctx, next) => {
    const started = performance.now();
    const tracer = activeTracer();
    if (tracer) return inServerSpan(tracer, ctx.method, ctx.headers, (span) => traced(ctx, next, started, span));
    let failed = true;
    try {
      await next();
      failed = false;
    } finally {
      record(ctx, started, failed);
    }
  };
}

async function traced(ctx: Koa.Context, next: Koa.Next, started: number, span: Span): Promise<void> {
  let failed = true;
  try {
    await next();
    failed = false;
  } finally {
    const route = record(ctx, started, failed);
    span.updateName(`${ctx.method} ${route}`);
    span.setAttributes({ 'http.route': route, 'http.response.status_code': failed ? 500 : ctx.status });
    if (failed || ctx.status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
  }
}
