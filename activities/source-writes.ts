import { expireWriteAction, recordWriteDecision } from '../services/endpoints/write-approvals';
import { applyApprovedWrite } from '../services/endpoints/write-apply';
import type { WriteDecision } from '../workflows/names';
import type { Actor } from '../services/tenancy/actors';
import type { ServiceDependencies } from '../services/operations/context';
import { asActivity } from './as-activity';

export function createSourceWriteActivities(deps: ServiceDependencies) {
  return {
    recordWriteDecision: ({ writeActionId, decision }: { writeActionId: string; decision: WriteDecision }) => asActivity(() => recordWriteDecision(deps, writeActionId, decision)),
    applyApprovedWrite: ({ writeActionId, actor }: { writeActionId: string; actor: Actor }) => asActivity(() => applyApprovedWrite(deps, writeActionId, actor)),
    expireWriteAction: ({ writeActionId }: { writeActionId: string }) => asActivity(() => expireWriteAction(deps.db, writeActionId)),
  };
}

export type SourceWriteActivities = ReturnType<typeof createSourceWriteActivities>;
