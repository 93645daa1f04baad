import { BaseModel } from './base-model';

export class WritePolicy extends BaseModel {
  static override tableName = 'write_policies';
  id!: string;
  workspaceId!: string;
  dataEndpointId!: string;
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
