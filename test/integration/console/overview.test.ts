import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { env } from '../../support/environment';
import { as, newWorkspace } from '../../support/fixtures';
import { acceptAndSignInPage, browserPages, invite, guideScreenshot } from '../../support/console';
import { currentSnapshot, managedTable, writeTenant } from '../../support/source-writes';
import { PluginInstallation } from '../../../db/models';
import { findCapability } from '../../../plugins';
import { capabilityContext } from '../../../services/endpoints/data-endpoints';

// The Overview: this month's usage against the plan (GET /console/api/usage/billing, the operation
// of GET /api/v1/usage/billing) and the recent and failing runs (listRuns), for owners and admins;
// the newest endpoints with their last snapshot for whoever may read endpoints.

describe('The console Overview in headless Chromium', function () {
  this.timeout(600_000);
  const browsing = browserPages();

  it('shows this month’s usage against the plan’s credit, as GET /api/v1/usage/billing says, and the recent and failing runs', async () => {
    const ws = await newWorkspace();
    await env().db('metered_operations').insert({ workspace_id: ws.workspaceId, kind: 'sparql_query', operation_ref: randomUUID(), quantities: { query: 1 }, amount: '1.25' });
    // Runs as database fixtures: six ended runs, the oldest of them failed, so the recent five leave it out.
    const runs = Array.from({ length: 6 }, (_, i) => {
      const id = randomUUID();
      return {
        id, workspaceId: ws.workspaceId, projectId: ws.projectId, pipelineId: randomUUID(), pipelineName: `fixture-${i}`, versionId: randomUUID(), versionNumber: 1,
        document: JSON.stringify({ nodes: [], edges: [] }), trigger: 'api', actorMemberId: ws.memberId, status: i === 0 ? 'failed' : 'succeeded', workflowId: `weft-run-${id}`,
        error: i === 0 ? JSON.stringify({ nodeId: 'src', code: 'upstream_unavailable', message: 'answered 404', remoteStatus: 404 }) : null,
        queuedAt: new Date(Date.now() - (10 - i) * 60_000),
      };
    });
    await env().db('pipeline_runs').insert(runs);

    const p = browsing.page;
    await acceptAndSignInPage(p, await invite(ws.workspaceId, 'owner'));
    const billing = (await as(ws.apiKey).get('/api/v1/usage/billing')).body.billing;
    assert.equal(billing.used, '1.25');
    await p.getByLabel('Used of included credit').filter({ hasText: `${billing.used} of ${billing.includedCredit} ${billing.currency} used` }).waitFor();
    assert.equal(await p.getByRole('meter', { name: 'Credit used' }).getAttribute('aria-valuenow'), String(Math.round((1.25 / Number(billing.includedCredit)) * 100)));

    const recent = p.getByRole('region', { name: 'Recent runs' });
    await recent.getByRole('link').first().waitFor();
    await guideScreenshot(p, 'overview');
    const api = (await as(ws.apiKey).get('/api/v1/runs?limit=5')).body.runs as Array<{ id: string }>;
    assert.deepEqual(await recent.getByRole('link').allTextContents(), api.map((r) => r.id.slice(0, 8)));
    assert.equal(api.some((r) => r.id === runs[0].id), false);
    const failing = p.getByRole('region', { name: 'Failing runs' });
    await failing.getByRole('link', { name: runs[0].id.slice(0, 8) }).waitFor();
    assert.match((await failing.textContent())!, /upstream_unavailable/);
    await failing.getByRole('link', { name: runs[0].id.slice(0, 8) }).click();
    await p.getByRole('region', { name: 'Error evidence' }).waitFor();
    await guideScreenshot(p, 'run-evidence');
  });

  it('lists the newest endpoints with their last snapshot, as GET …/snapshot says', async () => {
    const t = await writeTenant();
    const table = await managedTable(t);
    const endpoint = (await t.writer.get(`/api/v1/data-endpoints/${table}`)).body.dataEndpoint;
    const installation = (await PluginInstallation.query(env().db).findById(t.managedInstallationId))!;
    await findCapability('managed_table').writeRecords!(capabilityContext(env().db, installation, env().dependencies()), endpoint.target, { operation: 'append', rows: [{ id: 1 }, { id: 2 }], provenance: { kind: 'write', id: randomUUID() } });
    const snapshot = await currentSnapshot(t.writer, table);
    const p = browsing.page;
    await acceptAndSignInPage(p, await invite(t.ws.workspaceId, 'member'));
    const shown = p.getByLabel(`Last snapshot of ${endpoint.namespace}/${endpoint.name}`);
    await shown.filter({ hasText: snapshot.id }).waitFor();
    assert.match((await shown.textContent())!, new RegExp(`^snapshot ${snapshot.id} \\(version ${snapshot.version}`));
    await p.getByRole('region', { name: 'Endpoints' }).getByRole('link', { name: `${endpoint.namespace}/${endpoint.name}` }).click();
    await p.getByLabel('Current snapshot').filter({ hasText: snapshot.id }).waitFor();
  });

  it('a plain member’s overview has neither usage nor runs, only the endpoints they may read', async () => {
    const ws = await newWorkspace();
    const p = browsing.page;
    await acceptAndSignInPage(p, await invite(ws.workspaceId, 'member'));
    await p.getByText('Signed in as').waitFor();
    await p.getByRole('region', { name: 'Endpoints' }).getByText('None.').waitFor();
    // The sections are drawn from the session's pages: usage and runs are not among a member's.
    assert.deepEqual(await p.getByRole('region').evaluateAll((regions) => regions.map((region) => region.getAttribute('aria-label'))), ['Endpoints']);
    assert.equal(await p.getByRole('alert').count(), 0);
  });
});
