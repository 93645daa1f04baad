import { BaseModel } from './base-model';

export class ApiKey extends BaseModel {
  static override tableName = 'api_keys';
  id!: string;
  workspaceId!: string;
  createdByMemberId!: string;
  name!: string;
  prefix!: string;
  secretHash!: string;
  scopes!: string[];
  readPermissions!: string[];
  writePermissions!: string[];
  projectIds!: string[];
  workspaceResources!: boolean;
  expiresAt!: Date | null;
  revokedAt!: Date | null;
  lastUsedAt!: Date | null;
  createdAt!: Date;
}
