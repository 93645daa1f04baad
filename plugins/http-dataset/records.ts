import type { FieldDescription } from '../capability';

// The matcher moved so pipeline transforms share it; read.ts still imports it from here.
export { matchesAll } from '../condition-match';

export type Row = Record<string, unknown>;

/** Records are JSON objects; a bare value (an array of strings, say) becomes { value }, so nothing is dropped. */
export function toRow(value: unknown): Row {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Row) : { value };
}

export function project(row: Row, select: string[] | undefined): Row {
  if (!select) return row;
  return Object.fromEntries(select.filter((field) => field in row).map((field) => [field, row[field]]));
}

function typeOf(value: unknown): string {
  if (value === null || value === undefined) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value;
}

/**
 * Field names and JSON types of sampled records, in first-seen order. Integer and number merge to
 * number; other mixed types report the most frequent one. A field that is null or missing in any
 * sampled record is nullable.
 */
export function inferFields(rows: Row[]): FieldDescription[] {
  const seen = new Map<string, Map<string, number>>();
  for (const row of rows) {
    for (const [name, value] of Object.entries(row)) {
      const counts = seen.get(name) ?? new Map<string, number>();
      counts.set(typeOf(value), (counts.get(typeOf(value)) ?? 0) + 1);
      seen.set(name, counts);
    }
  }
  return [...seen].map(([name, counts]) => {
    const nullCount = counts.get('null') ?? 0;
    counts.delete('null');
    if (counts.has('integer') && counts.has('number')) {
      counts.set('number', counts.get('number')! + counts.get('integer')!);
      counts.delete('integer');
    }
    const present = [...counts].sort((a, b) => b[1] - a[1]);
    const nonNull = present.reduce((sum, [, count]) => sum + count, 0);
    return { name, type: present[0]?.[0] ?? 'null', nullable: nullCount > 0 || nonNull < rows.length };
  });
}
