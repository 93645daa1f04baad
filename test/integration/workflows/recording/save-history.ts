import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { temporal } from '@temporalio/proto';
import { env } from '../../../support/environment';
import { createPipeline, EventsApi, eventsSource, linearDocument, tableDestination, useEventsApi } from '../../../support/pipelines';

/**
 * Records one completed history of every workflow for the replay test (../workflow-replay.test.ts):
 * each workflow is driven through the real API or its real activities against the dev server, and
 * its fetchHistory() is kept as a History protobuf in test/data/workflow-histories/<name>.binpb.
 * Run by `npm run record-histories` (scripts/test.ts --suite histories), never by `npm test`;
 * `-- --grep <name>` records some only.
 *
 * WEFT_HISTORIES_DIR writes elsewhere and WEFT_HISTORY_SUFFIX is added to every name, for
 * histories recorded with the code before a patch ("before-patch-<patch id>"): in a worktree of
 * that code, copy this file and pipeline-runs.record.ts (renamed *.test.ts, which any scripts/test.ts
 * runs alone) to test/integration/workflows/recording/ and run
 * `WEFT_SKIP_STATIC_CHECKS=1 npx tsx scripts/test.ts test/integration/workflows/recording/pipeline-runs.test.ts`.
 * Both import only test/support modules older code has too.
 */

const OUT = process.env.WEFT_HISTORIES_DIR ?? path.join(__dirname, '..', '..', '..', 'data', 'workflow-histories');
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


/** Mocha hooks: a remote events API and a pipeline tenant for the block, and `pipeline(table)`: events → a managed table, upserted. */
export function usePipelines() {
  const fixture = useEventsApi(() => EventsApi.events(60));
  return Object.assign(fixture, {
    async pipeline(table: string): Promise<string> {
      const source = await eventsSource(fixture.t, fixture.api);
      const destination = await tableDestination(fixture.t, table, ['id']);
      return (await createPipeline(fixture.t, linearDocument(source, destination, { writeMode: 'upsert' }))).id;
    },
  });
}
