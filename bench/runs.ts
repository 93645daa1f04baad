/**
 * runs (P6): launch-to-succeeded latency of a one-page pipeline (HTTP source → compute → managed
 * table, upsert) against a bare three-activity Temporal workflow doing the same work (read the page
 * over HTTP, transform, upsert into a PostgreSQL table) on the same Temporal dev server; then runs
 * per minute with many concurrent launches of different pipelines against as many bare workflows.
 *
 *   npm run bench -- runs                          # 20 timed runs per side, 50 concurrent
 *   npm run bench -- runs --runs 5 --concurrency 10 --history   (--help lists the flags)
 *
 * How the latency is measured. Weft: from sending POST …/execute to the run workflow's result,
 * awaited through the Temporal client (a long poll, so measuring adds no load). The run's status is
 * succeeded before that: the commit activity sets it in the transaction that commits the records,
 * and the workflow completes after the activity does. Each run is then checked with GET …/runs/{id}
 * (status succeeded, every record written), outside the timing. Bare: client.workflow.execute, from
 * the start request to the result.
 */
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { temporalSettings } from '../core/temporal-config';
import { call, startBenchWeft } from './support/weft';
import { BenchRow, emit, figure, percentile, row } from './support/report';
import { amount, benchFlags, count } from './support/options';
import { createBareActivities, EventRecord } from './support/runs-bare-activities';
import type { bareRunWorkflow } from './support/runs-bare-workflow';
import { describeHistory, historySpan, historyTotals } from './support/runs-history';

const BENCH = 'runs';

const flags = benchFlags('npm run bench -- runs', {
  runs: { type: 'string', help: 'timed sequential runs per side (default 20)' },
  warmup: { type: 'string', help: 'untimed runs per side first (default 3)' },
  concurrency: { type: 'string', help: 'pipelines launched at once, and bare workflows started at once (default 50)' },
  records: { type: 'string', help: 'records on the page (default 50)' },
  bursts: { type: 'string', help: 'rounds of concurrent launches, alternating sides; the median round counts (default 3)' },
  poll: { type: 'boolean', help: "end Weft's latency at the first GET of the run that says succeeded (polled every 20 ms), not at the workflow's result" },
  history: { type: 'boolean', help: "print where a median run's time goes, from its Temporal history" },
});
const RUNS = count(flags.runs, 'runs', 20);
const WARMUP = Math.round(amount(flags.warmup, 'warmup', 3));
const CONCURRENCY = count(flags.concurrency, 'concurrency', 50);
const RECORDS = count(flags.records, 'records', 50);
const BURSTS = count(flags.bursts, 'bursts', 3);
const POLL = flags.poll ?? false;
const HISTORY = flags.history ?? false;

