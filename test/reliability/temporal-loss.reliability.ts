import assert from 'node:assert/strict';
import { WorkflowFailedError } from '@temporalio/client';
import { temporal as proto } from '@temporalio/proto';
import { workspaceSchema } from '../../plugins/managed-table/storage';
import { env } from '../support/environment';
import { newKey, requestAt, revokeKey } from '../support/fixtures';
import { ontologyTenant } from '../support/ontology';
import { createPipeline, EventsApi, eventsSource, getRun, linearDocument, PIPELINE_SCOPES, PipelineTenant, pipelineTenant, tableDestination } from '../support/pipelines';
import { BUILT_START, killHard, RunningScript, startApiScript, startScript } from '../support/processes';
import { action, currentSnapshot, managedTable, memberKey, putPolicy, writeTenant } from '../support/source-writes';
import { HeldLock, holdLock, until } from './support/fault-points';
import { OwnTemporal, RecordedActivity, recordedActivities } from './support/own-temporal';
import { reliabilitySeed, seededRandom } from './support/seeded-random';
import { KeyedCall, publishSlowQuery, SLOW_QUERY_ROWS } from './support/slow-query';
import { TcpProxy } from './support/tcp-proxy';

/**
 * Temporal losing track of an attempt whose work is done (issue 34): the cluster is SIGKILLed, or
 * the worker's connection to it cut, while an activity runs; the activity finishes meanwhile and
 * its report never arrives, so Temporal times the attempt out and runs it again. The retry must
 * answer what the first attempt did, and nothing may be done twice.
 *
 * Everything runs against a dev server of the pinned CLI that this file starts on its own port and
 * SQLite file (the suite's server is never touched), with a worker and an API process of its own.
 * The worker reaches the server through a TCP proxy, so a killed server's worker can be kept from
 * it until the server, started again, has timed the lost attempt out: a worker that can still
 * report goes on doing so for about 20 s after the work (sdk-core flushes the last heartbeat for
 * up to 10 s, then retries the report for up to 10 s), and a server back sooner would take the
 * late report instead of running the attempt again.
 */

const PAGE_SIZE = 50;
const RECORDS = 2000;
const PAGES = RECORDS / PAGE_SIZE;
/** The extract and commit activities' heartbeat timeout for this file's runs (15 s and 30 s by default), set on its API process, which starts the runs. */
const HEARTBEAT_TIMEOUT_MS = 5000;
/**
 * How long a fault lasts past its start where no heartbeating activity is in flight (an approval's
 * wait, a query job's activity, which has none): long enough that the worker surely finds the
 * server gone or the link cut, and retries its polls and reports against the fault.
 */
const OPEN_WORK_FAULT_MS = 2000;

/** Where in a run the fault strikes. */
type FaultPoint =
  | { phase: 'during extraction'; afterPages: number }
  | { phase: 'between extraction and commit'; at: 'as the extraction\'s last write commits' | 'with the commit started and waiting to begin' }
  | { phase: 'during the commit'; at: 'inside its transaction, at the destination\'s write' | 'inside its transaction, after the run is marked succeeded' };

const pointName = (point: FaultPoint) => (point.phase === 'during extraction' ? `during extraction, with ${point.afterPages} of ${PAGES} pages served` : `${point.phase}, ${point.at}`);

/** Whether the commit runs, and commits, while the fault lasts. */
const commitsUnderFault = (point: FaultPoint) => point.phase === 'during the commit' || (point.phase === 'between extraction and commit' && point.at === 'with the commit started and waiting to begin');

/** A fault between the worker and Temporal: begun while work runs, ended some seconds later. */
interface Fault {
  name: string;
  begin(): Promise<void>;
  /**
   * Ends the fault; the worker reaches the server again only after `timedOut` (when given) found
   * that the server timed out the attempts it lost, so a late report of theirs is dropped.
   */
  end(timedOut?: () => Promise<void>): Promise<void>;
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));

