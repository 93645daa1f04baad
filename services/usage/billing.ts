import Decimal from 'decimal.js';
import type { Knex } from 'knex';
import type Stripe from 'stripe';
import { BadRequestError, InputError, UnavailableError } from '../../core/errors';
import { logger } from '../../core/logger';
import { scrubSecrets } from '../../core/secrets';
import type { Executor } from '../../db/connection';
import { Invoice, MeteredOperation, Workspace } from '../../db/models';
import type { OperationContext, ServiceDependencies } from '../operations/context';
import { presentInvoice } from './presenters';

// Billing through Stripe's official SDK: checkout and portal sessions, invoices kept in sync by the
// signed webhook, usage reported as Billing Meter events (one per metered operation, idempotent by
// its id). Without STRIPE_SECRET_KEY every billing route answers 503 billing_unavailable.
// Stripe sends events in no guaranteed order: each subscription and invoice keeps the time of the
// event last applied to it, so a late, older event changes nothing (applySubscriptionEvent).

export interface BillingConfig {
  secretKey: string;
  webhookSecret: string | undefined;
  /** stripe-mock or a proxy: http(s)://host:port. */
  apiUrl: string | undefined;
  teamPriceId: string;
  meterEventName: string;
  publicUrl: string;
}

export function billingConfig(): BillingConfig | undefined {
  const secretKey = process.env.STRIPE_SECRET_KEY;
  if (!secretKey) return undefined;
  return {
    secretKey,
    webhookSecret: process.env.STRIPE_WEBHOOK_SECRET,
    apiUrl: process.env.STRIPE_API_URL,
    teamPriceId: process.env.STRIPE_TEAM_PRICE_ID ?? 'price_team',
    meterEventName: process.env.STRIPE_METER_EVENT_NAME ?? 'weft_usage',
    publicUrl: process.env.WEFT_PUBLIC_URL ?? 'http://127.0.0.1:8080',
  };
}

/**
 * One runtime's Stripe clients, one per key and API address (ServiceDependencies.stripe, built by
 * the runtime): a client keeps its connections between calls.
 */
export class StripeClients {
  private readonly clients = new Map<string, Stripe>();

  for(config: BillingConfig): Stripe {
    const key = `${config.secretKey}@${config.apiUrl ?? ''}`;
    let client = this.clients.get(key);
    if (!client) {
      const url = config.apiUrl ? new URL(config.apiUrl) : undefined;
      // Loaded on first use: the SDK is half a second of start-up for each process that never bills (every operator CLI command).
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      const StripeSdk = require('stripe') as typeof Stripe;
      client = new StripeSdk(config.secretKey, {
        ...(url ? { host: url.hostname, port: Number(url.port), protocol: url.protocol === 'http:' ? 'http' : 'https' } : {}),
        maxNetworkRetries: 2,
        telemetry: false,
      });
      this.clients.set(key, client);
    }
    return client;
  }
}

/**
 * Runs one Stripe API call, cutting the secret key and webhook secret out of whatever it throws.
 * An SDK error carries the remote message, and a proxy or a misconfigured STRIPE_API_URL can put
 * the key it was sent there (Stripe itself masks it); these errors reach the logs as unhandled
 * errors and, in the billing sync, Temporal's activity failures.
 */
async function stripeCall<T>(config: BillingConfig, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    throw scrubSecrets(error, [config.secretKey, config.webhookSecret]);
  }
}

interface Billing {
  config: BillingConfig;
  stripe: Stripe;
}

function requireBilling(clients: StripeClients): Billing {
  const config = billingConfig();
  if (!config) throw new UnavailableError('billing_unavailable', 'Billing is not configured on this Weft (no STRIPE_SECRET_KEY).');
  return { config, stripe: clients.for(config) };
}

/** A returnPath must be a path on Weft's own origin: /settings/billing, never //evil.com or https://… */
export function returnUrl(config: BillingConfig, returnPath: string | undefined): string {
  const base = new URL(config.publicUrl);
  if (returnPath === undefined) return new URL('/', base).toString();
  const resolved = (() => {
    try {
      return new URL(returnPath, base);
    } catch {
      return undefined;
    }
  })();
  if (!returnPath.startsWith('/') || returnPath.startsWith('//') || !resolved || resolved.origin !== base.origin) {
    throw new InputError('return_path_not_same_origin', `returnPath must be a path on ${base.origin}, starting with a single "/".`, [{ path: '/returnPath', message: 'is not a same-origin path' }]);
  }
  return resolved.toString();
}

