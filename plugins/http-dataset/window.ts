import { InputError } from '../../core/errors';
import { DURATION_PATTERN, WindowFormat, WindowSpec } from './definition';

export interface Duration {
  years: number;
  months: number;
  weeks: number;
  days: number;
  hours: number;
  minutes: number;
  seconds: number;
}

const durationRegExp = new RegExp(DURATION_PATTERN);

/** Parses an ISO 8601 duration (PnYnMnWnDTnHnMnS), the form the target schema accepts. */
export function parseDuration(text: string): Duration {
  const match = durationRegExp.exec(text);
  if (!match) throw new InputError('invalid_duration', `"${text}" is not an ISO 8601 duration such as P30D or PT6H.`);
  const n = (group: string | undefined) => (group ? parseFloat(group) : 0);
  const [, years, months, weeks, days, , hours, minutes, seconds] = match;
  return { years: n(years), months: n(months), weeks: n(weeks), days: n(days), hours: n(hours), minutes: n(minutes), seconds: n(seconds) };
}

export function isZeroDuration(duration: Duration): boolean {
  return Object.values(duration).every((value) => value === 0);
}

/**
 * `date` minus `duration`, in UTC. Years and months move the calendar month and clamp the day
 * (March 31 minus P1M is February 28/29); weeks, days and time are fixed lengths.
 */
function subtractDuration(date: Date, duration: Duration): Date {
  const result = new Date(date.getTime());
  if (duration.years || duration.months) {
    const monthIndex = result.getUTCFullYear() * 12 + result.getUTCMonth() - duration.years * 12 - duration.months;
    const year = Math.floor(monthIndex / 12);
    const month = monthIndex - year * 12;
    const lastDay = new Date(Date.UTC(year, month + 1, 0)).getUTCDate();
    result.setUTCFullYear(year, month, Math.min(result.getUTCDate(), lastDay));
  }
  const seconds = ((duration.weeks * 7 + duration.days) * 24 + duration.hours) * 3600 + duration.minutes * 60 + duration.seconds;
  return new Date(result.getTime() - Math.round(seconds * 1000));
}

export type WindowValue = string | number;

function formatWindowValue(date: Date, format: WindowFormat = 'iso'): WindowValue {
  switch (format) {
    case 'iso':
      return date.toISOString();
    case 'date':
      return date.toISOString().slice(0, 10);
    case 'epoch_ms':
      return date.getTime();
    case 'epoch_s':
      return Math.floor(date.getTime() / 1000);
  }
}

export interface ComputedWindow {
  start: Date;
  end: Date;
  /** The values sent for startParameter and endParameter, written per window.format. */
  startValue: WindowValue;
  endValue: WindowValue;
}

/**
 * The window of one read (SPEC 2.2): it ends at the sync time. since_last starts at the last
 * position minus the overlap, but never further back than the lookback (and the lookback alone
 * when there is no position yet); rolling always reads the last lookback. A position after the
 * sync time gives an empty window rather than an inverted one.
 */
export function computeWindow({ window, syncTime, lastPosition }: { window: WindowSpec; syncTime: Date; lastPosition?: Date | string | null }): ComputedWindow {
  const end = syncTime;
  const farthest = subtractDuration(end, parseDuration(window.lookback));
  let start = farthest;
  if ((window.mode ?? 'since_last') === 'since_last' && lastPosition !== undefined && lastPosition !== null) {
    const position = new Date(lastPosition);
    if (Number.isNaN(position.getTime())) throw new InputError('invalid_window_position', `The window position "${String(lastPosition)}" is not a timestamp.`);
    const resumed = window.overlap ? subtractDuration(position, parseDuration(window.overlap)) : position;
    start = new Date(Math.min(Math.max(resumed.getTime(), farthest.getTime()), end.getTime()));
  }
  return { start, end, startValue: formatWindowValue(start, window.format), endValue: formatWindowValue(end, window.format) };
}
