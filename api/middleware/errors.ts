import type Koa from 'koa';
import { DomainError } from '../../core/errors';
import { logger } from '../../core/logger';
import { PROBLEM_CONTENT_TYPE, Problem, problem, problemFromDomainError } from '../problem';

/** PostgreSQL errors that mean the request was wrong, not the server. */
export function problemFromDatabaseError(error: { code?: string; constraint?: string; column?: string }, requestId: string): Problem | undefined {
  switch (error.code) {
    case '23505':
      return problem(409, 'already_exists', 'A resource with the same unique value already exists.', requestId, error.constraint ? { constraint: error.constraint } : {});
    case '23503':
      return problem(409, 'reference_conflict', 'The change refers to a resource that does not exist, or removes one that others still refer to.', requestId);
    case '23502':
      return problem(422, 'missing_field', `A required value is missing${error.column ? `: ${error.column}` : ''}.`, requestId);
    case '23514':
      return problem(422, 'invalid_value', 'A value breaks a rule of the stored resource.', requestId);
    case '55P03':
    case '40001':
    case '40P01':
      return problem(409, 'concurrent_change', 'Another request changed the same resource at the same time. Retry the request.', requestId);
    default:
      // Class 22 (data exception): a value the database cannot take — malformed, out of range, a NUL character.
      return error.code?.startsWith('22') ? problem(422, 'invalid_value', 'A value has the wrong form or is out of range.', requestId) : undefined;
  }
}

/** Koa's and the router's own errors (405, 501 for unknown methods). */
function problemFromHttpError(error: { status?: number; expose?: boolean; message?: string }, requestId: string, method: string, path: string): Problem | undefined {
  switch (error.status) {
    case 405:
      return problem(405, 'method_not_allowed', `${method} is not allowed on ${path}.`, requestId);
    case 501:
      return problem(501, 'method_not_implemented', `The method ${method} is not supported.`, requestId);
    default:
      if (typeof error.status !== 'number' || error.status < 400 || error.status >= 500) return undefined;
      return problem(error.status, 'bad_request', error.expose && error.message ? error.message : 'The request could not be read.', requestId);
  }
}

/** Maps every failure to the one problem+json format; unexpected ones are logged and become a 500 that reveals nothing. */
export function errorMiddleware(): Koa.Middleware {
  return async (ctx, next) => {
    try {
      await next();
      if (ctx.status === 404 && ctx.body === undefined) {
        throw Object.assign(new Error('route not found'), { routeNotFound: true });
      }
    } catch (error) {
      const requestId = String(ctx.state.requestId ?? '');
      let body: Problem | undefined;
      if (error instanceof DomainError) body = problemFromDomainError(error, requestId);
      else if ((error as { routeNotFound?: boolean }).routeNotFound) body = problem(404, 'route_not_found', `No route ${ctx.method} ${ctx.path}.`, requestId);
      // Objection wraps driver errors (UniqueViolationError…): the SQLSTATE is on the native error.
      else body = problemFromDatabaseError(((error as { nativeError?: unknown }).nativeError ?? error) as never, requestId) ?? problemFromHttpError(error as never, requestId, ctx.method, ctx.path);

      if (!body) {
        logger.error({ requestId, err: { message: (error as Error).message, stack: (error as Error).stack } }, 'unhandled error');
        body = problem(500, 'internal_error', 'Something went wrong on our side. The request id identifies it in our logs.', requestId);
      }
      ctx.status = body.status;
      ctx.type = PROBLEM_CONTENT_TYPE;
      ctx.body = body;
      if (body.status === 429 && typeof body.retryAfterSeconds === 'number') ctx.set('Retry-After', String(body.retryAfterSeconds));
    }
  };
}
