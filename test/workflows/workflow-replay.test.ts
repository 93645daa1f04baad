import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import * as workflows from '../../workflows';
import { workflowBundlePath } from '../../worker/workflow-bundle';

// Every recorded history (test/data/workflow-histories: History protobufs, as fetchHistory() returns
// them, recorded by `npm run record-histories`) replays on today's workflow code: a change that is
// not guarded by patched() for workflows still running makes the replay non-deterministic and fails
// here. Histories named "before-patch-<patch id>" were recorded with the workflow code as it was
// before that patch, and must keep replaying.

const HISTORIES = path.join(__dirname, '..', 'data', 'workflow-histories');
const { EventType } = temporal.api.enums.v1;

interface Recorded {
  name: string;
  history: temporal.api.history.v1.History;
  workflowType: string;
}

function recordedHistories(): Recorded[] {
  return readdirSync(HISTORIES).filter((file) => file.endsWith('.binpb')).sort().map((file) => {
    const history = temporal.api.history.v1.History.decode(readFileSync(path.join(HISTORIES, file)));
    const workflowType = history.events[0]?.workflowExecutionStartedEventAttributes?.workflowType?.name ?? '';
    return { name: file.replace(/\.binpb$/, ''), history, workflowType };
  });
}

const CLOSED = new Set([
  EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED,
  EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED,
  EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED,
]);

const patchesOf = (history: temporal.api.history.v1.History): string[] => history.events
  .filter((event) => event.markerRecordedEventAttributes?.markerName === 'core_patch')
  .map((event) => JSON.parse(Buffer.from(event.markerRecordedEventAttributes!.details!['patch-data']!.payloads![0].data!).toString()).id as string);

describe('Workflow replay over recorded histories', function () {
  this.timeout(180_000);
  const recorded = recordedHistories();

  it('holds a completed history of every workflow the worker runs, and pipeline runs from before the local claim', () => {
    const missing = Object.keys(workflows).filter((type) => !recorded.some((r) => r.workflowType === type));
    assert.deepEqual(missing, [], 'workflows without a recorded history: record one with `npm run record-histories`');
    for (const { name, history } of recorded) assert.ok(CLOSED.has(history.events.at(-1)!.eventType!), `${name} is not a finished workflow`);
    const runs = recorded.filter((r) => r.workflowType === 'pipelineRunWorkflow');
    assert.ok(runs.some((r) => r.name.includes('before-patch-claim-run-turn-locally') && !patchesOf(r.history).includes('claim-run-turn-locally')), 'a pipeline run recorded before the claim-run-turn-locally patch');
    assert.ok(runs.some((r) => patchesOf(r.history).includes('claim-run-turn-locally')), 'a pipeline run recorded after it');
    assert.ok(recorded.some((r) => r.name.includes('before-patch-') || r.name.endsWith('before-patch')));
  });

  it('replays every recorded history, those recorded before a patch included, without non-determinism', async () => {
    const { codePath } = await workflowBundlePath();
    const failures: string[] = [];
    const histories = recorded.map(({ name, history }) => ({ workflowId: name, history }));
    // Each failure is a DeterminismViolationError (or the workflow task's failure) where the code diverges.
    for await (const result of Worker.runReplayHistories({ workflowBundle: { codePath } }, histories)) {
      if (result.error) failures.push(`${result.workflowId}: ${result.error instanceof Error ? result.error.message : String(result.error)}`);
    }
    assert.deepEqual(failures, []);
  });
});
