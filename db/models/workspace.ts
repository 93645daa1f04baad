import { BaseModel } from './base-model';

export class Workspace extends BaseModel {
  static override tableName = 'workspaces';
  id!: string;
  name!: string;
  plan!: string;
  /** Whether the plan's credit pauses paid work here: 'plan', 'none', or null for the installation's default (services/usage/plans.ts). */
  creditLimit!: 'plan' | 'none' | null;
  semanticConsumerMode!: 'off' | 'read' | 'write';
  stripeCustomerId!: string | null;
  stripeSubscriptionId!: string | null;
  createdAt!: Date;
}
