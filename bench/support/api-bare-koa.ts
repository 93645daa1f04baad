/**
 * The api benchmark's peer: Koa + @koa/router in its own process, answering the same JSON bodies
 * as Weft (sent by the parent over IPC) with no authentication, limits or database.
 */
import Koa from 'koa';
import Router from '@koa/router';

const port = Number(process.argv[2]);
process.once('message', (bodies: Record<string, unknown>) => {
  const router = new Router();
  for (const [route, body] of Object.entries(bodies)) {
    router.get(route, (ctx) => {
      ctx.body = body;
    });
  }
  const app = new Koa();
  app.use(router.routes()).use(router.allowedMethods());
  app.listen(port, '127.0.0.1', () => process.send?.('ready'));
});
process.once('SIGTERM', () => process.exit(0));
