/**
 * `npm test`: the same set-up as `npm start` (local PostgreSQL and Temporal dev server unless
 * DATABASE_URL / TEMPORAL_ADDRESS are set), a fresh throwaway database, then mocha. With
 * DATABASE_URL set the throwaway database is created on that server and dropped afterwards; the
 * database it names is never migrated or written.
 * Extra arguments go to mocha: `npm test -- --grep "API keys"`. `--suite reliability` runs
 * test/reliability/*.reliability.ts instead (npm run test:reliability), `--suite histories`
 * test/workflows/recording/*.record.ts (npm run record-histories).
 */
import { spawn, spawnSync } from 'node:child_process';
import { ensureStripeMock } from './infra/stripe-mock';
import { ensureTemporalTestServer } from './infra/temporal-test-server';
import { randomBytes } from 'node:crypto';
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

async function main(): Promise<number> {
  if (!staticChecks()) return 1;
  // Built once per machine (like the Temporal CLI), before mocha, so a Go failure is not a test failure.
  ensureStripeMock();
  // The time-skipping server of the workflow unit tests (test/unit/workflows), fetched with Maven once per machine.
  ensureTemporalTestServer();
  // The console tests drive the bundle the API serves.
  ensureConsoleBuilt();
  const localPostgres = !process.env.DATABASE_URL;
  // Each run has its own database and task queue, so concurrent runs on one machine never meet.
  const runId = `${process.pid}`;
  const infra = await prepareInfrastructure({ database: `weft_test_${runId}`, recreateDatabase: true, dropDatabaseOnStop: true, temporal: true });
  try {
    const args = process.argv.slice(2);
    // `--suite reliability` runs the fault, load, tenant and fuzzing suite (npm run test:reliability);
    // `--suite histories` records workflow histories for the replay test (npm run record-histories).
    const suiteFlag = args.indexOf('--suite');
    const suite = suiteFlag >= 0 ? args.splice(suiteFlag, 2)[1] : 'unit';
    const pattern = suite === 'reliability' ? 'test/reliability/**/*.reliability.ts' : suite === 'histories' ? 'test/workflows/recording/*.record.ts' : 'test/**/*.test.ts';
    // Named test files replace the default set (mocha would otherwise add them to it).
    const specs = args.some((arg) => /\.(test|reliability|record)\.ts$/.test(arg)) ? [] : [pattern];
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
  }
}

main().then(
  (code) => process.exit(code),
  (error: Error) => {
    say(`tests could not start: ${error.message}`);
    process.exit(1);
  },
);
