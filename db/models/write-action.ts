import { BaseModel } from './base-model';
import type { StoredError } from './stored-error';

export interface SnapshotRef {
  id: string;
  version: string;
}

export type WriteActionStatus = 'pending_approval' | 'applied' | 'rejected' | 'expired' | 'failed';

/** The operations whose governed writes can wait for approval. */
export type ProposingOperation = 'submitSourceWrite' | 'sparqlUpdate';

export class WriteAction extends BaseModel {
  static override tableName = 'write_actions';
  static override jsonAttributes = ['input', 'snapshotBefore', 'snapshotAfter', 'error', 'changePreview'];
  id!: string;
  workspaceId!: string;
  dataEndpointId!: string;
  projectId!: string;
  actionId!: string;
  idempotencyKey!: string;
  requestDigest!: string;
  operation!: 'append' | 'upsert' | 'update' | 'delete';
  input!: Record<string, unknown>;
  status!: WriteActionStatus;
  approvalsRequired!: number;
  expiresAt!: Date | null;
  proposedByMemberId!: string;
  /** null for a member signed in to the console, who proposed it without a key. */
  proposedByApiKeyId!: string | null;
  /** The operation that proposed it (a governed write, or a SPARQL update): its access is checked again at apply. */
  proposedByOperation!: ProposingOperation;
  snapshotBefore!: SnapshotRef;
  changePreview!: Record<string, unknown> | null;
  snapshotAfter!: SnapshotRef | null;
  affected!: number | null;
  error!: StoredError | null;
  workflowId!: string | null;
  createdAt!: Date;
  updatedAt!: Date;
  endedAt!: Date | null;
}

export class WriteActionDecision extends BaseModel {
  static override tableName = 'write_action_decisions';
  static override idColumn = ['writeActionId', 'memberId'];
  writeActionId!: string;
  memberId!: string;
  /** null for a member deciding in the console. */
  apiKeyId!: string | null;
  decision!: 'approve' | 'reject';
  comment!: string | null;
  createdAt!: Date;
}

export type WriteActionEventKind = 'proposed' | 'approved' | 'rejected' | 'expired' | 'applied' | 'failed';

export class WriteActionEvent extends BaseModel {
  static override tableName = 'write_action_events';
  static override jsonAttributes = ['snapshotBefore', 'snapshotAfter', 'detail'];
  id!: string;
  workspaceId!: string;
  dataEndpointId!: string;
  writeActionId!: string;
  actionId!: string;
  kind!: WriteActionEventKind;
  actorMemberId!: string | null;
  actorApiKeyId!: string | null;
  idempotencyKey!: string;
  snapshotBefore!: SnapshotRef | null;
  snapshotAfter!: SnapshotRef | null;
  detail!: Record<string, unknown> | null;
  createdAt!: Date;
}
