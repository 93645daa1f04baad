/**
 * console (issue 36): how soon the console's lists show their first rows in a real browser, with a
 * workspace the size the issue names: 100 pipelines, 10,000 runs (database fixtures, spread over the
 * pipelines) and a 1,000,000-record managed table. Each page is loaded warm (one untimed load
 * first) --loads times; the figure is the median, from navigation to the first data row drawn. The
 * target is under one second. The peer, in the same run, is the HTTP request behind the page's rows
 * (the /api/v1 list or records read with an API key, the body read in full), so the ratio says
 * what the browser, the bundle and the console door add to the data itself.
 *
 *   npm run bench -- console                       # 100 pipelines, 10,000 runs, 1M records, 5 loads
 *   npm run bench -- console --records 100k --loads 9   (--help lists the flags)
 *
 * playwright-core drives Debian's chromium (scripts/infra/chromium.ts), as the browser tests do.
 */
import { performance } from 'node:perf_hooks';
import { chromium, type Page } from 'playwright-core';
import { ensureChromium } from '../scripts/infra/chromium';
import { call, startBenchWeft, BenchWeft } from './support/weft';
import { BenchRow, emit, figure, percentile, row } from './support/report';
import { benchFlags, count } from './support/options';
import { fillManagedTable } from './support/managed-fill';
import { runScript } from '../test/support/processes';

const BENCH = 'console';

const flags = benchFlags('npm run bench -- console', {
  pipelines: { type: 'string', help: 'pipelines in the project (default 100)' },
  runs: { type: 'string', help: 'runs, as database fixtures over the pipelines (default 10k)' },
  records: { type: 'string', help: 'records in the managed table the preview reads (default 1M)' },
  loads: { type: 'string', help: 'timed loads of each page, after one untimed (default 5)' },
});
const PIPELINES = count(flags.pipelines, 'pipelines', 100);
const RUNS = count(flags.runs, 'runs', 10_000);
const RECORDS = count(flags.records, 'records', 1_000_000);
const LOADS = count(flags.loads, 'loads', 5);
const TARGET_MS = 1000;
const PASSWORD = 'a bench password, long enough';

/** The operator CLI, as a user runs it, against the bench's database; its JSON output. */
async function admin(weft: BenchWeft, args: string[]): Promise<any> {
  const result = await runScript('scripts/admin.ts', [...args, '--json'], { DATABASE_URL: weft.databaseUrl, WEFT_PUBLIC_URL: weft.baseUrl, WEFT_LOG_TO_STDERR: '1', LOG_LEVEL: 'warn' });
  if (result.code !== 0) throw new Error(`admin ${args.join(' ')}: exit ${result.code}: ${result.stderr}`);
  return JSON.parse(result.stdout);
}

async function ok<T = any>(answer: Promise<{ status: number; body: T }>, what: string): Promise<T> {
  const { status, body } = await answer;
  if (status >= 300) throw new Error(`${what}: ${status} ${JSON.stringify(body)}`);
  return body;
}

/** The workspace the issue names: the pipelines, the runs over them, the big table and its endpoint. */
async function seed(weft: BenchWeft): Promise<{ endpointId: string }> {
  const { tenant } = weft;
  const endpoint = (name: string, role: 'source' | 'destination') => ok(call(weft, tenant.key, 'POST', '/api/v1/data-endpoints', {
    name, namespace: 'bench', role, contractKind: role === 'source' ? 'source_stream' : 'sink_table',
    pluginCapabilityInstallationId: tenant.managedInstallationId, target: { table: name, primaryKey: ['id'] },
  }), `creating endpoint ${name}`);
  const source = (await endpoint('events', 'source')).dataEndpoint.id as string;
  const destination = (await endpoint('events_copy', 'destination')).dataEndpoint.id as string;
  const started = performance.now();
  await fillManagedTable(weft, 'events', RECORDS);
  console.log(`console: ${RECORDS.toLocaleString('en-US')} records committed in ${((performance.now() - started) / 1000).toFixed(1)} s`);

  const document = {
    nodes: [
      { id: 'src', type: 'source', endpointId: source, mode: 'full' },
      { id: 'open', type: 'filter', where: [{ field: 'status', op: 'eq', value: 'open' }] },
      { id: 'dst', type: 'destination', endpointId: destination, writeMode: 'upsert' },
    ],
    edges: [{ from: 'src', to: 'open' }, { from: 'open', to: 'dst' }],
  };
  const pipelines: Array<{ id: string; name: string; activeVersionId: string }> = [];
  for (let i = 0; i < PIPELINES; i++) {
    const created = await ok(call(weft, tenant.key, 'POST', `/api/v1/projects/${tenant.projectId}/pipelines`, { name: `pipeline-${String(i).padStart(3, '0')}`, document }), 'creating a pipeline');
    pipelines.push(created.pipeline);
  }
  // Ended runs, a minute apart, spread over the pipelines, as months of schedules leave them.
  await weft.db.raw(
    `INSERT INTO pipeline_runs (workspace_id, project_id, pipeline_id, pipeline_name, version_id, version_number, document, trigger, actor_member_id, status, workflow_id, queued_at, started_at, finished_at)
     SELECT ?, ?, (p ->> 'id')::uuid, p ->> 'name', (p ->> 'activeVersionId')::uuid, 1, ?::jsonb, 'schedule', ?, CASE WHEN i % 20 = 0 THEN 'failed' ELSE 'succeeded' END,
            'weft-run-' || gen_random_uuid(), now() - i * interval '1 minute', now() - i * interval '1 minute', now() - i * interval '1 minute' + interval '4 seconds'
     FROM generate_series(1, ?) i, LATERAL (SELECT (?::jsonb) -> (i % ?) AS p) chosen`,
    [tenant.workspaceId, tenant.projectId, JSON.stringify(document), tenant.memberId, RUNS, JSON.stringify(pipelines), pipelines.length],
  );
  return { endpointId: source };
}