/**
 * The workspace's Stripe customer, created at Stripe on its first checkout or portal visit. No
 * transaction is open during the call: Stripe's idempotency key makes concurrent first visits
 * create one customer, and only the first to store it writes it.
 */
async function customerOf(db: Executor, config: BillingConfig, stripe: Stripe, workspaceId: string): Promise<string> {
  const workspace = (await Workspace.query(db).findById(workspaceId))!;
  if (workspace.stripeCustomerId) return workspace.stripeCustomerId;
  const customer = await stripeCall(config, () => stripe.customers.create({ name: workspace.name, metadata: { workspaceId } }, { idempotencyKey: `weft-customer-${workspaceId}` }));
  await Workspace.query(db).findById(workspaceId).whereNull('stripeCustomerId').patch({ stripeCustomerId: customer.id });
  return (await Workspace.query(db).findById(workspaceId))!.stripeCustomerId!;
}

export async function startCheckout(ctx: OperationContext, returnPath?: string) {
  const { db, principal } = ctx;
  const { config, stripe } = requireBilling(ctx.deps.stripe);
  const back = returnUrl(config, returnPath);
  const customer = await customerOf(db, config, stripe, principal.workspaceId);
  const session = await stripeCall(config, () => stripe.checkout.sessions.create({
    mode: 'subscription',
    customer,
    client_reference_id: principal.workspaceId,
    line_items: [{ price: config.teamPriceId, quantity: 1 }],
    success_url: back,
    cancel_url: back,
  }));
  return { url: session.url };
}

export async function openPortal(ctx: OperationContext, returnPath?: string) {
  const { db, principal } = ctx;
  const { config, stripe } = requireBilling(ctx.deps.stripe);
  const back = returnUrl(config, returnPath);
  const customer = await customerOf(db, config, stripe, principal.workspaceId);
  const session = await stripeCall(config, () => stripe.billingPortal.sessions.create({ customer, return_url: back }));
  return { url: session.url };
}

export async function listInvoices(ctx: OperationContext) {
  const { db, principal } = ctx;
  requireBilling(ctx.deps.stripe);
  const rows = await Invoice.query(db).where({ workspaceId: principal.workspaceId }).orderBy('periodStart', 'desc');
  return {
    invoices: rows.map(presentInvoice),
  };
}

/**
 * Cancels a subscription at Stripe; one Stripe already has canceled counts as done. Two downgrades
 * at once both cancel it (no lock is held across a Stripe call), and a downgrade retried after its
 * record step failed cancels it again: Stripe refuses those with 404 resource_missing (review s30:
 * the second downgrade answered 500, and the workspace stayed on its plan until the webhook).
 */
async function cancelSubscription({ config, stripe }: Billing, subscriptionId: string): Promise<void> {
  try {
    await stripeCall(config, () => stripe.subscriptions.cancel(subscriptionId));
  } catch (error) {
    if (!(await canceledAtStripe({ config, stripe }, subscriptionId))) throw error;
  }
}

async function canceledAtStripe({ config, stripe }: Billing, subscriptionId: string): Promise<boolean> {
  try {
    return (await stripeCall(config, () => stripe.subscriptions.retrieve(subscriptionId))).status === 'canceled';
  } catch (error) {
    return (error as { code?: string }).code === 'resource_missing';
  }
}

/**
 * An intentional administration action: cancels the workspace's paying subscriptions at Stripe
 * (normally one) and moves to the free plan now. They are recorded as canceled, which is final: the
 * events Stripe sends about them later change nothing. The cancellations happen with no transaction
 * open; the transaction that records them checks under the workspace's lock that no paying
 * subscription arrived meanwhile (a webhook), and cancels that one too before recording.
 */
