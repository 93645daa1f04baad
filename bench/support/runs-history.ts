/**
 * Where a workflow's time goes, from its Temporal history: each event's time since the start, with
 * the activity it concerns, and totals for the three kinds of wait (workflow tasks, activities
 * queued, activities running).
 */
import { temporal } from '@temporalio/proto';

type History = temporal.api.history.v1.IHistory;

const millis = (time: { seconds?: unknown; nanos?: number | null } | null | undefined): number =>
  Number(time?.seconds ?? 0) * 1000 + (time?.nanos ?? 0) / 1e6;

export function describeHistory(history: History): string {
  const events = history.events ?? [];
  if (!events.length) return '(no events)';
  const start = millis(events[0].eventTime);
  const names = new Map<number, string>();
  const lines: string[] = [];
  const totals = { workflowTasks: 0, activityQueued: 0, activityRunning: 0 };
  const at = new Map<number, number>();
  let previous = start;
  for (const event of events) {
    const time = millis(event.eventTime);
    const id = Number(event.eventId);
    at.set(id, time);
    const type = temporal.api.enums.v1.EventType[event.eventType ?? 0].replace(/^EVENT_TYPE_/, '').toLowerCase();
    let detail = '';
    const scheduled = event.activityTaskScheduledEventAttributes;
    if (scheduled) names.set(id, scheduled.activityType?.name ?? '?');
    const started = event.activityTaskStartedEventAttributes;
    const completed = event.activityTaskCompletedEventAttributes ?? event.activityTaskFailedEventAttributes;
    if (scheduled) detail = scheduled.activityType?.name ?? '';
    if (event.markerRecordedEventAttributes) detail = `${event.markerRecordedEventAttributes.markerName ?? ''}${localActivityAttempts(event) ? ` (attempt ${localActivityAttempts(event)})` : ''}`;
    if (started) {
      const scheduledAt = Number(started.scheduledEventId);
      detail = `${names.get(scheduledAt)} (queued ${(time - at.get(scheduledAt)!).toFixed(1)} ms, attempt ${started.attempt})`;
      totals.activityQueued += time - at.get(scheduledAt)!;
    }
    if (completed) {
      const startedAt = Number(completed.startedEventId);
      detail = `${names.get(Number(completed.scheduledEventId))} (ran ${(time - at.get(startedAt)!).toFixed(1)} ms)`;
      totals.activityRunning += time - at.get(startedAt)!;
    }
    if (event.workflowTaskCompletedEventAttributes) totals.workflowTasks += time - at.get(Number(event.workflowTaskCompletedEventAttributes.scheduledEventId))!;
    lines.push(`  +${(time - start).toFixed(1).padStart(7)} ms (+${(time - previous).toFixed(1).padStart(6)})  ${type}${detail ? `  ${detail}` : ''}`);
    previous = time;
  }
  const total = millis(events[events.length - 1].eventTime) - start;
  lines.push(`  total ${total.toFixed(1)} ms: workflow tasks (scheduled → completed) ${totals.workflowTasks.toFixed(1)} ms, activities queued ${totals.activityQueued.toFixed(1)} ms, activities running ${totals.activityRunning.toFixed(1)} ms`);
  return lines.join('\n');
}

/** A local activity's attempts, from its marker (Temporal core writes them in the marker's data). */
function localActivityAttempts(event: temporal.api.history.v1.IHistoryEvent): number {
  const marker = event.markerRecordedEventAttributes;
  if (marker?.markerName !== 'core_local_activity') return 0;
  const data = marker.details?.data?.payloads?.[0]?.data;
  try {
    return Number((JSON.parse(Buffer.from(data ?? []).toString()) as { attempt?: number }).attempt ?? 1);
  } catch {
    return 1;
  }
}

/** A history's time split into workflow tasks (scheduled → completed), activities queued and activities running, in ms. */
export function historyTotals(history: History): { workflowTasks: number; activityQueued: number; activityRunning: number; attempts: number } {
  const at = new Map<number, number>();
  const totals = { workflowTasks: 0, activityQueued: 0, activityRunning: 0, attempts: 0 };
  for (const event of history.events ?? []) {
    const time = millis(event.eventTime);
    at.set(Number(event.eventId), time);
    const started = event.activityTaskStartedEventAttributes;
    if (started) {
      totals.activityQueued += time - at.get(Number(started.scheduledEventId))!;
      totals.attempts += started.attempt ?? 1;
    }
    const completed = event.activityTaskCompletedEventAttributes ?? event.activityTaskFailedEventAttributes;
    if (completed) totals.activityRunning += time - at.get(Number(completed.startedEventId))!;
    if (event.workflowTaskCompletedEventAttributes) totals.workflowTasks += time - at.get(Number(event.workflowTaskCompletedEventAttributes.scheduledEventId))!;
    totals.attempts += localActivityAttempts(event);
  }
  return totals;
}

/** From a history: when the workflow started and how long it ran to its completion (epoch ms, server clock). */
export function historySpan(history: History): { startedAt: number; runMs: number } {
  const events = history.events ?? [];
  const startedAt = millis(events[0]?.eventTime);
  return { startedAt, runMs: millis(events[events.length - 1]?.eventTime) - startedAt };
}
