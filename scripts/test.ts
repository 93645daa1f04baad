/**
 * `npm test`: the same set-up as `npm start` (local PostgreSQL and Temporal dev server unless
 * DATABASE_URL / TEMPORAL_ADDRESS are set), a fresh throwaway database, then mocha. With
 * DATABASE_URL set the throwaway database is created on that server and dropped afterwards; the
 * database it names is never migrated or written.
 * Extra arguments go to mocha: `npm test -- --grep "API keys"`. `--suite reliability` runs
 * test/reliability/*.reliability.ts instead (npm run test:reliability), `--suite histories`
 * test/integration/workflows/recording/*.record.ts (npm run record-histories).
 */
import { spawn } from 'node:child_process';
import { ensureStripeMock } from './infra/stripe-mock';
import { ensureTemporalTestServer } from './infra/temporal-test-server';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { projectRoot } from '../core/paths';
import { prepareInfrastructure } from './infra/environment';
import { say } from './infra/process';
import { ensureServiceBuilt } from './build';
import { ensureConsoleBuilt } from './console-build';
import { testFiles } from './test-files';

/** Node running one of our scripts or a tool of node_modules: its exit code, and its output when `captured` (otherwise it is the terminal's). */
function runNode(args: string[], captured: boolean): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, args, { cwd: projectRoot, stdio: captured ? ['ignore', 'pipe', 'pipe'] : 'inherit' });
    let output = '';
    child.stdout?.on('data', (chunk) => (output += chunk));
    child.stderr?.on('data', (chunk) => (output += chunk));
    child.once('error', (error) => resolve({ code: 1, output: `${output}${error.message}\n` }));
    child.once('close', (code, signal) => resolve({ code: code ?? (signal ? 1 : 0), output }));
  });
}

/**
 * Type errors and workflow-determinism lint failures fail the run like a failing test. They run
 * beside the unit tier, so each says what it found once it ends rather than amid the tier's output.
 */
async function staticChecks(): Promise<boolean> {
  for (const [name, bin, args] of [
    ['typecheck', 'typescript/bin/tsc', ['--noEmit', '-p', '.']],
    ['typecheck console', 'typescript/bin/tsc', ['--noEmit', '-p', 'console/web']],
    ['lint', 'eslint/bin/eslint.js', ['.']],
  ] as const) {
    const { code, output } = await runNode([path.join(projectRoot, 'node_modules', bin), ...args], true);
    process.stdout.write(output);
    say(code === 0 ? `${name}: passed` : `${name} failed`);
    if (code !== 0) return false;
  }
  return true;
}

/** The unit tier in a process of its own, as `npm run test:unit` runs it: its exit code. */
async function unitTier(args: string[]): Promise<number> {
  return (await runNode(['--import', 'tsx', path.join(projectRoot, 'scripts', 'test-unit.ts'), ...args], false)).code;
}

const seconds = (since: number) => `${Math.round((Date.now() - since) / 1000)} s`;

/** Test files outside the tiers' folders (and test/'s data and fixtures), which no tier would run. */
const untiered = () => testFiles(path.join(projectRoot, 'test'), ['unit', 'integration', 'reliability', 'data', 'fixtures']).map((file) => path.relative(projectRoot, file));

async function main(): Promise<number> {
  const stray = untiered();
  if (stray.length) {
    say(`test files outside test/unit and test/integration, which no tier runs: ${stray.join(', ')}`);
    return 1;
  }
  const times: string[] = [];
  const checksStarted = Date.now();
  const checking = process.env.WEFT_SKIP_STATIC_CHECKS === '1' ? Promise.resolve(true) : staticChecks().then((passed) => {
    times.push(`static checks ${seconds(checksStarted)}`);
    return passed;
  });
  const args = process.argv.slice(2);
  // `--suite reliability` runs the fault, load, tenant and fuzzing suite (npm run test:reliability);
  // `--suite histories` records workflow histories for the replay test (npm run record-histories).
  const suiteFlag = args.indexOf('--suite');
  const suite = suiteFlag >= 0 ? args.splice(suiteFlag, 2)[1] : 'main';
  // Named test files replace the default set (mocha would otherwise add them to it), and run with the stack.
  const filesNamed = args.some((arg) => /\.(test|reliability|record)\.ts$/.test(arg));
  if (suite === 'main' && !filesNamed) {
    // The unit tier runs beside the static checks: each keeps about one of the machine's two cores busy.
    const unitStarted = Date.now();
    const [checked, code] = await Promise.all([checking, unitTier(args).then((exitCode) => {
      times.push(`unit tier ${seconds(unitStarted)}`);
      return exitCode;
    })]);
    if (!checked || code !== 0) {
      say(times.join('; '));
      return code || 1;
    }
  } else if (!(await checking)) return 1;
  // Built once per machine (like the Temporal CLI), before mocha, so a Go failure is not a test failure.
  ensureStripeMock();
  // The time-skipping server of the workflow unit tests (test/unit/workflows), fetched with Maven once per machine.
  ensureTemporalTestServer();
  // The console tests drive the bundle the API serves; the API and worker processes tests start run the build.
  ensureConsoleBuilt();
  ensureServiceBuilt();
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
