import http from 'node:http';

// The HTTP client of latency benches: node:http over one kept-alive connection. undici's fetch
// spends 0.35 to 0.65 ms of its own per request on this machine (measured against a bare
// node:http server and against Weft's SPARQL endpoint, same requests, alternating): that is the
// client's cost, and a per-request latency bench would count it as the server's.

export interface TextResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });

/** Kept-alive connections the server closed while this process was busy elsewhere: noticed only on use. */
const STALE_CONNECTION = new Set(['ECONNRESET', 'EPIPE']);

function once(url: URL, method: string, headers: Record<string, string>, body: Buffer | undefined): Promise<TextResponse> {
  return new Promise((resolve, reject) => {
    const request = http.request(
      { host: url.hostname, port: url.port, path: `${url.pathname}${url.search}`, method, agent, headers: body ? { ...headers, 'Content-Length': String(body.length) } : headers },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, body: Buffer.concat(chunks).toString('utf8') }));
        response.on('error', reject);
      },
    );
    request.on('error', reject);
    request.end(body);
  });
}

/** One request, its answer read as text; a connection found closed is replaced (a few times at most). */
export async function requestText(target: string, options: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<TextResponse> {
  const url = new URL(target);
  const body = options.body === undefined ? undefined : Buffer.from(options.body, 'utf8');
  for (let attempt = 0; ; attempt++) {
    try {
      return await once(url, options.method ?? (body ? 'POST' : 'GET'), options.headers ?? {}, body);
    } catch (error) {
      if (attempt >= 4 || !STALE_CONNECTION.has((error as NodeJS.ErrnoException).code ?? '')) throw error;
    }
  }
}
