import assert from 'node:assert/strict';
import { ApplicationFailure, WorkflowUpdateFailedError } from '@temporalio/client';
import { writeApprovalWorkflow } from '../../../workflows';
import { decideWriteUpdate, WriteApprovalInput, writeApprovalWorkflowId, WriteDecision } from '../../../workflows/names';
import { assertSkipped, mockActivities, startWorkflowTestEnvironment, WorkflowTestEnvironment } from '../../support/workflow-test-environment';

// The governed write's approval workflow, on Temporal's time-skipping test server with mocked
// activities: decisions arrive as updates, and the expiry timer (days away) fires in skipped time.

const DAY_MS = 24 * 3600 * 1000;
const approval = (memberId: string): WriteDecision => ({ memberId, apiKeyId: `key-of-${memberId}`, decision: 'approve', comment: null });

describe('Write approval workflow (time-skipping test server, mocked activities)', function () {
  this.timeout(180_000);
  let testing: WorkflowTestEnvironment;
  before(async () => {
    testing = await startWorkflowTestEnvironment(['recordWriteDecision', 'applyApprovedWrite', 'expireWriteAction']);
  });
  after(async () => {
    await testing?.teardown();
  });

  /** An action proposed by mem-proposer that needs `approvalsRequired` approvals and expires `expiresInMs` from the server's now. */
  const inputOf = async (writeActionId: string, approvalsRequired: number, expiresInMs: number): Promise<WriteApprovalInput> => ({
    writeActionId,
    proposerMemberId: 'mem-proposer',
    approvalsRequired,
    expiresAt: new Date((await testing.env.currentTimeMs()) + expiresInMs).toISOString(),
  });
  const start = async (input: WriteApprovalInput, taskQueue: string) => testing.env.client.workflow.start(writeApprovalWorkflow, { taskQueue, workflowId: writeApprovalWorkflowId(input.writeActionId), args: [input] });

  it('with no decision, expires the action when its time comes, three days on in skipped time', async () => {
    const input = await inputOf('wa-expiring', 1, 3 * DAY_MS);
    const { activities, calls } = mockActivities({ expireWriteAction: async () => ({ status: 'expired' }) });
    const clocked = await testing.clocked(activities, async (taskQueue) => (await start(input, taskQueue)).result());
    assert.equal(clocked.result, 'expired');
    assert.deepEqual(calls, [{ name: 'expireWriteAction', input: { writeActionId: 'wa-expiring' } }]);
    assertSkipped(clocked, 3 * DAY_MS, 'the expiry timer');
  });

  it('an action already past its time expires after the shortest timer', async () => {
    const input = await inputOf('wa-late', 1, -DAY_MS);
    const { activities, calls } = mockActivities({ expireWriteAction: async () => ({ status: 'expired' }) });
    assert.equal(await testing.withActivities(activities, async (taskQueue) => (await start(input, taskQueue)).result()), 'expired');
    assert.deepEqual(calls.map((call) => call.name), ['expireWriteAction']);
  });

  it('the completing approval records the decision, applies the write as its member and key, and the update answers the outcome', async () => {
    const input = await inputOf('wa-approved', 1, DAY_MS);
    const { activities, calls } = mockActivities({
      recordWriteDecision: async () => ({ status: 'pending_approval', approvals: 1 }),
      applyApprovedWrite: async () => ({ status: 'applied' }),
      expireWriteAction: async () => ({ status: 'expired' }),
    });
    const [answer, outcome] = await testing.withActivities(activities, async (taskQueue) => {
      const action = await start(input, taskQueue);
      const answered = await action.executeUpdate(decideWriteUpdate, { args: [approval('mem-approver')] });
      return [answered, await action.result()];
    });
    assert.deepEqual(answer, { status: 'applied', approvals: 1 });
    assert.equal(outcome, 'applied');
    assert.deepEqual(calls, [
      { name: 'recordWriteDecision', input: { writeActionId: 'wa-approved', decision: approval('mem-approver') } },
      { name: 'applyApprovedWrite', input: { writeActionId: 'wa-approved', actor: { memberId: 'mem-approver', apiKeyId: 'key-of-mem-approver' } } },
    ]);
  });

  it('short of the approvals required, an approval answers at once and the action keeps waiting', async () => {
    const input = await inputOf('wa-two-needed', 2, DAY_MS);
    let approvals = 0;
    const { activities, calls } = mockActivities({
      recordWriteDecision: async () => ({ status: 'pending_approval', approvals: ++approvals }),
      applyApprovedWrite: async () => ({ status: 'applied' }),
      expireWriteAction: async () => ({ status: 'expired' }),
    });
    const answers = await testing.withActivities(activities, async (taskQueue) => {
      const action = await start(input, taskQueue);
      const first = await action.executeUpdate(decideWriteUpdate, { args: [approval('mem-a')] });
      const second = await action.executeUpdate(decideWriteUpdate, { args: [approval('mem-b')] });
      return [first, second, await action.result()];
    });
    assert.deepEqual(answers, [{ status: 'pending_approval', approvals: 1 }, { status: 'applied', approvals: 2 }, 'applied']);
    assert.deepEqual(calls.map((call) => call.name), ['recordWriteDecision', 'recordWriteDecision', 'applyApprovedWrite']);
    assert.deepEqual((calls[2].input as { actor: unknown }).actor, { memberId: 'mem-b', apiKeyId: 'key-of-mem-b' }, 'applied as the completing approver');
  });

  it('a rejection ends the action rejected, with nothing applied', async () => {
    const input = await inputOf('wa-rejected', 1, DAY_MS);
    const { activities, calls } = mockActivities({
      recordWriteDecision: async () => ({ status: 'rejected', approvals: 0 }),
      applyApprovedWrite: async () => ({ status: 'applied' }),
      expireWriteAction: async () => ({ status: 'expired' }),
    });
    const [answer, outcome] = await testing.withActivities(activities, async (taskQueue) => {
      const action = await start(input, taskQueue);
      return [await action.executeUpdate(decideWriteUpdate, { args: [{ ...approval('mem-approver'), decision: 'reject', comment: 'wrong table' }] }), await action.result()];
    });
    assert.deepEqual(answer, { status: 'rejected', approvals: 0 });
    assert.equal(outcome, 'rejected');
    assert.deepEqual(calls.map((call) => call.name), ['recordWriteDecision']);
  });

  it('refuses the proposer\'s own decision and a second decision by one member, before any activity', async () => {
    const input = await inputOf('wa-refusals', 2, DAY_MS);
    const { activities, calls } = mockActivities({
      recordWriteDecision: async () => ({ status: 'pending_approval', approvals: 1 }),
      expireWriteAction: async () => ({ status: 'expired' }),
    });
    const refusals = await testing.withActivities(activities, async (taskQueue) => {
      const action = await start(input, taskQueue);
      const refusedType = (error: unknown) => (error instanceof WorkflowUpdateFailedError && error.cause instanceof ApplicationFailure ? error.cause.type : String(error));
      const ownDecision = await action.executeUpdate(decideWriteUpdate, { args: [approval('mem-proposer')] }).catch(refusedType);
      await action.executeUpdate(decideWriteUpdate, { args: [approval('mem-a')] });
      const again = await action.executeUpdate(decideWriteUpdate, { args: [approval('mem-a')] }).catch(refusedType);
      assert.equal(await action.result(), 'expired');
      return [ownDecision, again];
    });
    assert.deepEqual(refusals, ['proposer_cannot_decide', 'already_decided']);
    assert.deepEqual(calls.map((call) => call.name), ['recordWriteDecision', 'expireWriteAction']);
  });

  it('when approvals lapsed before the apply, takes decisions again until the action expires', async () => {
    const input = await inputOf('wa-lapsed', 1, 2 * DAY_MS);
    const { activities, calls } = mockActivities({
      recordWriteDecision: async () => ({ status: 'pending_approval', approvals: 1 }),
      // The apply's recount finds the approving key revoked since.
      applyApprovedWrite: async () => ({ status: 'pending_approval' }),
      expireWriteAction: async () => ({ status: 'expired' }),
    });
    const clocked = await testing.clocked(activities, async (taskQueue) => {
      const action = await start(input, taskQueue);
      const answered = await action.executeUpdate(decideWriteUpdate, { args: [approval('mem-approver')] });
      return [answered, await action.result()];
    });
    assert.deepEqual(clocked.result, [{ status: 'pending_approval', approvals: 1 }, 'expired']);
    assert.deepEqual(calls.map((call) => call.name), ['recordWriteDecision', 'applyApprovedWrite', 'expireWriteAction']);
    assertSkipped(clocked, 2 * DAY_MS - 60_000, 'the expiry timer after the recount');
  });
});