export async function downgrade(ctx: OperationContext) {
  const { db, principal } = ctx;
  const { config, stripe } = requireBilling(ctx.deps.stripe);
  const canceled = new Set<string>();
  for (let settled = false; !settled; ) {
    for (const subscriptionId of payingSubscriptions(await Workspace.query(db).findById(principal.workspaceId), await payingRows(db, principal.workspaceId))) {
      if (canceled.has(subscriptionId)) continue;
      await cancelSubscription({ config, stripe }, subscriptionId);
      canceled.add(subscriptionId);
    }
    settled = await db.transaction(async (trx) => {
      const workspace = (await Workspace.query(trx).findById(principal.workspaceId).forUpdate())!;
      if ([...payingSubscriptions(workspace, await payingRows(trx, workspace.id))].some((id) => !canceled.has(id))) return false;
      for (const subscriptionId of canceled) {
        await trx('stripe_subscriptions')
          .insert({ id: subscriptionId, workspace_id: workspace.id, status: 'canceled', updated_at: new Date() })
          .onConflict('id')
          .merge(['status', 'updated_at']);
      }
      await workspace.$query(trx).patch({ plan: 'free', stripeSubscriptionId: null });
      return true;
    });
  }
  // Like a write's invoke: this process sees the new plan at once, the others by NOTIFY.
  ctx.deps.definitions.changed(principal.workspaceId);
  return { plan: 'free' };
}

/** The ids of the workspace's subscriptions whose status pays. */
async function payingRows(db: Executor, workspaceId: string): Promise<string[]> {
  return (await db('stripe_subscriptions').where({ workspace_id: workspaceId }).whereIn('status', PAYING).pluck('id')) as string[];
}

/** The workspace's subscriptions that pay, and the one it is on. */
function payingSubscriptions(workspace: Workspace | undefined, paying: string[]): Set<string> {
  return new Set([...paying, ...(workspace?.stripeSubscriptionId ? [workspace.stripeSubscriptionId] : [])]);
}

/** Subscription statuses that give the team plan. */
const PAYING = ['active', 'trialing', 'past_due'];
/** Statuses a subscription never leaves at Stripe: a later event about it is stale, whatever its time. */
const FINAL = ['canceled', 'incomplete_expired'];

/** What became of an event: acted on, older than the state kept, of a type Weft does not act on, or for no workspace of this Weft. */
type EventOutcome = 'applied' | 'stale' | 'ignored' | 'no_workspace';

/** Stripe times are Unix seconds. A signed event Weft acts on without one is refused (422, nothing changes) rather than ordered arbitrarily. */
function stripeTime(value: unknown, what: string): Date {
  const time = new Date(Number(value) * 1000);
  if (typeof value !== 'number' || Number.isNaN(time.getTime())) throw new InputError('invalid_value', `The event carries no valid ${what}.`);
  return time;
}

/**
 * Where an event about a Stripe object stands against the state kept for it: older events are
 * stale; one from the same second as the kept state cannot be ordered by time (Stripe's `created`
 * counts seconds), so the object's current state is taken from Stripe, as Stripe advises
 * (fetched outside the transaction: stripeStateOf).
 */
function orderOf(eventAt: Date, stateAt: Date | null | undefined): 'newer' | 'stale' | 'same_second' {
  if (!stateAt) return 'newer';
  if (eventAt.getTime() < stateAt.getTime()) return 'stale';
  return eventAt.getTime() === stateAt.getTime() ? 'same_second' : 'newer';
}

/**
 * A subscription event, in order per subscription: applied only if newer than the state kept (a
 * deletion always, since nothing follows it), never after the subscription was canceled. The
 * workspace's plan is then settled from all its subscriptions, so the deletion of a subscription
 * the workspace has moved on from leaves the plan alone.
 */
async function applySubscriptionEvent(trx: Knex.Transaction, fetched: FetchedObjects, workspace: Workspace, event: Stripe.Event, eventAt: Date): Promise<EventOutcome> {
  const object = event.data.object as unknown as Record<string, unknown>;
  const id = String(object.id);
  const kept = await trx('stripe_subscriptions').where({ id }).forUpdate().first() as { workspaceId: string; status: string; stateAt: Date | null } | undefined;
  if (kept && kept.workspaceId !== workspace.id) return 'ignored';
  if (kept && FINAL.includes(kept.status)) return 'stale';
  let status = event.type === 'customer.subscription.deleted' ? 'canceled' : String(object.status);
  if (!FINAL.includes(status)) {
    const order = orderOf(eventAt, kept?.stateAt);
    if (order === 'stale') return 'stale';
    if (order === 'same_second') status = String(stripeStateOf(fetched, 'subscription', id).status);
  }
  await trx('stripe_subscriptions')
    .insert({ id, workspace_id: workspace.id, status, started_at: typeof object.created === 'number' ? stripeTime(object.created, 'subscription start') : null, state_at: eventAt, last_event_id: event.id, updated_at: new Date() })
    .onConflict('id')
    .merge({
      status,
      started_at: trx.raw('coalesce(excluded.started_at, stripe_subscriptions.started_at)'),
      state_at: eventAt,
      last_event_id: event.id,
      updated_at: new Date(),
    });
  await settlePlan(trx, workspace);
  return 'applied';
}

