/**
 * `npm run record-histories`: records a completed history of every workflow into
 * test/data/workflow-histories/ (test/workflows/recording/save-history.ts says how), for the
 * replay test. The same set-up as `npm test` (own database and task queue, the local PostgreSQL
 * and Temporal dev server unless DATABASE_URL / TEMPORAL_ADDRESS are set), then mocha on the
 * recorder alone. Extra arguments go to mocha (`-- --grep pipeline-run`).
 *
 * Histories recorded before a patch are made by running this with the older code: check the
 * commit before the patch out in a worktree, copy this script and the recorder there, and run it
 * with WEFT_HISTORIES_DIR pointing here and WEFT_HISTORY_SUFFIX=before-patch-<patch id>.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { projectRoot } from '../core/paths';
import { prepareInfrastructure } from './infra/environment';
import { say } from './infra/process';

async function main(): Promise<number> {
  const runId = `${process.pid}`;
  const infra = await prepareInfrastructure({ database: `weft_record_${runId}`, recreateDatabase: true, dropDatabaseOnStop: true, temporal: true });
  try {
    const recorders = path.join('test', 'workflows', 'recording', '*.record.ts');
    const mocha = spawn(process.execPath, [path.join(projectRoot, 'node_modules', 'mocha', 'bin', 'mocha.js'), recorders, '--reporter', 'spec', ...process.argv.slice(2)], {
      cwd: projectRoot,
      stdio: 'inherit',
      env: {
        ...process.env,
        NODE_ENV: 'test',
        DATABASE_URL: infra.databaseUrl,
        TEMPORAL_ADDRESS: infra.temporalAddress,
        WEFT_TASK_QUEUE: `weft-record-${runId}`,
        WEFT_ENCRYPTION_KEY: process.env.WEFT_ENCRYPTION_KEY ?? randomBytes(32).toString('base64'),
      },
    });
    return await new Promise<number>((resolve) => mocha.once('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0))));
  } finally {
    await infra.stop();
  }
}

main().then(
  (code) => process.exit(code),
  (error: Error) => {
    say(`recording could not start: ${error.message}`);
    process.exit(1);
  },
);
