import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import diagnosticsChannel from 'node:diagnostics_channel';
import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { DomainError, InputError } from '../../../core/errors';
import { validateWithSchema } from '../../../core/schema-validator';
import type { CapabilityContext, RecordsQuery } from '../../../plugins/capability';
import { ManagedTableMemory } from '../../../plugins/managed-table/memory';
import { PostgresTablePools } from '../../../plugins/postgres-table/pool';
import { SnapshotNotices } from '../../../plugins/snapshot-notices';
import { findCapability } from '../../../plugins';
import { computeWindow, connectionFor, isUnderBase, httpDatasetCapability as capability, PAGES_PER_READ, readRemoteRecords, safeFetch } from '../../../plugins/http-dataset';
import { env } from '../../support/environment';
import { within } from '../../support/polling';

/** What the fixture server saw: the tests assert on the parameters the capability sent. */
interface Received {
  method: string;
  path: string;
  query: Record<string, string>;
  /** The raw query string, to see repeated parameters. */
  search: string;
  body: any;
  authorization?: string;
  host?: string;
}

interface Reply {
  status?: number;
  headers?: Record<string, string>;
  body?: unknown;
  /** Answers after this many milliseconds. */
  delayMs?: number;
  /** Answers only once the test calls FixtureServer.releaseHeld(). */
  held?: boolean;
}

const items = [
  { id: 1, name: 'ada', score: 1.5, active: true, tags: ['a'], meta: { team: 'x' }, note: null },
  { id: 2, name: 'bob', score: 2, active: false, tags: [], meta: { team: 'y' }, note: 'late' },
  { id: 3, name: 'cy', score: 3.25, active: true, tags: [], meta: { team: 'x' } },
  { id: 4, name: 'dee', score: 4, active: true, tags: ['b'], meta: { team: 'y' }, note: null },
  { id: 5, name: 'eve', score: 5.5, active: false, tags: [], meta: { team: 'x' }, note: 'ok' },
];
const SECRET = 'Bearer fixture-s3cret';
/** An installation queryParameters value; rejectsWith also looks for "s3cret". */
const QUERY_SECRET = 'qk-s3cret-77';
const many = Array.from({ length: 60 }, (_, i) => ({ id: i + 1 }));

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
  // Remote input that is not a URL at all.
  '/api/redirect-bad': () => ({ status: 302, headers: { location: 'http://[::1' } }),
  '/api/link-bad': () => ({ body: { records: [items[0]], links: { next: 'http://[::1' } } }),
  // 60 records, one per page with per_page=1: a where that matches late needs many pages.
  '/api/many': ({ query }) => {
    const size = Number(query.per_page ?? 1);
    const page = Number(query.page);
    return { body: { items: many.slice((page - 1) * size, page * size) } };
  },
  // Pages from `slow_from` on answer only after `slow_ms` (default 2 s).
  '/api/slow': ({ query }) => {
    const page = Number(query.page);
    return { delayMs: query.slow_from && page >= Number(query.slow_from) ? Number(query.slow_ms ?? 2000) : 0, body: { items: items.slice(page - 1, page) } };
  },
  // Pages answered only when the test releases them.
  '/api/held': ({ query }) => ({ held: true, body: { items: items.slice(Number(query.page) - 1, Number(query.page)) } }),
  // APIs that echo the api_key query parameter back into their next links and redirects.
  '/api/link-echo': ({ query }) => {
    const page = Number(query.p ?? 1);
    const next = page < 3 ? `/api/link-echo?p=${page + 1}&api_key=${encodeURIComponent(query.api_key ?? '')}&sig=a%2Fb+c` : null;
    return { body: { records: items.slice((page - 1) * 2, page * 2), links: { next } } };
  },
  '/api/redirect-echo': ({ query }) => ({ status: 302, headers: { location: `/api/none?api_key=${encodeURIComponent(query.api_key ?? '')}` } }),
  '/api/redirect-echo-fail': ({ query }) => ({ status: 302, headers: { location: `/api/fail?api_key=${encodeURIComponent(query.api_key ?? '')}` } }),
  '/api/not-json': () => ({ headers: { 'content-type': 'text/plain' }, body: 'hello' }),
};

class FixtureServer {
  received: Received[] = [];
  /** Paths of requests whose connection the client closed before the answer was sent. */
  abandoned: string[] = [];
  private server!: Server;
  private held!: Promise<void>;
  private release!: () => void;

  constructor() {
    this.holdPages();
  }

  /** Answers the held pages waiting now; later ones are held again. */
  releaseHeld(): void {
    this.release();
    this.holdPages();
  }