/** The workspace is on its newest paying subscription (team), or on none (free). */
async function settlePlan(trx: Knex.Transaction, workspace: Workspace): Promise<void> {
  const current = await trx('stripe_subscriptions')
    .where({ workspace_id: workspace.id })
    .whereIn('status', PAYING)
    .orderByRaw('started_at DESC NULLS LAST, state_at DESC NULLS LAST, id')
    .first() as { id: string } | undefined;
  await workspace.$query(trx).patch({ plan: current ? 'team' : 'free', stripeSubscriptionId: current?.id ?? null });
}

/** An invoice event, in order per invoice: an older one is stale; one from the same second stores the invoice as Stripe has it now. */
async function applyInvoiceEvent(trx: Knex.Transaction, fetched: FetchedObjects, workspace: Workspace, event: Stripe.Event, eventAt: Date): Promise<EventOutcome> {
  let object = event.data.object as unknown as Record<string, unknown>;
  const kept = await Invoice.query(trx).findById(String(object.id)).forUpdate();
  if (kept && kept.workspaceId !== workspace.id) return 'ignored';
  const order = orderOf(eventAt, kept?.stateAt);
  if (order === 'stale') return 'stale';
  if (order === 'same_second') object = stripeStateOf(fetched, 'invoice', String(object.id));
  await saveInvoice(trx, workspace.id, object, { at: eventAt, eventId: event.id });
  return 'applied';
}

/** Stripe's current state of the objects an event needed, by id, fetched with no transaction open. */
type FetchedObjects = Map<string, Record<string, unknown>>;

/**
 * Thrown inside the webhook's transaction when the event can only be applied against Stripe's
 * current state of its object, not fetched yet: the transaction rolls back (its event id with it),
 * the object is fetched with no transaction open, and the event is applied again.
 */
class StripeStateNeeded extends Error {
  constructor(readonly kind: 'subscription' | 'invoice', readonly objectId: string) {
    super(`The current state of ${kind} ${objectId} is needed from Stripe.`);
  }
}

function stripeStateOf(fetched: FetchedObjects, kind: StripeStateNeeded['kind'], id: string): Record<string, unknown> {
  const object = fetched.get(id);
  if (!object) throw new StripeStateNeeded(kind, id);
  return object;
}

async function fetchStripeState({ config, stripe }: Billing, needed: StripeStateNeeded): Promise<Record<string, unknown>> {
  const retrieve = (): Promise<object> => (needed.kind === 'subscription' ? stripe.subscriptions.retrieve(needed.objectId) : stripe.invoices.retrieve(needed.objectId));
  return (await stripeCall(config, retrieve)) as Record<string, unknown>;
}

type WebhookReceipt = { received: true; duplicate: boolean; outcome: EventOutcome | undefined };

/**
 * Verifies a webhook against the raw body and Stripe-Signature (tolerance 300 s); a bad one is a 400
 * and nothing changes. The event is applied in one transaction, once per event id (stripe_events),
 * under the lock of its customer's workspace. No Stripe call happens while that transaction is
 * open: an event that needs Stripe's current state of its object rolls back, fetches it, and is
 * applied again from the start, so what the first attempt read under the lock is read again.
 */
