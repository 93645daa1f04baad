/**
 * api (P3, P7): the request path. Weft's authenticated GET /api/v1/organization, a 100-row records
 * read and /healthz under autocannon (50 connections, 10 s each), against a bare Koa + @koa/router
 * server in its own process serving the same bodies with no authentication, limits or database;
 * the records read also against a bare Koa handler that reads the same stored rows with one pg
 * SELECT per request (the target's peer).
 * Weft runs as `npm start` runs it: info-level request logs (written to a file), limits on (raised
 * out of the way, so every request is still counted in both buckets).
 *
 * The limiter's own added p50: one client, the request-path statement (authentication and both
 * buckets, weft_authenticate_request) against the same key lookup without counting.
 *
 *   npx tsx bench/api.ts                 # 10 s per measurement
 *   npx tsx bench/api.ts --seconds 3     # quicker
 *   npx tsx bench/api.ts --beside-worker --rounds 3 --only organization,records
 *                                        # as `npm start` runs Weft, medians of three alternating rounds
 */
import { fork, ChildProcess } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import autocannon from 'autocannon';
import { call, freePort, startBenchWeft } from './support/weft';
import { emit, figure, median, row, BenchRow } from './support/report';
import { benchFlags, count, names } from './support/options';
import { backendsOf, cpuSeconds, cpuTimes } from './support/ingest-proc';
import type { Db } from '../db/connection';
import { sha256Hex } from '../core/secrets';
import { DEFAULT_API_KEY_REQUESTS, DEFAULT_WORKSPACE_REQUESTS, WINDOW_SECONDS } from '../services/tenancy/api-limits';
import { capabilityContext, requireDataEndpoint } from '../services/endpoints/data-endpoints';
import { managedTableCapability } from '../plugins/managed-table';
import { workerDependencies } from '../services/operations/context';

const flags = benchFlags('npm run bench -- api', {
  seconds: { type: 'string', help: 'seconds per autocannon measurement (default 10)' },
  'cpu-prof': { type: 'string', help: "write the API process's V8 CPU profile into this folder" },
  only: { type: 'string', help: 'measure only these, comma-separated: organization, records, healthz, limiter (default all)' },
  'beside-worker': { type: 'boolean', help: 'run the worker beside the API, as `npm start` does (both share the two cores)' },
  rounds: { type: 'string', help: 'alternate Weft and its peer this many times per measure and report the medians (default 1)' },
});
const MEASURES = ['organization', 'records', 'healthz', 'limiter'] as const;
const only = names(flags.only, 'only', MEASURES, [...MEASURES]);
const seconds = count(flags.seconds, 'seconds', 10);
const rounds = count(flags.rounds, 'rounds', 1);
const CONNECTIONS = 50;

interface Measured { rps: number; p50: number; p99: number; cpuUs: number; userCpuUs: number; postgresCpuUs: number }

/** The bench database's name: every PostgreSQL backend serving it works for the API or the peer being measured. */
let benchDatabase = '';

/** CPU seconds of the bench database's backends, by process (10 ms ticks; thousands of requests per measurement). */
const backendCpu = () => new Map(backendsOf(benchDatabase).map((pid) => [pid, cpuSeconds(pid) ?? 0]));

/**
 * autocannon against `url`; cpuUs is the serving process's main-thread CPU time per answered
 * request (user and system, from /proc), which other load on the machine changes far less than
 * the throughput; postgresCpuUs the same of the PostgreSQL backends serving the bench database
 * (PostgreSQL shares the machine's cores: what a request asks of it counts too).
 */
