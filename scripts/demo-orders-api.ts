import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface OrdersServer {
  baseUrl: string;
  /** Every request the server received: path with query, and the Authorization header. */
  requests: Array<{ url: string; authorization?: string }>;
  close(): Promise<void>;
}

/**
 * A small paginated REST API for the README walk-through (`npm run demo-api`) and the tests:
 * GET /orders?page=&per_page= answers {data: [...], page}; /broken, /forbidden and /html misbehave.
 */
/** A small paginated REST API (page/per_page, records under "data"; /broken, /forbidden and /html misbehave) that tests read through http_dataset. */
export async function startOrdersServer(total = 250, port = 0): Promise<OrdersServer> {
  const orders = Array.from({ length: total }, (_, i) => ({ id: i + 1, total: (i * 7) % 100, status: i % 3 === 0 ? 'open' : 'closed' }));
  const requests: OrdersServer['requests'] = [];
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    requests.push({ url: req.url ?? '', authorization: req.headers.authorization });
    if (url.pathname === '/broken') {
      res.writeHead(500, { 'Content-Type': 'application/json' }).end('{"error":"internal"}');
      return;
    }
    if (url.pathname === '/forbidden') {
      res.writeHead(401, { 'Content-Type': 'application/json' }).end('{"error":"bad token"}');
      return;
    }
    if (url.pathname === '/html') {
      res.writeHead(200, { 'Content-Type': 'text/html' }).end('<html>not json</html>');
      return;
    }
    if (url.pathname !== '/orders') {
      res.writeHead(404, { 'Content-Type': 'application/json' }).end('{"error":"not found"}');
      return;
    }
    const page = Number(url.searchParams.get('page') ?? 1);
    const perPage = Number(url.searchParams.get('per_page') ?? 50);
    const data = orders.slice((page - 1) * perPage, page * perPage);
    res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify({ data, page }));
  });
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(port, '127.0.0.1', resolve));
  const address = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${address.port}/`,
    requests,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

if (require.main === module) {
  const port = Number(process.env.DEMO_API_PORT ?? 8090);
  void startOrdersServer(250, port).then(
    (server) => process.stderr.write(`demo orders API: ${server.baseUrl}orders?page=1&per_page=50 (Ctrl-C stops it)\n`),
    (error: Error) => {
      process.stderr.write(`demo orders API could not start: ${error.message}\n`);
      process.exit(1);
    },
  );
}
