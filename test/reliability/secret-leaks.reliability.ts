import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type http from 'node:http';
import Stripe from 'stripe';
import { logger } from '../../core/logger';
import { installPlugin } from '../../services/endpoints/plugins';
import { env } from '../support/environment';
import { externalDatabase, installationSettingsFor } from '../support/external-postgres';
import { as, request, workspaceRows } from '../support/fixtures';
import { createPipeline, launch, linearDocument, pipelineTenant, PipelineTenant, tableDestination, waitForRun } from '../support/pipelines';
import { FakeNetwork } from './support/fake-network';
import { CountingHttpServer, FakePostgres } from './support/listeners';
import { connectMcp } from './support/tenant-fixtures';
import { describeHits, installSuiteHooks, registerSecret, registerSecretsIn, scan, secretHits, startWatching, takeHits, unregisterSecret, watchCounts } from './support/secret-watch';

/**
 * Secrets never leak (reliability issue item 2). Every secret this file creates (API keys, an
 * http_dataset installation's Authorization header, API-key header and query-string key, a
 * postgres_table password, Stripe's secret key and webhook secret) is registered with the secret
 * watch (support/secret-watch.ts), which scans every log line (at every level) and every response
 * body and header of the in-process API. The tests drive the paths most likely to leak: keys
 * created, listed, read, misused (in the URL, malformed) and revoked; upstream APIs and
 * PostgreSQL servers that echo the credentials they were sent in error bodies, redirect targets,
 * next links and SQLSTATE messages; failing connections; pipeline runs that fail on them (worker
 * logs, Temporal's activity-failure logs, the run's error); MCP; validation errors that could
 * echo a body; and Stripe errors and webhooks. The last test asserts zero hits in this file's logs,
 * responses and the tenant's stored rows; the suite-wide root hook (installSuiteHooks) asserts
 * zero hits over the whole reliability run.
 */

installSuiteHooks();

const random = (prefix: string) => `${prefix}${randomBytes(24).toString('base64url')}`;
const HEADER_TOKEN = random('upstream-bearer-');
const HEADER_API_KEY = random('upstream-xkey-');
const QUERY_KEY = random('upstream-qkey-');
const PG_PASSWORD = random('pg-password-');
const STRIPE_SECRET_KEY = random('sk_test_');
const STRIPE_WEBHOOK_SECRET = random('whsec_');

let counter = 0;
const unique = (base: string) => `${base}-${Date.now().toString(36)}-${++counter}`;

