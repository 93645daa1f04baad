import { FormEvent, useState } from 'react';
import { call, typedValue } from './api';
import { FailureAlert } from './FailureAlert';
import { Pager, type Pagination } from './Pager';
import { RowsTable } from './RowsTable';
import { useAnswer } from './useAnswer';

// The Usage page's billing sections, each from the operation its /api/v1 route runs (SPEC 4.2):
// the billing month and plan (getBillingMonth), alert settings (getUsageAlerts, putUsageAlerts),
// metered operations and their charges (listMeteredOperations, getOperationCharges), checkout and
// portal (startBillingCheckout, openBillingPortal) and invoices (listInvoices). Without Stripe the
// billing operations answer 503 billing_unavailable, which the section shows as it is.

const OPERATIONS_PAGE_SIZE = 25;
/** Where Stripe sends the member back to. */
const RETURN_PATH = '/console/usage';

/** The billing month as getBillingMonth answers it (the Overview shows it too). */
export interface BillingMonth { period: string; plan: string; creditLimit: string; currency: string; includedCredit: string; used: string; remainingCredit: string; overage: string; paidWorkPaused: boolean }
export interface Alerts { monthlyBudget: string | null; thresholds: number[]; events: Array<{ period: string; threshold: number; amount: string; createdAt: string }> }
interface MeteredOperation { id: string; kind: string; operationRef: string; projectId: string | null; actorMemberId: string | null; apiKeyId: string | null; quantities: Record<string, number>; amount: string; createdAt: string }
interface Charge { item: string; quantity: string; unitPrice: string; amount: string }
interface Invoice { id: string; status: string; amountDue: string; amountPaid: string; currency: string; hostedInvoiceUrl: string | null; periodStart: string | null; periodEnd: string | null }

const day = (value: string | null) => (value ? value.slice(0, 10) : '—');

/** The plan and this month's credit, the alerts' budget, and the Checkout and portal buttons. */
export function PlanSection({ alerts }: { alerts: Alerts | undefined }) {
  const { answer, failure } = useAnswer<{ billing: BillingMonth }>('/usage/billing');
  const [sessionFailure, setSessionFailure] = useState<unknown>(undefined);
  const [busy, setBusy] = useState(false);
  const billing = answer?.billing;

  // A Stripe session's URL: the browser goes there, and Stripe sends it back to this page.
  async function open(path: '/billing/checkout' | '/billing/portal') {
    setBusy(true);
    setSessionFailure(undefined);
    try {
      const { url } = await call<{ url: string }>('POST', path, { returnPath: RETURN_PATH });
      window.location.assign(url);
    } catch (refusal) {
      setSessionFailure(refusal);
      setBusy(false);
    }
  }

  return (
    <div role="region" aria-label="Plan" className="card">
      <h2>Plan</h2>
      <FailureAlert failure={failure} fallback="Loading the billing month failed." />
      {billing && (
        <dl className="facts">
          <dt>Plan</dt><dd aria-label="Plan name">{billing.plan}</dd>
          <dt>Month</dt><dd>{billing.period}</dd>
          <dt>Included credit</dt><dd aria-label="Included credit">{billing.includedCredit} {billing.currency}</dd>
          <dt>Used</dt><dd aria-label="Used this month">{billing.used} {billing.currency}</dd>
          <dt>Remaining</dt><dd>{billing.remainingCredit} {billing.currency}</dd>
          <dt>Overage</dt><dd>{billing.overage} {billing.currency}</dd>
          <dt>Credit limit</dt><dd>{billing.creditLimit === 'plan' ? 'the plan’s credit' : 'none: work is metered, never paused'}</dd>
          <dt>Paid work</dt><dd>{billing.paidWorkPaused ? 'paused until the credit renews or the plan changes' : 'running'}</dd>
          <dt>Monthly budget</dt><dd aria-label="Monthly budget">{alerts ? (alerts.monthlyBudget === null ? 'none' : `${alerts.monthlyBudget} ${billing.currency}`) : '…'}</dd>
        </dl>
      )}
      <div className="row">
        <button type="button" disabled={busy} onClick={() => void open('/billing/checkout')}>Checkout</button>
        <button type="button" disabled={busy} onClick={() => void open('/billing/portal')}>Billing portal</button>
      </div>
      <FailureAlert failure={sessionFailure} fallback="Billing could not be opened." />
    </div>
  );
}

/** Thresholds as typed, for putUsageAlerts to judge. */
const thresholdsOf = (text: string): unknown[] => text.split(',').map((part) => part.trim()).filter(Boolean).map(typedValue);

