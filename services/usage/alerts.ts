import Decimal from 'decimal.js';
import { logger } from '../../core/logger';
import type { Db, Executor } from '../../db/connection';
import { UsageAlertEvent, UsageAlertSettings } from '../../db/models';
import type { OperationContext, ServiceDependencies } from '../operations/context';
import type { DefinitionCache } from '../shared/definition-cache';
import { spend } from './credit';
import { billingPeriod } from './plans';
import { presentAlertEvent } from './presenters';

// Usage alerts (SPEC 4.2): crossing a threshold of a workspace's monthly budget records an event
// once per period and threshold; alerts never stop work.

/** The workspace's alert settings, from the definition cache outside transactions. */
function alertSettings(definitions: DefinitionCache, db: Executor, workspaceId: string): Promise<UsageAlertSettings | undefined> {
  const read = async () => UsageAlertSettings.query(db).findById(workspaceId);
  return db.isTransaction ? read() : definitions.get(workspaceId, 'usage-alert-settings', read);
}

/** Crossing a threshold of the monthly budget records an alert event once per period; it never stops work. */
export async function raiseAlerts({ clock, definitions }: Pick<ServiceDependencies, 'clock' | 'definitions'>, db: Executor, workspaceId: string): Promise<void> {
  const settings = await alertSettings(definitions, db, workspaceId);
  if (!settings?.monthlyBudget) return;
  const { period, from, to } = billingPeriod(clock.now());
  const total = await spend(db, workspaceId, from, to);
  const budget = new Decimal(settings.monthlyBudget);
  for (const threshold of settings.thresholds) {
    if (total.gte(budget.times(threshold).dividedBy(100))) {
      await UsageAlertEvent.query(db).insert({ workspaceId, period, threshold, amount: total.toFixed(10) }).onConflict(['workspaceId', 'period', 'threshold']).ignore();
    }
  }
}

/**
 * Alert checks of charges committed on their own (one runtime's, a part of its Metering): at most
 * one running and one waiting per workspace, so a burst of charges is checked once or twice, not
 * once per charge. A failure is logged; the next charge checks again (events are per period and
 * threshold, so a late check records the same event).
 */
export class AlertChecks {
  private readonly checks = new Map<string, { running: Promise<void>; again: boolean }>();

  constructor(private readonly db: Db, private readonly runtime: Pick<ServiceDependencies, 'clock' | 'definitions'>) {}

  soon(workspaceId: string): void {
    const pending = this.checks.get(workspaceId);
    if (pending) {
      pending.again = true;
      return;
    }
    const state = { running: Promise.resolve(), again: false };
    const run = async (): Promise<void> => {
      do {
        state.again = false;
        await raiseAlerts(this.runtime, this.db, workspaceId).catch((error) => logger.error({ err: error, workspaceId }, 'usage alert check failed'));
      } while (state.again);
      this.checks.delete(workspaceId);
    };
    this.checks.set(workspaceId, state);
    state.running = run();
  }

  /** Waits for the alert checks of the workspace (a read of the alerts sees its own charges). */
  async settled(workspaceId: string): Promise<void> {
    await this.checks.get(workspaceId)?.running;
  }

  /** Waits for every check under way: call before destroying the pool, so no check meets a destroyed one. */
  async close(): Promise<void> {
    while (this.checks.size) await Promise.all([...this.checks.values()].map((state) => state.running));
  }
}

export async function getAlerts(ctx: OperationContext) {
  const { db, principal, deps } = ctx;
  await deps.metering.settled(principal.workspaceId);
  const settings = await UsageAlertSettings.query(db).findById(principal.workspaceId);
  const events = await UsageAlertEvent.query(db).where({ workspaceId: principal.workspaceId }).orderBy('createdAt', 'desc').limit(50);
  return {
    monthlyBudget: settings?.monthlyBudget ? new Decimal(settings.monthlyBudget).toFixed() : null,
    thresholds: settings?.thresholds ?? [50, 80, 100],
    events: events.map(presentAlertEvent),
  };
}

export async function putAlerts(ctx: OperationContext, input: { monthlyBudget: string | null; thresholds: number[] }) {
  const { db, principal } = ctx;
  const fields = { monthlyBudget: input.monthlyBudget, thresholds: [...new Set(input.thresholds)].sort((a, b) => a - b), updatedAt: new Date() };
  await UsageAlertSettings.query(db).insert({ workspaceId: principal.workspaceId, ...fields }).onConflict('workspaceId').merge();
  return getAlerts(ctx);
}
