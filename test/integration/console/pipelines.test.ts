import assert from 'node:assert/strict';
import type { Page } from 'playwright-core';
import { createPipelineRunActivities } from '../../../activities/pipeline-runs';
import { Pipeline, PipelineDraft, PipelineRun, PipelineSchedule } from '../../../db/models';
import { workerDependencies } from '../../../services/operations/context';
import { env } from '../../support/environment';
import { newKey, newWorkspace, request } from '../../support/fixtures';
import { acceptAndSignInPage, browserPages, guideScreenshot, invite, signedIn } from '../../support/console';
import { createPipeline, EventsApi, eventsSource, getRun, linearDocument, tableDestination, useEventsApi } from '../../support/pipelines';

// A pipeline's page in the console: its graph drawn with each node's settings, its versions and
// branches, the draft as a JSON editor with validation's problems by node, committing and
// activating a version, launching, and schedules; and a member, who may read and launch but not
// write pipelines, offered only what their role admits and refused with the codes HTTP answers.

describe('The pipeline pages of the console, in headless Chromium', function () {
  this.timeout(300_000);
  const fixture = useEventsApi(() => EventsApi.events(30));
  const browsing = browserPages();

  /** events → select → dedupe → table: four nodes, three edges. */
  async function eventsPipeline(name: string) {
    const { t, api } = fixture;
    const source = await eventsSource(t, api);
    const destination = await tableDestination(t, `${name.replace(/-/g, '_')}_events`, ['id']);
    const document = linearDocument(source, destination, { writeMode: 'upsert', transforms: [{ type: 'select', fields: ['id', 'amount', 'status'] }, { type: 'dedupe', key: ['id'] }] });
    return { ...(await createPipeline(t, document, name)), name, document };
  }

  async function openPipeline(p: Page, name: string): Promise<void> {
    await p.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Pipelines' }).click();
    await p.getByRole('table', { name: 'Pipelines' }).getByRole('link', { name }).click();
    await p.getByRole('heading', { name, level: 1 }).waitFor();
  }

  it('draws the graph with its settings, edits the draft to the problems of its node, fixes, commits, activates and launches it, and creates, pauses, resumes and deletes a schedule', async () => {
    const { t } = fixture;
    const pipeline = await eventsPipeline(`drawn-${Date.now().toString(36)}`);
    const admin = await invite(t.ws.workspaceId, 'admin');
    const p = browsing.page;
    await acceptAndSignInPage(p, admin);
    await openPipeline(p, pipeline.name);

    // The active version drawn: a box per node, a curve per edge; a node's settings on selecting it.
    const graph = p.getByRole('group', { name: 'Graph of v1' });
    await graph.waitFor();
    assert.equal(await graph.getByRole('button').count(), 4);
    assert.deepEqual(await graph.getByRole('img').evaluateAll((edges) => edges.map((e) => e.getAttribute('aria-label'))), ['src → t1', 't1 → t2', 't2 → dst']);
    await graph.getByRole('button', { name: 't1 (select)' }).click();
    const settings = p.getByRole('region', { name: 'Node settings', exact: true });
    await settings.getByLabel('Settings of t1').waitFor();
    await guideScreenshot(p, 'pipeline');
    assert.match(await settings.getByLabel('Settings of t1').innerText(), /fields\s+\["id","amount","status"\]/);
    await graph.getByRole('button', { name: 'src (source)' }).click();
    assert.match(await settings.getByLabel('Settings of src').innerText(), /mode\s+full/);
    assert.equal(await p.getByLabel('Active version', { exact: true }).textContent(), 'v1 (main)');
    assert.equal(await p.getByRole('table', { name: 'Versions' }).getByRole('row').filter({ hasText: 'v1' }).getByRole('cell', { name: 'active', exact: true }).count(), 1);
    assert.equal(await p.getByRole('table', { name: 'Branches' }).getByRole('row').filter({ hasText: 'main' }).count(), 1);

    // A draft whose dedupe node has no key: saved (a draft may be unfinished), and that node's problem shown.
    const editor = p.getByLabel('Draft document');
    const broken = structuredClone(pipeline.document);
    (broken.nodes[2] as Record<string, unknown>).key = [];
    await editor.fill(JSON.stringify(broken, null, 2));
    await p.getByRole('button', { name: 'Save draft' }).click();
    const problems = p.getByRole('region', { name: 'Draft problems' });
    await problems.getByLabel('Problems of t2').waitFor();
    assert.match(await problems.getByLabel('Problems of t2').innerText(), /\/nodes\/2\/key: must NOT have fewer than 1 items/);
    assert.equal(await problems.getByRole('list').count(), 1, 'only the dedupe node has a problem');
    await p.getByRole('group', { name: 'Graph of your draft' }).getByRole('button', { name: 't2 (dedupe), has problems' }).click();
    await p.getByRole('region', { name: 'Draft node settings' }).getByLabel('Problems of t2').waitFor();
    await guideScreenshot(p, 'pipeline-draft');
    // The admin's own draft (one per member), saved as typed.
    const saved = await PipelineDraft.query(env().db).findById([pipeline.id, admin.memberId]);
    assert.deepEqual((saved!.document as { nodes: Array<Record<string, unknown>> }).nodes[2].key, []);

    // Committing it with the select node emptied too is refused with both problems, each under its node; nothing is committed.
    const worse = structuredClone(broken);
    (worse.nodes[1] as Record<string, unknown>).fields = [];
    await editor.fill(JSON.stringify(worse, null, 2));
    await p.getByLabel('Commit message').fill('no key');
    await p.getByRole('button', { name: 'Commit draft' }).click();
    await p.getByRole('alert').filter({ hasText: '(validation_failed)' }).waitFor();
    await problems.getByLabel('Problems of t1').waitFor();
    assert.match(await problems.getByLabel('Problems of t1').innerText(), /\/nodes\/1\/fields: must NOT have fewer than 1 items/);
    assert.match(await problems.getByLabel('Problems of t2').innerText(), /\/nodes\/2\/key: must NOT have fewer than 1 items/);
    assert.equal((await t.client.get(`/api/v1/projects/${t.projectId}/pipelines/${pipeline.id}/versions`)).body.versions.length, 1);

    // Fixed (dedupe by id and status), saved valid, committed as v2, activated.
    (broken.nodes[2] as Record<string, unknown>).key = ['id', 'status'];
    await editor.fill(JSON.stringify(broken, null, 2));
    await p.getByRole('button', { name: 'Save draft' }).click();
    await problems.getByRole('status', { name: 'Draft validity' }).filter({ hasText: 'The draft is valid.' }).waitFor();
    await p.getByLabel('Commit message').fill('dedupe by id and status');
    await p.getByRole('button', { name: 'Commit draft' }).click();
    await p.getByRole('status', { name: 'Draft', exact: true }).filter({ hasText: 'Committed v2 on main.' }).waitFor();
    const v2 = p.getByRole('table', { name: 'Versions' }).getByRole('row').filter({ hasText: 'dedupe by id and status' });
    assert.equal(await p.getByLabel('Active version', { exact: true }).textContent(), 'v1 (main)', 'committing does not activate');
    await v2.getByRole('button', { name: 'Activate' }).click();
    await p.getByLabel('Active version', { exact: true }).filter({ hasText: 'v2 (main)' }).waitFor();
    await p.getByRole('group', { name: 'Graph of v2' }).getByRole('button', { name: 't2 (dedupe)' }).click();
    assert.match(await settings.getByLabel('Settings of t2').innerText(), /key\s+\["id","status"\]/);
    const active = await Pipeline.query(env().db).findById(pipeline.id);
    const versions = (await t.client.get(`/api/v1/projects/${t.projectId}/pipelines/${pipeline.id}/versions`)).body.versions;
    assert.equal(active!.activeVersionId, versions[0].id);
    assert.equal(versions[0].number, 2);
    assert.deepEqual(versions[0].document.nodes[2].key, ['id', 'status']);

    // A schedule: a refused plan shows the operation's refusal; a good one is listed, made by the member.
    await p.getByRole('button', { name: 'Create schedule' }).click();
    await p.getByRole('alert').filter({ hasText: '(invalid_schedule)' }).waitFor();
    await p.getByLabel('Every (seconds)').fill('3600');
    await p.getByLabel('Create paused').check();
    await p.getByRole('button', { name: 'Create schedule' }).click();
    const schedules = p.getByRole('table', { name: 'Schedules' });
    const row = schedules.getByRole('row').filter({ hasText: 'every 3600 s' });
    await row.waitFor();
    assert.match(await row.innerText(), /paused\s+its member/);
    const [schedule] = await PipelineSchedule.query(env().db).where({ pipelineId: pipeline.id });
    assert.deepEqual([schedule.spec, schedule.actorKind, schedule.createdByMemberId, schedule.createdByApiKeyId], [{ intervalSeconds: 3600, paused: true }, 'member', admin.memberId, null]);
    const temporalSchedule = env().temporal.schedule.getHandle(schedule.temporalScheduleId);
    assert.equal((await temporalSchedule.describe()).state.paused, true);
    // Resumed and paused again: the Temporal Schedule's state follows.
    await row.getByRole('button', { name: 'Resume' }).click();
    await row.getByRole('cell', { name: 'active', exact: true }).waitFor();
    assert.equal((await temporalSchedule.describe()).state.paused, false);
    await row.getByRole('button', { name: 'Pause' }).click();
    await row.getByRole('cell', { name: 'paused', exact: true }).waitFor();
    assert.equal((await temporalSchedule.describe()).state.paused, true);
    await row.getByRole('button', { name: 'Delete' }).click();
    await row.getByRole('button', { name: 'Delete schedule' }).click();
    await p.getByText('No schedules.').waitFor();
    assert.equal(await PipelineSchedule.query(env().db).where({ pipelineId: pipeline.id }).resultSize(), 0);

    // Launching from the page runs the version just activated.
    await p.getByRole('button', { name: 'Launch' }).click();
    await p.getByRole('heading', { name: `Run of ${pipeline.name} (v2)` }).waitFor();
    const runId = /\/console\/runs\/([0-9a-f-]{36})$/.exec(p.url())?.[1];
    assert.ok(runId, p.url());
    await p.getByLabel('Run status').filter({ hasText: /^succeeded$/ }).waitFor({ timeout: 60_000 });
    assert.equal((await getRun(t, runId)).versionId, versions[0].id);
  });

  it('offers a member reading, launching and schedules but no writing; the routes refuse writes with the codes HTTP answers, and a member’s schedule launches as the member', async () => {
    const { t } = fixture;
    const pipeline = await eventsPipeline(`member-${Date.now().toString(36)}`);
    const person = await invite(t.ws.workspaceId, 'member');
    const p = browsing.page;
    await acceptAndSignInPage(p, person);
    await openPipeline(p, pipeline.name);
    await p.getByRole('group', { name: 'Graph of v1' }).getByRole('button', { name: 'dst (destination)' }).click();
    await p.getByRole('region', { name: 'Node settings', exact: true }).getByLabel('Settings of dst').waitFor();
    await p.getByRole('button', { name: 'Validate' }).click();
    await p.getByRole('status', { name: 'Draft validity' }).filter({ hasText: 'The draft is valid.' }).waitFor();
    assert.equal(await p.getByLabel('Draft document').getAttribute('readonly'), '', 'the draft is shown, not editable');
    for (const name of ['Save draft', 'Commit draft', 'Activate', 'Create branch']) assert.equal(await p.getByRole('button', { name, exact: true }).count(), 0, name);
    for (const name of ['Launch', 'Create schedule', 'Show', 'Validate']) assert.ok(await p.getByRole('button', { name, exact: true }).count() > 0, name);

    // The same refusal as a key with the same scopes gets over HTTP.
    const member = await signedIn(t.ws.workspaceId, 'member');
    const base = `/projects/${t.projectId}/pipelines/${pipeline.id}`;
    const key = await newKey(t.ws, { scopes: ['pipelines:read', 'pipelines:execute', 'runs:read'] });
    for (const [method, path, body] of [
      ['PUT', `${base}/draft`, { document: pipeline.document }],
      ['POST', `${base}/versions/${pipeline.versionId}/activate`, undefined],
      ['POST', `${base}/branches`, { name: 'mine' }],
    ] as const) {
      const consoleAnswer = await member.client.request(method, `/console/api${path}`, body);
      const httpAnswer = await request(method, `/api/v1${path}`, { key, body });
      assert.equal(consoleAnswer.status, 403, `${method} ${path}: ${JSON.stringify(consoleAnswer.body)}`);
      assert.deepEqual([consoleAnswer.status, consoleAnswer.body.code], [httpAnswer.status, httpAnswer.body.code], `${method} ${path}`);
    }
    // Another workspace's pipeline is not found.
    const stranger = await signedIn((await newWorkspace()).workspaceId, 'owner');
    assert.equal((await stranger.client.request('GET', `/console/api${base}`)).status, 404);

    // A schedule made by the member launches as the member, with no key.
    const created = await member.client.request('POST', `/console/api${base}/schedules`, { intervalSeconds: 3600, paused: true });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    assert.deepEqual(created.body.schedule.actor, { kind: 'member', memberId: member.person.memberId, apiKeyId: null });
    const listed = await member.client.request('GET', `/console/api${base}/schedules`);
    assert.deepEqual(listed.body.schedules.map((s: { id: string }) => s.id), [created.body.schedule.id]);
    const launch = await createPipelineRunActivities(workerDependencies(env())).createScheduledRun({ scheduleId: created.body.schedule.id });
    assert.ok(launch, 'a run is recorded');
    const run = await PipelineRun.query(env().db).findById(launch.runId);
    assert.deepEqual([run!.trigger, run!.status, run!.actorKind, run!.actorMemberId, run!.apiKeyId], ['schedule', 'queued', 'member', member.person.memberId, null]);
    const resumed = await member.client.request('PATCH', `/console/api${base}/schedules/${created.body.schedule.id}`, { paused: false });
    assert.equal(resumed.status, 200, JSON.stringify(resumed.body));
    assert.equal(resumed.body.schedule.spec.paused, false);
    const wrongBody = await member.client.request('PATCH', `/console/api${base}/schedules/${created.body.schedule.id}`, { paused: 'yes' });
    assert.equal(wrongBody.status, 422, JSON.stringify(wrongBody.body));
    const deleted = await member.client.request('DELETE', `/console/api${base}/schedules/${created.body.schedule.id}`);
    assert.equal(deleted.status, 200, JSON.stringify(deleted.body));
  });
});