/** From navigation to the first data row of the page's table. */
async function load(page: Page, url: string, rows: string): Promise<number> {
  const started = performance.now();
  await page.goto(url, { waitUntil: 'commit' });
  await page.locator(rows).first().waitFor({ timeout: 60_000 });
  return performance.now() - started;
}

async function timedRequest(weft: BenchWeft, key: string, pathname: string): Promise<number> {
  const started = performance.now();
  const answer = await fetch(`${weft.baseUrl}${pathname}`, { headers: { Authorization: `Bearer ${key}` } });
  await answer.arrayBuffer();
  if (answer.status !== 200) throw new Error(`${pathname}: ${answer.status}`);
  return performance.now() - started;
}

async function main(): Promise<void> {
  console.log(`console: ${PIPELINES} pipelines, ${RUNS.toLocaleString('en-US')} runs, ${RECORDS.toLocaleString('en-US')} records, ${LOADS} timed loads per page`);
  const weft = await startBenchWeft({ name: BENCH, temporal: true });
  const browser = await chromium.launch({ executablePath: ensureChromium(), args: ['--no-sandbox'] });
  try {
    const { endpointId } = await seed(weft);
    const { tenant } = weft;
    const invited = await admin(weft, ['member', 'invite', '--workspace', tenant.workspaceId, '--member', tenant.memberId, '--email', 'owner@bench.example']);
    const page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
    await page.goto(invited.inviteUrl);
    await page.getByLabel('Password', { exact: true }).fill(PASSWORD);
    await page.getByLabel('Confirm password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Set password' }).click();
    await page.getByRole('status').filter({ hasText: 'Sign in as' }).waitFor();
    await page.goto(`${weft.baseUrl}/console/sign-in`);
    await page.getByLabel('Email').fill('owner@bench.example');
    await page.getByLabel('Password', { exact: true }).fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('navigation', { name: 'Console' }).waitFor();

    const pages = [
      { name: 'Pipelines list', url: '/console/pipelines', rows: 'table[aria-label="Pipelines"] tbody tr', peer: `/api/v1/projects/${tenant.projectId}/pipelines` },
      { name: 'Runs list', url: '/console/runs', rows: 'table[aria-label="Runs"] tbody tr', peer: '/api/v1/runs?limit=25' },
      { name: 'Records preview', url: `/console/endpoints/${endpointId}`, rows: 'table[aria-label="Records"] tbody tr', peer: `/api/v1/data-endpoints/${endpointId}/records` },
    ];
    const rows: BenchRow[] = [];
    for (const shown of pages) {
      await load(page, `${weft.baseUrl}${shown.url}`, shown.rows);
      await timedRequest(weft, tenant.key, shown.peer);
      const browserMs: number[] = [];
      const requestMs: number[] = [];
      // Taking turns, so load from elsewhere on the machine falls on both alike.
      for (let i = 0; i < LOADS; i++) {
        browserMs.push(await load(page, `${weft.baseUrl}${shown.url}`, shown.rows));
        requestMs.push(await timedRequest(weft, tenant.key, shown.peer));
      }
      const median = percentile(browserMs, 50);
      rows.push(figure({ benchmark: BENCH, measure: `${shown.name}: first rows shown, median of ${LOADS} warm loads`, weft: median, unit: 'ms', target: `< ${TARGET_MS}`, met: median < TARGET_MS }));
      rows.push(row({ benchmark: BENCH, measure: `${shown.name}: first rows shown vs its HTTP request`, weft: median, peer: percentile(requestMs, 50), peerName: `GET ${shown.peer.split('?')[0].replace(/[0-9a-f-]{36}/g, '{id}')}`, unit: 'ms', note: 'lower is better; the peer is the data alone' }));
      console.log(`console: ${shown.name}: ${browserMs.map((ms) => ms.toFixed(0)).join(', ')} ms in the browser; ${requestMs.map((ms) => ms.toFixed(0)).join(', ')} ms the request`);
    }
    emit(rows);
  } finally {
    await browser.close();
    await weft.stop();
  }
}

main().then(() => process.exit(0), (error: Error) => {
  console.error(error);
  process.exit(1);
});