/** One page of events: GET /events answers {data: [...]} with every record; no pagination. */
async function startEventsApi(records: EventRecord[]): Promise<{ baseUrl: string; requests: () => number; close(): Promise<void> }> {
  let requests = 0;
  const body = JSON.stringify({ data: records });
  const server = http.createServer((req, res) => {
    requests += 1;
    if (!req.url?.startsWith('/events')) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'Content-Type': 'application/json' }).end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`,
    requests: () => requests,
    close: () => new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

const events = (count: number): EventRecord[] => Array.from({ length: count }, (_, i) => ({
  id: i + 1,
  updated_at: new Date(Date.UTC(2024, 0, 1) + i * 60_000).toISOString(),
  amount: (i + 1) * 10,
  status: i % 2 ? 'closed' : 'open',
}));

interface Sample {
  ms: number;
  /** Epoch ms when the launch (or start) request was sent. */
  sentAt: number;
  workflowId: string;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function main(): Promise<void> {
  console.log(`runs: ${RUNS} timed runs per side after ${WARMUP} warm-up, ${CONCURRENCY} concurrent, ${RECORDS} records per page${POLL ? ', Weft latency by polling GET run' : ''}`);
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const api = await startEventsApi(events(RECORDS));
  const weft = await startBenchWeft({
    name: BENCH,
    worker: true,
    apiNodeArgs: process.env.RUNS_API_NODE_ARGS?.split(' ').filter(Boolean),
    workerNodeArgs: process.env.RUNS_WORKER_NODE_ARGS?.split(' ').filter(Boolean),
  });
  const pool = new pg.Pool({ connectionString: weft.databaseUrl, max: 10, application_name: 'bench-bare' });
  const { namespace } = temporalSettings();
  const connection = await Connection.connect({ address: weft.temporalAddress });
  const client = new Client({ connection, namespace });
  let worker: Worker | undefined;
  let workerDone: Promise<void> | undefined;
  try {
    const tenant = await weft.newTenant({ httpBaseUrl: api.baseUrl });
    const post = async (path: string, body: unknown) => {
      const res = await call(weft, tenant.key, 'POST', path, body);
      if (res.status !== 201) throw new Error(`POST ${path}: ${res.status} ${JSON.stringify(res.body)}`);
      return res.body;
    };
    const source = (await post('/api/v1/data-endpoints', {
      name: 'events', namespace: 'bench', role: 'source', contractKind: 'source_stream', pluginCapabilityInstallationId: tenant.httpInstallationId,
      target: { request: { url: `${api.baseUrl}events` }, response: { format: 'json', recordsPath: 'data' }, primaryKeys: ['id'], pagination: { type: 'none' } },
    })).dataEndpoint.id as string;
    // One pipeline per destination table: "latency" for the sequential runs, t_0 … for the concurrent ones.
    const pipeline = async (table: string) => {
      const destination = (await post('/api/v1/data-endpoints', {
        name: table, namespace: 'bench', role: 'destination', contractKind: 'sink_table', pluginCapabilityInstallationId: tenant.managedInstallationId,
        target: { table, primaryKey: ['id'] },
      })).dataEndpoint.id as string;
      const document = {
        nodes: [
          { id: 'src', type: 'source', endpointId: source, mode: 'full' },
          { id: 'tax', type: 'compute', fields: [{ name: 'amount_with_tax', expression: 'amount * 1.2' }] },
          { id: 'dst', type: 'destination', endpointId: destination, writeMode: 'upsert' },
        ],
        edges: [{ from: 'src', to: 'tax' }, { from: 'tax', to: 'dst' }],
      };
      return (await post(`/api/v1/projects/${tenant.projectId}/pipelines`, { name: `bench-${table}`, document })).pipeline.id as string;
    };
    const tables = Array.from({ length: CONCURRENCY }, (_, i) => `t_${i}`);
    const latencyPipeline = await pipeline('latency');
    const concurrentPipelines: string[] = [];
    for (const table of tables) concurrentPipelines.push(await pipeline(table));

    // The bare peer: its tables, and an in-process worker on its own task queue.
    await pool.query('CREATE SCHEMA bench_bare');
    for (const table of ['latency', ...tables]) {
      await pool.query(`CREATE TABLE bench_bare.${table} (id integer PRIMARY KEY, updated_at timestamptz NOT NULL, amount numeric NOT NULL, status text NOT NULL, amount_with_tax numeric NOT NULL)`);
    }
    const bareQueue = `bench-runs-bare-${process.pid}`;
    const workerConnection = await NativeConnection.connect({ address: weft.temporalAddress });
    worker = await Worker.create({
      connection: workerConnection,
      namespace,
      taskQueue: bareQueue,
      workflowsPath: require.resolve('./support/runs-bare-workflow'),
      activities: createBareActivities(pool),
    });
    workerDone = worker.run().finally(() => workerConnection.close());

    /** One Weft run: launch, then its end; checked afterwards. */
    const weftRun = async (pipelineId: string): Promise<Sample & { launchMs: number; runId: string }> => {
      const sentAt = Date.now();
      const started = performance.now();
      const launched = await call(weft, tenant.key, 'POST', `/api/v1/projects/${tenant.projectId}/pipelines/${pipelineId}/execute`);
      const launchMs = performance.now() - started;
      if (launched.status !== 202) throw new Error(`launch: ${launched.status} ${JSON.stringify(launched.body)}`);
      const { id: runId, workflow } = launched.body.run as { id: string; workflow: { workflowId: string } };
      if (POLL) {
        for (;;) {
          const res = await call(weft, tenant.key, 'GET', `/api/v1/projects/${tenant.projectId}/runs/${runId}`);
          if (res.body.run.status === 'succeeded') break;
          if (res.body.run.status === 'failed' || res.body.run.status === 'canceled') throw new Error(`run ${runId} ${res.body.run.status}: ${JSON.stringify(res.body.run.error)}`);
          await sleep(20);
        }
      } else {
        await client.workflow.getHandle(workflow.workflowId).result();
      }
      return { ms: performance.now() - started, sentAt, launchMs, workflowId: workflow.workflowId, runId };
    };
    const checkRun = async (runId: string) => {
      const res = await call(weft, tenant.key, 'GET', `/api/v1/projects/${tenant.projectId}/runs/${runId}`);
      const run = res.body.run;
      const written = run?.nodes?.find((n: { nodeId: string }) => n.nodeId === 'dst')?.recordsWritten;
      if (run?.status !== 'succeeded' || written !== RECORDS) throw new Error(`run ${runId}: ${run?.status}, ${written} records written: ${JSON.stringify(run?.error)}`);
    };
    const bareRun = async (table: string): Promise<Sample> => {
      const workflowId = `bench-bare-${randomUUID()}`;
      const sentAt = Date.now();
      const started = performance.now();
      const written = await client.workflow.execute<typeof bareRunWorkflow>('bareRunWorkflow', { taskQueue: bareQueue, workflowId, args: [{ url: `${api.baseUrl}events`, table }] });
      const ms = performance.now() - started;
      if (written !== RECORDS) throw new Error(`bare workflow ${workflowId} wrote ${written} records`);
      return { ms, sentAt, workflowId };
    };
    /** Splits a sample by its history: request → workflow started, and the workflow's own run. */
    const phases = async (samples: Sample[]) => Promise.all(samples.map(async (sample) => {
      const span = historySpan(await client.workflow.getHandle(sample.workflowId).fetchHistory());
      return { toStart: span.startedAt - sample.sentAt, run: span.runMs };
    }));

    // Sequential latency, alternating sides run by run.
    const weftSamples: Array<Sample & { launchMs: number }> = [];
    const bareSamples: Sample[] = [];
    for (let i = 0; i < WARMUP + RUNS; i++) {
      const w = await weftRun(latencyPipeline);
      await checkRun(w.runId);
      const b = await bareRun('latency');
      if (i >= WARMUP) {
        weftSamples.push(w);
        bareSamples.push(b);
      }
      process.stdout.write(`  run ${i + 1}/${WARMUP + RUNS}: Weft ${w.ms.toFixed(0)} ms, bare ${b.ms.toFixed(0)} ms\n`);
    }

    // Throughput: every pipeline launched at once, then as many bare workflows at once; in rounds,
    // alternating sides, because the shared Temporal dev server and machine load vary a lot.
    const weftBursts: number[] = [];
    const bareBursts: number[] = [];
    let burst: Array<Sample & { runId: string }> = [];
    let bareBurstSamples: Sample[] = [];
    for (let round = 0; round < BURSTS; round++) {
      const weftBurst = performance.now();
      burst = await Promise.all(concurrentPipelines.map((id) => weftRun(id)));
      weftBursts.push(performance.now() - weftBurst);
      for (const run of burst) await checkRun(run.runId);
      const bareBurst = performance.now();
      bareBurstSamples = await Promise.all(tables.map((table) => bareRun(table)));
      bareBursts.push(performance.now() - bareBurst);
      console.log(`  ${CONCURRENCY} at once, round ${round + 1}/${BURSTS}: Weft ${(weftBursts[round] / 1000).toFixed(1)} s, bare ${(bareBursts[round] / 1000).toFixed(1)} s`);
    }
    const weftBurstMs = percentile(weftBursts, 50);
    const bareBurstMs = percentile(bareBursts, 50);

    if (HISTORY) {
      // Where the concurrent runs' time went, on average per run.
      for (const [name, samples] of [['Weft', burst], ['bare', bareBurstSamples]] as const) {
        const split = await Promise.all(samples.map(async (sample) => {
          const history = await client.workflow.getHandle(sample.workflowId).fetchHistory();
          return { ...historyTotals(history), ...historySpan(history), sentAt: sample.sentAt, ms: sample.ms };
        }));
        const mean = (f: (x: (typeof split)[number]) => number) => (split.reduce((sum, x) => sum + f(x), 0) / split.length).toFixed(1);
        console.log(`${name}, ${CONCURRENCY} at once, mean per run: ${mean((x) => x.ms)} ms end to end; request → started ${mean((x) => x.startedAt - x.sentAt)} ms; `
          + `workflow ${mean((x) => x.runMs)} ms = workflow tasks ${mean((x) => x.workflowTasks)} + activities queued ${mean((x) => x.activityQueued)} + running ${mean((x) => x.activityRunning)} (+ waits between); activity attempts (local ones too) ${mean((x) => x.attempts)}`);
      }
      const median = (samples: Array<{ ms: number; workflowId: string }>) => [...samples].sort((a, b) => a.ms - b.ms)[Math.floor((samples.length - 1) / 2)];
      for (const [name, sample] of [['Weft', median(weftSamples)], ['bare', median(bareSamples)]] as const) {
        console.log(`\n${name}: median run ${sample.workflowId} (${sample.ms.toFixed(0)} ms end to end)`);
        console.log(describeHistory(await client.workflow.getHandle(sample.workflowId).fetchHistory()));
      }
    }

    const ms = (samples: Array<{ ms: number }>, p: number) => percentile(samples.map((s) => s.ms), p);
    const weftPhases = await phases(weftSamples);
    const barePhases = await phases(bareSamples);
    const p50 = (values: number[]) => percentile(values, 50);
    const perMinute = (count: number, elapsedMs: number) => (count / elapsedMs) * 60_000;
    const peerName = 'bare 3-activity workflow';
    const latencyNote = `one page of ${RECORDS} records: HTTP source → compute → managed table upsert; ${RUNS} sequential runs per side, ${POLL ? 'Weft ended by polling GET run every 20 ms' : 'ended at the workflow result'}`;
    const rows: BenchRow[] = [
      row({ benchmark: BENCH, measure: 'launch → succeeded p50', weft: ms(weftSamples, 50), peer: ms(bareSamples, 50), peerName, unit: 'ms', target: '<= 1.5', note: latencyNote }),
      row({ benchmark: BENCH, measure: 'launch → succeeded p99', weft: ms(weftSamples, 99), peer: ms(bareSamples, 99), peerName, unit: 'ms', target: '<= 1.5' }),
      row({ benchmark: BENCH, measure: `runs/min, ${CONCURRENCY} launched at once`, weft: perMinute(CONCURRENCY, weftBurstMs), peer: perMinute(CONCURRENCY, bareBurstMs), peerName, unit: 'runs/min', target: '>= 0.67', note: `${CONCURRENCY} different pipelines (each its own table) launched together, until the last succeeded; median of ${BURSTS} rounds (Weft ${weftBursts.map((b) => (b / 1000).toFixed(1)).join(', ')} s; bare ${bareBursts.map((b) => (b / 1000).toFixed(1)).join(', ')} s); target: at most 1.5× the bare workflows' time` }),
      row({ benchmark: BENCH, measure: 'request → workflow started p50', weft: p50(weftPhases.map((x) => x.toStart)), peer: p50(barePhases.map((x) => x.toStart)), peerName, unit: 'ms', note: 'part of the latency: Weft\'s launch request records the run before it starts the workflow (history start time against the send time)' }),
      row({ benchmark: BENCH, measure: 'workflow started → completed p50', weft: p50(weftPhases.map((x) => x.run)), peer: p50(barePhases.map((x) => x.run)), peerName, unit: 'ms', note: 'part of the latency, from the workflow history: the three activities and the workflow tasks between them' }),
      figure({ benchmark: BENCH, measure: 'launch request (POST …/execute) p50', weft: percentile(weftSamples.map((s) => s.launchMs), 50), unit: 'ms', note: 'part of the latency above: the API records the run and starts its workflow' }),
    ];
    emit(rows);
  } finally {
    if (worker && worker.getState() === 'RUNNING') worker.shutdown();
    await workerDone?.catch(() => undefined);
    await connection.close().catch(() => undefined);
    await pool.end().catch(() => undefined);
    await weft.stop();
    await api.close();
  }
}

main().then(() => process.exit(0), (error: Error) => {
  console.error(error);
  process.exit(1);
});
