import { BaseModel } from './base-model';

export class ApiLimitSettings extends BaseModel {
  static override tableName = 'api_limit_settings';
  static override idColumn = 'workspaceId';
  workspaceId!: string;
  workspaceRequests!: number;
  apiKeyRequests!: number;
  updatedAt!: Date;
}
