import { InputError } from '../../core/errors';
import type { RecordsQuery } from '../capability';

/** A field name as a request uses it, with the JSON Pointer of where (for the error's problems). */
export interface FieldUse {
  path: string;
  field: string;
}

/** Every field a records read names: in select, in where and in orderBy. */
export function queryFieldUses(query: Pick<RecordsQuery, 'select' | 'where' | 'orderBy'>): FieldUse[] {
  return [
    ...(query.select ?? []).map((field, i) => ({ path: `/select/${i}`, field })),
    ...query.where.map((c, i) => ({ path: `/where/${i}/field`, field: c.field })),
    ...query.orderBy.map((t, i) => ({ path: `/orderBy/${i}/field`, field: t.field })),
  ];
}

const KNOWN_LISTED = 50;

/**
 * Refuses names the table does not know with InputError('unknown_field'), naming the unknown ones
 * and (up to 50 of) the known ones. `noun` is what the store calls a field ("column", "field").
 */
export function refuseUnknownFields(uses: FieldUse[], known: readonly string[], noun: string): void {
  const knownSet = new Set(known);
  const unknownUses = uses.filter((use) => !knownSet.has(use.field));
  if (!unknownUses.length) return;
  const names = [...new Set(unknownUses.map((use) => use.field))];
  const listed = known.length ? `${known.slice(0, KNOWN_LISTED).join(', ')}${known.length > KNOWN_LISTED ? ', …' : ''}` : 'none';
  throw new InputError(
    'unknown_field',
    `Unknown ${noun}${names.length > 1 ? 's' : ''}: ${names.join(', ')}. Known ${noun}s: ${listed}.`,
    unknownUses.map((use) => ({ path: use.path, message: `"${use.field}" is not a ${noun} of the table` })),
  );
}
