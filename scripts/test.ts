/**
 * `npm test`: the same set-up as `npm start` (local PostgreSQL and Temporal dev server unless
 * DATABASE_URL / TEMPORAL_ADDRESS are set), a fresh throwaway database, then mocha. With
 * DATABASE_URL set the throwaway database is created on that server and dropped afterwards; the
 * database it names is never migrated or written.
 * Extra arguments go to mocha: `npm test -- --grep "API keys"`. `--suite reliability` runs
 * test/reliability/*.reliability.ts instead (npm run test:reliability), `--suite histories`
 * test/integration/workflows/recording/*.record.ts (npm run record-histories).
 */
import { spawn, spawnSync } from 'node:child_process';
import { ensureStripeMock } from './infra/stripe-mock';
import { ensureTemporalTestServer } from './infra/temporal-test-server';
import { randomBytes } from 'node:crypto';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../core/paths';
import { prepareInfrastructure } from './infra/environment';
import { say } from './infra/process';
import { ensureConsoleBuilt } from './console-build';

/** Type errors and workflow-determinism lint failures fail the run like a failing test. */
function staticChecks(): boolean {
  if (process.env.WEFT_SKIP_STATIC_CHECKS === '1') return true;
  for (const [name, bin, args] of [
    ['typecheck', 'typescript/bin/tsc', ['--noEmit', '-p', '.']],
    ['typecheck console', 'typescript/bin/tsc', ['--noEmit', '-p', 'console/web']],
    ['lint', 'eslint/bin/eslint.js', ['.']],
  ] as const) {
    say(`${name}…`);
    const result = spawnSync(process.execPath, [path.join(projectRoot, 'node_modules', bin), ...args], { cwd: projectRoot, stdio: 'inherit' });
    if (result.status !== 0) {
      say(`${name} failed`);
      return false;
    }
  }
  return true;
}

/** The unit tier in a process of its own, as `npm run test:unit` runs it: its exit code. */
function unitTier(args: string[]): number {
  const result = spawnSync(process.execPath, ['--import', 'tsx', path.join(projectRoot, 'scripts', 'test-unit.ts'), ...args], { cwd: projectRoot, stdio: 'inherit' });
  return result.status ?? 1;
}

const seconds = (since: number) => `${Math.round((Date.now() - since) / 1000)} s`;

/** Test files outside the tiers' folders, which no tier would run. */
function untiered(folder = path.join(projectRoot, 'test')): string[] {
  return readdirSync(folder, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(folder, entry.name);
    if (entry.isDirectory()) return ['unit', 'integration', 'reliability', 'data', 'fixtures'].includes(entry.name) && folder.endsWith(`${path.sep}test`) ? [] : untiered(full);
    return entry.name.endsWith('.test.ts') ? [path.relative(projectRoot, full)] : [];
  });
}

async function main(): Promise<number> {
  const stray = untiered();
  if (stray.length) {
    say(`test files outside test/unit and test/integration, which no tier runs: ${stray.join(', ')}`);
    return 1;
  }
  const times: string[] = [];
  const checksStarted = Date.now();
  if (!staticChecks()) return 1;
  if (process.env.WEFT_SKIP_STATIC_CHECKS !== '1') times.push(`static checks ${seconds(checksStarted)}`);
  const args = process.argv.slice(2);
  // `--suite reliability` runs the fault, load, tenant and fuzzing suite (npm run test:reliability);
  // `--suite histories` records workflow histories for the replay test (npm run record-histories).
  const suiteFlag = args.indexOf('--suite');
  const suite = suiteFlag >= 0 ? args.splice(suiteFlag, 2)[1] : 'main';
  // Named test files replace the default set (mocha would otherwise add them to it), and run with the stack.
  const filesNamed = args.some((arg) => /\.(test|reliability|record)\.ts$/.test(arg));
  if (suite === 'main' && !filesNamed) {
    const unitStarted = Date.now();
    const code = unitTier(args);
    times.push(`unit tier ${seconds(unitStarted)}`);
    if (code !== 0) {
      say(times.join('; '));
      return code;
    }
  }
  // Built once per machine (like the Temporal CLI), before mocha, so a Go failure is not a test failure.
  ensureStripeMock();
  // The time-skipping server of the workflow unit tests (test/unit/workflows), fetched with Maven once per machine.
  ensureTemporalTestServer();
  // The console tests drive the bundle the API serves.
  ensureConsoleBuilt();
  const localPostgres = !process.env.DATABASE_URL;
  // Each run has its own database and task queue, so concurrent runs on one machine never meet.
  const runId = `${process.pid}`;
  const tierStarted = Date.now();
  const infra = await prepareInfrastructure({ database: `weft_test_${runId}`, recreateDatabase: true, dropDatabaseOnStop: true, temporal: true });
  try {
    const pattern = suite === 'reliability' ? 'test/reliability/**/*.reliability.ts' : suite === 'histories' ? 'test/integration/workflows/recording/*.record.ts' : 'test/integration/**/*.test.ts';
    const specs = filesNamed ? [] : [pattern];
    const mocha = spawn(process.execPath, [path.join(projectRoot, 'node_modules', 'mocha', 'bin', 'mocha.js'), ...specs, ...args], {
      cwd: projectRoot,
      stdio: 'inherit',
      env: {
        ...process.env,
        NODE_ENV: 'test',
        DATABASE_URL: infra.databaseUrl,
        TEMPORAL_ADDRESS: infra.temporalAddress,
        WEFT_TEMPORAL_UI_URL: process.env.WEFT_TEMPORAL_UI_URL ?? infra.temporalUiUrl ?? '',
        WEFT_TASK_QUEUE: `weft-test-${runId}`,
        // The reliability suite restarts PostgreSQL only when it is the project's own cluster.
        WEFT_LOCAL_POSTGRES: localPostgres ? '1' : '',
        WEFT_ENCRYPTION_KEY: process.env.WEFT_ENCRYPTION_KEY ?? randomBytes(32).toString('base64'),
      },
    });
    const forward = (signal: NodeJS.Signals) => mocha.kill(signal);
    process.once('SIGINT', forward);
    process.once('SIGTERM', forward);
    return await new Promise<number>((resolve) => mocha.once('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0))));
  } finally {
    await infra.stop();
    const tier = filesNamed ? 'the files named' : suite === 'main' ? 'integration tier' : `${suite} suite`;
    times.push(`${tier} ${seconds(tierStarted)} (with the stack's set-up)`);
    say(times.join('; '));
  }
}

main().then(
  (code) => process.exit(code),
  (error: Error) => {
    say(`tests could not start: ${error.message}`);
    process.exit(1);
  },
);
