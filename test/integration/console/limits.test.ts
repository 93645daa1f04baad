import assert from 'node:assert/strict';
import { env } from '../../support/environment';
import { as, newWorkspace } from '../../support/fixtures';
import { acceptAndSignInPage, browserPages, invite, guideScreenshot } from '../../support/console';

// The Limits page runs getApiLimits and putApiLimits, the operations of GET and PUT
// /api/v1/api-limits: what it saves is what the API then answers, and what it refuses is the
// API's refusal of the same values.

describe('The console Limits page in headless Chromium', function () {
  this.timeout(600_000);
  const browsing = browserPages();

  it('an admin sees the request limits, changes them to what GET /api/v1/api-limits then answers, and sees a bad value refused with the API’s message', async () => {
    const ws = await newWorkspace();
    const api = as(ws.apiKey);
    const p = browsing.page;
    await acceptAndSignInPage(p, await invite(ws.workspaceId, 'admin'));
    await p.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Limits', exact: true }).click();
    await p.getByRole('heading', { name: 'Limits' }).waitFor();

    const defaults = (await api.get('/api/v1/api-limits')).body;
    assert.deepEqual(defaults, { workspaceRequests: 600, apiKeyRequests: 120, windowSeconds: 60 });
    const form = p.getByRole('form', { name: 'Request limits' });
    assert.equal(await form.getByLabel('Workspace requests per window').inputValue(), '600');
    assert.equal(await form.getByLabel('Requests per key or member per window').inputValue(), '120');

    await form.getByLabel('Workspace requests per window').fill('900');
    await form.getByLabel('Requests per key or member per window').fill('150');
    await form.getByRole('button', { name: 'Save limits' }).click();
    await form.getByRole('status').filter({ hasText: 'Limits saved' }).waitFor();
    assert.deepEqual((await api.get('/api/v1/api-limits')).body, { workspaceRequests: 900, apiKeyRequests: 150, windowSeconds: 60 });
    await p.getByLabel('Current limits').filter({ hasText: '900 requests per 60 seconds' }).waitFor();
    await guideScreenshot(p, 'limits');
    // A reload shows what was saved.
    await p.goto(`${env().baseUrl}/console/limits`);
    assert.equal(await p.getByRole('form', { name: 'Request limits' }).getByLabel('Workspace requests per window').inputValue(), '900');

    // A bad value: the same refusal as PUT /api/v1/api-limits of the same values, and nothing changes.
    const refusedOverHttp = await api.put('/api/v1/api-limits', { workspaceRequests: 0, apiKeyRequests: 150 });
    assert.equal(refusedOverHttp.status, 422);
    await form.getByLabel('Workspace requests per window').fill('0');
    await form.getByRole('button', { name: 'Save limits' }).click();
    const alert = form.getByRole('alert');
    await alert.filter({ hasText: `${refusedOverHttp.body.message} (${refusedOverHttp.body.code})` }).waitFor();
    const fieldsAtFault = (refusedOverHttp.body.errors as Array<{ path: string; message: string }>).map((e) => `${e.path}: ${e.message}`);
    assert.ok(fieldsAtFault.length > 0 && fieldsAtFault.every((e) => e.startsWith('/workspaceRequests')), fieldsAtFault.join('; '));
    assert.deepEqual(await alert.getByRole('list', { name: 'Problems' }).getByRole('listitem').allTextContents(), fieldsAtFault);
    assert.equal(await form.getByRole('status').count(), 0, 'no longer says saved');
    assert.deepEqual((await api.get('/api/v1/api-limits')).body, { workspaceRequests: 900, apiKeyRequests: 150, windowSeconds: 60 });
  });
});
