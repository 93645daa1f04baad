/**
 * The api benchmark's peers: Koa + @koa/router in its own process, answering the same JSON bodies
 * as Weft (sent by the parent over IPC) with no authentication, limits or database, and, for the
 * records read, a handler that runs one pg SELECT of the same stored rows per request (a pool of
 * ten connections, as Weft's) and answers them as JSON: no key, no limits, no metering.
 */
import Koa from 'koa';
import Router from '@koa/router';
import pg from 'pg';

interface PeerSetup {
  bodies: Record<string, unknown>;
  /** Routes answered with `{ data: rows }` of one SELECT each. */
  selects?: Record<string, string>;
  databaseUrl?: string;
}

const port = Number(process.argv[2]);
process.once('message', ({ bodies, selects = {}, databaseUrl }: PeerSetup) => {
  const router = new Router();
  for (const [route, body] of Object.entries(bodies)) {
    router.get(route, (ctx) => {
      ctx.body = body;
    });
  }
  const pool = databaseUrl ? new pg.Pool({ connectionString: databaseUrl, max: 10 }) : undefined;
  for (const [route, sql] of Object.entries(selects)) {
    router.get(route, async (ctx) => {
      const { rows } = await pool!.query<{ data: Record<string, unknown> }>(sql);
      ctx.body = { data: rows.map((row) => row.data) };
    });
  }
  const app = new Koa();
  app.use(router.routes()).use(router.allowedMethods());
  app.listen(port, '127.0.0.1', () => process.send?.('ready'));
});
process.once('SIGTERM', () => process.exit(0));
