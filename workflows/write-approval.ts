import { allHandlersFinished, ApplicationFailure, condition, proxyActivities, setHandler } from '@temporalio/workflow';
import type { SourceWriteActivities } from '../activities/source-writes';
import { decideWriteUpdate, WriteApprovalInput, WriteDecision } from './names';

const { recordWriteDecision, applyApprovedWrite, expireWriteAction } = proxyActivities<SourceWriteActivities>({
  startToCloseTimeout: '2 minutes',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds', maximumAttempts: 20 },
});

/** Temporal timers need a positive duration; an action already past its time expires at once. */
const MIN_WAIT_MS = 1000;

/**
 * A governed write waiting for approval. Decisions arrive as updates (validated here, recorded by
 * an activity); enough approvals apply the write, one rejection or the timer ends it. The action's
 * state lives in PostgreSQL; this workflow only orders the steps. An update answers when the
 * action is settled, or at once while it still needs more approvals.
 */
export async function writeApprovalWorkflow(input: WriteApprovalInput): Promise<string> {
  const decided = new Set<string>();
  let verdict: 'approved' | 'rejected' | 'closed' | undefined;
  let completingApproval: WriteDecision | undefined;
  let outcome: string | undefined;

  setHandler(
    decideWriteUpdate,
    async (decision) => {
      decided.add(decision.memberId);
      const recorded = await recordWriteDecision({ writeActionId: input.writeActionId, decision });
      if (recorded.status !== 'pending_approval') verdict ??= recorded.status === 'rejected' ? 'rejected' : 'closed';
      else if (recorded.approvals >= input.approvalsRequired && !verdict) {
        verdict = 'approved';
        completingApproval = decision;
      }
      if (verdict) await condition(() => outcome !== undefined);
      return { status: outcome ?? 'pending_approval', approvals: recorded.approvals };
    },
    {
      // Refusals here never reach history as decisions; the service checks the same rules first with clearer errors.
      validator(decision) {
        if (decision.memberId === input.proposerMemberId) throw ApplicationFailure.nonRetryable('The member who proposed a write cannot approve or reject it.', 'proposer_cannot_decide');
        if (verdict || outcome) throw ApplicationFailure.nonRetryable('The action is no longer waiting for decisions.', 'action_not_pending');
        if (decided.has(decision.memberId)) throw ApplicationFailure.nonRetryable('This member has already decided on the action.', 'already_decided');
      },
    },
  );

  const waitMs = Math.max(MIN_WAIT_MS, Date.parse(input.expiresAt) - Date.now());
  const settled = await condition(() => verdict !== undefined, waitMs);
  if (!settled) outcome = (await expireWriteAction({ writeActionId: input.writeActionId })).status;
  else if (verdict === 'approved') outcome = (await applyApprovedWrite({ writeActionId: input.writeActionId, actor: { memberId: completingApproval!.memberId, apiKeyId: completingApproval!.apiKeyId } })).status;
  else outcome = verdict!;
  await condition(allHandlersFinished);
  return outcome;
}