/** The alert settings (a monthly budget and thresholds in percent of it) and the alerts raised. */
export function AlertsSection({ alerts, failure, onSaved }: { alerts: Alerts | undefined; failure: unknown; onSaved(alerts: Alerts): void }) {
  const [saveFailure, setSaveFailure] = useState<unknown>(undefined);
  const [saved, setSaved] = useState(false);
  // A new form after each save, so its fields start from what was saved.
  const [generation, setGeneration] = useState(0);

  async function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const budget = String(form.get('monthlyBudget') ?? '').trim();
    setSaveFailure(undefined);
    setSaved(false);
    try {
      const answer = await call<{ alerts: Alerts }>('PUT', '/usage/alerts', { monthlyBudget: budget === '' ? null : budget, thresholds: thresholdsOf(String(form.get('thresholds') ?? '')) });
      onSaved(answer.alerts);
      setGeneration((g) => g + 1);
      setSaved(true);
    } catch (refusal) {
      setSaveFailure(refusal);
    }
  }

  return (
    <div role="region" aria-label="Alerts" className="card">
      <h2>Alerts</h2>
      <p className="muted">Crossing a threshold of the monthly budget raises an alert; alerts never stop work.</p>
      <FailureAlert failure={failure} fallback="Loading the alert settings failed." />
      {alerts && (
        <>
          <form key={generation} onSubmit={submit} aria-label="Alert settings" noValidate>
            <label>Monthly budget (USD, empty for none) <input name="monthlyBudget" inputMode="decimal" defaultValue={alerts.monthlyBudget ?? ''} /></label>
            <label>Thresholds (percent of the budget, comma-separated) <input name="thresholds" defaultValue={alerts.thresholds.join(', ')} /></label>
            <button type="submit">Save alerts</button>
          </form>
          {saved && <p role="status">Alert settings saved.</p>}
          <FailureAlert failure={saveFailure} fallback="Saving the alert settings failed." />
          {alerts.events.length === 0 ? <p className="muted">No alerts raised.</p> : (
            <RowsTable label="Alerts raised" columns={['Month', 'Threshold (%)', 'Amount (USD)', 'Raised']} rows={alerts.events.map((e) => ({ Month: e.period, 'Threshold (%)': String(e.threshold), 'Amount (USD)': e.amount, Raised: new Date(e.createdAt).toLocaleString() }))} />
          )}
        </>
      )}
    </div>
  );
}

/** Metered operations, newest first and paged on the server, and the charges of the one chosen. */
export function OperationsSection() {
  const [offset, setOffset] = useState(0);
  const { answer, failure } = useAnswer<{ operations: MeteredOperation[]; pagination: Pagination }>(`/usage/operations?limit=${OPERATIONS_PAGE_SIZE}&offset=${offset}`);
  const [chosen, setChosen] = useState<string | undefined>(undefined);
  const charges = useAnswer<{ operation: MeteredOperation; charges: Charge[] }>(chosen && `/usage/operations/${encodeURIComponent(chosen)}/charges`);
  const rows = (answer?.operations ?? []).map((o) => ({
    id: o.id,
    Operation: o.id.slice(0, 8),
    Created: new Date(o.createdAt).toISOString(),
    Kind: o.kind,
    Quantities: o.quantities,
    'Amount (USD)': o.amount,
    By: o.actorMemberId ? `member ${o.actorMemberId.slice(0, 8)}` : o.apiKeyId ? `key ${o.apiKeyId.slice(0, 8)}` : '—',
  }));
  const shownCharges = chosen && charges.answer?.operation.id === chosen ? charges.answer : undefined;

  return (
    <div role="region" aria-label="Operations" className="card chart">
      <h2>Operations and their charges</h2>
      <FailureAlert failure={failure} fallback="Loading the operations failed." />
      {answer && (
        <>
          <RowsTable
            label="Metered operations"
            columns={['Operation', 'Created', 'Kind', 'Quantities', 'Amount (USD)', 'By', 'Charges']}
            rows={rows}
            cells={{ Charges: (row) => <button type="button" aria-label={`Charges of ${row.id}`} onClick={() => setChosen(row.id)}>Charges</button> }}
          />
          <Pager pagination={answer.pagination} shown={answer.operations.length} none="No metered operations" pageSize={OPERATIONS_PAGE_SIZE} onOffset={setOffset} />
        </>
      )}
      {chosen && <FailureAlert failure={charges.failure} fallback="Loading the charges failed." />}
      {shownCharges && (
        <div role="region" aria-label={`Charges of ${shownCharges.operation.id}`}>
          <h3>Charges of {shownCharges.operation.kind} {shownCharges.operation.id.slice(0, 8)} ({shownCharges.operation.amount} USD)</h3>
          {shownCharges.charges.length === 0 ? <p className="muted">No charge items.</p> : (
            <RowsTable label="Charges" columns={['Item', 'Quantity', 'Unit price (USD)', 'Amount (USD)']} rows={shownCharges.charges.map((c) => ({ Item: c.item, Quantity: c.quantity, 'Unit price (USD)': c.unitPrice, 'Amount (USD)': c.amount }))} />
          )}
        </div>
      )}
    </div>
  );
}

/** Invoices as Stripe reported them. */
export function InvoicesSection() {
  const { answer, failure } = useAnswer<{ invoices: Invoice[] }>('/billing/invoices');
  return (
    <div role="region" aria-label="Invoices" className="card chart">
      <h2>Invoices</h2>
      <FailureAlert failure={failure} fallback="Loading the invoices failed." />
      {answer && (answer.invoices.length === 0 ? <p className="muted">No invoices.</p> : (
        <RowsTable
          label="Invoices"
          columns={['Invoice', 'Status', 'From', 'To', 'Amount due', 'Amount paid', 'Currency', 'Invoice page']}
          rows={answer.invoices.map((i) => ({ Invoice: i.id, Status: i.status, From: day(i.periodStart), To: day(i.periodEnd), 'Amount due': i.amountDue, 'Amount paid': i.amountPaid, Currency: i.currency.toUpperCase(), url: i.hostedInvoiceUrl }))}
          cells={{ 'Invoice page': (row) => (row.url ? <a href={row.url} target="_blank" rel="noreferrer">Open {row.Invoice}</a> : '—') }}
        />
      ))}
    </div>
  );
}
