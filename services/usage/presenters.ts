import Decimal from 'decimal.js';
import type { Invoice, MeteredOperation, OperationCharge, UsageAlertEvent } from '../../db/models';

// The views the usage and billing operations answer with. A presenter shapes rows and what its
// service read for them, and queries nothing. Money is a decimal string, never a float.

export const presentOperation = (o: MeteredOperation) => ({
  id: o.id,
  kind: o.kind,
  operationRef: o.operationRef,
  projectId: o.projectId,
  parentOperationId: o.parentOperationId,
  actorMemberId: o.actorMemberId,
  apiKeyId: o.apiKeyId,
  quantities: o.quantities,
  amount: new Decimal(o.amount).toFixed(),
  reportedAt: o.reportedAt?.toISOString() ?? null,
  createdAt: o.createdAt.toISOString(),
});

export const presentCharge = (c: OperationCharge) => ({ item: c.item, quantity: new Decimal(c.quantity).toFixed(), unitPrice: new Decimal(c.unitPrice).toFixed(), amount: new Decimal(c.amount).toFixed() });

export const presentAlertEvent = (e: UsageAlertEvent) => ({ period: e.period, threshold: e.threshold, amount: new Decimal(e.amount).toFixed(), createdAt: e.createdAt.toISOString() });

export const presentInvoice = (i: Invoice) => ({ id: i.id, status: i.status, amountDue: new Decimal(i.amountDue).toFixed(2), amountPaid: new Decimal(i.amountPaid).toFixed(2), currency: i.currency, hostedInvoiceUrl: i.hostedInvoiceUrl, periodStart: i.periodStart?.toISOString() ?? null, periodEnd: i.periodEnd?.toISOString() ?? null });
