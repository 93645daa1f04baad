import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';

// The recorded workflow histories (test/data/workflow-histories: History protobufs, as
// fetchHistory() returns them, recorded by `npm run record-histories`).

const HISTORIES = path.join(__dirname, '..', 'data', 'workflow-histories');

export interface RecordedHistory {
  name: string;
  history: temporal.api.history.v1.History;
  workflowType: string;
}

export function recordedHistories(): RecordedHistory[] {
  return readdirSync(HISTORIES).filter((file) => file.endsWith('.binpb')).sort().map((file) => {
    const history = temporal.api.history.v1.History.decode(readFileSync(path.join(HISTORIES, file)));
    const workflowType = history.events[0]?.workflowExecutionStartedEventAttributes?.workflowType?.name ?? '';
    return { name: file.replace(/\.binpb$/, ''), history, workflowType };
  });
}

/** Replays the histories on the workflow bundle at `codePath`: one line per history that does not replay (a DeterminismViolationError, or the workflow task's failure, where the code diverges). */
export async function replayFailures(codePath: string, recorded: RecordedHistory[]): Promise<string[]> {
  const failures: string[] = [];
  const histories = recorded.map(({ name, history }) => ({ workflowId: name, history }));
  for await (const result of Worker.runReplayHistories({ workflowBundle: { codePath } }, histories)) {
    if (result.error) failures.push(`${result.workflowId}: ${result.error instanceof Error ? result.error.message : String(result.error)}`);
  }
  return failures;
}
