import assert from 'node:assert/strict';
import { until } from '../../support/polling';
import pg from 'pg';
import { CancelledFailure, WorkflowFailedError } from '@temporalio/client';
import { principalOfKey } from '../../../services/tenancy/api-keys';
import { installPlugin } from '../../../services/endpoints/plugins';
import { createPipelineSchedule, deletePipelineSchedule, triggerPipelineSchedule } from '../../../services/pipelines/pipeline-schedules';
import { cancelRun } from '../../../services/pipelines/runs';
import { Project } from '../../../db/models';
import type { OperationContext } from '../../../services/operations/context';
import type { Principal } from '../../../services/tenancy/access';
import { env } from '../../support/environment';
import { keyIdOf } from '../../support/fixtures';
import { externalDatabase, installationSettingsFor } from '../../support/external-postgres';
import { settled } from '../../support/polling';
import {
  createPipeline,
  EventsApi,
  eventsSource,
  getRun,
  launch,
  linearDocument,
  PipelineTenant,
  tableDestination,
  tableRecords,
  useEventsApi,
  waitForRun,
} from '../../support/pipelines';


/** The context the MCP tools' operations get, for calling the schedule and cancel services directly as this key. */
function contextOf(principal: Principal, project?: Project): OperationContext {
  const { db } = env();
  return {
    db,
    deps: env().dependencies(),
    principal,
    get project(): Project {
      if (!project) throw new Error('no project');
      return project;
    },
    door: 'mcp',
    requestId: 'pipeline-concurrency-test',
  };
}
describe('Pipeline runs: queueing, cancellation, replace, schedules and external destinations', function () {
  this.timeout(180_000);
  const fixture = useEventsApi(() => EventsApi.events(100));
  let api: EventsApi;
  let t: PipelineTenant;
  beforeEach(() => ({ api, t } = fixture));

  const sourceNode = (run: any) => run.nodes.find((n: any) => n.nodeId === 'src');

  it('queues a second launch while a run is active and starts it when the first ends', async () => {
    api.records = EventsApi.events(600);
    const source = await eventsSource(t, api, { pagination: { type: 'page', parameter: 'page', pageSizeParameter: 'per_page', pageSize: 20 } });
    const destination = await tableDestination(t, 'queued_events', ['id']);
    const pipeline = await createPipeline(t, linearDocument(source, destination, { writeMode: 'upsert' }));
    // The first run stages its first read (20 pages of 20), then waits at page 21 until released
    // (well within the source's 10 s request timeout).
    const release = api.holdFrom(21);
    const first = await launch(t, pipeline.id);
    const running = await waitForRun(t, first.id, (run) => run.status === 'running' && sourceNode(run).pages >= 20);
    assert.equal(sourceNode(running).recordsRead, 400, 'per-node counts are visible while the run is running');
    assert.equal(running.nodes.find((n: any) => n.nodeId === 'dst').recordsIn, sourceNode(running).recordsRead);
    const second = await launch(t, pipeline.id);
    assert.equal(second.status, 'queued');
    // Its workflow asked for its turn, was told to wait and waits (a timer started): only then is "still queued" a finding.
    const { workflowId } = (await getRun(t, second.id)).workflow;
    await until('the second run to wait for its turn', async () => (await env().temporal.workflow.getHandle(workflowId).fetchHistory()).events?.some((event) => event.timerStartedEventAttributes));
    assert.equal((await getRun(t, second.id)).status, 'queued', 'the second run waits while the first is running');
    release();
    const firstDone = await waitForRun(t, first.id);
    const secondDone = await waitForRun(t, second.id);
    assert.equal(firstDone.status, 'succeeded');
    assert.equal(secondDone.status, 'succeeded');
    assert.ok(Date.parse(secondDone.startedAt) >= Date.parse(firstDone.finishedAt), 'the second started after the first ended');
  });

  it('a canceled run ends canceled and commits nothing', async () => {
    const source = await eventsSource(t, api, { window: { startParameter: 'since', lookback: 'PT6H' }, pagination: { type: 'page', parameter: 'page', pageSizeParameter: 'per_page', pageSize: 10 } });
    const destination = await tableDestination(t, 'canceled_events', ['id']);
    const pipeline = await createPipeline(t, linearDocument(source, destination, { mode: 'incremental', writeMode: 'upsert' }));
    api.records = EventsApi.events(600);
    // Its first read (20 pages of 10) is staged; the next waits at page 21 until the cancel is sent.
    const release = api.holdFrom(21);
    const queued = await launch(t, pipeline.id);
    await waitForRun(t, queued.id, (run) => sourceNode(run).recordsRead >= 200);
    const principal = await principalOfKey(env(), env().db, t.ws.workspaceId, await keyIdOf(t.key));
    await cancelRun(contextOf(principal), queued.id);
    release();
    const run = await waitForRun(t, queued.id);
    assert.equal(run.status, 'canceled');
    assert.deepEqual(await tableRecords(t, destination), []);
    assert.equal(await env().db('pipelinePositions').where({ pipelineId: pipeline.id }).first(), undefined, 'no position moved');
    const staged = await env().db('pipelineRunRows').where({ runId: run.id }).count('* as n').first();
    assert.equal(Number(staged?.n), 0);
    // The run's row turns canceled in the workflow's last activity, before the workflow itself
    // closes: wait for its close rather than describing it at once.
    const handle = env().temporal.workflow.getHandle(run.workflow.workflowId);
    const closed = await handle.result().then(() => 'completed', (error: unknown) => error);
    assert.ok(closed instanceof WorkflowFailedError && closed.cause instanceof CancelledFailure, `the workflow closed with ${String(closed)}`);
    assert.equal((await handle.describe()).status.name, 'CANCELLED');
  });

  it('replace swaps the table at once: a concurrent reader never sees it empty or half filled', async () => {
    const source = await eventsSource(t, api, { pagination: { type: 'page', parameter: 'page', pageSizeParameter: 'per_page', pageSize: 20 } });
    const destination = await tableDestination(t, 'replaced_events', ['id']);
    const pipeline = await createPipeline(t, linearDocument(source, destination, { writeMode: 'replace' }));
    assert.equal((await waitForRun(t, (await launch(t, pipeline.id)).id)).status, 'succeeded');
    assert.equal((await tableRecords(t, destination)).length, 100);

    api.records = EventsApi.events(300, { from: 1000 });
    api.delayMs = 100;
    const run = await launch(t, pipeline.id);
    const counts = new Set<number>();
    let reads = 0;
    for (;;) {
      const rows = await tableRecords(t, destination);
      counts.add(rows.length);
      reads++;
      const ids = new Set(rows.map((r) => Number(r.id) >= 1000));
      assert.equal(ids.size, 1, 'a read mixes the old and the new table');
      const { status } = await getRun(t, run.id);
      if (status !== 'running' && status !== 'queued') break;
    }
    assert.equal((await waitForRun(t, run.id)).status, 'succeeded');
    counts.add((await tableRecords(t, destination)).length);
    assert.ok(reads > 3, `the reader read ${reads} times during the run`);
    assert.deepEqual([...counts].sort((a, b) => a - b), [100, 300], 'only the whole old table or the whole new one');
  });

  it('a Temporal Schedule launches runs with trigger schedule, and deleting it removes the schedule', async () => {
    const source = await eventsSource(t, api);
    const destination = await tableDestination(t, 'scheduled_events', ['id']);
    const pipeline = await createPipeline(t, linearDocument(source, destination, { writeMode: 'upsert' }));
    const project = (await Project.query(env().db).findById(t.projectId))!;
    const principal = await principalOfKey(env(), env().db, t.ws.workspaceId, await keyIdOf(t.key));
    const ctx = contextOf(principal, project);
    const schedule = await createPipelineSchedule(ctx, pipeline.id, { intervalSeconds: 3600, paused: true });
    const described = await env().temporal.schedule.getHandle(schedule.temporalScheduleId).describe();
    assert.equal(described.action.type, 'startWorkflow');
    await triggerPipelineSchedule(ctx, pipeline.id, schedule.id);
    const runs: any[] = await settled('the triggered schedule’s run', async () => (await t.client.get(`/api/v1/projects/${t.projectId}/runs?pipelineId=${pipeline.id}`)).body.runs, (found: any[]) => found.length > 0, 20_000, 200);
    assert.equal(runs.length, 1);
    assert.equal(runs[0].trigger, 'schedule');
    assert.equal(runs[0].scheduleId, schedule.id);
    const run = await waitForRun(t, runs[0].id);
    assert.equal(run.status, 'succeeded', JSON.stringify(run.error));
    assert.equal(run.actor.memberId, t.ws.memberId);
    await deletePipelineSchedule(ctx, pipeline.id, schedule.id);
    await assert.rejects(env().temporal.schedule.getHandle(schedule.temporalScheduleId).describe(), /not found/i);
  });

  describe('into a postgres_table destination', () => {
    const database = `weft_pipeline_dest_${process.pid}`;
    let external: pg.Client;
    let destination: string;
    let drop: () => Promise<void>;

    before(async () => {
      ({ client: external, drop } = await externalDatabase(database));
      await external.query('CREATE TABLE events (id integer PRIMARY KEY, updated_at timestamptz, amount integer NOT NULL, status text)');
      const { t } = fixture;
      const installation = await installPlugin(env().db, env().encryptionKey, t.ws.workspaceId, 'postgres_table', installationSettingsFor(database));
      const res = await t.client.post('/api/v1/data-endpoints', {
        name: 'external-events', namespace: 'tests', role: 'destination', contractKind: 'sink_table', pluginCapabilityInstallationId: installation.id, target: { table: 'events' },
      });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      destination = res.body.dataEndpoint.id;
    });

    after(() => drop?.());

    it('upserts a run\'s records in one remote transaction, and a run that fails writes nothing', async () => {
      const pipeline = await createPipeline(t, linearDocument(await eventsSource(t, api), destination, { writeMode: 'upsert' }));
      const first = await waitForRun(t, (await launch(t, pipeline.id)).id);
      assert.equal(first.status, 'succeeded', JSON.stringify(first.error));
      assert.equal((await external.query('SELECT count(*)::int AS n FROM events')).rows[0].n, 100);
      // Running again rewrites the same keys: still one row per key.
      api.records[0].amount = 4242;
      assert.equal((await waitForRun(t, (await launch(t, pipeline.id)).id)).status, 'succeeded');
      const { rows } = await external.query('SELECT count(*)::int AS n, max(amount) AS top FROM events');
      assert.deepEqual(rows[0], { n: 100, top: 4242 });

      // A record the table refuses (amount is NOT NULL) fails the commit: the remote transaction rolls back whole.
      api.records = [...EventsApi.events(5, { from: 500 }), { id: 999, updated_at: new Date().toISOString(), amount: null as unknown as number, status: 'bad' }];
      const failed = await waitForRun(t, (await launch(t, pipeline.id)).id);
      assert.equal(failed.status, 'failed');
      assert.equal(failed.error.nodeId, 'dst');
      assert.equal((await external.query('SELECT count(*)::int AS n FROM events WHERE id >= 500')).rows[0].n, 0);
    });
  });
});
