import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadEncryptionKey } from '../../../core/config';
import { installPlugin } from '../../../services/endpoints/plugins';
import { env } from '../../support/environment';
import { newKey, newWorkspace } from '../../support/fixtures';
import { RunningScript, startApiScript } from '../../support/processes';

const UPSTREAM_SECRET = 'Bearer upstream-credential-9a7e41';
/** The credential of an installation whose address is refused (loopback without allowPrivateNetwork). */
const REFUSED_SECRET = 'Bearer refused-credential-5c02d8';

/**
 * An upstream API for the process test. /items answers slowly, so a request can be in flight while
 * the API shuts down; `nextItemsRequest()` resolves once such a request has arrived. /broken answers
 * 500 and /text a non-JSON 200, both echoing the Authorization header they got, as careless APIs do.
 */
async function testUpstream(delayMs: number) {
  let itemsArrived: (() => void) | undefined;
  const server = http.createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://upstream').pathname;
    const echoed = String(req.headers.authorization ?? '');
    if (path === '/broken') {
      res.writeHead(500, { 'Content-Type': 'application/json' }).end(JSON.stringify({ error: 'internal', youSent: echoed }));
      return;
    }
    if (path === '/text') {
      res.writeHead(200, { 'Content-Type': 'text/plain' }).end(`this is not JSON; you sent ${echoed}`);
      return;
    }
    itemsArrived?.();
    setTimeout(() => res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify({ data: [{ id: 1 }, { id: 2 }] })), delayMs);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`,
    /** Resolves when the next request for /items reaches the upstream. */
    nextItemsRequest: () => new Promise<void>((resolve) => (itemsArrived = resolve)),
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

describe('The API as its own process', function () {
  this.timeout(120_000);

  it('logs structured request lines without secrets, also after bad input and refused or failing upstreams, and finishes in-flight requests on SIGTERM', async () => {
    const upstream = await testUpstream(1500);
    const ws = await newWorkspace();
    const installation = await installPlugin(env().db, loadEncryptionKey(), ws.workspaceId, 'http_dataset', {
      baseUrl: upstream.baseUrl,
      headers: { Authorization: UPSTREAM_SECRET },
      allowPrivateNetwork: true,
    });
    // The same loopback upstream, but without allowPrivateNetwork: its address is refused.
    const strict = await installPlugin(env().db, loadEncryptionKey(), ws.workspaceId, 'http_dataset', {
      baseUrl: upstream.baseUrl,
      headers: { Authorization: REFUSED_SECRET },
    });
    const key = await newKey(ws, { scopes: ['endpoints:read', 'endpoints:write', 'data:read'] });

    let api: RunningScript | undefined;
    try {
      let base: string;
      ({ api, url: base } = await startApiScript({ LOG_LEVEL: 'info' }));
      const call = (path: string, init: RequestInit = {}) => fetch(`${base}${path}`, { ...init, headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json', ...init.headers } });
      const createEndpoint = async (name: string, installationId: string, path: string) => {
        const created = await call('/api/v1/data-endpoints', {
          method: 'POST',
          body: JSON.stringify({
            name,
            namespace: 'test',
            role: 'source',
            contractKind: 'source_stream',
            pluginCapabilityInstallationId: installationId,
            target: { request: { url: `${upstream.baseUrl}${path}` }, response: { recordsPath: 'data' } },
          }),
        });
        assert.equal(created.status, 201, await created.clone().text());
        return ((await created.json()) as { dataEndpoint: { id: string } }).dataEndpoint.id;
      };
      const problemOf = async (res: Response) => ({ status: res.status, code: ((await res.json()) as { code: string }).code });

      const endpointId = await createEndpoint('slow', installation.id, 'items');
      const refusedId = await createEndpoint('refused', strict.id, 'items');
      const brokenId = await createEndpoint('broken', installation.id, 'broken');
      const textId = await createEndpoint('text', installation.id, 'text');

      const inURL = await fetch(`${base}/api/v1/organization?api_key=${encodeURIComponent(key)}`);
      assert.equal(inURL.status, 400);
      const forged = await fetch(`${base}/api/v1/organization`, { headers: { Authorization: 'Bearer weft_sk_AAAAAAAAAAAA_forgedforgedforgedforgedforgedforgedforg' } });
      assert.equal(forged.status, 401);

      // Bad input: a body that is not JSON (carrying the key, as a careless client might), an invalid where.
      const malformed = await call('/api/v1/data-endpoints', { method: 'POST', body: `{"name": "x", "note": "${key}", ` });
      assert.deepEqual(await problemOf(malformed), { status: 400, code: 'malformed_json' });
      const badWhere = await call(`/api/v1/data-endpoints/${endpointId}/records?where=${encodeURIComponent('[{"field":"id","op":"like","value":"upstream-credential-9a7e41"}]')}`);
      assert.deepEqual(await problemOf(badWhere), { status: 422, code: 'invalid_where' });
      // A refused address, and remote failures whose answers echo the installation's credential.
      assert.deepEqual(await problemOf(await call(`/api/v1/data-endpoints/${refusedId}/records`)), { status: 403, code: 'address_refused' });
      const broken = await problemOf(await call(`/api/v1/data-endpoints/${brokenId}/records`));
      assert.equal(broken.status, 502);
      assert.match(broken.code, /^upstream_/);
      const text = await problemOf(await call(`/api/v1/data-endpoints/${textId}/records`));
      assert.equal(text.status, 502);
      assert.match(text.code, /^upstream_/);

      // In flight while the process is told to stop: it must still be answered. SIGTERM goes only
      // once the upstream has the request, so the request is surely inside the API.
      const arrived = upstream.nextItemsRequest();
      const inFlight = call(`/api/v1/data-endpoints/${endpointId}/records`);
      await arrived;
      const exit = api.stop('SIGTERM');
      const answered = await inFlight;
      assert.equal(answered.status, 200);
      assert.equal(((await answered.json()) as { data: unknown[] }).data.length, 2);
      assert.equal(await exit, 0, 'a drained shutdown exits 0');

      const output = api.output();
      const requestLines = output.split('\n').filter((line) => line.startsWith('{') && line.includes('"msg":"request"')).map((line) => JSON.parse(line));
      for (const line of requestLines) {
        assert.match(line.requestId, /^[0-9a-f-]{36}$/);
        assert.equal(typeof line.status, 'number');
        assert.equal(line.path.includes('?'), false, 'paths are logged without query strings');
      }
      // Every failure above has its line: the secrets were checked against the log of those requests.
      const logged = requestLines.map((line) => `${line.status} ${line.errorCode ?? ''}`);
      for (const expected of ['400 credential_in_url', '401', '400 malformed_json', '422 invalid_where', '403 address_refused', `502 ${broken.code}`, `502 ${text.code}`, '200 ']) {
        assert.ok(logged.some((entry) => entry.startsWith(expected)), `a request line for ${expected}:\n${output}`);
      }
      assert.equal(requestLines.filter((line) => line.status === 502).length, 2, output);
      for (const secret of [key, key.slice(-43), 'upstream-credential-9a7e41', 'refused-credential-5c02d8', 'forgedforgedforged']) {
        assert.equal(output.includes(secret), false, `the log must not contain ${secret.slice(0, 12)}…`);
      }
    } finally {
      if (api && api.child.exitCode === null) await api.stop('SIGKILL');
      await upstream.close();
    }
  });

  it('stores neither raw API key secrets nor plugin credentials', async () => {
    const ws = await newWorkspace();
    const installation = await installPlugin(env().db, loadEncryptionKey(), ws.workspaceId, 'http_dataset', {
      baseUrl: 'https://api.example.com/',
      headers: { Authorization: UPSTREAM_SECRET },
    });
    const row = await env().db('plugin_installations').where({ id: installation.id }).first();
    assert.equal(JSON.stringify(row).includes('upstream-credential'), false);
    assert.equal(row.settings.headers, undefined, 'credentials are not in the clear settings');
    const keyRow = await env().db('api_keys').where({ workspaceId: ws.workspaceId }).first();
    assert.equal(JSON.stringify(keyRow).includes(ws.apiKey), false);
    assert.equal(JSON.stringify(keyRow).includes(ws.apiKey.slice(-43)), false);
  });
});
