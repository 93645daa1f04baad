import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { temporal } from '@temporalio/proto';
import { env } from '../../support/environment';

/**
 * Records one completed history of every workflow for the replay test (../workflow-replay.test.ts):
 * each workflow is driven through the real API or its real activities against the dev server, and
 * its fetchHistory() is kept as a History protobuf in test/data/workflow-histories/<name>.binpb.
 * Run by `npm run record-histories` (scripts/record-workflow-histories.ts), never by `npm test`.
 *
 * WEFT_HISTORY_SUFFIX is added to every name (e.g. "before-patch-claim-run-turn-locally" when run
 * with the code before a patch, see README); WEFT_HISTORY_ONLY keeps the recordings whose names
 * start with it (the pipeline runs alone need only test/support/pipelines.ts, so they can be
 * recorded with older code too: copy save-history.ts and pipeline-runs.record.ts alone).
 */

const OUT = process.env.WEFT_HISTORIES_DIR ?? path.join(__dirname, '..', '..', 'data', 'workflow-histories');
const SUFFIX = process.env.WEFT_HISTORY_SUFFIX ? `-${process.env.WEFT_HISTORY_SUFFIX}` : '';
const ONLY = process.env.WEFT_HISTORY_ONLY ?? '';

export async function save(name: string, workflowId: string): Promise<void> {
  const handle = env().temporal.workflow.getHandle(workflowId);
  // Only finished workflows: a history cut mid-run replays, but proves less.
  await handle.result().catch(() => undefined);
  const history = await handle.fetchHistory();
  mkdirSync(OUT, { recursive: true });
  const file = path.join(OUT, `${name}${SUFFIX}.binpb`);
  writeFileSync(file, temporal.api.history.v1.History.encode(history).finish());
  console.log(`  recorded ${path.relative(process.cwd(), file)} (${history.events?.length ?? 0} events)`);
}

export const recording = (name: string, fn: () => Promise<void>) => (name.startsWith(ONLY) ? it(name, fn) : it.skip(name, fn));