export async function receiveWebhook({ db, stripe: clients }: Pick<ServiceDependencies, 'db' | 'stripe'>, rawBody: string, signature: string | undefined): Promise<WebhookReceipt> {
  const billing = requireBilling(clients);
  const { config, stripe } = billing;
  if (!config.webhookSecret) throw new UnavailableError('billing_unavailable', 'No STRIPE_WEBHOOK_SECRET is configured, so webhooks cannot be verified.');
  let event: Stripe.Event;
  try {
    event = stripe.webhooks.constructEvent(rawBody, signature ?? '', config.webhookSecret, 300);
  } catch (error) {
    // The SDK's reason, without the webhook secret should a version ever quote it.
    const reason = scrubSecrets((error as Error).message.split('\n')[0], [config.webhookSecret, config.secretKey]);
    throw new BadRequestError('invalid_signature', `The webhook signature does not verify: ${reason}`);
  }
  const fetched: FetchedObjects = new Map();
  for (;;) {
    try {
      return await db.transaction((trx) => applyEvent(trx, fetched, event));
    } catch (error) {
      // An event is about one object, so this happens at most once per delivery.
      if (!(error instanceof StripeStateNeeded) || fetched.has(error.objectId)) throw error;
      fetched.set(error.objectId, await fetchStripeState(billing, error));
    }
  }
}

async function applyEvent(trx: Knex.Transaction, fetched: FetchedObjects, event: Stripe.Event): Promise<WebhookReceipt> {
  const inserted = await trx('stripe_events').insert({ id: event.id, type: event.type }).onConflict('id').ignore().returning('id');
  if (!inserted.length) return { received: true, duplicate: true, outcome: undefined };
  const object = event.data.object as unknown as Record<string, unknown>;
  const customer = typeof object.customer === 'string' ? object.customer : undefined;
  // The workspace's lock orders the events of one customer: one at a time, each against the state the last one left.
  const workspace = customer ? await Workspace.query(trx).findOne({ stripeCustomerId: customer }).forUpdate() : undefined;
  let outcome: EventOutcome = 'no_workspace';
  if (!workspace) logger.info({ eventId: event.id, type: event.type }, 'stripe event for no known workspace');
  else if (event.type.startsWith('customer.subscription.')) outcome = await applySubscriptionEvent(trx, fetched, workspace, event, stripeTime(event.created, 'created time'));
  else if (event.type.startsWith('invoice.')) outcome = await applyInvoiceEvent(trx, fetched, workspace, event, stripeTime(event.created, 'created time'));
  else outcome = 'ignored';
  await trx('stripe_events').where({ id: event.id }).update({ workspace_id: workspace?.id ?? null, outcome });
  return { received: true, duplicate: false, outcome };
}

/**
 * Stripe sends amounts in cents and times in Unix seconds. Anything else in an event is refused
 * (422, the whole event rolls back) instead of storing a NaN amount, or handing pg an Invalid Date,
 * which it turns into a database error today and will throw on (a 500) in its next major version.
 */
function invoiceAmount(value: unknown): string {
  const cents = Number(value ?? 0);
  if (!Number.isFinite(cents)) throw new InputError('invalid_value', 'The invoice event carries an amount that is not a number.');
  return new Decimal(cents).dividedBy(100).toFixed(2);
}

function invoiceTime(value: unknown): Date | null {
  if (!value) return null;
  const time = new Date(Number(value) * 1000);
  if (Number.isNaN(time.getTime())) throw new InputError('invalid_value', 'The invoice event carries a period time out of range.');
  return time;
}

/**
 * Stores an invoice as Stripe described it at `state.at` (an event's time, or when it was fetched),
 * unless a later state of it is kept already.
 */
async function saveInvoice(db: Executor, workspaceId: string, object: Record<string, unknown>, state: { at: Date; eventId: string | null }): Promise<void> {
  await Invoice.query(db)
    .insert({
      id: String(object.id),
      workspaceId,
      status: String(object.status ?? 'draft'),
      amountDue: invoiceAmount(object.amount_due),
      amountPaid: invoiceAmount(object.amount_paid),
      currency: String(object.currency ?? 'usd'),
      hostedInvoiceUrl: (object.hosted_invoice_url as string | null) ?? null,
      periodStart: invoiceTime(object.period_start),
      periodEnd: invoiceTime(object.period_end),
      stateAt: state.at,
      lastEventId: state.eventId,
      updatedAt: new Date(),
    })
    .onConflict('id')
    .merge()
    .where((newer) => newer.whereNull('invoices.state_at').orWhere('invoices.state_at', '<=', state.at));
}

