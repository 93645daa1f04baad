import { BaseModel } from './base-model';

export class WritePolicy extends BaseModel {
  static override tableName = 'write_policies';
  id!: string;
  workspaceId!: string;
  /** The data the policy governs, whichever endpoint names it. */
  dataIdentity!: string;
  /** The endpoint it was last set through; null once that endpoint is deleted (the policy stays with the data). */
  dataEndpointId!: string | null;
  /** Pipeline runs may write the data (as a key with data:write and the policy's grants). */
  allowPipelineRuns!: boolean;
  allowedOperations!: Array<'append' | 'upsert' | 'update' | 'delete'>;
  projectIds!: string[];
  approvalRequired!: boolean;
  approvalsRequired!: number;
  approvalTimeoutSeconds!: number;
  requiredReadPermissions!: string[];
  requiredWritePermissions!: string[];
  revision!: number;
  createdByMemberId!: string;
  updatedByMemberId!: string;
  createdAt!: Date;
  updatedAt!: Date;
}
