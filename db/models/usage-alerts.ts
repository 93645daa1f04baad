import { BaseModel } from './base-model';

export class UsageAlertSettings extends BaseModel {
  static override tableName = 'usage_alert_settings';
  static override idColumn = 'workspaceId';
  workspaceId!: string;
  monthlyBudget!: string | null;
  thresholds!: number[];
  updatedAt!: Date;
}

export class UsageAlertEvent extends BaseModel {
  static override tableName = 'usage_alert_events';
  id!: string;
  workspaceId!: string;
  period!: string;
  threshold!: number;
  amount!: string;
  createdAt!: Date;
}