describe('Secrets never leak into logs or responses', function () {
  this.timeout(240_000);
  const network = new FakeNetwork();
  /** An upstream API that echoes the credentials it receives everywhere except in good data. */
  const echo = new CountingHttpServer('127.0.0.1');
  const elsewhere = new CountingHttpServer('127.0.0.1');
  /** A PostgreSQL server that echoes the password it receives in its error messages. */
  const pgEcho = new FakePostgres('127.0.0.1');
  let t: PipelineTenant;
  let httpInstallation: string;

  const credentialsOf = (req: http.IncomingMessage) => {
    const token = String(req.headers.authorization ?? '').replace(/^Bearer /, '');
    const query = new URL(req.url ?? '/', 'http://x').searchParams.get('api_key') ?? '';
    return { token, xkey: String(req.headers['x-api-key'] ?? ''), query, all: `${String(req.headers.authorization)} ${String(req.headers['x-api-key'])} ${req.url}` };
  };

  before(async () => {
    startWatching();
    for (const [value, label] of [
      [HEADER_TOKEN, 'http_dataset Authorization token'],
      [HEADER_API_KEY, 'http_dataset X-Api-Key header'],
      [QUERY_KEY, 'http_dataset queryParameters.api_key'],
      [PG_PASSWORD, 'postgres_table password'],
      [STRIPE_SECRET_KEY, 'STRIPE_SECRET_KEY'],
      [STRIPE_WEBHOOK_SECRET, 'STRIPE_WEBHOOK_SECRET'],
    ]) registerSecret(value, label);

    echo.handler = (req, res, url) => {
      const c = credentialsOf(req);
      const other = `http://127.0.0.1:${elsewhere.port}`;
      const json = (status: number, body: unknown) => res.writeHead(status, { 'Content-Type': 'application/json' }).end(JSON.stringify(body));
      switch (url.pathname) {
        case '/api/items':
          return json(200, { data: [{ id: 1 }, { id: 2 }] });
        case '/api/fail-500':
          return json(500, { error: 'internal', received: { headers: req.headers, url: req.url } });
        case '/api/fail-401':
          return res.writeHead(401, { 'Content-Type': 'text/plain', 'WWW-Authenticate': `Bearer error="${c.token}"` }).end(`invalid credentials: ${c.all}`);
        case '/api/html':
          return res.writeHead(200, { 'Content-Type': 'text/html' }).end(`<pre>${c.all}</pre>`);
        case '/api/not-array':
          return json(200, { data: { echo: c.all } });
        case '/api/redirect-out':
          return res.writeHead(302, { Location: `${other}/session/${c.token}/${encodeURIComponent(c.xkey)}?api_key=${c.query}` }).end();
        case '/api/redirect-in':
          return res.writeHead(302, { Location: `/api/session/${c.token}/${encodeURIComponent(c.xkey)}/${c.query}?token=${c.token}` }).end();
        case '/api/link-out':
          return json(200, { data: [{ id: 1 }], next: `${other}/next/${c.token}/${c.query}?api_key=${c.query}` });
        case '/api/link-in':
          return json(200, { data: [{ id: 1 }], next: `/api/next/${c.token}/${encodeURIComponent(c.xkey)}/${c.query}?api_key=${c.query}` });
        case '/api/link-bad':
          return json(200, { data: [{ id: 1 }], next: `http://[${c.token}/` });
        default:
          if (url.pathname.startsWith('/api/session/') || url.pathname.startsWith('/api/next/')) return json(502, { error: `upstream gateway saw ${c.all}` });
          return json(404, { error: `no route ${url.pathname} for ${c.all}` });
      }
    };
    await Promise.all([echo.start(), elsewhere.start(), pgEcho.start()]);
    network.install();
    t = await pipelineTenant(`${echo.origin}/api/`);
    const config = {
      baseUrl: `${echo.origin}/api/`,
      headers: { Authorization: `Bearer ${HEADER_TOKEN}`, 'X-Api-Key': HEADER_API_KEY },
      queryParameters: { api_key: QUERY_KEY },
      allowPrivateNetwork: true,
      timeoutMs: 3000,
    };
    httpInstallation = (await installPlugin(env().db, env().encryptionKey, t.ws.workspaceId, 'http_dataset', config)).id;
    registerSecretsIn(config.headers, 'http_dataset headers');
  });

  after(async () => {
    network.uninstall();
    await Promise.all([echo.close(), elsewhere.close(), pgEcho.close()]);
  });

  async function endpoint(installationId: string, target: Record<string, unknown>): Promise<string> {
    const res = await t.client.post('/api/v1/data-endpoints', { name: unique('leak'), namespace: 'leaks', role: 'source', contractKind: 'source_stream', pluginCapabilityInstallationId: installationId, target });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    return res.body.dataEndpoint.id;
  }

  /** Every route that makes the endpoint reach its remote side; answers are scanned by the watch. */
  async function exercise(endpointId: string): Promise<Array<{ status: number; body: any }>> {
    return [
      await t.client.get(`/api/v1/data-endpoints/${endpointId}/records?limit=50`),
      await t.client.get(`/api/v1/data-endpoints/${endpointId}/schema`),
      await t.client.post(`/api/v1/data-endpoints/${endpointId}/check`),
      await t.client.get(`/api/v1/data-endpoints/${endpointId}`),
    ];
  }

  it('the watch sees log lines below the configured level, responses and output writes (self-test)', async () => {
    const canary = random('canary-');
    registerSecret(canary, 'canary of the self-test');
    logger.debug({ note: canary }, 'secret-watch self-test');
    scan(`a text with ${canary} in it`, 'a direct scan');
    const res = await t.client.post('/api/v1/data-endpoints', {
      name: unique('canary'), namespace: 'leaks', role: 'source', contractKind: 'source_stream', pluginCapabilityInstallationId: t.httpInstallationId,
      target: { request: { url: `${echo.origin}/api/items` } }, description: canary,
    });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    const found = takeHits('canary');
    unregisterSecret(canary);
    assert.ok(found.some((hit) => hit.where.startsWith('log line')), `a debug log line was scanned: ${describeHits(found)}`);
    assert.ok(found.some((hit) => hit.where.startsWith('response to POST /api/v1/data-endpoints')), `a response was scanned: ${describeHits(found)}`);
    assert.ok(found.every((hit) => !hit.excerpt.includes(canary)), 'a report never prints the secret');
    const counts = watchCounts();
    // Output writes: mocha's own reporter lines pass through the stdout hook.
    assert.ok(counts.logLines > 0 && counts.responses > 0 && counts.outputWrites > 0, JSON.stringify(counts));
  });

  it('API keys: created, listed, read, used, misused and revoked without their secret appearing anywhere but at creation', async () => {
    const admin = as(t.ws.apiKey);
    const created = await admin.post('/api/v1/api-keys', { name: 'leak-check', scopes: ['org:read', 'endpoints:read'] });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const secret: string = created.body.key.secret;
    const keyId: string = created.body.key.id;
    assert.equal((await admin.get('/api/v1/api-keys')).status, 200);
    assert.equal((await admin.get(`/api/v1/api-keys?limit=1`)).status, 200);
    assert.equal((await admin.patch(`/api/v1/api-keys/${keyId}`, { readPermissions: ['leak-check'] })).status, 200);
    assert.equal((await as(secret).get('/api/v1/organization')).status, 200);
    // Misuse: in the URL (query and path), malformed, in another scheme, with a suffix, in a body.
    const misuses = [
      await request('GET', `/api/v1/organization?api_key=${secret}`),
      await request('GET', `/api/v1/organization?x=${encodeURIComponent(secret)}`),
      await request('GET', `/api/v1/${secret}`),
      await request('GET', `/api/v1/organization`, { headers: { Authorization: `Token ${secret}` } }),
      await request('GET', `/api/v1/organization`, { headers: { Authorization: `Bearer ${secret}x` } }),
      await request('GET', `/api/v1/organization`, { headers: { Authorization: `Bearer ${secret} ${secret}` } }),
      await request('GET', `/api/v1/organization`, { headers: { Authorization: `Basic ${Buffer.from(`user:${secret}`).toString('base64')}` } }),
      await admin.post('/api/v1/api-keys', { name: 'bad', scopes: [secret] }),
      await admin.post('/api/v1/api-keys', { name: secret.repeat(10), scopes: ['org:read'] }),
      await admin.post('/api/v1/api-keys', { name: 'x', scopes: ['org:read'], [secret]: true }),
      await admin.post('/api/v1/api-keys', undefined, { rawBody: `{"name": "${secret}", `, headers: { 'Content-Type': 'application/json' } }),
      await admin.post('/api/v1/api-keys', undefined, { rawBody: `name=${secret}`, headers: { 'Content-Type': 'application/x-www-form-urlencoded' } }),
    ];
    for (const res of misuses) assert.ok(res.status >= 400 && res.status < 500, `${res.status} ${JSON.stringify(res.body)}`);
    // Found by this test: a key used as a field name came back in the validation problem's path.
    // Problems now withhold a key's secret part, keeping its public id.
    assert.match(JSON.stringify(misuses[9].body), /"path":"\/weft_sk_[A-Za-z0-9]{12}_\[withheld\]"/);
    assert.equal((await admin.delete(`/api/v1/api-keys/${keyId}`)).status, 204);
    assert.equal((await as(secret).get('/api/v1/organization')).status, 401);
    assert.equal((await admin.get(`/api/v1/api-keys/${keyId}`)).status < 500, true);
  });

  it('http_dataset credentials: upstream errors, redirects and next links that echo them never reach a message', async () => {
    const base = `${echo.origin}/api/`;
    const link = (path: string) => ({ request: { url: `${base}${path}` }, response: { recordsPath: 'data' }, pagination: { type: 'link', responsePath: 'next' } });
    const targets: Array<Record<string, unknown>> = [
      { request: { url: `${base}items` }, response: { recordsPath: 'data' } },
      { request: { url: `${base}fail-500` }, response: { recordsPath: 'data' } },
      { request: { url: `${base}fail-401` }, response: { recordsPath: 'data' } },
      { request: { url: `${base}html` }, response: { recordsPath: 'data' } },
      { request: { url: `${base}not-array` }, response: { recordsPath: 'data' } },
      { request: { url: `${base}redirect-out` }, response: { recordsPath: 'data' } },
      { request: { url: `${base}redirect-in` }, response: { recordsPath: 'data' } },
      { request: { url: `${base}redirect-in`, method: 'POST' }, response: { recordsPath: 'data' } },
      link('link-out'),
      link('link-in'),
      link('link-bad'),
    ];
    for (const target of targets) {
      const answers = await exercise(await endpoint(httpInstallation, target));
      assert.ok(answers.every((answer) => answer.status < 500 || answer.status === 502), JSON.stringify(answers.map((a) => a.body)));
    }
    // Found by this test: messages naming a URL the upstream chose (redirect target, next link,
    // final URL) carried the credentials it echoed into the path. They are cut out, the rest stays.
    const redirected = await t.client.get(`/api/v1/data-endpoints/${await endpoint(httpInstallation, targets[6])}/records`);
    assert.equal(redirected.status, 502, JSON.stringify(redirected.body));
    assert.match(redirected.body.message, /^http:\/\/127\.0\.0\.1:\d+\/api\/session\/\*\*\*\/\*\*\*\/\*\*\* answered HTTP 502\.$/);
    assert.ok(echo.received.length >= targets.length, 'the upstream was called');
    assert.ok(echo.received.some((r) => r.headers.authorization === `Bearer ${HEADER_TOKEN}` && r.query.api_key === QUERY_KEY), 'the credentials were sent');
    assert.equal(elsewhere.connections, 0);

    // Validation of a target that names the installation's query parameter: the problem names it, never its value.
    const clash = await t.client.post('/api/v1/data-endpoints', {
      name: unique('clash'), namespace: 'leaks', role: 'source', contractKind: 'source_stream', pluginCapabilityInstallationId: httpInstallation,
      target: { request: { url: `${base}items?api_key=mine`, query: { api_key: 'mine-too' } } },
    });
    assert.equal(clash.status, 422, JSON.stringify(clash.body));
    // Credentials in a target are refused without echoing them.
    const inTarget = await t.client.post('/api/v1/data-endpoints', {
      name: unique('creds'), namespace: 'leaks', role: 'source', contractKind: 'source_stream', pluginCapabilityInstallationId: httpInstallation,
      target: { request: { url: `http://user:${HEADER_TOKEN}@127.0.0.1:${echo.port}/api/items`, query: { token: HEADER_API_KEY } }, authorization: `Bearer ${HEADER_TOKEN}`, password: PG_PASSWORD },
    });
    assert.equal(inTarget.status, 422, JSON.stringify(inTarget.body));
  });

  it('http_dataset credentials: a pipeline run failing on an echoing redirect keeps them out of the run, the worker logs and Temporal’s logs', async () => {
    const source = await endpoint(httpInstallation, { request: { url: `${echo.origin}/api/redirect-out` }, response: { recordsPath: 'data' }, primaryKeys: ['id'] });
    const destination = await tableDestination(t, unique('leak_http').replace(/-/g, '_'));
    const pipeline = await createPipeline(t, linearDocument(source, destination));
    const run = await waitForRun(t, (await launch(t, pipeline.id)).id);
    assert.equal(run.status, 'failed', JSON.stringify(run));
    assert.equal(run.error?.code, 'url_outside_base');
    assert.equal((await t.client.get(`/api/v1/projects/${t.projectId}/runs`)).status, 200);
  });

  describe('postgres_table password', () => {
    const database = `weft_leaks_${process.pid}`;
    let drop: () => Promise<void>;
    /** SQLSTATEs a server may fail a login with, mapped (28P01, 42501, 22023, 3D000, 08006, 53300) or not (XX000, 0A000, P0001). */
    const CODES = ['28P01', '42501', '22023', '3D000', '08006', '53300', 'XX000', '0A000', 'P0001'];

    before(async () => {
      ({ drop } = await externalDatabase(database));
    });
    after(() => drop?.());

    const settings = (overrides: Record<string, unknown>) => ({ ...installationSettingsFor(database), password: PG_PASSWORD, ...overrides });

    it('servers that echo the password in their errors, and failing connections, never get it into a message or a log', async () => {
      for (const code of CODES) {
        pgEcho.reply = (password) => ({
          code,
          message: `login refused for password "${password}"`,
          detail: `postgres://reader:${password}@db.internal/shop`,
          hint: `try ${encodeURIComponent(password)}`,
        });
        const installationId = (await installPlugin(env().db, env().encryptionKey, t.ws.workspaceId, 'postgres_table', settings({ host: '127.0.0.1', port: pgEcho.port }))).id;
        await exercise(await endpoint(installationId, { table: 'items' }));
      }
      assert.ok(pgEcho.passwords.length >= CODES.length && pgEcho.passwords.every((p) => p === PG_PASSWORD), 'the fake server was sent the password');

      // Real failures on the real cluster: unreachable port, unknown database, unresolvable host, refused address.
      network.resolve('nowhere.weft-test.invalid', []);
      for (const overrides of [{ port: 1 }, { database: 'weft_no_such_db' }, { host: 'nowhere.weft-test.invalid' }, { host: '169.254.169.254', allowPrivateNetwork: false }]) {
        const installationId = (await installPlugin(env().db, env().encryptionKey, t.ws.workspaceId, 'postgres_table', settings(overrides))).id;
        await exercise(await endpoint(installationId, { table: 'items' }));
      }
    });

    it('a pipeline run and an MCP read of a run failing on an echoing server keep the password out', async () => {
      pgEcho.reply = (password) => ({ code: 'XX000', message: `internal error for password ${password}`, detail: password });
      const installationId = (await installPlugin(env().db, env().encryptionKey, t.ws.workspaceId, 'postgres_table', settings({ host: '127.0.0.1', port: pgEcho.port }))).id;
      const source = await endpoint(installationId, { table: 'items' });
      const destination = await tableDestination(t, unique('leak_pg').replace(/-/g, '_'));
      const pipeline = await createPipeline(t, linearDocument(source, destination));
      const run = await waitForRun(t, (await launch(t, pipeline.id)).id, undefined, 120_000);
      assert.equal(run.status, 'failed', JSON.stringify(run));
      // Found by this test: an error with an SQLSTATE the plugin does not map went on unchanged, so
      // the echoed password reached the API's error log, Temporal's activity-failure logs and the
      // run's stored error. Every field of such an error is scrubbed now.
      assert.match(run.error?.message ?? '', /internal error for password \*\*\*/, JSON.stringify(run.error));
      const mcp = await connectMcp(t.key, `/mcp/projects/${t.projectId}`);
      try {
        const result = await mcp.callTool({ name: 'job_get', arguments: { runId: run.id } });
        assert.ok(!result.isError, JSON.stringify(result));
      } finally {
        await mcp.close();
      }
    });
  });

  describe('Stripe secrets', () => {
    /** A Stripe API that echoes the secret key it was sent in its error message. */
    const stripeApi = new CountingHttpServer('127.0.0.1', (req, res) => {
      const auth = String(req.headers.authorization ?? '');
      res.writeHead(401, { 'Content-Type': 'application/json' }).end(JSON.stringify({ error: { type: 'invalid_request_error', message: `Invalid API Key provided: ${auth.replace(/^Bearer /, '')}` } }));
    });
    const saved: Record<string, string | undefined> = {};
    const names = ['STRIPE_SECRET_KEY', 'STRIPE_WEBHOOK_SECRET', 'STRIPE_API_URL', 'WEFT_PUBLIC_URL'];

    before(async () => {
      await stripeApi.start();
      for (const name of names) saved[name] = process.env[name];
      Object.assign(process.env, { STRIPE_SECRET_KEY, STRIPE_WEBHOOK_SECRET, STRIPE_API_URL: stripeApi.origin, WEFT_PUBLIC_URL: env().baseUrl });
    });
    after(async () => {
      for (const name of names) {
        if (saved[name] === undefined) delete process.env[name];
        else process.env[name] = saved[name];
      }
      await stripeApi.close();
    });

    it('a Stripe API that echoes the secret key, and webhooks with bad or good signatures, never get a Stripe secret into a message or a log', async () => {
      const admin = as(t.ws.apiKey);
      for (const path of ['/api/v1/billing/checkout', '/api/v1/billing/portal']) {
        const res = await admin.post(path, {});
        assert.ok(res.status >= 400, `${path}: ${res.status}`);
      }
      assert.ok(stripeApi.received.length > 0, 'the Stripe API was called with the key');
      const payload = JSON.stringify({ id: `evt_${randomBytes(8).toString('hex')}`, object: 'event', type: 'customer.created', data: { object: { id: 'cus_x', object: 'customer' } } });
      const signer = new Stripe('sk_test_signer');
      const signatures = [
        signer.webhooks.generateTestHeaderString({ payload, secret: STRIPE_WEBHOOK_SECRET }),
        signer.webhooks.generateTestHeaderString({ payload, secret: `${STRIPE_WEBHOOK_SECRET}x` }),
        `t=1,v1=${STRIPE_WEBHOOK_SECRET}`,
        STRIPE_WEBHOOK_SECRET,
      ];
      for (const signature of signatures) {
        const res = await request('POST', '/api/v1/billing/stripe-webhook', { key: null, rawBody: payload, headers: { 'Content-Type': 'application/json', 'Stripe-Signature': signature } });
        assert.ok(res.status === 200 || res.status === 400, `${res.status} ${JSON.stringify(res.body)}`);
      }
    });
  });

  // Last: mocha runs a suite's own tests before its nested suites.
  describe('in the end', () => {
    it('found no secret in any log line or response of this file, nor in the tenant’s stored rows', async () => {
      const rows = JSON.stringify(await workspaceRows([t.ws.workspaceId]));
      scan(rows, 'stored rows of the tenant');
      const hits = secretHits();
      assert.equal(hits.length, 0, `secrets leaked:\n${describeHits(hits)}`);
    });
  });
});
