import assert from 'node:assert/strict';
import { temporal } from '@temporalio/proto';
import * as workflows from '../../../workflows';
import { workflowBundlePath } from '../../../worker/workflow-bundle';
import { recordedHistories, replayFailures } from '../../support/workflow-histories';

// Every recorded history (test/support/workflow-histories.ts) replays on today's workflow code: a
// change that is not guarded by patched() for workflows still running makes the replay
// non-deterministic and fails here. Histories named "before-patch-<patch id>" were recorded with the workflow code as it was
// before that patch, and must keep replaying.

const { EventType } = temporal.api.enums.v1;

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
    assert.deepEqual(await replayFailures(codePath, recorded), []);
  });
});
