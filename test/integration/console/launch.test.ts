import assert from 'node:assert/strict';
import type { Page } from 'playwright-core';
import { env } from '../../support/environment';
import { acceptAndSignInPage, browserPages, guideScreenshot, invite, signedIn } from '../../support/console';
import { createPipeline, EventsApi, eventsSource, getRun, linearDocument, tableDestination, tableRecords, useEventsApi, waitForRun } from '../../support/pipelines';
import { action, currentSnapshot, managedTable, putPolicy, tableRows, writeTenant } from '../../support/source-writes';

// Work a member starts in the console: a run launched from the Pipelines page records the member
// as its actor and acts as the member when it reads and commits (a member removed meanwhile is
// refused, as a revoked key is); a run is canceled from its page; a write waiting for approval is
// approved from the Writes page.

describe('Work a member starts in the console, in headless Chromium', function () {
  this.timeout(600_000);
  const fixture = useEventsApi(() => EventsApi.events(1000));
  const browsing = browserPages();

  afterEach(() => {
    fixture.api.release();
  });

  /** An events pipeline of 40 pages (25 records each) into a table. */
  async function eventsPipeline(name: string) {
    const { t, api } = fixture;
    const source = await eventsSource(t, api);
    const destination = await tableDestination(t, `${name.replace(/-/g, '_')}_events`, ['id']);
    return { ...(await createPipeline(t, linearDocument(source, destination, { writeMode: 'upsert' }), name)), name, destination };
  }

  /** Launches the pipeline with its row's Launch button and waits for the run's page; the run's id. */
  async function launchFromPage(p: Page, pipelineName: string): Promise<string> {
    await p.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Pipelines' }).click();
    const row = p.getByRole('table', { name: 'Pipelines' }).getByRole('row').filter({ hasText: pipelineName });
    await row.getByRole('button', { name: 'Launch' }).click();
    await p.getByRole('heading', { name: `Run of ${pipelineName} (v1)` }).waitFor();
    const runId = /\/console\/runs\/([0-9a-f-]{36})$/.exec(p.url())?.[1];
    assert.ok(runId, `the run's page opened: ${p.url()}`);
    return runId;
  }

  it('a member launches a run from the Pipelines page, sees its counts rising and the run ending succeeded without a reload; the run records the member as its actor', async () => {
    const { t, api } = fixture;
    const pipeline = await eventsPipeline(`launched-${Date.now().toString(36)}`);
    const person = await invite(t.ws.workspaceId, 'member');
    const p = browsing.page;
    await acceptAndSignInPage(p, person);

    // The first read (20 pages) is staged; page 21 on waits until released, so the run is surely running.
    const release = api.holdFrom(21);
    const runId = await launchFromPage(p, pipeline.name);
    await p.evaluate(() => { (globalThis as unknown as { notReloaded: boolean }).notReloaded = true; });
    const read = p.getByLabel('src read', { exact: true });
    await p.getByLabel('Run status').filter({ hasText: /^running$/ }).waitFor({ timeout: 60_000 });
    await read.filter({ hasText: /^500$/ }).waitFor({ timeout: 60_000 });
    assert.equal(await p.getByLabel('Run status').textContent(), 'running', 'the first 500 records are shown while the run is still reading');
    release();

    await p.getByLabel('Run status').filter({ hasText: /^succeeded$/ }).waitFor({ timeout: 60_000 });
    assert.equal(await read.textContent(), '1000');
    assert.equal(await p.getByLabel('dst written', { exact: true }).textContent(), '1000');
    assert.equal(await p.evaluate(() => (globalThis as unknown as { notReloaded?: boolean }).notReloaded), true, 'the page was never reloaded');

    // Over HTTP, with the workspace's key: the member launched it, with no key.
    const run = await getRun(t, runId);
    assert.equal(run.status, 'succeeded');
    assert.equal(run.trigger, 'api');
    assert.deepEqual(run.actor, { kind: 'member', memberId: person.memberId, apiKeyId: null });
    assert.equal((await tableRecords(t, pipeline.destination)).length, 1000);
    // Metered to the member, with no key.
    const metered = await env().db('meteredOperations').where({ kind: 'pipeline_run', operationRef: runId }).first();
    assert.equal(metered.actorMemberId, person.memberId);
    assert.equal(metered.apiKeyId, null);
  });

  it('fails a run whose launching member is removed before it commits, with the reason recorded, as a revoked key’s', async () => {
    const { t, api } = fixture;
    api.records = EventsApi.events(300);
    const pipeline = await eventsPipeline(`removed-${Date.now().toString(36)}`);
    const owner = await signedIn(t.ws.workspaceId, 'owner');
    const member = await signedIn(t.ws.workspaceId, 'member');
    // Page 2 on waits: the run is reading when its member is removed.
    const release = api.holdFrom(2);
    const launched = await member.client.request('POST', '/console/api/runs', { pipelineId: pipeline.id });
    assert.equal(launched.status, 202, JSON.stringify(launched.body));
    const runId = launched.body.run.id;
    assert.deepEqual(launched.body.run.actor, { kind: 'member', memberId: member.person.memberId, apiKeyId: null });
    await waitForRun(t, runId, (run) => run.status === 'running');
    const removed = await owner.client.request('DELETE', `/console/api/members/${member.person.memberId}`);
    assert.equal(removed.status, 204, JSON.stringify(removed.body));
    release();
    const run = await waitForRun(t, runId);
    assert.equal(run.status, 'failed', JSON.stringify(run));
    assert.equal(run.error.code, 'member_removed');
    assert.deepEqual(await tableRecords(t, pipeline.destination), [], 'nothing was committed');
  });

  it('cancels a running run from its page', async () => {
    const { t, api } = fixture;
    const pipeline = await eventsPipeline(`canceled-${Date.now().toString(36)}`);
    const p = browsing.page;
    await acceptAndSignInPage(p, await invite(t.ws.workspaceId, 'member'));
    api.holdFrom(2);
    const runId = await launchFromPage(p, pipeline.name);
    await p.getByLabel('Run status').filter({ hasText: /^running$/ }).waitFor({ timeout: 60_000 });
    await p.getByRole('button', { name: 'Cancel' }).click();
    await p.getByLabel('Run status').filter({ hasText: /^canceled$/ }).waitFor({ timeout: 60_000 });
    assert.equal(await p.getByRole('button', { name: 'Cancel' }).count(), 0, 'an ended run has no Cancel button');
    const run = await getRun(t, runId);
    assert.equal(run.status, 'canceled');
    assert.deepEqual(await tableRecords(t, pipeline.destination), [], 'nothing was committed');
  });

  it('approves a write waiting for approval from the Writes page, and the write lands; the decision records the member', async () => {
    const w = await writeTenant();
    const endpointId = await managedTable(w);
    await putPolicy(w, endpointId, { approval: { required: true, approvers: 1 } });
    const body = action(w, await currentSnapshot(w.writer, endpointId), { operation: 'upsert', rows: [{ id: 1, name: 'Ada' }] });
    const proposed = await w.writer.post(`/api/v1/data-endpoints/${endpointId}/writes`, body);
    assert.equal(proposed.status, 202, JSON.stringify(proposed.body));
    const rejectedBody = action(w, await currentSnapshot(w.writer, endpointId), { operation: 'upsert', rows: [{ id: 2, name: 'Mallory' }] });
    assert.equal((await w.writer.post(`/api/v1/data-endpoints/${endpointId}/writes`, rejectedBody)).status, 202);

    const admin = await invite(w.ws.workspaceId, 'admin');
    const p = browsing.page;
    await acceptAndSignInPage(p, admin);
    await p.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Writes' }).click();
    const pending = p.getByRole('table', { name: 'Writes waiting for approval' });
    await pending.getByRole('row').filter({ hasText: body.actionId }).waitFor();
    await guideScreenshot(p, 'writes');
    await pending.getByRole('row').filter({ hasText: rejectedBody.actionId }).getByRole('button', { name: 'Reject' }).click();
    await p.getByRole('status', { name: 'Decision' }).filter({ hasText: `Rejected ${rejectedBody.actionId}: it is rejected.` }).waitFor();
    await pending.getByRole('row').filter({ hasText: body.actionId }).getByRole('button', { name: 'Approve' }).click();
    await p.getByRole('status', { name: 'Decision' }).filter({ hasText: `Approved ${body.actionId}: it is applied.` }).waitFor();
    await p.getByText('No write waits for approval.').waitFor();

    assert.deepEqual((await tableRows(w.writer, endpointId)).map((row) => [row.id, row.name]), [[1, 'Ada']]);
    const applied = await w.writer.get(`/api/v1/data-endpoints/${endpointId}/writes/${body.actionId}`);
    assert.equal(applied.body.writeAction.status, 'applied');
    assert.deepEqual(applied.body.writeAction.approval.decisions.map((d: { memberId: string; decision: string }) => [d.memberId, d.decision]), [[admin.memberId, 'approve']]);
    assert.equal(applied.body.writeAction.approval.counted, 1);
    const decision = await env().db('writeActionDecisions').where({ memberId: admin.memberId, decision: 'approve' }).first();
    assert.equal(decision.apiKeyId, null, 'the member decided without a key');
    const log = await w.writer.get(`/api/v1/data-endpoints/${endpointId}/write-log?actionId=${body.actionId}`);
    const approvedEntry = log.body.entries.find((e: { kind: string }) => e.kind === 'approved');
    assert.equal(approvedEntry.actorMemberId, admin.memberId);
    assert.equal(approvedEntry.actorApiKeyId, null);
  });
});