  private holdPages(): void {
    this.held = new Promise((resolve) => (this.release = resolve));
  }

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
      search: url.search,
      body: text ? JSON.parse(text) : undefined,
      authorization: req.headers.authorization,
      host: req.headers.host,
    };
    this.received.push(received);
    res.on('close', () => {
      if (!res.writableEnded) this.abandoned.push(url.pathname);
    });
    const reply = routes[url.pathname]?.(received, this.port) ?? { status: 404, body: { error: 'no route' } };
    if (reply.delayMs) await new Promise((resolve) => setTimeout(resolve, reply.delayMs));
    if (reply.held) await this.held;
    if (res.destroyed) return;
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

  function context(settings: Record<string, unknown> = {}, credentials: Record<string, unknown> = {}): CapabilityContext {
    return {
      installation: {
        id: randomUUID(),
        workspaceId: randomUUID(),
        settings: { baseUrl: `${server.url}/api/`, allowPrivateNetwork: true, timeoutMs: 5000, ...settings },
        credentials: { headers: { Authorization: SECRET }, ...credentials },
      },
      db: env().db,
      managedTables: new ManagedTableMemory(env().db), postgresTablePools: new PostgresTablePools(), snapshotNotices: new SnapshotNotices(),
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
    const queryParameters = (definition.installationSchema.properties as any).queryParameters;
    assert.equal(queryParameters['x-weft-secret'], true);
    assert.match(queryParameters.description, /query string/);
    assert.deepEqual(validateWithSchema(definition.installationSchema, { baseUrl: 'https://api.example.com/', queryParameters: { api_key: 'k' } }, 'installation'), {
      baseUrl: 'https://api.example.com/',
      queryParameters: { api_key: 'k' },
      allowPrivateNetwork: false,
      timeoutMs: 10_000,
    });
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

    it('answers a next link that is not a URL with upstream_invalid_response, naming no query string', async () => {
      const target = { request: { url: url('/api/link-bad'), query: { team: 'q-value' } }, response: { recordsPath: 'records' }, pagination: { type: 'link', responsePath: 'links.next' } };
      const failed = await rejectsWith(capability.readRecords(context(), target, read()), 'upstream_invalid_response');
      assert.equal(failed.kind, 'upstream_failed');
      assert.ok(!failed.message.includes('q-value') && !failed.message.includes('?') && !failed.message.includes('[::1'), failed.message);
      assert.equal(server.received.length, 1);
    });

    describe('per-call budget', () => {
      const manyTarget = (maxPages?: number) => ({
        request: { url: url('/api/many') },
        response: { recordsPath: 'items' },
        pagination: { type: 'page', parameter: 'page', pageSizeParameter: 'per_page', pageSize: 1, ...(maxPages ? { maxPages } : {}) },
      });
      const late = read({ where: [{ field: 'id', op: 'in', values: [3, 55] }], limit: 2 });

      it(`fetches at most ${PAGES_PER_READ} pages per call, then returns what matched with a continuation (page_budget)`, async () => {
        assert.equal(PAGES_PER_READ, 20);
        const first = await capability.readRecords(context(), manyTarget(1000), late);
        assert.deepEqual(ids(first.records), [3]);
        assert.equal(first.stopReason, 'page_budget');
        assert.equal(first.pagesFetched, 20);
        assert.notEqual(first.continuation, null);
        assert.equal(server.received.length, 20);

        const second = await capability.readRecords(context(), manyTarget(1000), { ...late, after: JSON.parse(JSON.stringify(first.continuation)) });
        assert.deepEqual(ids(second.records), []);
        assert.equal(second.stopReason, 'page_budget');
        assert.equal(second.pagesFetched, 20);

        const third = await capability.readRecords(context(), manyTarget(1000), { ...late, after: second.continuation });
        assert.deepEqual(ids(third.records), [55]);
        assert.equal(third.stopReason, 'page_budget');
        assert.equal(third.pagesFetched, 20);

        const last = await capability.readRecords(context(), manyTarget(1000), { ...late, after: third.continuation });
        assert.deepEqual(ids(last.records), []);
        assert.equal(last.stopReason, 'empty_page');
        assert.equal(last.continuation, null);
        assert.equal(last.pagesFetched, 1);
        assert.deepEqual(server.received.map((r) => Number(r.query.page)), Array.from({ length: 61 }, (_, i) => i + 1), 'no page fetched twice or skipped');

        // Enough matches within the budget end the call with limit, as before.
        server.received = [];
        const early = await capability.readRecords(context(), manyTarget(1000), read({ where: [{ field: 'id', op: 'in', values: [3, 15] }], limit: 2 }));
        assert.deepEqual(ids(early.records), [3, 15]);
        assert.equal(early.stopReason, 'limit');
        assert.equal(early.pagesFetched, 15);
      });

      it('keeps counting maxPages across page_budget continuations', async () => {
        const first = await capability.readRecords(context(), manyTarget(30), late);
        assert.equal(first.stopReason, 'page_budget');
        const second = await capability.readRecords(context(), manyTarget(30), { ...late, after: first.continuation });
        assert.deepEqual(ids(second.records), []);
        assert.equal(second.stopReason, 'max_pages');
        assert.equal(second.continuation, null);
        assert.equal(second.pagesFetched, 10);
      });

      const slowTarget = (slowFrom?: number, slowMs?: number) => ({
        request: { url: url('/api/slow'), ...(slowFrom ? { query: { slow_from: String(slowFrom), ...(slowMs ? { slow_ms: String(slowMs) } : {}) } } : {}) },
        response: { recordsPath: 'items' },
        pagination: { type: 'page', parameter: 'page' },
      });
      const readSlow = (target: ReturnType<typeof slowTarget>, query: RecordsQuery, deadlineMs: number) => readRemoteRecords(
        connectionFor(context().installation),
        validateWithSchema(capability.definition.targetSchema, structuredClone(target), 'target'),
        query,
        { syncTime: new Date() },
        { deadlineMs },
      );

      it('stops at the call deadline with what it has and a continuation at the page that did not arrive', async () => {
        // Wide margins for a loaded machine: page 1 (immediate) has 2 s to arrive; page 2 would take
        // 8 s and the request's own timeout is 5 s, so finishing well under 5 s proves the deadline cut it.
        const started = Date.now();
        const page = await readSlow(slowTarget(2, 8000), read(), 2000);
        const elapsed = Date.now() - started;
        assert.ok(elapsed < 4500, `the slow page is abandoned at the deadline (took ${elapsed} ms)`);
        assert.ok(server.received.some((r) => r.path === '/api/slow' && r.query.page === '2'), 'the slow page was asked for');
        assert.deepEqual(ids(page.records), [1]);
        assert.equal(page.stopReason, 'page_budget');
        assert.equal(page.pagesFetched, 1);
        assert.equal((page.continuation as { position: number }).position, 2);
        // The same read goes on from there once the API answers in time.
        const rest = await readSlow(slowTarget(), read({ after: page.continuation }), 5000);
        assert.deepEqual(ids(rest.records), [2, 3, 4, 5]);
        assert.equal(rest.stopReason, 'empty_page');
      });

      it('calls the context\'s heartbeat while a slow page is awaited, and returns the page', async () => {
        // The page is held back until the second heartbeat, so this waits on no clock: without
        // heartbeats it never comes and the read fails at its deadline (30 s, the request's timeout).
        let beats = 0;
        const heartbeat = () => {
          if (++beats === 2) server.releaseHeld();
        };
        const heldTarget = { request: { url: url('/api/held') }, response: { recordsPath: 'items' }, pagination: { type: 'page', parameter: 'page' } };
        try {
          const page = await capability.readRecords({ ...context({ timeoutMs: 30_000 }), heartbeat }, heldTarget, read({ limit: 1 }));
          assert.deepEqual(ids(page.records), [1]);
          assert.ok(beats >= 2, `heartbeats while waiting: ${beats}`);
        } finally {
          server.releaseHeld();
        }
      });

      it('aborts the request in flight when the context\'s signal aborts, rejecting with its reason; the remote side sees the connection close', async () => {
        server.abandoned = [];
        const controller = new AbortController();
        const reason = new Error('the run was canceled');
        // The request's own timeout and the read deadline are far away: only the abort can end it.
        const reading = capability.readRecords({ ...context({ timeoutMs: 60_000 }), signal: controller.signal }, slowTarget(1, 60_000), read({ limit: 1 }));
        reading.catch(() => undefined);
        await within(5_000, () => server.received.some((r) => r.path === '/api/slow'), Boolean);
        controller.abort(reason);
        await assert.rejects(reading, (error) => error === reason);
        await within(5_000, () => server.abandoned.includes('/api/slow'), Boolean);
        assert.deepEqual(server.abandoned, ['/api/slow']);
        // A signal aborted before the read sends nothing.
        const before = server.received.length;
        await assert.rejects(capability.readRecords({ ...context(), signal: controller.signal }, slowTarget(), read()), (error) => error === reason);
        assert.equal(server.received.length, before);
      });

      it('fails with upstream_unavailable when the deadline passes before any page arrived', async () => {
        const failed = await rejectsWith(readSlow(slowTarget(1), read(), 200), 'upstream_unavailable');
        assert.equal(failed.details?.reason, 'deadline');
      });
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
    it('filters and projects the returned page, keeping the remote order', async () => {
      const page = await capability.readRecords(context(), { request: { url: url('/api/none') }, response: { recordsPath: 'data' } }, read({
        where: [{ field: 'score', op: 'gte', value: 2 }, { field: 'note', op: 'exists' }],
        select: ['id', 'name'],
      }));
      assert.deepEqual(page.records, [{ id: 2, name: 'bob' }, { id: 5, name: 'eve' }]);
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
    it('keeps URLs under the base path, refusing encoded slashes, backslashes and dot segments', () => {
      const base = 'https://api.example.com/v1/';
      assert.equal(isUnderBase('https://api.example.com/v1/orders?q=%2f', base), true);
      for (const escape of ['https://api.example.com/v1/..%2f..%2fadmin', 'https://api.example.com/v1/a%5Cb', 'https://api.example.com/v1x', 'https://api.example.com/v2/orders']) {
        assert.equal(isUnderBase(escape, base), false, escape);
      }
    });

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

    it('answers a redirect Location that is not a URL with upstream_invalid_response', async () => {
      const target = { request: { url: url('/api/redirect-bad'), query: { team: 'q-value' } } };
      const failed = await rejectsWith(capability.readRecords(context(), target, read()), 'upstream_invalid_response');
      assert.ok(!failed.message.includes('q-value') && !failed.message.includes('?') && !failed.message.includes('[::1'), failed.message);
      const connection = { baseUrl: `${server.url}/api/`, headers: {}, allowPrivateNetwork: true, timeoutMs: 5000 };
      await rejectsWith(safeFetch(connection, { url: new URL(url('/api/redirect-bad')), method: 'GET' }), 'upstream_invalid_response');
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
      assert.equal(failed.kind, 'upstream_failed');
      assert.equal(failed.details?.status, 503);
      await rejectsWith(capability.readRecords(context(), { request: { url: url('/api/not-json') } }, read()), 'upstream_invalid_response');
      await rejectsWith(capability.readRecords(context(), { request: { url: url('/api/none') }, response: { recordsPath: 'missing' } }, read()), 'upstream_invalid_response');
    });
  });

  describe('installation query parameters', () => {
    const keyed = () => context({}, { queryParameters: { api_key: QUERY_SECRET } });
    const noSecret = (value: unknown) => {
      const text = JSON.stringify(value);
      assert.ok(!text.includes(QUERY_SECRET) && !text.includes('s3cret'), text);
    };

    it('sends them with every request, GET or POST, once each', async () => {
      await capability.readRecords(keyed(), { request: { url: url('/api/none'), query: { team: 'x' } }, response: { recordsPath: 'data' } }, read());
      await capability.readRecords(keyed(), { request: { url: url('/api/cursor'), method: 'POST' }, response: { recordsPath: 'data' }, pagination: { type: 'cursor', location: 'body', parameter: 'cursor', responsePath: 'meta.next' } }, read());
      assert.equal(server.received.length, 4);
      for (const received of server.received) {
        assert.equal(received.query.api_key, QUERY_SECRET);
        assert.equal(new URLSearchParams(received.search).getAll('api_key').length, 1);
      }
      assert.equal(server.received[0].query.team, 'x');
    });

    it('keeps them out of continuations when next links echo them, and sends them again on resume', async () => {
      const target = { request: { url: url('/api/link-echo') }, response: { recordsPath: 'records' }, pagination: { type: 'link', responsePath: 'links.next' } };
      const first = await capability.readRecords(keyed(), target, read({ limit: 3 }));
      assert.deepEqual(ids(first.records), [1, 2, 3]);
      assert.equal(first.stopReason, 'limit');
      noSecret(first.continuation);
      assert.ok(!JSON.stringify(first.continuation).includes('api_key'));
      const second = await capability.readRecords(keyed(), target, read({ limit: 3, after: JSON.parse(JSON.stringify(first.continuation)) }));
      assert.deepEqual(ids(second.records), [4, 5]);
      assert.equal(second.stopReason, 'exhausted');
      assert.deepEqual(server.received.map((r) => r.query.p), [undefined, '2', '2', '3']);
      for (const received of server.received) assert.deepEqual(new URLSearchParams(received.search).getAll('api_key'), [QUERY_SECRET]);
      // The rest of an echoing link is followed byte for byte (a signature over it stays valid).
      assert.ok(server.received.slice(1).every((r) => r.search.startsWith('?p=') && r.search.includes('&sig=a%2Fb+c&')), JSON.stringify(server.received.map((r) => r.search)));
    });

    it('keeps them out of error messages and check results, also after a redirect that echoes them', async () => {
      await rejectsWith(capability.readRecords(keyed(), { request: { url: url('/api/fail') } }, read()), 'upstream_unavailable');
      await rejectsWith(capability.readRecords(keyed(), { request: { url: url('/api/redirect-echo-fail') } }, read()), 'upstream_unavailable');
      await rejectsWith(capability.readRecords(keyed(), { request: { url: url('/api/redirect-bad') } }, read()), 'upstream_invalid_response');
      await rejectsWith(capability.readRecords(keyed(), { request: { url: url('/api/not-json') } }, read()), 'upstream_invalid_response');
      const ok = await capability.checkConnection(keyed(), { request: { url: url('/api/redirect-echo') }, response: { recordsPath: 'data' } });
      assert.equal(ok.ok, true, ok.message);
      noSecret(ok);
      for (const path of ['/api/fail', '/api/redirect-echo-fail', '/api/redirect-bad', '/api/not-json']) noSecret(await capability.checkConnection(keyed(), { request: { url: url(path) } }));
      assert.ok(server.received.every((r) => r.query.api_key === QUERY_SECRET));
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

    it('refuses a target query parameter that an installation queryParameters name would replace', () => {
      const installation = context({}, { queryParameters: { api_key: QUERY_SECRET } }).installation;
      const keyedProblems = (target: Record<string, unknown>) => capability.validateTarget!(target, installation);
      const clashing = keyedProblems({
        request: { url: `${url('/api/cursor')}?api_key=mine`, query: { api_key: 'other', team: 'x' } },
        pagination: { type: 'cursor', parameter: 'api_key', responsePath: 'meta.next' },
      });
      assert.deepEqual(clashing.map((p) => p.path).sort(), ['/pagination/parameter', '/request/query/api_key', '/request/url']);
      assert.ok(!JSON.stringify(clashing).includes(QUERY_SECRET));
      // Body parameters do not reach the query string; other names are fine.
      assert.deepEqual(keyedProblems({ request: { url: url('/api/cursor'), method: 'POST', query: { team: 'x' } }, pagination: { type: 'cursor', location: 'body', parameter: 'api_key', responsePath: 'meta.next' } }), []);
      // Without installation queryParameters the same name is the target's own.
      assert.deepEqual(problems({ request: { url: url('/api/none'), query: { api_key: 'other' } } }), []);
    });

    it('keeps credentials out of the installation base URL', () => {
      assert.deepEqual(capability.validateInstallation!({ baseUrl: 'https://user:pw@api.example.com/' }).map((p) => p.path), ['/baseUrl']);
      assert.deepEqual(capability.validateInstallation!({ baseUrl: 'https://api.example.com/v1/' }), []);
    });
  });

  describe('discovery and connection check', () => {
    it('infers field names and types from the first page', async () => {
      const { fields, primaryKey } = await capability.discoverSchema(context(), { request: { url: url('/api/none') }, response: { recordsPath: 'data' }, primaryKeys: ['id'] });
      assert.deepEqual(primaryKey, ['id']);
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

    it('returns every failure as a result with a code, never throwing', async () => {
      const check = async (target: Record<string, unknown>, ctx = context()) => {
        const result = await capability.checkConnection(ctx, target);
        assert.equal(result.ok, false, result.message);
        assert.equal(typeof result.details?.code, 'string', JSON.stringify(result));
        assert.ok(!JSON.stringify(result).includes('s3cret'), JSON.stringify(result));
        return result;
      };
      assert.equal((await check({ request: { url: url('/api/redirect-bad') } })).details?.code, 'upstream_invalid_response');
      assert.equal((await check({ request: { url: url('/api/fail') } })).details?.code, 'upstream_unavailable');
      assert.equal((await check({ request: { url: url('/api/not-json') } })).details?.code, 'upstream_invalid_response');
      assert.equal((await check({ request: { url: url('/api/none') }, response: { recordsPath: 'missing' } })).details?.code, 'upstream_invalid_response');
      // A stored target that no longer validates.
      await check({ request: { url: url('/api/none') }, pagination: { type: 'cursor' } });
      // Something unexpected: its message (which could carry a credential) is not passed on.
      const broken = context();
      Object.defineProperty(broken.installation, 'settings', { get: () => { throw new TypeError(`broken ${SECRET}`); } });
      const unexpected = await check({ request: { url: url('/api/none') } }, broken);
      assert.equal(unexpected.details?.code, 'check_failed');
    });
  });
});
