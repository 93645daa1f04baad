import { BaseModel } from './base-model';

export class Invoice extends BaseModel {
  static override tableName = 'invoices';
  id!: string;
  workspaceId!: string;
  status!: string;
  amountDue!: string;
  amountPaid!: string;
  currency!: string;
  hostedInvoiceUrl!: string | null;
  periodStart!: Date | null;
  periodEnd!: Date | null;
  updatedAt!: Date;
}
