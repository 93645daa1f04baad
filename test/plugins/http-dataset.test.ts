import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import diagnosticsChannel from 'node:diagnostics_channel';
import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { DomainError, InputError } from '../../core/errors';
import { validateWithSchema } from '../../core/schema-validator';
import type { CapabilityContext, RecordsQuery } from '../../plugins/capability';
import { findCapability } from '../../plugins';
import { computeWindow, httpDatasetCapability as capability, safeFetch } from '../../plugins/http-dataset';
import { env } from '../support/environment';

/** What the fixture server saw: the tests assert on the parameters the capability sent. */
interface Received {
  method: string;
  path: string;
  query: Record<string, string>;
  body: any;
  authorization?: string;
  host?: string;
}

interface Reply {
  status?: number;
  headers?: Record<string, string>;
  body?: unknown;
}

const items = [
  { id: 1, name: 'ada', score: 1.5, active: true, tags: ['a'], meta: { team: 'x' }, note: null },
  { id: 2, name: 'bob', score: 2, active: false, tags: [], meta: { team: 'y' }, note: 'late' },
  { id: 3, name: 'cy', score: 3.25, active: true, tags: [], meta: { team: 'x' } },
  { id: 4, name: 'dee', score: 4, active: true, tags: ['b'], meta: { team: 'y' }, note: null },
  { id: 5, name: 'eve', score: 5.5, active: false, tags: [], meta: { team: 'x' }, note: 'ok' },
];
const SECRET = 'Bearer fixture-s3cret';

/** A small JSON API with every pagination style SPEC 2.2 names. */
const routes: Record<string, (req: Received, port: number) => Reply> = {
  '/api/none': () => ({ body: { data: items } }),
  '/api/bare': () => ({ body: items }),
  '/api/page': ({ query }) => {
    const size = Number(query.per_page ?? 2);
    const page = Number(query.page);
    return { body: { items: items.slice((page - 1) * size, page * size) } };
  },
  '/api/offset': ({ query }) => ({ body: { results: items.slice(Number(query.offset), Number(query.offset) + Number(query.limit)) } }),
  '/api/cursor': ({ query, body }) => {
    const cursor = query.cursor ?? body?.cursor;
    const from = cursor ? Number(String(cursor).slice(1)) : 0;
    const to = from + 2;
    return { body: { data: items.slice(from, to), meta: { next: to < items.length ? `c${to}` : null } } };
  },
  '/api/cursor-loop': () => ({ body: { data: [items[0]], meta: { next: 'same' } } }),
  '/api/cursor-empty': ({ query }) => ({ body: { data: query.cursor ? [] : items.slice(0, 2), meta: { next: 'more' } } }),
  '/api/link': ({ query }) => {
    const page = Number(query.p ?? 1);
    return { body: { records: items.slice((page - 1) * 2, page * 2), links: { next: page < 3 ? `/api/link?p=${page + 1}` : null } } };
  },
  '/api/link-escape': () => ({ body: { records: [items[0]], links: { next: 'http://169.254.169.254/latest/meta-data' } } }),
  '/api/redirect': () => ({ status: 302, headers: { location: '/api/none' } }),
  // Closes the connection, so the next hop needs a new one (and a new lookup).
  '/api/redirect-close': () => ({ status: 302, headers: { location: '/api/none', connection: 'close' } }),
  '/api/huge': () => ({ body: 'x'.repeat(32 * 1024 * 1024 + 1) }),
  '/api/redirect-out': () => ({ status: 302, headers: { location: 'http://169.254.169.254/latest/meta-data' } }),
  '/api/redirect-loop': () => ({ status: 307, headers: { location: '/api/redirect-loop' } }),
  '/api/fail': () => ({ status: 503, body: { error: 'down' } }),
  '/api/not-json': () => ({ headers: { 'content-type': 'text/plain' }, body: 'hello' }),
};