async function measure(url: string, key: string | null, server: ChildProcess, duration = seconds, connections = CONNECTIONS): Promise<Measured> {
  // The main thread's: the API's SPARQL query threads load their engine in the background after it
  // starts listening, which would count against the first measurements.
  const before = cpuTimes(server.pid!, true) ?? { user: 0, system: 0 };
  const postgresBefore = backendCpu();
  const result = await autocannon({ url, connections, duration, headers: key ? { Authorization: `Bearer ${key}` } : {} });
  const after = cpuTimes(server.pid!, true) ?? before;
  // A backend started meanwhile counts whole; one that ended meanwhile is missed.
  const postgres = [...backendCpu()].reduce((sum, [pid, seconds]) => sum + seconds - (postgresBefore.get(pid) ?? 0), 0);
  const non2xx = result.non2xx + result.errors;
  if (non2xx > 0) throw new Error(`${url}: ${non2xx} failed or non-2xx responses of ${result.requests.total}`);
  const perRequest = (seconds: number) => (seconds * 1e6) / Math.max(1, result.requests.total);
  return {
    rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99,
    cpuUs: perRequest(after.user + after.system - before.user - before.system), userCpuUs: perRequest(after.user - before.user),
    postgresCpuUs: perRequest(postgres),
  };
}

/** The median of each figure over the rounds. */
function medianOf(runs: Measured[]): Measured {
  const of = (figure: keyof Measured) => median(runs.map((run) => run[figure]));
  return { rps: of('rps'), p50: of('p50'), p99: of('p99'), cpuUs: of('cpuUs'), userCpuUs: of('userCpuUs'), postgresCpuUs: of('postgresCpuUs') };
}

/**
 * Weft and its peers measured in turn, `rounds` times: a drift in the machine's load touches each
 * side alike. Prints each round's throughput ratio (against the first peer) and returns the medians.
 */
async function alternating(label: string, sides: Array<{ url: string; key: string | null; server: ChildProcess }>): Promise<Measured[]> {
  const runs: Measured[][] = sides.map(() => []);
  for (let round = 0; round < rounds; round++) {
    for (const [i, side] of sides.entries()) runs[i]!.push(await measure(side.url, side.key, side.server));
    if (rounds > 1) console.error(`${label}, round ${round + 1}: ${runs[0]![round]!.rps.toFixed(0)} against ${runs[1]![round]!.rps.toFixed(0)} req/s, ${(runs[0]![round]!.rps / runs[1]![round]!.rps).toFixed(2)}`);
  }
  return runs.map(medianOf);
}

const LIMITER_SAMPLES = 2000;

/** p50 of the request-path statement against the same lookup without counting, one client. */
async function limiterLatency(db: Db, key: string): Promise<{ counted: number; lookup: number; added: number }> {
  const prefix = /^weft_sk_[A-Za-z0-9]{12}/.exec(key)![0];
  const hash = sha256Hex(key);
  const counted = () => db.raw('SELECT * FROM weft_authenticate_request(?, ?, ?, ?, ?)', [prefix, hash, WINDOW_SECONDS, DEFAULT_WORKSPACE_REQUESTS, DEFAULT_API_KEY_REQUESTS]);
  const lookup = () => db.raw(
    `SELECT a.*, (m.id IS NOT NULL AND m.removed_at IS NULL) AS member_active, m.role, l.workspace_requests, l.api_key_requests
       FROM api_keys a LEFT JOIN members m ON m.workspace_id = a.workspace_id AND m.id = a.created_by_member_id
       LEFT JOIN api_limit_settings l ON l.workspace_id = a.workspace_id WHERE a.prefix = ? AND a.secret_hash = ?`, [prefix, hash]);
  const time = async (work: () => Promise<unknown>) => {
    const samples: number[] = [];
    for (let i = 0; i < 200; i++) await work();
    for (let i = 0; i < LIMITER_SAMPLES; i++) {
      const started = performance.now();
      await work();
      samples.push(performance.now() - started);
    }
    return median(samples);
  };
  // Interleave the two so drift in machine load touches both alike.
  const a1 = await time(counted);
  const b1 = await time(lookup);
  const a2 = await time(counted);
  const b2 = await time(lookup);
  const countedP50 = (a1 + a2) / 2;
  const lookupP50 = (b1 + b2) / 2;
  return { counted: countedP50, lookup: lookupP50, added: countedP50 - lookupP50 };
}

