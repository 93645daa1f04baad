import http from 'node:http';
import net from 'node:net';

/**
 * Real listeners on loopback for the SSRF battery and the secret watch: each counts the TCP
 * connections it accepted, so "never reached" is a count that stayed at zero.
 */

export interface ReceivedRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  headers: http.IncomingHttpHeaders;
}

export type Handler = (req: http.IncomingMessage, res: http.ServerResponse, url: URL) => void;

/** An HTTP server on one loopback address with a replaceable handler. */
export class CountingHttpServer {
  connections = 0;
  readonly received: ReceivedRequest[] = [];
  port = 0;
  private server?: http.Server;

  constructor(
    readonly host: '127.0.0.1' | '::1',
    public handler: Handler = (_req, res) => res.writeHead(200, { 'Content-Type': 'application/json' }).end('{"data":[{"id":"internal-1","note":"internal service"}]}'),
  ) {}

  async start(): Promise<this> {
    this.server = http.createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://fixture');
      this.received.push({ method: req.method ?? 'GET', path: url.pathname, query: Object.fromEntries(url.searchParams), headers: req.headers });
      this.handler(req, res, url);
    });
    this.server.on('connection', () => this.connections++);
    await new Promise<void>((resolve) => this.server!.listen(0, this.host, resolve));
    this.port = (this.server.address() as net.AddressInfo).port;
    return this;
  }

  /** The origin as a URL host would name this listener. */
  get origin(): string {
    return `http://${this.host.includes(':') ? `[${this.host}]` : this.host}:${this.port}`;
  }

  reset(): void {
    this.connections = 0;
    this.received.length = 0;
  }

  close(): Promise<void> {
    this.server?.closeAllConnections();
    return new Promise((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}

/**
 * A PostgreSQL server that speaks just enough of the protocol to ask for a password: it answers
 * a StartupMessage with AuthenticationCleartextPassword, reads the password, then fails the login
 * with an ErrorResponse built by `reply` from the password it received (a server or proxy that
 * echoes credentials, or any SQLSTATE a test wants). SSL requests are declined ('N').
 */
export class FakePostgres {
  connections = 0;
  readonly passwords: string[] = [];
  port = 0;
  private server?: net.Server;
  private sockets = new Set<net.Socket>();

  constructor(
    readonly host: '127.0.0.1' | '::1',
    public reply: (password: string) => { code: string; message: string; detail?: string; hint?: string } = () => ({ code: '28P01', message: 'password authentication failed' }),
  ) {}

  async start(): Promise<this> {
    this.server = net.createServer((socket) => {
      this.connections++;
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
      socket.on('error', () => undefined);
      let buffer = Buffer.alloc(0);
      let started = false;
      socket.on('data', (chunk: Buffer) => {
        buffer = Buffer.concat([buffer, chunk]);
        for (;;) {
          if (!started) {
            if (buffer.length < 8) return;
            const length = buffer.readInt32BE(0);
            if (buffer.length < length) return;
            const code = buffer.readInt32BE(4);
            buffer = buffer.subarray(length);
            if (code === 80877103 || code === 80877104) {
              socket.write('N'); // SSLRequest / GSSENCRequest: not supported, go on in clear
              continue;
            }
            started = true;
            const auth = Buffer.alloc(9);
            auth.write('R', 0);
            auth.writeInt32BE(8, 1);
            auth.writeInt32BE(3, 5); // AuthenticationCleartextPassword
            socket.write(auth);
            continue;
          }
          if (buffer.length < 5) return;
          const type = String.fromCharCode(buffer[0]);
          const length = buffer.readInt32BE(1);
          if (buffer.length < length + 1) return;
          const payload = buffer.subarray(5, length + 1);
          buffer = buffer.subarray(length + 1);
          if (type !== 'p') continue;
          const password = payload.toString('utf8').replace(/\0$/, '');
          this.passwords.push(password);
          socket.end(errorResponse(this.reply(password)));
          return;
        }
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, this.host, resolve));
    this.port = (this.server.address() as net.AddressInfo).port;
    return this;
  }

  reset(): void {
    this.connections = 0;
    this.passwords.length = 0;
  }

  close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    return new Promise((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}

function errorResponse(fields: { code: string; message: string; detail?: string; hint?: string }): Buffer {
  const parts: Array<[string, string]> = [['S', 'FATAL'], ['V', 'FATAL'], ['C', fields.code], ['M', fields.message]];
  if (fields.detail) parts.push(['D', fields.detail]);
  if (fields.hint) parts.push(['H', fields.hint]);
  const body = Buffer.concat([...parts.map(([tag, value]) => Buffer.from(`${tag}${value}\0`, 'utf8')), Buffer.from([0])]);
  const header = Buffer.alloc(5);
  header.write('E', 0);
  header.writeInt32BE(body.length + 4, 1);
  return Buffer.concat([header, body]);
}
