import assert from 'node:assert/strict';
import net from 'node:net';
import type pg from 'pg';
import { installPlugin } from '../../services/endpoints/plugins';
import { env } from '../support/environment';
import { externalDatabase, installationSettingsFor } from '../support/external-postgres';
import { as, HttpResponse, newKey } from '../support/fixtures';
import { createPipeline, launch, linearDocument, pipelineTenant, PipelineTenant, tableDestination, waitForRun } from '../support/pipelines';
import { FAKE_PUBLIC, FakeNetwork } from './support/fake-network';
import { CountingHttpServer, FakePostgres } from './support/listeners';
import { installSuiteHooks } from './support/secret-watch';

/**
 * SSRF battery (reliability issue item 1). Every way a host or URL reaches the network from a
 * tenant's configuration is tried with private addresses in their many spellings: installation
 * settings (http_dataset baseUrl, postgres_table host), endpoint targets (request.url), redirects,
 * link pagination (next links), cursors that look like URLs, and DNS names that resolve to private
 * addresses (localhost from /etc/hosts, and names whose answers a test sets, including an answer
 * that changes between two hops). Each is refused, through the API, with a 403 problem
 * (address_refused or url_outside_base, with a message), a failed check result, or a failed run
 * with the same code, while real listeners on those addresses count no connection and the
 * connection log (support/fake-network.ts) shows the address was never dialled. With
 * allowPrivateNetwork the same loopback spellings do reach the listeners (positive control), and a
 * public upstream (FAKE_PUBLIC, routed to loopback below the guard) works without it.
 */

installSuiteHooks();

let counter = 0;
const unique = (base: string) => `${base}-${Date.now().toString(36)}-${++counter}`;

const RECORDS = [{ id: 1, name: 'one' }, { id: 2, name: 'two' }];

/** Host spellings that reach 127.0.0.1 (the URL form; postgres_table takes them without brackets). */
const LOOPBACK_V4 = ['127.0.0.1', '127.1', '0177.0.0.1', '2130706433', '0x7f.1', '0x7f000001', '0.0.0.0', '[::ffff:127.0.0.1]', '[::ffff:7f00:1]', 'localhost'];
/** Spellings that reach ::1. */
const LOOPBACK_V6 = ['[::1]', '[0:0:0:0:0:0:0:1]'];
/** Private or special addresses nothing here listens on: refused without a connection, never tried with one. */
const UNREACHABLE = ['169.254.169.254', '[fe80::1]', '[fe80::a9fe:a9fe]', '10.0.0.1', '172.16.0.1', '192.168.1.1', '100.64.0.1', '[fc00::1]', '[::]', '[64:ff9b::7f00:1]', '[2002:7f00:1::]'];
/** Names whose (fake) DNS answers are private, wholly or in part. */
const PRIVATE_NAMES: Record<string, string[]> = {
  'internal.weft-test.invalid': ['10.1.2.3'],
  'mixed.weft-test.invalid': [FAKE_PUBLIC, '127.0.0.1'],
  'mapped.weft-test.invalid': ['::ffff:127.0.0.1'],
  'metadata.weft-test.invalid': ['169.254.169.254'],
  'linklocal6.weft-test.invalid': ['fe80::1'],
};

const bare = (host: string) => host.replace(/^\[(.*)\]$/, '$1');

function assertProblem(res: HttpResponse, status: number, code: string, context: string): void {
  assert.equal(res.status, status, `${context}: ${JSON.stringify(res.body)}`);
  assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/, context);
  assert.equal(res.body.code, code, `${context}: ${JSON.stringify(res.body)}`);
  assert.equal(res.body.status, status, context);
  assert.ok(typeof res.body.message === 'string' && res.body.message.length > 10, `${context}: a message`);
}

