// xsd:dateTime and xsd:date values for comparison. A value without a timezone is read in UTC,
// XPath's implicit timezone as Weft fixes it (and what Comunica did before the fast path existed).

const DATE_TIME = /^(-?\d{4,})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d+)?(Z|[+-]\d{2}:\d{2})?$/;
const DATE = /^(-?\d{4,})-(\d{2})-(\d{2})(Z|[+-]\d{2}:\d{2})?$/;

const daysIn = (year: number, month: number): number => (month === 2 ? (year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : 28) : [4, 6, 9, 11].includes(month) ? 30 : 31);

function timezoneMinutes(zone: string | undefined): number | undefined {
  if (!zone || zone === 'Z') return 0;
  const hours = Number(zone.slice(1, 3));
  const minutes = Number(zone.slice(4, 6));
  if (hours > 14 || minutes > 59 || (hours === 14 && minutes > 0)) return undefined;
  return (zone[0] === '-' ? -1 : 1) * (hours * 60 + minutes);
}

/** Milliseconds since the epoch (UTC), fractions kept; undefined for an invalid date. */
function instant(yearText: string, monthText: string, dayText: string, hour: number, minute: number, second: number, zone: string | undefined): number | undefined {
  const year = Number(yearText);
  const month = Number(monthText);
  const day = Number(dayText);
  if (yearText.replace('-', '').length > 4 && yearText.replace('-', '').startsWith('0')) return undefined;
  if (month < 1 || month > 12 || day < 1 || day > daysIn(year, month)) return undefined;
  if (minute > 59 || second >= 60 || hour > 24 || (hour === 24 && (minute > 0 || second > 0))) return undefined;
  const offset = timezoneMinutes(zone);
  if (offset === undefined) return undefined;
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  date.setUTCHours(hour, minute, 0, 0);
  const ms = date.getTime();
  if (!Number.isFinite(ms)) return undefined;
  return ms + second * 1000 - offset * 60_000;
}

export function parseDateTime(lexical: string): number | undefined {
  const match = DATE_TIME.exec(lexical);
  if (!match) return undefined;
  const [, year, month, day, hour, minute, second, fraction, zone] = match;
  return instant(year, month, day, Number(hour), Number(minute), Number(second) + (fraction ? Number(fraction) : 0), zone);
}

export function parseDate(lexical: string): number | undefined {
  const match = DATE.exec(lexical);
  if (!match) return undefined;
  const [, year, month, day, zone] = match;
  return instant(year, month, day, 0, 0, 0, zone);
}
