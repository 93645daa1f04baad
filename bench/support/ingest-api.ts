/**
 * The ingest bench's paginated HTTP API, run as its own process (so serving pages takes no CPU
 * from the process being measured, and the same server answers Weft, dlt and the COPY peer):
 *
 *   GET /scale/{total}/records?limit=1000[&cursor=…]  ->  {"data": [...], "next_cursor": "…" | null}
 *
 * Records 1..total in id order (bench/support/ingest-records.ts), cursor pagination: the cursor is
 * opaque, and the last page answers next_cursor null. GET /stats answers the requests served per
 * scale since the last GET /stats?reset=1. Prints {"port": N} on its first stdout line.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { decodeCursor, encodeCursor, recordsJson } from './ingest-records';

const MAX_LIMIT = 10_000;
const requests = new Map<string, { pages: number; records: number; bytes: number }>();

const server = http.createServer((req, res) => {
  const url = new URL(req.url ?? '/', 'http://localhost');
  const send = (status: number, body: string) => {
    res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) }).end(body);
  };
  if (url.pathname === '/stats') {
    const body = JSON.stringify(Object.fromEntries(requests));
    if (url.searchParams.get('reset') === '1') requests.clear();
    send(200, body);
    return;
  }
  const match = /^\/scale\/(\d+)\/records$/.exec(url.pathname);
  if (!match || req.method !== 'GET') {
    send(404, '{"error":"not found"}');
    return;
  }
  const total = Number(match[1]);
  const limit = Math.min(MAX_LIMIT, Math.max(1, Number(url.searchParams.get('limit') ?? 1000) || 1000));
  const cursor = url.searchParams.get('cursor');
  const after = cursor ? decodeCursor(cursor) : 0;
  if (after === undefined) {
    send(400, '{"error":"invalid cursor"}');
    return;
  }
  const last = Math.min(total, after + limit);
  const data = last > after ? recordsJson(after + 1, last) : '[]';
  const next = last < total ? `"${encodeCursor(last)}"` : 'null';
  const body = `{"data":${data},"next_cursor":${next}}`;
  const stats = requests.get(match[1]) ?? { pages: 0, records: 0, bytes: 0 };
  stats.pages += 1;
  stats.records += last - after;
  stats.bytes += body.length;
  requests.set(match[1], stats);
  send(200, body);
});

server.keepAliveTimeout = 30_000;
server.listen(Number(process.env.INGEST_API_PORT ?? 0), '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ port: (server.address() as AddressInfo).port })}\n`);
});
process.on('SIGTERM', () => {
  server.closeAllConnections();
  server.close(() => process.exit(0));
});
