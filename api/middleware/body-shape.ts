import type Koa from 'koa';
import { checkJsonShape } from '../../core/json-shape';

/** Applies checkJsonShape to every parsed JSON body, before any route code walks it. */
export function bodyShape(): Koa.Middleware {
  return (ctx, next) => {
    const body = (ctx.request as unknown as { body?: unknown }).body;
    if (body !== undefined) checkJsonShape(body, 'request body');
    return next();
  };
}
