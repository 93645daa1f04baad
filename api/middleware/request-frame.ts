import type Koa from 'koa';
import { activeTracer } from '../../observability/tracing';
import { observeTraced, recordRequest } from '../../observability/http-requests';
import { refuseUnservedMethod } from '../router';
import { answerError, routeNotFound } from './errors';
import { assignRequestId, logRequest, refuseCredentialsInUrl } from './request-context';

export interface RequestFrameParts {
  /** Answers the request at once if it is a liveness probe (no request line, no chain); true if it did. */
  probe(ctx: Koa.Context): boolean;
  /** The layers a request with a body, or one to MCP, passes in order before the routes (body parsing and shape, MCP). */
  beforeRoutes: Koa.Middleware[];
  routes: Koa.Middleware;
}

const nothingFurther = () => Promise.resolve();

/**
 * What every request passes before and after its route, as one async frame instead of a layer
 * each (every async layer is a promise, a tick and a closure per request): its metrics (and span,
 * when tracing), the liveness probe answered before anything else, its request id and request
 * line, the one error format, a key in the URL refused, and a 405 or 404 for what no route serves.
 * A request with no body and not to MCP (most of them) goes straight to the routes.
 */
export function requestFrame({ probe, beforeRoutes, routes }: RequestFrameParts): Koa.Middleware {
  type Through = (ctx: Koa.Context) => Promise<void>;
  const throughRoutes: Through = (ctx) => routes(ctx, nothingFurther) as Promise<void>;
  const throughChain = beforeRoutes.reduceRight<Through>((inner, layer) => (ctx) => layer(ctx, () => inner(ctx)) as Promise<void>, throughRoutes);
  const dispatch = (ctx: Koa.Context) => (ctx.request.length || ctx.get('Transfer-Encoding') || ctx.path.startsWith('/mcp') ? throughChain(ctx) : throughRoutes(ctx));

  const serve = async (ctx: Koa.Context, observedSince?: number): Promise<void> => {
    let failed = true;
    try {
      // (Untraced, the probe was answered before this frame.)
      if (observedSince === undefined && probe(ctx)) {
        failed = false;
        return;
      }
      const requestId = assignRequestId(ctx);
      const started = process.hrtime.bigint();
      try {
        refuseCredentialsInUrl(ctx);
        await dispatch(ctx);
        if (ctx.status === 404 && ctx.body === undefined) {
          refuseUnservedMethod(ctx);
          throw routeNotFound();
        }
      } catch (error) {
        answerError(ctx, error);
      } finally {
        logRequest(ctx, requestId, started);
      }
      failed = false;
    } finally {
      // Traced requests are observed by their span's frame.
      if (observedSince !== undefined) recordRequest(ctx, observedSince, failed);
    }
  };

  return (ctx) => {
    const tracer = activeTracer();
    if (tracer) return observeTraced(tracer, ctx, () => serve(ctx));
    const observedSince = performance.now();
    // A probe is answered without an async frame at all.
    if (probe(ctx)) {
      recordRequest(ctx, observedSince, false);
      return Promise.resolve();
    }
    return serve(ctx, observedSince);
  };
}
