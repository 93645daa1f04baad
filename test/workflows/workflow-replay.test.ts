import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { workflowBundlePath } from '../../worker/workflow-bundle';

// Every recorded history (test/data/workflow-histories: History protobufs, as fetchHistory() returns them)
// replays on today's workflow code: a change that is not guarded by patched() for workflows still
// running makes the replay non-deterministic and fails here. Histories named "before-patch" were
// recorded with the workflow code as it was before a patch, and must keep replaying.

const HISTORIES = path.join(__dirname, '..', 'data', 'workflow-histories');

describe('Workflow replay over recorded histories', function () {
  this.timeout(120_000);

  it('replays every recorded history, those recorded before a patch included, without non-determinism', async () => {
    const files = readdirSync(HISTORIES).filter((file) => file.endsWith('.binpb'));
    assert.ok(files.length >= 3 && files.some((file) => file.includes('before-patch')), `recorded histories went missing: ${files.join(', ')}`);
    const { codePath } = await workflowBundlePath();
    for (const file of files) {
      const history = temporal.api.history.v1.History.decode(readFileSync(path.join(HISTORIES, file)));
      // Throws DeterminismViolationError (or the workflow task's failure) when the code diverges.
      await Worker.runReplayHistory({ workflowBundle: { codePath } }, history, file.replace(/\.binpb$/, ''));
    }
  });
});
