import type { CapabilityContext, CheckResult, DiscoveredSchema, FieldDescription } from '../capability';
import { JsonSchema, validateWithSchema } from '../../core/schema-validator';
import { FieldRegistry, fieldRegistry, latestSnapshot, qualified, run, tableExists, toSnapshotInfo, workspaceSchema } from './storage';

// What a managed_table target names (a table of the workspace's schema, and its key), and what its table holds.

export const targetSchema: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['table'],
  properties: {
    table: { type: 'string', pattern: '^[a-z][a-z0-9_]{0,62}$', description: 'Table name within the workspace: lower-case letter first, then lower-case letters, digits or underscores (at most 63).' },
    primaryKey: {
      type: 'array',
      minItems: 1,
      uniqueItems: true,
      items: { type: 'string', minLength: 1, maxLength: 200 },
      description: 'Record fields identifying a record; needed for upsert. Fixed by the first write.',
    },
  },
};

export interface ManagedTarget {
  table: string;
  primaryKey: string[] | null;
}

/** Stored targets were validated on save; checking again guards older rows. Works on a copy. */
export function parseTarget(ctx: CapabilityContext, target: Record<string, unknown>): ManagedTarget {
  const { checkedTargets } = ctx.managedTables;
  const text = JSON.stringify(target);
  let checked = checkedTargets.get(text);
  if (!checked) {
    const { table, primaryKey } = validateWithSchema<{ table: string; primaryKey?: string[] }>(targetSchema, JSON.parse(text), 'managed_table target', { code: 'invalid_target' });
    if (checkedTargets.size >= 1000) checkedTargets.clear();
    checkedTargets.set(text, (checked = { table, primaryKey: primaryKey ?? null }));
  }
  // A copy: callers may keep or change theirs.
  return { table: checked.table, primaryKey: checked.primaryKey && [...checked.primaryKey] };
}

/**
 * Every field name a read of the table may use, exactly: the registry of names ever written (so
 * snapshot reads of older versions find fields later records dropped) and the primary key. A table
 * never written has no fields but the key its target declares.
 */
export function knownFields(registry: FieldRegistry | undefined, declaredKey: string[] | null): string[] {
  if (!registry) return declaredKey ?? [];
  return [...new Set([...(registry.primaryKey ?? []), ...registry.fields])];
}

/** Field names from the registry (see knownFields), types from a sample; the primary key the table was created with, or the one its target declares. */
export async function discoverSchema(ctx: CapabilityContext, rawTarget: Record<string, unknown>): Promise<DiscoveredSchema> {
  const { table, primaryKey: declaredKey } = parseTarget(ctx, rawTarget);
  const schema = workspaceSchema(ctx.installation.workspaceId);
  const registry = await fieldRegistry(ctx.managedTables.catalogs, ctx.db, schema, table);
  const primaryKey = registry ? (registry.primaryKey ?? []) : (declaredKey ?? []);
  const names = knownFields(registry, declaredKey);
  if (!registry || !names.length) return { fields: primaryKey.map((name): FieldDescription => ({ name, type: 'unknown', nullable: false })), primaryKey };
  // Names come from the registry; types are inferred from a bounded sample of current records, so discovery stays cheap on large tables.
  const { rows } = await run<{ name: string; types: string[]; present: number; total: number }>(
    ctx.db,
    `WITH sample AS (SELECT data FROM ${qualified(schema, table)} WHERE valid_to IS NULL LIMIT 1000)
     SELECT field.key AS name, array_agg(DISTINCT jsonb_typeof(field.value)) AS types, count(*) AS present, (SELECT count(*) FROM sample) AS total
     FROM sample, jsonb_each(sample.data) field GROUP BY field.key`,
  );
  const sampled = new Map(rows.map((row) => [row.name, row]));
  const fields = names.map((name): FieldDescription => {
    const key = primaryKey.includes(name);
    const seen = sampled.get(name);
    // A registered field no sampled current record has: its type is unknown, and it may be missing.
    if (!seen) return { name, type: 'unknown', nullable: !key };
    const valueTypes = seen.types.filter((type) => type !== 'null');
    const type = valueTypes.length === 0 ? 'null' : valueTypes.length === 1 ? valueTypes[0] : 'json';
    return { name, type, nullable: !key && (seen.present < seen.total || seen.types.includes('null')) };
  });
  return { fields, primaryKey };
}

/** Whether the table exists yet (its first write creates it), and its latest snapshot. */
export async function checkConnection(ctx: CapabilityContext, rawTarget: Record<string, unknown>): Promise<CheckResult> {
  const { table } = parseTarget(ctx, rawTarget);
  await ctx.db.raw('SELECT 1');
  const schema = workspaceSchema(ctx.installation.workspaceId);
  const exists = await tableExists(ctx.db, schema, table);
  const latest = exists ? await latestSnapshot(ctx.db, schema, table) : undefined;
  return {
    ok: true,
    message: exists ? `Managed table "${table}" is reachable.` : `Managed table "${table}" will be created by its first write.`,
    details: { tableExists: exists, latestSnapshot: latest ? toSnapshotInfo(latest) : null },
  };
}