/** Reconciles invoices with Stripe for every billed workspace, in case a webhook was missed. */
export async function reconcileInvoices({ db, stripe: clients }: Pick<ServiceDependencies, 'db' | 'stripe'>): Promise<{ invoices: number }> {
  const config = billingConfig();
  if (!config) return { invoices: 0 };
  const stripe = clients.for(config);
  let count = 0;
  for (const workspace of await Workspace.query(db).whereNotNull('stripeCustomerId')) {
    const page = await stripeCall(config, () => stripe.invoices.list({ customer: workspace.stripeCustomerId!, limit: 100 }));
    // Stripe's state as of this call (this machine's clock: an event from within its skew of it may still win).
    const fetchedAt = new Date();
    for (const invoice of page.data) {
      await saveInvoice(db, workspace.id, invoice as unknown as Record<string, unknown>, { at: fetchedAt, eventId: null });
      count += 1;
    }
  }
  return { invoices: count };
}

/**
 * Reports metered operations not yet reported, as Billing Meter events whose identifier is the
 * operation id (Stripe drops a repeated identifier), then marks them reported. Safe to repeat.
 */
export async function reportUsage({ db, stripe: clients }: Pick<ServiceDependencies, 'db' | 'stripe'>, batch = 500): Promise<{ reported: number }> {
  const config = billingConfig();
  if (!config) return { reported: 0 };
  const stripe = clients.for(config);
  const pending = await MeteredOperation.query(db)
    .join('workspaces', 'workspaces.id', 'metered_operations.workspace_id')
    .whereNull('metered_operations.reported_at')
    .whereNotNull('workspaces.stripe_customer_id')
    .select('metered_operations.*', 'workspaces.stripe_customer_id as stripeCustomerId')
    .orderBy('metered_operations.created_at')
    .limit(batch);
  for (const operation of pending as Array<MeteredOperation & { stripeCustomerId: string }>) {
    // Meter values are integers: the charge in hundred-thousandths of a dollar, exact for every rate.
    const value = new Decimal(operation.amount).times(100_000).toFixed(0);
    await stripeCall(config, () => stripe.billing.meterEvents.create({ event_name: config.meterEventName, identifier: operation.id, timestamp: Math.floor(operation.createdAt.getTime() / 1000), payload: { stripe_customer_id: operation.stripeCustomerId, value } }));
    await MeteredOperation.query(db).patch({ reportedAt: new Date() }).where({ id: operation.id });
  }
  return { reported: pending.length };
}

/**
 * The billing sync's schedule, one per task queue: installations sharing a Temporal namespace (and
 * test runs sharing a dev server, each with its own task queue) each keep theirs. One fixed id
 * was shared: a test run's schedule, left pointing at its finished task queue, was "already
 * running" for the next installation, whose syncs then never ran; and two runs deleted each
 * other's.
 */
export const billingScheduleId = (taskQueue: string): string => `weft-billing-sync-${taskQueue}`;

/** The id every installation shared before; removed when it starts this installation's workflows. */
const SHARED_SCHEDULE_ID = 'weft-billing-sync';

/** The hourly billing sync schedule (visible in the Web UI); created once when billing is configured. */
export async function ensureBillingSchedule(temporal: import('@temporalio/client').Client, taskQueue: string): Promise<boolean> {
  if (!billingConfig()) return false;
  try {
    await temporal.schedule.create({
      scheduleId: billingScheduleId(taskQueue),
      spec: { intervals: [{ every: '1 hour' }] },
      action: { type: 'startWorkflow', workflowType: 'billingSyncWorkflow', taskQueue, args: [] },
    });
  } catch (error) {
    if ((error as Error).name !== 'ScheduleAlreadyRunning') throw error;
  }
  await removeSharedSchedule(temporal, taskQueue);
  return true;
}

/** The schedule of the one shared id, if it starts this task queue's syncs (this installation's, from before). */
async function removeSharedSchedule(temporal: import('@temporalio/client').Client, taskQueue: string): Promise<void> {
  const shared = temporal.schedule.getHandle(SHARED_SCHEDULE_ID);
  try {
    const { action } = await shared.describe();
    if (action.type === 'startWorkflow' && action.taskQueue === taskQueue) await shared.delete();
  } catch (error) {
    if ((error as Error).name !== 'ScheduleNotFoundError') throw error;
  }
}
