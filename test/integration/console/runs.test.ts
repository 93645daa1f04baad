import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { env } from '../../support/environment';
import { acceptAndSignInPage, browserPages, invite, signedIn, guideScreenshot } from '../../support/console';
import { createPipeline, EventsApi, eventsSource, launch, linearDocument, tableDestination, useEventsApi, waitForRun } from '../../support/pipelines';

// The Runs page: a run launched over HTTP with an API key, watched in the console while it runs.

describe('The console Runs page in headless Chromium', function () {
  this.timeout(600_000);
  const fixture = useEventsApi(() => EventsApi.events(1000));
  const browsing = browserPages();
  let uiUrlBefore: string | undefined;
  const base = () => env().baseUrl;

  before(async () => {
    // Runs name their Temporal Web UI link when the installation has one.
    uiUrlBefore = process.env.WEFT_TEMPORAL_UI_URL;
    if (!uiUrlBefore) process.env.WEFT_TEMPORAL_UI_URL = 'http://temporal-ui.invalid';
  });
  after(async () => {
    if (uiUrlBefore === undefined) delete process.env.WEFT_TEMPORAL_UI_URL;
    else process.env.WEFT_TEMPORAL_UI_URL = uiUrlBefore;
  });
  afterEach(() => {
    fixture.api.release();
  });

  /** An events pipeline of 40 pages (25 records each) into a table. */
  async function eventsPipeline(name: string, target: Record<string, unknown> = {}) {
    const { t, api } = fixture;
    const source = await eventsSource(t, api, target);
    const destination = await tableDestination(t, `${name.replace(/-/g, '_')}_events`, ['id']);
    return { ...(await createPipeline(t, linearDocument(source, destination, { writeMode: 'upsert' }), name)), name };
  }

  it('a run launched over HTTP with an API key shows its counts rising in the page and ends succeeded without a reload', async () => {
    const { t, api } = fixture;
    const pipeline = await eventsPipeline(`watched-${Date.now().toString(36)}`);
    const p = browsing.page;
    await acceptAndSignInPage(p, await invite(t.ws.workspaceId, 'admin'));

    // The first read (20 pages) is staged; page 21 on waits until released, so the run is surely running.
    const release = api.holdFrom(21);
    const run = await launch(t, pipeline.id);
    await p.getByRole('link', { name: 'Runs' }).click();
    const filters = p.getByRole('form', { name: 'Filter runs' });
    await filters.getByLabel('Pipeline').locator(`option[value="${pipeline.id}"]`).waitFor({ state: 'attached' });
    await filters.getByLabel('Pipeline').selectOption(pipeline.id);
    await filters.getByRole('button', { name: 'Filter' }).click();
    const runs = p.getByRole('table', { name: 'Runs' });
    await runs.getByRole('row').filter({ hasText: pipeline.name }).first().waitFor();
    await runs.getByRole('link', { name: run.id.slice(0, 8) }).click();
    await p.getByRole('heading', { name: `Run of ${pipeline.name} (v1)` }).waitFor();
    // A mark a reload would wipe.
    await p.evaluate(() => { (globalThis as unknown as { notReloaded: boolean }).notReloaded = true; });

    const read = p.getByLabel('src read', { exact: true });
    await p.getByLabel('Run status').filter({ hasText: /^running$/ }).waitFor({ timeout: 60_000 });
    await read.filter({ hasText: /^500$/ }).waitFor({ timeout: 60_000 });
    const whileRunning = await p.getByLabel('Run status').textContent();
    assert.equal(whileRunning, 'running', 'the first 500 records are shown while the run is still reading');
    release();

    await p.getByLabel('Run status').filter({ hasText: /^succeeded$/ }).waitFor({ timeout: 60_000 });
    assert.equal(await read.textContent(), '1000');
    assert.equal(await p.getByLabel('dst written', { exact: true }).textContent(), '1000');
    await guideScreenshot(p, 'run');
    assert.equal(await p.evaluate(() => (globalThis as unknown as { notReloaded?: boolean }).notReloaded), true, 'the page was never reloaded');
    const api200 = await waitForRun(t, run.id);
    assert.equal(api200.status, 'succeeded');
    // Its snapshot and the Temporal Web UI link (an admin's page).
    const snapshot = p.getByRole('region', { name: 'Snapshot' });
    assert.match((await snapshot.textContent())!, /dst: \{/);
    assert.equal(await p.getByRole('link', { name: 'Open in Temporal Web UI' }).getAttribute('href'), api200.workflow.webUiUrl);
  });

  it('the list pages on the server with the list’s nextOffset and filters by status and pipeline; a failed run shows its error evidence', async () => {
    const { t, api } = fixture;
    // A source whose API answers 404: the run fails with the remote status as evidence.
    const pipeline = await eventsPipeline(`failing-${Date.now().toString(36)}`, { request: { url: `${api.baseUrl}missing` } });
    const failing = await launch(t, pipeline.id);
    const failed = await waitForRun(t, failing.id);
    assert.equal(failed.status, 'failed', JSON.stringify(failed));
    // 29 more runs of the pipeline, ended and succeeded, queued after it (database fixtures).
    const row = await env().db('pipeline_runs').where({ id: failing.id }).first();
    const copies = Array.from({ length: 29 }, (_, i) => {
      const id = randomUUID();
      return { ...row, id, workflowId: `weft-run-${id}`, status: 'succeeded', error: null, document: JSON.stringify(row.document), warnings: JSON.stringify(row.warnings), queuedAt: new Date(new Date(row.queuedAt).getTime() + (i + 1) * 1000) };
    });
    await env().db('pipeline_runs').insert(copies);

    const p = browsing.page;
    await acceptAndSignInPage(p, await invite(t.ws.workspaceId, 'owner'));
    await p.getByRole('link', { name: 'Runs' }).click();
    const filters = p.getByRole('form', { name: 'Filter runs' });
    await filters.getByLabel('Pipeline').locator(`option[value="${pipeline.id}"]`).waitFor({ state: 'attached' });
    await filters.getByLabel('Pipeline').selectOption(pipeline.id);
    await filters.getByRole('button', { name: 'Filter' }).click();
    const pageStatus = p.getByRole('status', { name: 'Page' });
    await pageStatus.filter({ hasText: '1–25 of 30' }).waitFor();
    const runLinks = () => p.getByRole('table', { name: 'Runs' }).getByRole('link').allTextContents();
    const api1 = (await t.client.get(`/api/v1/runs?pipelineId=${pipeline.id}&limit=25`)).body;
    assert.deepEqual(await runLinks(), api1.runs.map((r: { id: string }) => r.id.slice(0, 8)));
    assert.equal(api1.pagination.nextOffset, 25);
    await p.getByRole('button', { name: 'Next page' }).click();
    await pageStatus.filter({ hasText: '26–30 of 30' }).waitFor();
    const api2 = (await t.client.get(`/api/v1/runs?pipelineId=${pipeline.id}&limit=25&offset=25`)).body;
    assert.deepEqual(await runLinks(), api2.runs.map((r: { id: string }) => r.id.slice(0, 8)));
    assert.equal(await p.getByRole('button', { name: 'Next page' }).isDisabled(), true);
    assert.equal(await p.getByRole('button', { name: 'Previous page' }).isDisabled(), false);

    await filters.getByLabel('Status').selectOption('failed');
    await filters.getByRole('button', { name: 'Filter' }).click();
    await pageStatus.filter({ hasText: '1–1 of 1' }).waitFor();
    await p.getByRole('table', { name: 'Runs' }).getByRole('link', { name: failing.id.slice(0, 8) }).click();
    const evidence = p.getByRole('region', { name: 'Error evidence' });
    await evidence.waitFor();
    assert.match((await evidence.textContent())!, new RegExp(failed.error.code));
    assert.match((await evidence.textContent())!, /404/);
    assert.equal(await p.getByLabel('Run status').textContent(), 'failed');
  });

  it('the Temporal Web UI link is an owner’s and admin’s only: a member’s run page has none, and its JSON holds none', async () => {
    const { t } = fixture;
    const pipeline = await eventsPipeline(`member-${Date.now().toString(36)}`);
    const run = await launch(t, pipeline.id);
    await waitForRun(t, run.id);
    const admin = await signedIn(t.ws.workspaceId, 'admin');
    const member = await signedIn(t.ws.workspaceId, 'member');
    const asAdmin = await admin.client.request('GET', `/console/api/runs/${run.id}`);
    assert.equal(asAdmin.status, 200);
    assert.match(asAdmin.body.run.workflow.webUiUrl, /^http:\/\//);
    const asMember = await member.client.request('GET', `/console/api/runs/${run.id}`);
    assert.equal(asMember.status, 200);
    assert.equal(asMember.body.run.workflow.webUiUrl, null);
    assert.equal(asMember.body.run.workflow.workflowId, asAdmin.body.run.workflow.workflowId);
    // Listing runs is an administrator's (as over HTTP), so a member has no Runs link and its route answers 403.
    const list = await member.client.request('GET', '/console/api/runs');
    assert.equal(list.status, 403);
    assert.equal(list.body.code, 'actor_not_administrator');

    const p = browsing.page;
    await acceptAndSignInPage(p, await invite(t.ws.workspaceId, 'member'));
    assert.equal((await p.getByRole('navigation', { name: 'Console' }).getByRole('link').allTextContents()).includes('Runs'), false);
    assert.equal((await p.goto(`${base()}/console/runs`))!.status(), 403);
    const runPage = await p.goto(`${base()}/console/runs/${run.id}`);
    assert.equal(runPage!.status(), 200);
    await p.getByLabel('Run status').filter({ hasText: /^succeeded$/ }).waitFor();
    assert.equal(await p.getByRole('link', { name: 'Open in Temporal Web UI' }).count(), 0);
  });
});
