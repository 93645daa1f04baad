import assert from 'node:assert/strict';
import { as, newWorkspace, raiseRequestLimits } from '../../support/fixtures';
import { action, currentSnapshot, managedTable, putPolicy, writeTenant } from '../../support/source-writes';

// Differences a client written from SPEC.md would hit, aligned with the spec.

describe('Contract details a client written from the spec relies on', function () {
  this.timeout(60_000);

  it('PUT /api-limits takes back the body GET answers, windowSeconds included, and refuses another window', async () => {
    const ws = await newWorkspace();
    const admin = as(ws.apiKey);
    const current = await admin.get('/api/v1/api-limits');
    assert.equal(current.status, 200, JSON.stringify(current.body));
    const echoed = await admin.put('/api/v1/api-limits', { ...current.body, apiKeyRequests: 90 });
    assert.equal(echoed.status, 200, JSON.stringify(echoed.body));
    assert.equal(echoed.body.apiKeyRequests, 90);
    assert.equal(echoed.body.windowSeconds, current.body.windowSeconds);
    const other = await admin.put('/api/v1/api-limits', { ...current.body, windowSeconds: 30 });
    assert.equal(other.status, 422, JSON.stringify(other.body));
  });

  it('reads a governed write of 500 wide rows past 1 MB, while other routes keep the 1 MB limit', async () => {
    const t = await writeTenant();
    await raiseRequestLimits(t.ws.workspaceId);
    const endpointId = await managedTable(t);
    await putPolicy(t, endpointId, { allowedOperations: ['append'] });
    const rows = Array.from({ length: 500 }, (_, id) => ({ id, note: 'x'.repeat(3000) }));
    const body = action(t, await currentSnapshot(t.writer, endpointId), { operation: 'append', rows });
    assert.ok(JSON.stringify(body).length > 1024 * 1024, 'the body is over 1 MB');
    const written = await t.writer.post(`/api/v1/data-endpoints/${endpointId}/writes`, body);
    assert.equal(written.status, 200, JSON.stringify(written.body).slice(0, 500));
    assert.equal(written.body.writeAction.affected, 500);
    const tooLarge = await t.writer.post('/api/v1/data-endpoints', { name: 'x'.repeat(1024 * 1024 + 10) });
    assert.equal(tooLarge.status, 413);
    assert.equal(tooLarge.body.code, 'payload_too_large');
    const document = await as(t.ws.apiKey).get('/api/v1/openapi.json');
    const submit = document.body.paths['/api/v1/data-endpoints/{endpoint_id}/writes'].post;
    assert.equal(submit['x-weft-max-body-bytes'], 16 * 1024 * 1024);
    assert.match(submit.requestBody.description, /16 MB/);
  });
});