describe('SSRF battery (http_dataset, postgres_table, document uploads)', function () {
  this.timeout(180_000);
  const network = new FakeNetwork();
  /** The upstream API: reached directly in positive controls, and as "the public upstream" through FAKE_PUBLIC. */
  const upstream = new CountingHttpServer('127.0.0.1');
  const upstream6 = new CountingHttpServer('::1');
  /** Internal services a redirect or next link points at: must never see a connection. */
  const internal = new CountingHttpServer('127.0.0.1');
  const internal6 = new CountingHttpServer('::1');
  const fakePg = new FakePostgres('127.0.0.1');
  const fakePg6 = new FakePostgres('::1');
  let t: PipelineTenant;

  /** Connection attempts that really dialled `port`: to an address, or to a name that resolved. */
  const dialled = (port: number) => network.attemptsTo(port).filter((attempt) => net.isIP(attempt.host) !== 0 || attempt.resolved.length > 0);

  const answerUpstream = (req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse, url: URL) => {
    const json = (body: unknown, headers: Record<string, string> = {}) => res.writeHead(200, { 'Content-Type': 'application/json', ...headers }).end(JSON.stringify(body));
    switch (url.pathname) {
      case '/api/items':
        return json({ data: RECORDS });
      case '/api/redirect':
        return res.writeHead(302, { Location: url.searchParams.get('to') ?? '/api/items' }).end();
      case '/api/redirect-same':
        // Closes the connection, so the next hop needs a new one, and with it a new DNS answer.
        return res.writeHead(302, { Location: '/api/items', Connection: 'close' }).end();
      case '/api/link':
        // Page 1 links to ?next=…; the page the link leads to (if ever fetched) has no next link.
        return url.searchParams.has('p2') ? json({ data: [{ id: 3 }] }) : json({ data: RECORDS, links: { next: url.searchParams.get('next') } }, { Connection: 'close' });
      case '/api/cursor':
        return url.searchParams.has('cursor') ? json({ data: [{ id: 3 }], cursor: null }) : json({ data: RECORDS, cursor: url.searchParams.get('next') });
      default:
        return res.writeHead(404).end();
    }
  };

  before(async () => {
    upstream.handler = answerUpstream;
    upstream6.handler = answerUpstream;
    await Promise.all([upstream.start(), upstream6.start(), internal.start(), internal6.start(), fakePg.start(), fakePg6.start()]);
    network.install();
    for (const [name, answer] of Object.entries(PRIVATE_NAMES)) network.resolve(name, answer);
    network.resolve('public.weft-test.invalid', [FAKE_PUBLIC]);
    // The pipeline tenant's own http_dataset installation: loopback, private networks NOT allowed.
    t = await pipelineTenant(`${upstream.origin}/api/`, { allowPrivateNetwork: false });
  });

  after(async () => {
    network.uninstall();
    await Promise.all([upstream, upstream6, internal, internal6, fakePg, fakePg6].map((server) => server.close()));
  });

  beforeEach(() => {
    network.clear();
    for (const server of [upstream, upstream6, internal, internal6, fakePg, fakePg6]) server.reset();
  });

  async function install(capability: 'http_dataset' | 'postgres_table', config: Record<string, unknown>): Promise<string> {
    return (await installPlugin(env().db, env().encryptionKey, t.ws.workspaceId, capability, config)).id;
  }

  async function httpEndpoint(installationId: string, url: string, target: Record<string, unknown> = {}): Promise<string> {
    const res = await t.client.post('/api/v1/data-endpoints', {
      name: unique('ssrf'),
      namespace: 'ssrf',
      role: 'source',
      contractKind: 'source_stream',
      pluginCapabilityInstallationId: installationId,
      target: { request: { url }, response: { format: 'json', recordsPath: 'data' }, ...target },
    });
    assert.equal(res.status, 201, `${url}: ${JSON.stringify(res.body)}`);
    return res.body.dataEndpoint.id;
  }

  async function tableEndpoint(installationId: string, table = 'items'): Promise<string> {
    const res = await t.client.post('/api/v1/data-endpoints', {
      name: unique('ssrf-pg'),
      namespace: 'ssrf',
      role: 'source',
      contractKind: 'source_stream',
      pluginCapabilityInstallationId: installationId,
      target: { table },
    });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    return res.body.dataEndpoint.id;
  }

  /** Every route that makes an endpoint reach its remote side must refuse with `code`. */
  async function assertEveryPathRefused(endpointId: string, code: string, context: string): Promise<void> {
    assertProblem(await t.client.get(`/api/v1/data-endpoints/${endpointId}/records?limit=10`), 403, code, `${context} records`);
    assertProblem(await t.client.get(`/api/v1/data-endpoints/${endpointId}/schema`), 403, code, `${context} schema`);
    const check = await t.client.post(`/api/v1/data-endpoints/${endpointId}/check`);
    assert.equal(check.status, 200, `${context} check: ${JSON.stringify(check.body)}`);
    assert.equal(check.body.ok, false, context);
    assert.equal(check.body.details.code, code, `${context} check: ${JSON.stringify(check.body)}`);
    assert.ok(check.body.message.length > 10, context);
  }

  describe('http_dataset', () => {
    it('refuses every spelling of loopback in the installation baseUrl and the endpoint URL, reaching nothing; allowPrivateNetwork reaches them', async () => {
      for (const [hosts, server] of [[LOOPBACK_V4, upstream], [LOOPBACK_V6, upstream6]] as const) {
        for (const host of hosts) {
          const base = `http://${host}:${server.port}/api/`;
          const refused = await httpEndpoint(await install('http_dataset', { baseUrl: base }), `${base}items`);
          await assertEveryPathRefused(refused, 'address_refused', base);
          assert.equal(server.connections, 0, `${base} was reached without allowPrivateNetwork`);
          assert.deepEqual(dialled(server.port), [], `${base} was dialled without allowPrivateNetwork`);

          const allowed = await httpEndpoint(await install('http_dataset', { baseUrl: base, allowPrivateNetwork: true }), `${base}items`);
          const read = await t.client.get(`/api/v1/data-endpoints/${allowed}/records`);
          assert.equal(read.status, 200, `${base} with allowPrivateNetwork: ${JSON.stringify(read.body)}`);
          assert.deepEqual(read.body.data, RECORDS, base);
          assert.ok(server.connections > 0, `${base}: the positive control reached the listener`);
          server.reset();
          network.clear();
        }
      }
    });

    it('refuses link-local, metadata, private, unique-local, unspecified and IPv4-embedding IPv6 addresses without dialling them', async () => {
      for (const host of UNREACHABLE) {
        const base = `http://${host}:${upstream.port}/api/`;
        const endpoint = await httpEndpoint(await install('http_dataset', { baseUrl: base }), `${base}items`);
        await assertEveryPathRefused(endpoint, 'address_refused', base);
        // Also the metadata service's own port.
        const metadata = `http://${host}/latest/`;
        const onPort80 = await httpEndpoint(await install('http_dataset', { baseUrl: metadata }), `${metadata}meta-data`);
        assertProblem(await t.client.get(`/api/v1/data-endpoints/${onPort80}/records`), 403, 'address_refused', metadata);
      }
      assert.deepEqual(network.attempts.filter((attempt) => UNREACHABLE.map(bare).includes(attempt.host)), []);
      assert.equal(upstream.connections, 0);
    });

    it('refuses host names that resolve to private addresses, wholly or in part, checking every address of the answer', async () => {
      for (const name of Object.keys(PRIVATE_NAMES)) {
        const base = `http://${name}:${upstream.port}/api/`;
        const endpoint = await httpEndpoint(await install('http_dataset', { baseUrl: base }), `${base}items`);
        await assertEveryPathRefused(endpoint, 'address_refused', base);
        const problem = await t.client.get(`/api/v1/data-endpoints/${endpoint}/records`);
        assert.match(problem.body.message, /non-public address/, base);
      }
      assert.deepEqual(dialled(upstream.port), [], 'a name with a private answer was dialled');
      assert.equal(upstream.connections, 0);
    });

    it('refuses an endpoint URL outside the installation base URL at creation (422), so a target cannot name another host', async () => {
      const installationId = await install('http_dataset', { baseUrl: `http://${FAKE_PUBLIC}:${upstream.port}/api/` });
      for (const url of [`${internal.origin}/api/items`, `http://localhost:${internal.port}/api/items`, 'http://169.254.169.254/latest/meta-data', `http://${FAKE_PUBLIC}:${internal.port}/api/items`, `http://user:pw@${FAKE_PUBLIC}:${upstream.port}/api/items`]) {
        const res = await t.client.post('/api/v1/data-endpoints', {
          name: unique('outside'), namespace: 'ssrf', role: 'source', contractKind: 'source_stream', pluginCapabilityInstallationId: installationId,
          target: { request: { url } },
        });
        assertProblem(res, 422, 'endpoint_invalid', url);
        assert.ok(res.body.errors.some((e: { path: string }) => e.path.startsWith('/target')), url);
      }
      assert.equal(internal.connections + upstream.connections, 0);
    });

    describe('from a public upstream', () => {
      const publicBase = () => `http://${FAKE_PUBLIC}:${upstream.port}/api/`;

      it('reads a public upstream without allowPrivateNetwork (the control for everything below)', async () => {
        for (const base of [publicBase(), `http://public.weft-test.invalid:${upstream.port}/api/`]) {
          const endpoint = await httpEndpoint(await install('http_dataset', { baseUrl: base }), `${base}items`);
          const read = await t.client.get(`/api/v1/data-endpoints/${endpoint}/records`);
          assert.equal(read.status, 200, JSON.stringify(read.body));
          assert.deepEqual(read.body.data, RECORDS);
          const check = await t.client.post(`/api/v1/data-endpoints/${endpoint}/check`);
          assert.equal(check.body.ok, true, JSON.stringify(check.body));
        }
        assert.ok(upstream.connections >= 4);
      });

      it('never follows a redirect to a private address, whatever its spelling, nor to another port of the same host', async () => {
        const installationId = await install('http_dataset', { baseUrl: publicBase() });
        const targets = [
          `${internal.origin}/api/items`,
          `${internal6.origin}/api/items`,
          `http://localhost:${internal.port}/api/items`,
          `http://2130706433:${internal.port}/api/items`,
          `http://0x7f.1:${internal.port}/api/items`,
          `http://[::ffff:127.0.0.1]:${internal.port}/api/items`,
          `http://0.0.0.0:${internal.port}/api/items`,
          'http://169.254.169.254/latest/meta-data/iam/security-credentials/',
          'http://[fe80::1]/',
          `http://internal.weft-test.invalid:${internal.port}/api/items`,
          `//127.0.0.1:${internal.port}/api/items`,
          `http://${FAKE_PUBLIC}:${internal.port}/api/items`,
        ];
        for (const to of targets) {
          const endpoint = await httpEndpoint(installationId, `${publicBase()}redirect?to=${encodeURIComponent(to)}`);
          const read = await t.client.get(`/api/v1/data-endpoints/${endpoint}/records`);
          assertProblem(read, 403, 'url_outside_base', `redirect to ${to}`);
          assert.doesNotMatch(read.body.message, /\?/, 'the message shows no query string');
        }
        assert.equal(upstream.received.filter((r) => r.path === '/api/redirect').length, targets.length, 'every first hop reached the public upstream');
        assert.equal(internal.connections + internal6.connections, 0, 'a redirect reached an internal service');
        assert.deepEqual([...dialled(internal.port), ...dialled(internal6.port), ...dialled(80)], []);
      });

      it('checks the address again on every hop: a same-origin redirect whose name now resolves to loopback is refused', async () => {
        const base = `http://rebind.weft-test.invalid:${upstream.port}/api/`;
        network.resolve('rebind.weft-test.invalid', [FAKE_PUBLIC], ['127.0.0.1']);
        const endpoint = await httpEndpoint(await install('http_dataset', { baseUrl: base }), `${base}redirect-same`);
        assertProblem(await t.client.get(`/api/v1/data-endpoints/${endpoint}/records`), 403, 'address_refused', 'rebinding redirect');
        assert.deepEqual(upstream.received.map((r) => r.path), ['/api/redirect-same'], 'only the first (public) hop reached the server');
        assert.deepEqual(network.lookups, ['rebind.weft-test.invalid', 'rebind.weft-test.invalid']);

        // Positive control: the same two hops with private networks allowed.
        network.resolve('rebind.weft-test.invalid', [FAKE_PUBLIC], ['127.0.0.1']);
        upstream.reset();
        const allowed = await httpEndpoint(await install('http_dataset', { baseUrl: base, allowPrivateNetwork: true }), `${base}redirect-same`);
        const read = await t.client.get(`/api/v1/data-endpoints/${allowed}/records`);
        assert.equal(read.status, 200, JSON.stringify(read.body));
        assert.deepEqual(upstream.received.map((r) => r.path), ['/api/redirect-same', '/api/items']);
      });

      it('never follows a next link to a private address, and vets the host of a same-origin next link again', async () => {
        const installationId = await install('http_dataset', { baseUrl: publicBase() });
        const link = { pagination: { type: 'link', responsePath: 'links.next' } };
        for (const next of [`${internal.origin}/api/items`, `http://localhost:${internal.port}/api/items`, `http://[::1]:${internal6.port}/api/items`, 'http://169.254.169.254/latest/meta-data/', `//0x7f.1:${internal.port}/x`]) {
          const endpoint = await httpEndpoint(installationId, `${publicBase()}link?next=${encodeURIComponent(next)}`, link);
          assertProblem(await t.client.get(`/api/v1/data-endpoints/${endpoint}/records`), 403, 'url_outside_base', `next link ${next}`);
        }
        assert.equal(internal.connections + internal6.connections, 0);

        // A same-origin next link on a name that resolves to loopback by the second page.
        const base = `http://rebind-link.weft-test.invalid:${upstream.port}/api/`;
        network.resolve('rebind-link.weft-test.invalid', [FAKE_PUBLIC], ['127.0.0.1']);
        upstream.reset();
        const rebinding = await httpEndpoint(await install('http_dataset', { baseUrl: base }), `${base}link?next=${encodeURIComponent('/api/link?p2=1')}`, link);
        assertProblem(await t.client.get(`/api/v1/data-endpoints/${rebinding}/records`), 403, 'address_refused', 'rebinding next link');
        assert.deepEqual(upstream.received.map((r) => r.path), ['/api/link'], 'only page 1 (public) reached the server');
      });

      it('sends a cursor that looks like a private URL as a parameter value, never as a request', async () => {
        const installationId = await install('http_dataset', { baseUrl: publicBase() });
        const cursorUrl = `${internal.origin}/api/items`;
        const endpoint = await httpEndpoint(installationId, `${publicBase()}cursor?next=${encodeURIComponent(cursorUrl)}`, {
          pagination: { type: 'cursor', parameter: 'cursor', responsePath: 'cursor' },
        });
        const read = await t.client.get(`/api/v1/data-endpoints/${endpoint}/records`);
        assert.equal(read.status, 200, JSON.stringify(read.body));
        assert.deepEqual(read.body.data.map((r: { id: number }) => r.id), [1, 2, 3]);
        assert.equal(upstream.received[1].query.cursor, cursorUrl, 'the cursor went to the upstream as a value');
        assert.equal(internal.connections, 0);
        assert.deepEqual(dialled(internal.port), []);
      });

      it('refuses a records cursor that was tampered with (it cannot be turned into a private next link)', async () => {
        const installationId = await install('http_dataset', { baseUrl: publicBase() });
        const endpoint = await httpEndpoint(installationId, `${publicBase()}link?next=${encodeURIComponent('/api/link?p2=1')}`, { pagination: { type: 'link', responsePath: 'links.next' } });
        const first = await t.client.get(`/api/v1/data-endpoints/${endpoint}/records?limit=1`);
        assert.equal(first.status, 200, JSON.stringify(first.body));
        const cursor: string = first.body.metadata.nextCursor;
        assert.ok(cursor);
        const flipped = `${cursor.slice(0, 20)}${cursor[20] === 'A' ? 'B' : 'A'}${cursor.slice(21)}`;
        const tampered = await t.client.get(`/api/v1/data-endpoints/${endpoint}/records?limit=1&cursor=${encodeURIComponent(flipped)}`);
        assert.ok(tampered.status >= 400 && tampered.status < 500, JSON.stringify(tampered.body));
        assert.match(tampered.headers.get('content-type') ?? '', /problem\+json/);
        assert.equal(internal.connections, 0);
      });
    });

    it('fails a pipeline run whose source is a loopback address with address_refused, reaching nothing', async () => {
      const source = await httpEndpoint(t.httpInstallationId, `${upstream.origin}/api/items`, { primaryKeys: ['id'] });
      const destination = await tableDestination(t, unique('ssrf_items').replace(/-/g, '_'));
      const pipeline = await createPipeline(t, linearDocument(source, destination));
      const run = await waitForRun(t, (await launch(t, pipeline.id)).id);
      assert.equal(run.status, 'failed', JSON.stringify(run));
      assert.equal(run.error?.code, 'address_refused', JSON.stringify(run.error));
      assert.ok(typeof run.error?.message === 'string' && run.error.message.length > 10);
      assert.equal(upstream.connections, 0);
      assert.deepEqual(dialled(upstream.port), []);
    });
  });

  describe('ontology document uploads (JSON-LD)', () => {
    // Found by this battery: jsonld's default loader fetched every remote @context of an uploaded
    // document from the API process, so an upload could make Weft request any internal address.
    it('never fetches a remote @context (private, metadata or public): the upload is refused with a clear 422', async () => {
      const key = await newKey(t.ws, { scopes: ['ontologies:read', 'ontologies:write'] });
      const contexts = [
        `${internal.origin}/context.jsonld`,
        `http://localhost:${internal.port}/context.jsonld`,
        'http://169.254.169.254/latest/meta-data/',
        `http://${FAKE_PUBLIC}:${internal.port}/context.jsonld`,
        [{ '@version': 1.1 }, `${internal6.origin}/context.jsonld`],
        { '@import': `${internal.origin}/imported.jsonld` },
      ];
      for (const context of contexts) {
        const document = { '@context': context, '@id': 'https://example.test/thing', 'https://example.test/name': 'thing' };
        const res = await as(key).post(`/api/v1/projects/${t.projectId}/ontology/imports/documents?id=${unique('ctx').replace(/-/g, '_')}`, undefined, {
          rawBody: JSON.stringify(document),
          headers: { 'Content-Type': 'application/ld+json' },
        });
        assertProblem(res, 422, 'remote_context_refused', JSON.stringify(context));
      }
      assert.equal(internal.connections + internal6.connections, 0, 'an uploaded document made Weft fetch a URL');
      assert.deepEqual([...dialled(internal.port), ...dialled(internal6.port), ...dialled(80)], []);
      // Control: a document with its context inline is imported.
      const inline = { '@context': { name: 'https://example.test/name' }, '@id': 'https://example.test/thing', name: 'thing' };
      const ok = await as(key).post(`/api/v1/projects/${t.projectId}/ontology/imports/documents?id=inline_ctx`, undefined, { rawBody: JSON.stringify(inline), headers: { 'Content-Type': 'application/ld+json' } });
      assert.equal(ok.status, 201, JSON.stringify(ok.body));
    });
  });

  describe('postgres_table', () => {
    const pgHosts = (hosts: string[]) => hosts.map(bare);
    const settings = (host: string, port: number, allowPrivateNetwork: boolean) => ({ host, port, database: 'shop', user: 'reader', password: 'ssrf-battery-password-8d1e', allowPrivateNetwork });

    it('refuses every spelling of loopback as the host, reaching nothing; allowPrivateNetwork reaches them', async () => {
      for (const [hosts, server] of [[[...pgHosts(LOOPBACK_V4), 'LOCALHOST'], fakePg], [[...pgHosts(LOOPBACK_V6), '[::1]'], fakePg6]] as const) {
        for (const host of hosts) {
          const endpoint = await tableEndpoint(await install('postgres_table', settings(host, server.port, false)));
          await assertEveryPathRefused(endpoint, 'address_refused', `postgres ${host}`);
          assert.equal(server.connections, 0, `${host} was reached without allowPrivateNetwork`);
          assert.deepEqual(dialled(server.port), [], `${host} was dialled without allowPrivateNetwork`);

          // Positive control: the same spelling reaches the fake server, which refuses the login.
          const allowed = await tableEndpoint(await install('postgres_table', settings(host, server.port, true)));
          const check = await t.client.post(`/api/v1/data-endpoints/${allowed}/check`);
          assert.equal(check.body.ok, false);
          assert.equal(check.body.details.code, 'upstream_unavailable', `${host}: ${JSON.stringify(check.body)}`);
          assert.equal(server.connections, 1, `${host}: the positive control reached the listener`);
          server.reset();
          network.clear();
        }
      }
    });

    it('refuses link-local, metadata, private and special addresses and names resolving to them, without dialling', async () => {
      for (const host of [...pgHosts(UNREACHABLE), 'fe80::1%lo', ...Object.keys(PRIVATE_NAMES)]) {
        const endpoint = await tableEndpoint(await install('postgres_table', settings(host, fakePg.port, false)));
        await assertEveryPathRefused(endpoint, 'address_refused', `postgres ${host}`);
      }
      assert.equal(fakePg.connections, 0);
      assert.deepEqual(dialled(fakePg.port), []);
    });

    it('fails a pipeline run whose postgres_table source is localhost with address_refused', async () => {
      const source = await tableEndpoint(await install('postgres_table', settings('localhost', fakePg.port, false)));
      const destination = await tableDestination(t, unique('ssrf_pg').replace(/-/g, '_'));
      const pipeline = await createPipeline(t, linearDocument(source, destination));
      const run = await waitForRun(t, (await launch(t, pipeline.id)).id);
      assert.equal(run.status, 'failed', JSON.stringify(run));
      assert.equal(run.error?.code, 'address_refused', JSON.stringify(run.error));
      assert.equal(fakePg.connections, 0);
    });

    describe('against a real PostgreSQL', () => {
      const database = `weft_ssrf_${process.pid}`;
      let external: pg.Client;
      let drop: () => Promise<void>;

      before(async () => {
        ({ client: external, drop } = await externalDatabase(database));
        await external.query('CREATE TABLE items (id integer PRIMARY KEY, name text); INSERT INTO items VALUES (1, \'one\'), (2, \'two\');');
      });
      after(() => drop?.());

      it('reads through a public address without allowPrivateNetwork, and through localhost only with it', async () => {
        const real = installationSettingsFor(database) as { port: number };
        const read = async (config: Record<string, unknown>) => t.client.get(`/api/v1/data-endpoints/${await tableEndpoint(await install('postgres_table', config))}/records?limit=10`);
        const viaPublic = await read({ ...real, host: FAKE_PUBLIC, allowPrivateNetwork: false });
        assert.equal(viaPublic.status, 200, JSON.stringify(viaPublic.body));
        assert.deepEqual(viaPublic.body.data.map((r: { id: number }) => r.id).sort(), [1, 2]);
        assertProblem(await read({ ...real, host: 'localhost', allowPrivateNetwork: false }), 403, 'address_refused', 'localhost');
        const viaLocalhost = await read({ ...real, host: 'localhost', allowPrivateNetwork: true });
        assert.equal(viaLocalhost.status, 200, JSON.stringify(viaLocalhost.body));
      });
    });
  });
});