describe('Temporal losing track of attempts whose work is done', function () {
  this.timeout(20 * 60_000);
  const seed = reliabilitySeed();
  const random = seededRandom(seed);
  const temporal = new OwnTemporal();
  let proxy: TcpProxy;
  let events: EventsApi;
  let api: RunningScript | undefined;
  let apiUrl = '';
  let worker: RunningScript | undefined;

  // The server killed: its worker cannot reach it until it is up again and has timed the lost attempts out.
  const serverKilled: Fault = {
    name: 'the Temporal server SIGKILLed',
    begin: async () => {
      proxy.cutLink();
      await temporal.kill();
    },
    end: async (timedOut) => {
      await temporal.start();
      await timedOut?.();
      proxy.restore();
    },
  };
  // The link cut: the server stays up and times the attempt out meanwhile, so a late report is dropped whenever it comes.
  const linkCut: Fault = { name: "the worker's connection to Temporal cut", begin: async () => proxy.cutLink(), end: async (timedOut) => {
    await timedOut?.();
    proxy.restore();
  } };

  before(async function () {
    this.timeout(6 * 60_000);
    await temporal.start();
    const [host, port] = temporal.address.split(':');
    proxy = await new TcpProxy({ host, port: Number(port) }).start();
    events = await new EventsApi().start();
    // This file's own API process: the test environment's API starts workflows on the suite's server.
    ({ api, url: apiUrl } = await startApiScript({
      TEMPORAL_ADDRESS: temporal.address,
      WEFT_EXTRACT_HEARTBEAT_TIMEOUT_MS: String(HEARTBEAT_TIMEOUT_MS),
      WEFT_COMMIT_HEARTBEAT_TIMEOUT_MS: String(HEARTBEAT_TIMEOUT_MS),
      WEFT_QUERY_SYNC_BUDGET_MS: '100',
      WEFT_METRICS_PORT: 'off',
    }, 180_000));
  });
  after(async function () {
    this.timeout(120_000);
    events?.release();
    if (worker) await killHard(worker).catch(() => undefined);
    if (api && api.child.exitCode === null) await api.stop('SIGTERM');
    await proxy?.close();
    await events?.close();
    await temporal.close();
  });

  // A failure shows what the processes said: their logs are the only account of what Temporal did to them.
  afterEach(function () {
    if (this.currentTest?.state !== 'failed') return;
    process.stderr.write(`--- pages requested: ${events.received.map((r) => r.query.page ?? r.body?.page).join(' ')}\n`);
    for (const [name, script] of [['worker', worker], ['API', api]] as const) {
      const said = script?.output().split('\n').filter((line) => !line.includes('temporalio_client::retry')).join('\n');
      if (said) process.stderr.write(`--- the ${name}'s last output (without the SDK's retry warnings) ---\n${said.slice(-20000)}\n`);
    }
  });

  /** A worker process (`npm run worker`) reaching Temporal at `address`: the server itself, or the proxy. */
  const useWorker = (address: () => string) => {
    before(async function () {
      this.timeout(240_000);
      worker = await startScript(BUILT_START, ['worker'], { TEMPORAL_ADDRESS: address(), WEFT_WORKER_METRICS_PORT: 'off' }, /worker: polling/, 180_000);
    });
    after(async () => {
      if (worker) await killHard(worker);
      worker = undefined;
    });
  };

  /** Keeps a fault on open work (OPEN_WORK_FAULT_MS). */
  const faultLasts = (faultStartedAt: number) => pause(faultStartedAt + OPEN_WORK_FAULT_MS - Date.now());

  /**
   * Until the server has no attempt of the workflow in flight: it timed out the attempt whose
   * report it lost (the worker, cut off, has started no other).
   */
  const lostAttemptsTimedOut = (workflowId: string) => async () => void (await until('the server timing out the lost attempt', async () => {
    const { raw } = await (await temporal.client()).workflow.getHandle(workflowId).describe();
    return !(raw.pendingActivities ?? []).some((activity) => activity.state === proto.api.enums.v1.PendingActivityState.PENDING_ACTIVITY_STATE_STARTED);
  }, 60_000));

  /** Whether a workflow of this file's server has completed its first workflow task (it is waiting now). */
  const workflowTaskDone = async (workflowId: string) => {
    const history = await (await temporal.client()).workflow.getHandle(workflowId).fetchHistory();
    return (history.events ?? []).some((event) => event.workflowTaskCompletedEventAttributes);
  };

  /** How a workflow of this file's server ended (waits for it). */
  async function workflowOutcome(workflowId: string, timeoutMs = 180_000): Promise<{ status: 'completed'; result: unknown } | { status: 'failed'; cause: string }> {
    const client = await temporal.client();
    const outcome = client.workflow.getHandle(workflowId).result().then(
      (result: unknown) => ({ status: 'completed' as const, result }),
      (error: unknown) => {
        if (!(error instanceof WorkflowFailedError)) throw error;
        const cause = error.cause as { type?: string; message?: string } | undefined;
        return { status: 'failed' as const, cause: `${cause?.type ?? ''}: ${cause?.message ?? error.message}` };
      },
    );
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`workflow ${workflowId} did not end in ${timeoutMs / 1000} s`)), timeoutMs)));
    try {
      return await Promise.race([outcome, late]);
    } finally {
      clearTimeout(timer);
    }
  }

  const sourceNode = (runId: string) => env().db('pipelineRunNodes').where({ runId, nodeId: 'src' }).first();
  const runStatus = async (runId: string) => (await env().db('pipelineRuns').where({ id: runId }).first('status')).status as string;
  const staged = async (runId: string, records: number) => Number((await sourceNode(runId))?.recordsIn ?? 0) >= records;

  async function launchThroughOwnApi(t: PipelineTenant, pipelineId: string, key = t.key) {
    const res = await requestAt(apiUrl, 'POST', `/api/v1/projects/${t.projectId}/pipelines/${pipelineId}/execute`, { key });
    assert.equal(res.status, 202, JSON.stringify(res.body));
    return res.body.run as { id: string; workflow: { workflowId: string } };
  }

  /** A tenant with a paged events source (pages of 50) and an append-only managed table without a key: a record written twice is a second row. */
  async function eventsPipeline(table: string) {
    const t = await pipelineTenant(events.baseUrl);
    const source = await eventsSource(t, events, { pagination: { type: 'page', parameter: 'page', pageSizeParameter: 'per_page', pageSize: PAGE_SIZE } });
    const destination = await tableDestination(t, table);
    const pipeline = await createPipeline(t, linearDocument(source, destination, { writeMode: 'append' }));
    /** Rows and distinct ids of the records with ids in [from, to], and of the whole table. */
    const counts = async (from: number, to: number) => {
      const { rows } = await env().db.raw(
        `SELECT count(*) FILTER (WHERE id BETWEEN ? AND ?)::int AS n, count(DISTINCT id) FILTER (WHERE id BETWEEN ? AND ?)::int AS ids, count(*)::int AS all_n, count(DISTINCT id)::int AS all_ids
           FROM (SELECT (data->>'id')::int AS id FROM "${workspaceSchema(t.ws.workspaceId)}"."${table}" WHERE valid_to IS NULL) current`,
        [from, to, from, to],
      );
      return { round: { n: rows[0].n, ids: rows[0].ids }, all: { n: rows[0].all_n, ids: rows[0].all_ids } };
    };
    return { t, pipelineId: pipeline.id, table, counts };
  }

  /**
   * Launches a run of RECORDS new events (as `launchKey`) and faults it at `point`: the work in
   * flight finishes while the fault lasts (then `meanwhile` runs), the fault ends and the run is
   * left to finish. Answers how its workflow ended, the run, and the activities its history recorded.
   */
  async function faultedRun(pipeline: Awaited<ReturnType<typeof eventsPipeline>>, point: FaultPoint, fault: Fault, { launchKey = pipeline.t.key, meanwhile = async () => undefined }: { launchKey?: string; meanwhile?: () => Promise<void> } = {}) {
    const { t, table } = pipeline;
    events.received = [];
    const requested = (page: number) => events.received.some((r) => r.path === '/events' && Number(r.query.page) === page);
    let releasePages: (() => void) | undefined;
    let lock: HeldLock | undefined;
    let run!: { id: string; workflow: { workflowId: string } };
    try {
      // A run stages a thousand records (20 of the API's pages) at a time. Pages from the one
      // named are held until the fault has begun, or until the lock that stops the run's commit
      // where the point says is taken.
      const heldFrom = point.phase === 'during extraction' ? point.afterPages + 1 : point.at.endsWith('marked succeeded') ? 22 : 2;
      releasePages = events.holdFrom(heldFrom);
      // The table's catalog row: the commit's transaction locks it to take the next version, after it locked the run and checked its guards.
      if (point.phase === 'during the commit' && point.at.endsWith('write')) lock = await holdLock(`SELECT 1 FROM "${workspaceSchema(t.ws.workspaceId)}"._tables WHERE table_name = ? FOR NO KEY UPDATE`, [table]);
      run = await launchThroughOwnApi(t, pipeline.pipelineId, launchKey);
      await until(`page ${heldFrom} requested (and held)`, async () => requested(heldFrom));

      if (point.phase === 'during extraction') {
        await fault.begin();
        releasePages();
        await until('the first attempt finishing the extraction under the fault', async () => (await sourceNode(run.id)).status === 'succeeded');
      } else {
        if (point.at.endsWith('marked succeeded')) {
          // The first thousand staged: the commit deletes the staging rows last, after it marked the run succeeded.
          await until('the first thousand records staged', () => staged(run.id, 1000));
          lock = await holdLock('SELECT 1 FROM pipeline_run_rows WHERE run_id = ? AND page = 1 FOR NO KEY UPDATE', [run.id]);
        } else if (!lock) {
          // The run's row: the commit's first statement locks it (extraction never does).
          lock = await holdLock('SELECT 1 FROM pipeline_runs WHERE id = ? FOR NO KEY UPDATE', [run.id]);
        }
        releasePages();
        const held = lock;
        if (point.at === 'as the extraction\'s last write commits') {
          await until('the extraction finished', async () => (await sourceNode(run.id)).status === 'succeeded', 60_000, 5);
        } else {
          const expected = point.phase === 'during the commit' ? (point.at.endsWith('write') ? /FROM .*_tables.* FOR UPDATE/is : /^DELETE FROM pipeline_run_rows/i) : /pipeline_runs.*for update/is;
          const waiting = await until('the commit waiting at the held lock', async () => {
            const statements = await held.waiting();
            return statements.length > 0 && statements;
          });
          assert.match(waiting[0], expected, `the commit waits where "${pointName(point)}" says`);
        }
        await fault.begin();
        await held.release();
        if (point.at !== 'as the extraction\'s last write commits') await until('the commit finishing under the fault', async () => (await runStatus(run.id)) === 'succeeded');
      }
      await meanwhile();
      await fault.end(lostAttemptsTimedOut(run.workflow.workflowId));
    } finally {
      releasePages?.();
      await lock?.release();
    }
    const outcome = await workflowOutcome(run.workflow.workflowId);
    const activities = await recordedActivities(await temporal.client(), run.workflow.workflowId);
    return { outcome, run: await getRun(t, run.id), node: await sourceNode(run.id), activities };
  }

  const retried = (activities: RecordedActivity[], type: string) => activities.find((a) => a.type === type && a.attempt > 1);
  const summary = (activities: RecordedActivity[]) => activities.map((a) => `${a.type}#${a.attempt} ${a.outcome}${a.lastFailure ? ` (after ${a.lastFailure})` : ''}`).join(', ');

  /** Every record of a round exactly once, and no record twice anywhere in the table. */
  async function assertLandedOnce(pipeline: Awaited<ReturnType<typeof eventsPipeline>>, firstId: number, context: string) {
    const { round, all } = await pipeline.counts(firstId, firstId + RECORDS - 1);
    assert.deepEqual(round, { n: RECORDS, ids: RECORDS }, `every record of the run exactly once: ${context}`);
    assert.equal(all.n, all.ids, `no record twice in the table: ${context}`);
  }

  describe('the Temporal server SIGKILLed at seeded points of a run, and started again on its database, its worker kept from it until the lost attempt timed out', () => {
    useWorker(() => proxy.address);
    let pipeline: Awaited<ReturnType<typeof eventsPipeline>>;
    before(async () => {
      // One run without a fault first: the table exists, so a commit can be stopped at its write.
      pipeline = await eventsPipeline('temporal_loss_events');
      events.records = EventsApi.events(10, { from: 1_000_000 });
      const run = await launchThroughOwnApi(pipeline.t, pipeline.pipelineId);
      assert.deepEqual(await workflowOutcome(run.workflow.workflowId), { status: 'completed', result: 'succeeded' });
    });

    const points: FaultPoint[] = [
      { phase: 'during extraction', afterPages: 1 + Math.floor(random() * PAGES) },
      { phase: 'between extraction and commit', at: random() < 0.5 ? 'as the extraction\'s last write commits' : 'with the commit started and waiting to begin' },
      { phase: 'during the commit', at: random() < 0.5 ? 'inside its transaction, at the destination\'s write' : 'inside its transaction, after the run is marked succeeded' },
    ];
    for (const [round, point] of points.entries()) {
      const revoked = commitsUnderFault(point) ? ', its launching key revoked while the server is down' : '';
      it(`${pointName(point)}${revoked}: the run succeeds, every record lands once, and a retried activity answers what the lost attempt did (seed ${seed})`, async () => {
        const firstId = round * RECORDS + 1;
        events.records = EventsApi.events(RECORDS, { from: firstId });
        // A commit done under the fault, with its launching key revoked before Temporal retries
        // it: the retry answers the committed run, and does not act as the key again. (Revoked
        // before the commit, the key would rightly fail the run.)
        const launchKey = await newKey(pipeline.t.ws, { scopes: PIPELINE_SCOPES });
        const meanwhile = commitsUnderFault(point) ? () => revokeKey(launchKey) : undefined;
        const { outcome, run, node, activities } = await faultedRun(pipeline, point, serverKilled, { launchKey, meanwhile });
        const context = `killed ${pointName(point)}${meanwhile ? ' (its launching key revoked meanwhile)' : ''}, seed ${seed}; activities: ${summary(activities)}`;
        process.stdout.write(`        ${context}\n`);
        assert.deepEqual(outcome, { status: 'completed', result: 'succeeded' }, `the run's workflow succeeds: ${context}`);
        assert.equal(run.status, 'succeeded', context);
        assert.equal(run.nodes.find((n: any) => n.nodeId === 'src').recordsRead, RECORDS, context);
        assert.equal(run.nodes.find((n: any) => n.nodeId === 'dst').recordsWritten, RECORDS, context);
        await assertLandedOnce(pipeline, firstId, context);
        assert.ok(activities.every((a) => a.outcome === 'completed'), `no activity failed: ${context}`);

        // The fault did what it is for: Temporal lost track of the attempt in flight and ran it again.
        // (Killed as the extraction's last write commits, its report may have left already.)
        if (point.phase === 'during extraction') {
          const extraction = retried(activities, 'extractSource');
          assert.ok(extraction, `Temporal ran the extraction again: ${context}`);
          assert.deepEqual(extraction.result, { recordsRead: RECORDS, pages: node.pages, stopReason: node.stopReason }, `the retry answers the first attempt's counts: ${context}`);
        } else if (point.at !== 'as the extraction\'s last write commits') {
          const commit = retried(activities, 'commitRun');
          assert.ok(commit, `Temporal ran the commit again: ${context}`);
          assert.deepEqual(commit.result, { status: 'succeeded', nextWorkflowId: null }, `the retry answers the first attempt's outcome: ${context}`);
        }
      });
    }
  });

  describe("the worker's connection to Temporal cut by a TCP proxy for longer than the heartbeat timeout while it extracts", () => {
    useWorker(() => proxy.address);
    const point: FaultPoint = { phase: 'during extraction', afterPages: 1 + Math.floor(random() * PAGES) };

    it(`${pointName(point)}: the old attempt finishes under the cut, the retry answers the same result, and every record lands once (seed ${seed})`, async () => {
      const pipeline = await eventsPipeline('cut_off_events');
      events.records = EventsApi.events(RECORDS, { from: 1 });
      const { outcome, run, node, activities } = await faultedRun(pipeline, point, linkCut);
      const context = `cut ${pointName(point)}, seed ${seed}; activities: ${summary(activities)}`;
      process.stdout.write(`        ${context}\n`);
      assert.deepEqual(outcome, { status: 'completed', result: 'succeeded' }, `the run's workflow succeeds: ${context}`);
      assert.equal(run.status, 'succeeded', context);
      await assertLandedOnce(pipeline, 1, context);
      const extraction = retried(activities, 'extractSource');
      assert.ok(extraction, `Temporal timed the cut-off attempt out and ran it again: ${context}`);
      assert.match(extraction.lastFailure ?? '', /heartbeat/i, `the first attempt ended on its heartbeat timeout: ${context}`);
      assert.deepEqual(extraction.result, { recordsRead: RECORDS, pages: node.pages, stopReason: node.stopReason }, `the retry answers what the first attempt recorded: ${context}`);
    });
  });

  describe('open work of other kinds, under both faults', () => {
    useWorker(() => proxy.address);
    const call: KeyedCall = (key, method, path, body) => requestAt(apiUrl, method, path, { key, body });

    for (const fault of [serverKilled, linkCut]) {
      it(`a governed write waiting for approval, with ${fault.name} while it waits, is applied once when approved after`, async () => {
        const t = await writeTenant();
        const endpointId = await managedTable(t);
        await putPolicy(t, endpointId, { approval: { required: true, approvers: 1 } });
        const approver = await memberKey(t);
        const body = action(t, await currentSnapshot(t.writer, endpointId), { operation: 'upsert', rows: [{ id: 1, name: 'Ada' }] });
        const writes = `/api/v1/data-endpoints/${endpointId}/writes`;
        const proposed = await call(t.writerKey, 'POST', writes, body);
        assert.equal(proposed.status, 202, JSON.stringify(proposed.body));
        const { workflowId } = proposed.body.writeAction;
        await until('the approval workflow waiting (its first task done)', () => workflowTaskDone(workflowId));

        await fault.begin();
        const faultAt = Date.now();
        assert.equal((await call(t.writerKey, 'GET', `${writes}/${body.actionId}`)).body.writeAction.status, 'pending_approval', 'pending while the fault lasts');
        await faultLasts(faultAt);
        await fault.end();

        const approved = await call(approver.key, 'POST', `${writes}/${body.actionId}/approve`, {});
        assert.equal(approved.status, 200, JSON.stringify(approved.body));
        assert.equal(approved.body.writeAction.status, 'applied');
        assert.equal((await call(t.writerKey, 'POST', writes, body)).body.writeAction.status, 'applied', 'a retry of the proposal answers the applied action');
        assert.equal((await call(t.writerKey, 'GET', `/api/v1/data-endpoints/${endpointId}/snapshot`)).body.snapshot.version, '1', 'applied exactly once');
        assert.deepEqual((await call(t.writerKey, 'GET', `/api/v1/data-endpoints/${endpointId}/records?limit=10`)).body.data.map((r: { name: string }) => r.name), ['Ada']);
        assert.deepEqual(await workflowOutcome(workflowId), { status: 'completed', result: 'applied' });
        const activities = await recordedActivities(await temporal.client(), workflowId);
        assert.deepEqual(activities.filter((a) => a.type === 'applyApprovedWrite').map((a) => [a.outcome, a.result]), [['completed', { status: 'applied' }]], summary(activities));
      });

      // The job's activity has no heartbeat: should its report be lost, Temporal learns of the job
      // only at the activity's start-to-close timeout, and the retry finds it completed. The rows
      // are the job's, served from PostgreSQL, whatever Temporal knows.
      it(`an asynchronous query job, with ${fault.name} as it stores its rows, completes with them`, async () => {
        const t = await ontologyTenant();
        const { key, executePath } = await publishSlowQuery(t, call);
        const pending = await call(key, 'POST', executePath, { input: { minAge: 18 } });
        assert.equal(pending.status, 202, JSON.stringify(pending.body));
        const job = await env().db('queryJobs').where({ workspaceId: t.ws.workspaceId }).first();
        const jobStatus = async () => (await env().db('queryJobs').where({ id: job.id }).first('status')).status as string;
        // The job's row, locked while the worker evaluates the query (seconds of work): the worker
        // then waits to store its rows, so it surely holds the task when the fault begins.
        const lock = await holdLock('SELECT status FROM query_jobs WHERE id = ? FOR NO KEY UPDATE', [job.id]);
        let faultAt: number;
        try {
          assert.equal(await jobStatus(), 'active', 'the job still runs when its row is locked');
          const waiting = await until('the worker storing the job\'s rows', async () => {
            const statements = await lock.waiting();
            return statements.length > 0 && statements;
          }, 180_000);
          assert.match(waiting[0], /^update "query_jobs"/i);
          await fault.begin();
          faultAt = Date.now();
        } finally {
          await lock.release();
        }
        await until('the job completing under the fault', async () => (await jobStatus()) !== 'active');
        await faultLasts(faultAt);
        await fault.end();

        const answer = await call(key, 'POST', `${executePath}?cursor=${pending.body.metadata.continuation}`, {});
        assert.equal(answer.status, 200, JSON.stringify(answer.body));
        assert.deepEqual(answer.body.data, SLOW_QUERY_ROWS);
        assert.equal(await jobStatus(), 'completed');
      });
    }
  });
});