class FixtureServer {
  received: Received[] = [];
  private server!: Server;

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
  }

  stop(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const url = new URL(req.url ?? '/', 'http://fixture');
    const text = Buffer.concat(chunks).toString('utf8');
    const received: Received = {
      method: req.method ?? 'GET',
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      body: text ? JSON.parse(text) : undefined,
      authorization: req.headers.authorization,
      host: req.headers.host,
    };
    this.received.push(received);
    const reply = routes[url.pathname]?.(received, this.port) ?? { status: 404, body: { error: 'no route' } };
    const isText = typeof reply.body === 'string';
    res.writeHead(reply.status ?? 200, { 'content-type': isText ? 'text/plain' : 'application/json', ...reply.headers });
    res.end(reply.body === undefined ? undefined : isText ? reply.body : JSON.stringify(reply.body));
  }
}

describe('http_dataset capability', () => {
  const server = new FixtureServer();

  before(() => server.start());
  after(() => server.stop());
  beforeEach(() => {
    server.received = [];
  });

  function context(settings: Record<string, unknown> = {}): CapabilityContext {
    return {
      installation: {
        id: randomUUID(),
        workspaceId: randomUUID(),
        settings: { baseUrl: `${server.url}/api/`, allowPrivateNetwork: true, timeoutMs: 5000, ...settings },
        credentials: { headers: { Authorization: SECRET } },
      },
      db: env().db,
    };
  }

  const read = (over: Partial<RecordsQuery> = {}): RecordsQuery => ({ where: [], orderBy: [], limit: 100, ...over });
  const url = (path: string) => `${server.url}${path}`;
  const ids = (records: Array<Record<string, unknown>>) => records.map((r) => r.id);

  /** Asserts a rejection with a DomainError code, and that no credential leaked into it. */
  async function rejectsWith(promise: Promise<unknown>, code: string): Promise<DomainError> {
    let caught: unknown;
    await promise.catch((error: unknown) => {
      caught = error;
    });
    assert.ok(caught instanceof DomainError, `expected a DomainError ${code}, got ${String(caught)}`);
    assert.equal(caught.code, code, caught.message);
    assert.ok(!JSON.stringify({ message: caught.message, details: caught.details }).includes('s3cret'));
    return caught;
  }

  it('is registered with its source contract', () => {
    const { definition } = findCapability('http_dataset');
    assert.equal(definition.version, '1.0.0');
    assert.deepEqual(definition.roles, [{ role: 'source', contractKind: 'source_stream' }]);
    assert.deepEqual(definition.emits, ['json']);
    assert.equal(definition.supports.recordsRead, true);
    assert.equal(definition.supports.snapshotReads, false);
    const headers = (definition.installationSchema.properties as any).headers;
    assert.equal(headers['x-weft-secret'], true);
  });

  describe('pagination', () => {
    it('reads a single page (none) at response.recordsPath, sending the installation headers', async () => {
      const page = await capability.readRecords(context(), { request: { url: url('/api/none') }, response: { recordsPath: 'data' } }, read());
      assert.deepEqual(ids(page.records), [1, 2, 3, 4, 5]);
      assert.equal(page.stopReason, 'exhausted');
      assert.equal(page.continuation, null);
      assert.equal(page.pagesFetched, 1);
      assert.equal(server.received[0].authorization, SECRET);
    });

    it('takes the body itself as the array when recordsPath is absent', async () => {
      const page = await capability.readRecords(context(), { request: { url: url('/api/bare') } }, read());
      assert.equal(page.records.length, 5);
    });

    it('pages by number from 1 with the page size on every request, until an empty page', async () => {
      const target = { request: { url: url('/api/page') }, response: { recordsPath: 'items' }, pagination: { type: 'page', parameter: 'page', pageSizeParameter: 'per_page', pageSize: 2 } };
      const page = await capability.readRecords(context(), target, read());
      assert.deepEqual(ids(page.records), [1, 2, 3, 4, 5]);
      assert.equal(page.stopReason, 'empty_page');
      assert.equal(page.continuation, null);
      assert.equal(page.pagesFetched, 4);
      assert.deepEqual(server.received.map((r) => r.query.page), ['1', '2', '3', '4']);
      assert.ok(server.received.every((r) => r.query.per_page === '2'));
    });

    it('resumes mid-page from the continuation without losing or repeating records', async () => {
      const target = { request: { url: url('/api/page') }, response: { recordsPath: 'items' }, pagination: { type: 'page', parameter: 'page', pageSizeParameter: 'per_page', pageSize: 2 } };
      const first = await capability.readRecords(context(), target, read({ limit: 3 }));
      assert.deepEqual(ids(first.records), [1, 2, 3]);
      assert.equal(first.stopReason, 'limit');
      assert.notEqual(first.continuation, null);
      // The continuation is plain JSON: it survives a round trip through a signed cursor.
      const after = JSON.parse(JSON.stringify(first.continuation));
      const second = await capability.readRecords(context(), target, read({ limit: 3, after }));
      assert.deepEqual(ids(second.records), [4, 5]);
      assert.equal(second.stopReason, 'empty_page');
      assert.equal(second.continuation, null);

      // A limit ending exactly on a page boundary resumes at the next page.
      const exact = await capability.readRecords(context(), target, read({ limit: 2 }));
      assert.deepEqual(ids(exact.records), [1, 2]);
      const next = await capability.readRecords(context(), target, read({ limit: 2, after: exact.continuation }));
      assert.deepEqual(ids(next.records), [3, 4]);
    });

    it('pages by offset from 0, advancing by the records received, with the limit on every request', async () => {
      const target = { request: { url: url('/api/offset') }, response: { recordsPath: 'results' }, pagination: { type: 'offset', parameter: 'offset', limitParameter: 'limit', limit: 2 } };
      const page = await capability.readRecords(context(), target, read());
      assert.deepEqual(ids(page.records), [1, 2, 3, 4, 5]);
      assert.deepEqual(server.received.map((r) => r.query.offset), ['0', '2', '4', '5']);
      assert.ok(server.received.every((r) => r.query.limit === '2'));
      assert.equal(page.stopReason, 'empty_page');
    });

    it('follows cursors from responsePath until none is returned', async () => {
      const target = { request: { url: url('/api/cursor') }, response: { recordsPath: 'data' }, pagination: { type: 'cursor', parameter: 'cursor', responsePath: 'meta.next' } };
      const page = await capability.readRecords(context(), target, read());
      assert.deepEqual(ids(page.records), [1, 2, 3, 4, 5]);
      assert.deepEqual(server.received.map((r) => r.query.cursor), [undefined, 'c2', 'c4']);
      assert.equal(page.stopReason, 'exhausted');
      assert.equal(page.continuation, null);
    });

    it('sends cursor parameters in the JSON body of a POST when location is body', async () => {
      const target = {
        request: { url: url('/api/cursor'), method: 'POST' },
        response: { recordsPath: 'data' },
        pagination: { type: 'cursor', location: 'body', parameter: 'cursor', responsePath: 'meta.next', pageSizeParameter: 'size', pageSize: 2 },
      };
      const page = await capability.readRecords(context(), target, read());
      assert.equal(page.records.length, 5);
      assert.ok(server.received.every((r) => r.method === 'POST' && r.body.size === 2 && r.query.cursor === undefined));
      assert.deepEqual(server.received.map((r) => r.body.cursor), [undefined, 'c2', 'c4']);
    });

    it('follows next links under the base URL, keeping the window parameters', async () => {
      const target = {
        request: { url: url('/api/link') },
        response: { recordsPath: 'records' },
        window: { startParameter: 'from', lookback: 'PT6H' },
        pagination: { type: 'link', responsePath: 'links.next' },
      };
      const page = await capability.readRecords(context(), target, read());
      assert.deepEqual(ids(page.records), [1, 2, 3, 4, 5]);
      assert.deepEqual(server.received.map((r) => r.query.p), [undefined, '2', '3']);
      assert.equal(new Set(server.received.map((r) => r.query.from)).size, 1, 'every page asks for the same window');
      assert.equal(page.stopReason, 'exhausted');
    });

    it('refuses a next link outside the base URL', async () => {
      const target = { request: { url: url('/api/link-escape') }, response: { recordsPath: 'records' }, pagination: { type: 'link', responsePath: 'links.next' } };
      await rejectsWith(capability.readRecords(context(), target, read()), 'url_outside_base');
      assert.equal(server.received.length, 1);
    });

    it('reports max_pages when the bound truncates the read, with no continuation', async () => {
      const target = { request: { url: url('/api/page') }, response: { recordsPath: 'items' }, pagination: { type: 'page', parameter: 'page', pageSizeParameter: 'per_page', pageSize: 1, maxPages: 2 } };
      const page = await capability.readRecords(context(), target, read());
      assert.deepEqual(ids(page.records), [1, 2]);
      assert.equal(page.stopReason, 'max_pages');
      assert.equal(page.continuation, null);
      assert.equal(page.pagesFetched, 2);
    });

    it('counts maxPages over the whole read, across continuations', async () => {
      const target = { request: { url: url('/api/page') }, response: { recordsPath: 'items' }, pagination: { type: 'page', parameter: 'page', pageSizeParameter: 'per_page', pageSize: 1, maxPages: 2 } };
      const first = await capability.readRecords(context(), target, read({ limit: 1 }));
      assert.equal(first.stopReason, 'limit');
      const second = await capability.readRecords(context(), target, read({ limit: 1, after: first.continuation }));
      assert.deepEqual(ids(second.records), [2]);
      assert.equal(second.stopReason, 'max_pages');
      assert.equal(second.continuation, null);
    });

    it('stops with repeated_cursor when the API hands back a cursor already followed', async () => {
      const target = { request: { url: url('/api/cursor-loop') }, response: { recordsPath: 'data' }, pagination: { type: 'cursor', parameter: 'cursor', responsePath: 'meta.next' } };
      const page = await capability.readRecords(context(), target, read());
      assert.equal(page.stopReason, 'repeated_cursor');
      assert.equal(page.continuation, null);
      assert.equal(page.pagesFetched, 2);
    });

    it('stops with empty_page when a page has no records', async () => {
      const target = { request: { url: url('/api/cursor-empty') }, response: { recordsPath: 'data' }, pagination: { type: 'cursor', parameter: 'cursor', responsePath: 'meta.next' } };
      const page = await capability.readRecords(context(), target, read());
      assert.deepEqual(ids(page.records), [1, 2]);
      assert.equal(page.stopReason, 'empty_page');
      assert.equal(page.continuation, null);
    });
  });

  describe('records query', () => {
    it('filters, projects and orders the returned page', async () => {
      const page = await capability.readRecords(context(), { request: { url: url('/api/none') }, response: { recordsPath: 'data' } }, read({
        where: [{ field: 'score', op: 'gte', value: 2 }, { field: 'note', op: 'exists' }],
        select: ['id', 'name'],
        orderBy: [{ field: 'id', direction: 'desc' }],
      }));
      assert.deepEqual(page.records, [{ id: 5, name: 'eve' }, { id: 2, name: 'bob' }]);
    });

    it('fetches further pages until enough records match', async () => {
      const target = { request: { url: url('/api/page') }, response: { recordsPath: 'items' }, pagination: { type: 'page', parameter: 'page', pageSizeParameter: 'per_page', pageSize: 2 } };
      const page = await capability.readRecords(context(), target, read({ where: [{ field: 'meta', op: 'in', values: [{ team: 'x' }] }], limit: 2 }));
      assert.deepEqual(ids(page.records), [1, 3]);
      assert.equal(page.stopReason, 'limit');
      const rest = await capability.readRecords(context(), target, read({ where: [{ field: 'meta', op: 'in', values: [{ team: 'x' }] }], limit: 2, after: page.continuation }));
      assert.deepEqual(ids(rest.records), [5]);
    });
  });

  describe('window', () => {
    const DAY = 86_400_000;
    const isoDate = (ms: number) => new Date(ms).toISOString().slice(0, 10);

    for (const location of ['query', 'body'] as const) {
      for (const format of ['iso', 'date', 'epoch_ms', 'epoch_s'] as const) {
        it(`sends ${format} window values in the ${location}`, async () => {
          const target = {
            request: { url: url('/api/none'), method: location === 'body' ? 'POST' : 'GET', query: { fixed: 'yes' } },
            response: { recordsPath: 'data' },
            window: { startParameter: 'from', endParameter: 'to', location, lookback: 'P1D', format },
          };
          const before = Date.now();
          await capability.readRecords(context(), target, read());
          const after = Date.now();
          const [received] = server.received;
          assert.equal(received.query.fixed, 'yes');
          const values = location === 'body' ? received.body : received.query;
          if (location === 'body') assert.equal(received.query.from, undefined);
          const { from, to } = values;
          if (location === 'body' && format.startsWith('epoch')) assert.equal(typeof to, 'number');
          switch (format) {
            case 'iso':
              assert.ok(Date.parse(to) >= before && Date.parse(to) <= after);
              assert.equal(Date.parse(to) - Date.parse(from), DAY);
              assert.match(from, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
              break;
            case 'date':
              assert.ok([isoDate(before), isoDate(after)].includes(to));
              assert.equal(from, isoDate(Date.parse(to) - DAY));
              break;
            case 'epoch_ms':
              assert.ok(Number(to) >= before && Number(to) <= after);
              assert.equal(Number(to) - Number(from), DAY);
              break;
            case 'epoch_s':
              assert.ok(Number(to) >= Math.floor(before / 1000) && Number(to) <= Math.floor(after / 1000));
              assert.equal(Number(to) - Number(from), DAY / 1000);
              break;
          }
        });
      }
    }

    describe('computeWindow', () => {
      const syncTime = new Date('2024-03-10T12:00:00Z');
      const window = { startParameter: 'from', lookback: 'P30D', overlap: 'PT1H' };

      it('since_last resumes at the last position minus the overlap', () => {
        const computed = computeWindow({ window, syncTime, lastPosition: '2024-03-10T06:00:00Z' });
        assert.equal(computed.startValue, '2024-03-10T05:00:00.000Z');
        assert.equal(computed.endValue, '2024-03-10T12:00:00.000Z');
      });

      it('since_last never reaches further back than the lookback, which is also its first window', () => {
        assert.equal(computeWindow({ window, syncTime, lastPosition: new Date('2024-01-01T00:00:00Z') }).startValue, '2024-02-09T12:00:00.000Z');
        assert.equal(computeWindow({ window, syncTime }).startValue, '2024-02-09T12:00:00.000Z');
      });

      it('rolling reads the last lookback whatever the position', () => {
        const computed = computeWindow({ window: { ...window, mode: 'rolling', lookback: 'PT6H' }, syncTime, lastPosition: '2024-03-10T11:00:00Z' });
        assert.equal(computed.startValue, '2024-03-10T06:00:00.000Z');
      });

      it('formats the values and handles calendar months and positions after the sync time', () => {
        const dated = computeWindow({ window: { ...window, format: 'date' }, syncTime });
        assert.deepEqual([dated.startValue, dated.endValue], ['2024-02-09', '2024-03-10']);
        const ms = computeWindow({ window: { ...window, format: 'epoch_ms' }, syncTime });
        assert.deepEqual([ms.startValue, ms.endValue], [Date.UTC(2024, 1, 9, 12), Date.UTC(2024, 2, 10, 12)]);
        const s = computeWindow({ window: { ...window, format: 'epoch_s' }, syncTime });
        assert.equal(s.startValue, Date.UTC(2024, 1, 9, 12) / 1000);
        const month = computeWindow({ window: { startParameter: 'from', lookback: 'P1M' }, syncTime: new Date('2024-03-31T00:00:00Z') });
        assert.equal(month.startValue, '2024-02-29T00:00:00.000Z');
        const future = computeWindow({ window, syncTime, lastPosition: '2024-04-01T00:00:00Z' });
        assert.equal(future.startValue, future.endValue);
      });
    });
  });

  describe('safe fetch', () => {
    it('refuses a loopback address unless the installation allows private networks', async () => {
      const target = { request: { url: url('/api/none') }, response: { recordsPath: 'data' } };
      await rejectsWith(capability.readRecords(context({ allowPrivateNetwork: false }), target, read()), 'address_refused');
      assert.equal(server.received.length, 0);
    });

    it('follows a redirect under the base URL', async () => {
      const page = await capability.readRecords(context(), { request: { url: url('/api/redirect') }, response: { recordsPath: 'data' } }, read());
      assert.equal(page.records.length, 5);
      assert.deepEqual(server.received.map((r) => r.path), ['/api/redirect', '/api/none']);
    });

    it('refuses a redirect out of the base URL', async () => {
      await rejectsWith(capability.readRecords(context(), { request: { url: url('/api/redirect-out') } }, read()), 'url_outside_base');
    });

    /** A connection to the fixture server under a host name only the injected lookup knows. */
    function namedConnection(allowPrivateNetwork: boolean, answers: string[][]) {
      const calls: string[] = [];
      const connection = {
        baseUrl: `http://fixture.weft.invalid:${server.port}/api/`,
        headers: { Authorization: SECRET },
        allowPrivateNetwork,
        timeoutMs: 5000,
        lookup: (hostname: string) => {
          calls.push(hostname);
          return Promise.resolve(answers.shift() ?? []);
        },
      };
      const at = (path: string) => new URL(`http://fixture.weft.invalid:${server.port}${path}`);
      return { connection, calls, at };
    }

    it('refuses a host name when any address it resolves to is not public', async () => {
      const { connection, at } = namedConnection(false, [['93.184.216.34', '127.0.0.1']]);
      const refused = await rejectsWith(safeFetch(connection, { url: at('/api/none'), method: 'GET' }), 'address_refused');
      assert.deepEqual(refused.details, { host: 'fixture.weft.invalid' });
      assert.equal(server.received.length, 0);
    });

    it('connects to exactly the address it checked, however the name resolves afterwards (DNS rebinding)', async () => {
      // The name first resolves to a public address, then to loopback. A fetch that checked one
      // answer and resolved again to connect would reach the fixture server on 127.0.0.1.
      const { connection, calls, at } = namedConnection(false, [['93.184.216.34'], ['127.0.0.1']]);
      const connectedTo: string[] = [];
      // Watches each socket's own lookup, and stops the one going to the public address before
      // it connects, so the test sends nothing out of the machine.
      const onSocket = (message: unknown) => {
        const { socket } = message as { socket: Socket };
        socket.once('lookup', (error: Error | null, address: string, _family: unknown, host: string) => {
          if (host !== 'fixture.weft.invalid') return;
          connectedTo.push(address);
          socket.destroy(Object.assign(new Error('stopped by the test'), { code: 'STOPPED_BY_TEST' }));
        });
      };
      diagnosticsChannel.subscribe('net.client.socket', onSocket);
      try {
        const failed = await rejectsWith(safeFetch(connection, { url: at('/api/none'), method: 'GET' }), 'upstream_unavailable');
        assert.equal(failed.details?.reason, 'STOPPED_BY_TEST');
      } finally {
        diagnosticsChannel.unsubscribe('net.client.socket', onSocket);
      }
      assert.deepEqual(calls, ['fixture.weft.invalid'], 'the name is resolved once, for the check and the connection');
      assert.deepEqual(connectedTo, ['93.184.216.34']);
      assert.equal(server.received.length, 0);
    });

    it('sends the request to the first answer when a second resolution would answer differently', async () => {
      // The fixture server listens on 127.0.0.1 only: a second resolution (127.0.0.2) would be refused.
      const { connection, calls, at } = namedConnection(true, [['127.0.0.1'], ['127.0.0.2']]);
      const response = await safeFetch(connection, { url: at('/api/none'), method: 'GET' });
      assert.equal(response.status, 200);
      assert.deepEqual(calls, ['fixture.weft.invalid']);
      // The host name is kept for the request (and for TLS verification): only the address is pinned.
      assert.deepEqual(server.received.map((r) => [r.path, r.host, r.authorization]), [['/api/none', `fixture.weft.invalid:${server.port}`, SECRET]]);
    });

    it('resolves and checks the host again for a redirect hop on a new connection', async () => {
      const { connection, calls, at } = namedConnection(true, [['127.0.0.1']]);
      const failed = await rejectsWith(safeFetch(connection, { url: at('/api/redirect-close'), method: 'GET' }), 'upstream_unavailable');
      assert.deepEqual(failed.details, { host: 'fixture.weft.invalid' });
      assert.deepEqual(calls, ['fixture.weft.invalid', 'fixture.weft.invalid']);
      assert.deepEqual(server.received.map((r) => r.path), ['/api/redirect-close']);
    });

    it('refuses a response larger than 32 MiB', async () => {
      const connection = { baseUrl: `${server.url}/api/`, headers: {}, allowPrivateNetwork: true, timeoutMs: 5000 };
      await rejectsWith(safeFetch(connection, { url: new URL(url('/api/huge')), method: 'GET' }), 'upstream_response_too_large');
    });

    it('refuses non-http schemes and endless redirects', async () => {
      const connection = { baseUrl: `${server.url}/api/`, headers: {}, allowPrivateNetwork: true, timeoutMs: 5000 };
      await rejectsWith(safeFetch(connection, { url: new URL('file:///etc/passwd'), method: 'GET' }), 'scheme_refused');
      await rejectsWith(safeFetch(connection, { url: new URL(url('/api/redirect-loop')), method: 'GET' }), 'too_many_redirects');
      assert.equal(server.received.length, 6);
    });

    it('reports upstream failures without the credentials', async () => {
      const failed = await rejectsWith(capability.readRecords(context(), { request: { url: url('/api/fail') } }, read()), 'upstream_unavailable');
      assert.equal(failed.kind, 'unavailable');
      assert.equal(failed.details?.status, 503);
      await rejectsWith(capability.readRecords(context(), { request: { url: url('/api/not-json') } }, read()), 'upstream_invalid_response');
      await rejectsWith(capability.readRecords(context(), { request: { url: url('/api/none') }, response: { recordsPath: 'missing' } }, read()), 'upstream_invalid_response');
    });
  });

  describe('target validation', () => {
    const problems = (target: Record<string, unknown>) => capability.validateTarget!(target, context().installation);
    const schemaProblems = (target: Record<string, unknown>) => {
      try {
        validateWithSchema(capability.definition.targetSchema, target, 'target');
        return [];
      } catch (error) {
        return ((error as InputError).details?.errors as Array<{ path: string }>).map((p) => p.path);
      }
    };

    it('accepts a complete target', () => {
      const target = {
        request: { url: url('/api/page'), method: 'POST', query: { team: 'x' } },
        response: { format: 'json', recordsPath: 'items' },
        primaryKeys: ['id'],
        window: { startParameter: 'from', endParameter: 'to', location: 'body', mode: 'rolling', lookback: 'P30D', overlap: 'PT1H', format: 'epoch_s' },
        pagination: { type: 'page', location: 'body', parameter: 'page', start: 0, pageSizeParameter: 'per_page', pageSize: 50, maxPages: 10 },
      };
      assert.deepEqual(schemaProblems(target), []);
      assert.deepEqual(problems(target), []);
    });

    it('requires request.url under the installation base URL', () => {
      assert.deepEqual(problems({ request: { url: 'https://elsewhere.example/api/x' } }).map((p) => p.path), ['/request/url']);
      // Same origin, but /apix is not under /api/.
      assert.deepEqual(problems({ request: { url: url('/apix/items') } }).map((p) => p.path), ['/request/url']);
    });

    it('refuses a window parameter repeated in request.query, and body parameters without POST', () => {
      const target = { request: { url: url('/api/none'), query: { from: '2020-01-01' } }, window: { startParameter: 'from', location: 'body', lookback: 'P1D' } };
      assert.deepEqual(problems(target).map((p) => p.path).sort(), ['/request/query/from', '/window/location']);
    });

    it('requires parameter for cursor pagination and responsePath for link pagination', () => {
      const base = { request: { url: url('/api/none') } };
      assert.ok(schemaProblems({ ...base, pagination: { type: 'cursor', responsePath: 'next' } }).includes('/pagination/parameter'));
      assert.ok(schemaProblems({ ...base, pagination: { type: 'link' } }).includes('/pagination/responsePath'));
      assert.deepEqual(schemaProblems({ ...base, pagination: { type: 'link', responsePath: 'next' } }), []);
    });

    it('checks durations, enums and unknown fields', () => {
      const paths = schemaProblems({ request: { url: url('/api/none'), extra: 1 }, window: { startParameter: 'from', lookback: '30 days', format: 'unix' } });
      assert.deepEqual(paths.sort(), ['/request/extra', '/window/format', '/window/lookback']);
      assert.deepEqual(problems({ request: { url: url('/api/none') }, window: { startParameter: 'from', lookback: 'PT0S' } }).map((p) => p.path), ['/window/lookback']);
    });

    it('keeps credentials out of the installation base URL', () => {
      assert.deepEqual(capability.validateInstallation!({ baseUrl: 'https://user:pw@api.example.com/' }).map((p) => p.path), ['/baseUrl']);
      assert.deepEqual(capability.validateInstallation!({ baseUrl: 'https://api.example.com/v1/' }), []);
    });
  });

  describe('discovery and connection check', () => {
    it('infers field names and types from the first page', async () => {
      const fields = await capability.discoverSchema(context(), { request: { url: url('/api/none') }, response: { recordsPath: 'data' } });
      assert.deepEqual(fields, [
        { name: 'id', type: 'integer', nullable: false },
        { name: 'name', type: 'string', nullable: false },
        { name: 'score', type: 'number', nullable: false },
        { name: 'active', type: 'boolean', nullable: false },
        { name: 'tags', type: 'array', nullable: false },
        { name: 'meta', type: 'object', nullable: false },
        { name: 'note', type: 'string', nullable: true },
      ]);
      assert.equal(server.received.length, 1);
    });

    it('checks the connection with one request', async () => {
      const ok = await capability.checkConnection(context(), { request: { url: url('/api/none') }, response: { recordsPath: 'data' } });
      assert.equal(ok.ok, true, ok.message);
      assert.deepEqual(ok.details, { status: 200 });
      const failed = await capability.checkConnection(context(), { request: { url: url('/api/fail') } });
      assert.equal(failed.ok, false);
      assert.equal(failed.details?.status, 503);
      const refused = await capability.checkConnection(context({ allowPrivateNetwork: false }), { request: { url: url('/api/none') } });
      assert.equal(refused.ok, false);
      assert.equal(refused.details?.code, 'address_refused');
      assert.equal(server.received.length, 2);
    });
  });
});
