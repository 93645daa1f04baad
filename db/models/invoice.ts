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
  /** The Stripe time of the state kept (the applied event's `created`, or when it was fetched), and that event. */
  stateAt!: Date | null;
  lastEventId!: string | null;
  updatedAt!: Date;
}