async function startPeer(setup: { bodies: Record<string, unknown>; selects?: Record<string, string>; databaseUrl?: string }): Promise<{ url: string; child: ChildProcess }> {
  const port = await freePort();
  const child = fork(path.join(__dirname, 'support', 'api-bare-koa.ts'), [String(port)], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  await new Promise<void>((resolve, reject) => {
    child.once('message', () => resolve());
    child.once('exit', (code) => reject(new Error(`the bare Koa server exited with ${code}`)));
    child.send(setup);
  });
  return { url: `http://127.0.0.1:${port}`, child };
}

async function main(): Promise<void> {
  const weft = await startBenchWeft({
    name: 'api',
    temporal: true,
    worker: Boolean(flags['beside-worker']),
    apiEnv: { LOG_LEVEL: 'info' },
    apiNodeArgs: flags['cpu-prof'] ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(flags['cpu-prof'])}`] : [],
  });
  benchDatabase = new URL(weft.databaseUrl).pathname.slice(1);
  const rows: BenchRow[] = [];
  try {
    const { tenant } = weft;
    // A managed table with 100 rows, written through the capability as a governed write would.
    const created = await call(weft, tenant.key, 'POST', '/api/v1/data-endpoints', {
      name: 'bench-orders', namespace: 'bench', role: 'source', contractKind: 'source_stream',
      pluginCapabilityInstallationId: tenant.managedInstallationId, target: { table: 'bench_orders', primaryKey: ['id'] },
    });
    if (created.status !== 201) throw new Error(`endpoint: ${JSON.stringify(created.body)}`);
    const endpointId = created.body.dataEndpoint.id as string;
    const { installation } = await requireDataEndpoint(weft, weft.db, tenant.workspaceId, endpointId);
    await managedTableCapability.writeRecords!(capabilityContext(weft.db, installation, workerDependencies(weft)), { table: 'bench_orders', primaryKey: ['id'] }, {
      operation: 'append',
      rows: Array.from({ length: 100 }, (_, i) => ({ id: i + 1, customer: `customer-${i % 17}`, amount: (i * 7.31).toFixed(2), status: i % 3 ? 'open' : 'closed', note: 'x'.repeat(40) })),
      provenance: { kind: 'write', id: randomUUID() },
    });
    const recordsPath = `/api/v1/data-endpoints/${endpointId}/records?limit=100`;
    const organization = await call(weft, tenant.key, 'GET', '/api/v1/organization');
    const records = await call(weft, tenant.key, 'GET', recordsPath);
    if (organization.status !== 200 || records.status !== 200 || records.body.data.length !== 100) throw new Error('the bench requests do not answer 200 with their bodies');

    const health = await call(weft, null, 'GET', '/healthz');
    // The peer's records handler reads the very rows Weft serves: the table's storage at its latest snapshot.
    const storage = `"weft_ws_${tenant.workspaceId.replace(/-/g, '')}"."bench_orders"`;
    const peer = await startPeer({
      bodies: { '/api/v1/organization': organization.body, '/records': records.body, '/healthz': health.body },
      selects: { '/records-pg': `SELECT data FROM ${storage} WHERE valid_to IS NULL ORDER BY row_key LIMIT 100` },
      databaseUrl: weft.databaseUrl,
    });
    const peerPg = await call({ baseUrl: peer.url }, null, 'GET', '/records-pg');
    if (peerPg.status !== 200 || peerPg.body.data.length !== 100) throw new Error('the bare Koa + pg peer does not answer the 100 rows');
    try {
      const api = weft.api;
      // User time alone is the process's own work; system time (the socket's syscalls) grows most with other load.
      const cpuRow = (measure: string, weftRun: Measured, peerRun: Measured, peerName: string) => [
        row({ benchmark: 'api', measure: `${measure} CPU per request`, weft: weftRun.cpuUs, peer: peerRun.cpuUs, peerName, unit: 'µs' }),
        row({ benchmark: 'api', measure: `${measure} user CPU per request`, weft: weftRun.userCpuUs, peer: peerRun.userCpuUs, peerName, unit: 'µs' }),
        row({ benchmark: 'api', measure: `${measure} PostgreSQL CPU per request`, weft: weftRun.postgresCpuUs, peer: peerRun.postgresCpuUs, peerName, unit: 'µs' }),
      ];
      if (only.includes('organization')) {
        // Warm both up (JIT, pools), then measure each alone.
        await measure(`${weft.baseUrl}/api/v1/organization`, tenant.key, api, 2);
        await measure(`${peer.url}/api/v1/organization`, null, peer.child, 2);
        const [weftOrg, peerOrg] = await alternating('GET /organization', [
          { url: `${weft.baseUrl}/api/v1/organization`, key: tenant.key, server: api },
          { url: `${peer.url}/api/v1/organization`, key: null, server: peer.child },
        ]) as [Measured, Measured];
        rows.push(
          row({ benchmark: 'api', measure: 'GET /organization throughput', weft: weftOrg.rps, peer: peerOrg.rps, peerName: 'bare Koa', unit: 'req/s', target: '>= 0.35' }),
          row({ benchmark: 'api', measure: 'GET /organization p50', weft: weftOrg.p50, peer: peerOrg.p50, peerName: 'bare Koa', unit: 'ms' }),
          row({ benchmark: 'api', measure: 'GET /organization p99', weft: weftOrg.p99, peer: peerOrg.p99, peerName: 'bare Koa', unit: 'ms' }),
          ...cpuRow('GET /organization', weftOrg, peerOrg, 'bare Koa'),
        );
      }
      if (only.includes('records')) {
        await measure(`${weft.baseUrl}${recordsPath}`, tenant.key, api, 2);
        await measure(`${peer.url}/records-pg`, null, peer.child, 2);
        const [weftRecords, peerRecordsPg, peerRecords] = await alternating('100-row records read', [
          { url: `${weft.baseUrl}${recordsPath}`, key: tenant.key, server: api },
          { url: `${peer.url}/records-pg`, key: null, server: peer.child },
          { url: `${peer.url}/records`, key: null, server: peer.child },
        ]) as [Measured, Measured, Measured];
        rows.push(
          row({ benchmark: 'api', measure: '100-row records read throughput', weft: weftRecords.rps, peer: peerRecordsPg.rps, peerName: 'bare Koa + one pg SELECT', unit: 'req/s', target: '>= 0.5' }),
          row({ benchmark: 'api', measure: '100-row records read p50', weft: weftRecords.p50, peer: peerRecordsPg.p50, peerName: 'bare Koa + one pg SELECT', unit: 'ms' }),
          row({ benchmark: 'api', measure: '100-row records read p99', weft: weftRecords.p99, peer: peerRecordsPg.p99, peerName: 'bare Koa + one pg SELECT', unit: 'ms' }),
          ...cpuRow('100-row records read', weftRecords, peerRecordsPg, 'bare Koa + one pg SELECT'),
          row({ benchmark: 'api', measure: '100-row records read throughput, bare body', weft: weftRecords.rps, peer: peerRecords.rps, peerName: 'bare Koa (no database)', unit: 'req/s' }),
        );
      }
      if (only.includes('healthz')) {
        const weftHealth = await measure(`${weft.baseUrl}/healthz`, null, api);
        const peerHealth = await measure(`${peer.url}/healthz`, null, peer.child);
        rows.push(
          row({ benchmark: 'api', measure: '/healthz throughput (no key)', weft: weftHealth.rps, peer: peerHealth.rps, peerName: 'bare Koa', unit: 'req/s', target: '>= 0.8' }),
          ...cpuRow('/healthz', weftHealth, peerHealth, 'bare Koa'),
        );
      }
      if (only.includes('limiter')) {
        const limiter = await limiterLatency(weft.db, tenant.key);
        rows.push(figure({ benchmark: 'api', measure: 'limiter added p50 (1 client, in SQL)', weft: limiter.added, unit: 'ms', note: `authentication + both buckets ${limiter.counted.toFixed(3)} ms p50, the same key lookup alone ${limiter.lookup.toFixed(3)} ms p50, ${LIMITER_SAMPLES} calls each` }));
      }
    } finally {
      peer.child.kill('SIGTERM');
    }
  } finally {
    await weft.stop();
  }
  emit(rows);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
