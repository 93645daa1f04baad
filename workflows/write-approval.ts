import { allHandlersFinished, ApplicationFailure, condition, patched, proxyActivities, setHandler } from '@temporalio/workflow';
import type { SourceWriteActivities } from '../activities/source-writes';
import { decideWriteUpdate, WriteApprovalInput, WriteDecision } from './names';

const { recordWriteDecision, applyApprovedWrite, expireWriteAction } = proxyActivities<SourceWriteActivities>({
  startToCloseTimeout: '2 minutes',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds', maximumAttempts: 20 },
});

/** Temporal timers need a positive duration; an action already past its time expires at once. */
const MIN_WAIT_MS = 1000;

/**
 * The apply activity counts the approvals again and answers pending_approval when some lapsed since
 * (a key revoked or expired, a member removed): the action then waits for decisions again. Before
 * this patch the workflow ended with whatever the apply answered.
 */
export const WAIT_AGAIN_WHEN_APPROVALS_LAPSE = 'wait-again-when-approvals-lapse';

/**
 * A governed write waiting for approval. Decisions arrive as updates (validated here, recorded by
 * an activity); enough approvals that still count apply the write, one rejection or the timer ends
 * it. The action's state lives in PostgreSQL; this workflow only orders the steps. An update
 * answers when the action is settled, or at once while it still needs more approvals.
 */
export async function writeApprovalWorkflow(input: WriteApprovalInput): Promise<string> {
  const decided = new Set<string>();
  let verdict: 'approved' | 'rejected' | 'closed' | undefined;
  let completingApproval: WriteDecision | undefined;
  let outcome: string | undefined;
  /** Applies that found too few approvals still counting: each answers the decisions that waited on it. */
  let recounts = 0;
  /** Decisions recorded while an apply was under way, which that apply may not have seen. */
  let approvedDuringApply: WriteDecision | undefined;
  let closedDuringApply: 'rejected' | 'closed' | undefined;

  setHandler(
    decideWriteUpdate,
    async (decision) => {
      decided.add(decision.memberId);
      const recorded = await recordWriteDecision({ writeActionId: input.writeActionId, decision });
      if (recorded.status !== 'pending_approval') {
        const closing = recorded.status === 'rejected' ? 'rejected' : 'closed';
        if (verdict === 'approved') closedDuringApply ??= closing;
        verdict ??= closing;
      } else if (recorded.approvals >= input.approvalsRequired && !verdict) {
        verdict = 'approved';
        completingApproval = decision;
      } else if (recorded.approvals >= input.approvalsRequired && verdict === 'approved') approvedDuringApply = decision;
      if (verdict) {
        const seen = recounts;
        await condition(() => outcome !== undefined || recounts > seen);
      }
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

  for (;;) {
    if (verdict === undefined) {
      const waitMs = Math.max(MIN_WAIT_MS, Date.parse(input.expiresAt) - Date.now());
      const settled = await condition(() => verdict !== undefined, waitMs);
      if (!settled) {
        outcome = (await expireWriteAction({ writeActionId: input.writeActionId })).status;
        break;
      }
    }
    if (verdict !== 'approved') {
      outcome = verdict;
      break;
    }
    approvedDuringApply = undefined;
    const applied = (await applyApprovedWrite({ writeActionId: input.writeActionId, actor: { memberId: completingApproval!.memberId, apiKeyId: completingApproval!.apiKeyId } })).status;
    if (applied === 'pending_approval' && patched(WAIT_AGAIN_WHEN_APPROVALS_LAPSE)) {
      // The count fell short. A decision recorded after the apply's count settles it (a rejection
      // ends the action) or may complete it (apply again); otherwise decisions are taken again
      // until the action expires.
      if (closedDuringApply) verdict = closedDuringApply;
      else if (approvedDuringApply) completingApproval = approvedDuringApply;
      else {
        verdict = undefined;
        completingApproval = undefined;
        recounts += 1;
      }
      continue;
    }
    outcome = applied;
    break;
  }
  await condition(allHandlersFinished);
  return outcome!;
}
