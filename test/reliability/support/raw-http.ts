import http from 'node:http';

/**
 * A bare HTTP client for the fuzzer: fetch refuses TRACE and CONNECT, normalizes paths and
 * headers, and always sends a well-formed body; this sends exactly what it is given.
 */
export interface RawRequest {
  method: string;
  /** Already percent-encoded path and query. */
  path: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
}

export interface RawResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  /** The parsed body when the content type is JSON (problem+json included) and it parses. */
  json?: unknown;
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });

export function rawRequest(baseUrl: string, request: RawRequest, timeoutMs = 60_000): Promise<RawResponse> {
  const url = new URL(baseUrl);
  const body = request.body === undefined ? undefined : Buffer.isBuffer(request.body) ? request.body : Buffer.from(request.body, 'utf8');
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        agent,
        host: url.hostname,
        port: url.port,
        method: request.method,
        path: request.path,
        headers: { ...request.headers, ...(body ? { 'Content-Length': String(body.length) } : {}) },
        timeout: timeoutMs,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', reject);
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let json: unknown;
          if (/json/.test(String(res.headers['content-type'] ?? '')) && text) {
            try {
              json = JSON.parse(text);
            } catch {
              json = undefined;
            }
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json });
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error(`${request.method} ${request.path} got no answer in ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * What is wrong with an error answer, measured against the one problem format (api/problem.ts):
 * application/problem+json with type, title, status (= the HTTP status), code, message and
 * requestId (= X-Request-Id). HEAD answers carry no body, so only their headers are checked.
 */
export function problemFormatViolations(method: string, res: RawResponse): string[] {
  const out: string[] = [];
  const requestId = res.headers['x-request-id'];
  if (!requestId) out.push('no X-Request-Id header');
  if (method === 'HEAD') return out;
  const type = String(res.headers['content-type'] ?? '');
  if (!type.startsWith('application/problem+json')) out.push(`content type ${type || '(none)'} instead of application/problem+json`);
  const body = res.json as Record<string, unknown> | undefined;
  if (!body || typeof body !== 'object') return [...out, `body is not a JSON object: ${res.text.slice(0, 200)}`];
  for (const member of ['type', 'title', 'code', 'message', 'requestId']) {
    if (typeof body[member] !== 'string' || !(body[member] as string).length) out.push(`member ${member} missing or not a string`);
  }
  if (body.status !== res.status) out.push(`member status ${String(body.status)} differs from the HTTP status ${res.status}`);
  if (typeof body.type === 'string' && typeof body.code === 'string' && !body.type.endsWith(`/${body.code}`)) out.push(`type ${body.type} does not end with the code ${body.code}`);
  if (requestId && body.requestId !== requestId) out.push(`requestId ${String(body.requestId)} differs from X-Request-Id ${String(requestId)}`);
  return out;
}
