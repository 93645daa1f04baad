import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadEncryptionKey } from '../../core/config';
import { installPlugin } from '../../services/plugins';
import { env } from '../support/environment';
import { newKey, newWorkspace } from '../support/fixtures';
import { freePort, startScript, RunningScript } from '../support/processes';

const UPSTREAM_SECRET = 'Bearer upstream-credential-9a7e41';

/** An upstream API that answers slowly, so a request can be in flight while the API shuts down. */
async function slowUpstream(delayMs: number) {
  const server = http.createServer((req, res) => {
    setTimeout(() => res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify({ data: [{ id: 1 }, { id: 2 }] })), delayMs);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, close: () => new Promise<void>((r) => server.close(() => r())) };
}

describe('The API as its own process', function () {
  this.timeout(120_000);

  it('logs structured request lines without secrets and finishes in-flight requests on SIGTERM', async () => {
    const upstream = await slowUpstream(1500);
    const ws = await newWorkspace();
    const installation = await installPlugin(env().db, loadEncryptionKey(), ws.workspaceId, 'http_dataset', {
      baseUrl: upstream.baseUrl,
      headers: { Authorization: UPSTREAM_SECRET },
      allowPrivateNetwork: true,
    });
    const key = await newKey(ws, { scopes: ['endpoints:read', 'endpoints:write', 'data:read'] });

    const port = await freePort();
    let api: RunningScript | undefined;
    try {
      api = await startScript('scripts/start.ts', ['api'], { PORT: String(port), LOG_LEVEL: 'info' }, /API:\s+http/);
      const base = `http://127.0.0.1:${port}`;
      const call = (path: string, init: RequestInit = {}) => fetch(`${base}${path}`, { ...init, headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json', ...init.headers } });

      const created = await call('/api/v1/data-endpoints', {
        method: 'POST',
        body: JSON.stringify({
          name: 'slow',
          namespace: 'test',
          role: 'source',
          contractKind: 'source_stream',
          pluginCapabilityInstallationId: installation.id,
          target: { request: { url: `${upstream.baseUrl}items` }, response: { recordsPath: 'data' } },
        }),
      });
      assert.equal(created.status, 201);
      const endpointId = ((await created.json()) as { dataEndpoint: { id: string } }).dataEndpoint.id;

      const inURL = await fetch(`${base}/api/v1/organization?api_key=${encodeURIComponent(key)}`);
      assert.equal(inURL.status, 400);
      const forged = await fetch(`${base}/api/v1/organization`, { headers: { Authorization: 'Bearer weft_sk_AAAAAAAAAAAA_forgedforgedforgedforgedforgedforgedforg' } });
      assert.equal(forged.status, 401);

      // In flight while the process is told to stop: it must still be answered.
      const inFlight = call(`/api/v1/data-endpoints/${endpointId}/records`);
      await new Promise((resolve) => setTimeout(resolve, 400));
      const exit = api.stop('SIGTERM');
      const answered = await inFlight;
      assert.equal(answered.status, 200);
      assert.equal(((await answered.json()) as { data: unknown[] }).data.length, 2);
      assert.equal(await exit, 0, 'a drained shutdown exits 0');

      const output = api.output();
      const requestLines = output.split('\n').filter((line) => line.startsWith('{') && line.includes('"msg":"request"')).map((line) => JSON.parse(line));
      assert.ok(requestLines.length >= 4, output);
      for (const line of requestLines) {
        assert.match(line.requestId, /^[0-9a-f-]{36}$/);
        assert.equal(typeof line.status, 'number');
        assert.equal(line.path.includes('?'), false, 'paths are logged without query strings');
      }
      for (const secret of [key, key.slice(-43), 'upstream-credential-9a7e41', 'forgedforgedforged']) {
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
