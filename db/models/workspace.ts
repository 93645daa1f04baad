import { BaseModel } from './base-model';

export class Workspace extends BaseModel {
  static override tableName = 'workspaces';
  id!: string;
  name!: string;
  plan!: string;
  semanticConsumerMode!: 'off' | 'read' | 'write';
  stripeCustomerId!: string | null;
  stripeSubscriptionId!: string | null;
  createdAt!: Date;
}
