import type { Executor } from '../../db/connection';
import type { MeteredKind } from '../../db/models';

/** One metered operation with its charges, as the charge statements take it (column names). */
export interface ChargeRow {
  /** Given when the operation is answered before it is written (a leased charge); else the database's. */
  id?: string;
  /** The charge lease that answered it (services/usage/charge-leases.ts). */
  lease_id?: string;
  workspace_id: string;
  project_id: string | null;
  kind: MeteredKind;
  operation_ref: string;
  parent_operation_id: string | null;
  actor_member_id: string | null;
  api_key_id: string | null;
  quantities: Record<string, number>;
  amount: string;
  charges: Array<{ item: string; quantity: string; unit_price: string; amount: string }>;
}

export const chargeKey = (row: { workspace_id: string; kind: string; operation_ref: string }) => `${row.workspace_id}\n${row.kind}\n${row.operation_ref}`;

/** The rows of a statement's one JSON parameter, once per (workspace, kind, reference). */
export const chargeInput = (where = '') => `SELECT DISTINCT ON (workspace_id, kind, operation_ref) *
         FROM jsonb_to_recordset(?::jsonb) AS i(id uuid, lease_id uuid, workspace_id uuid, project_id uuid, kind text, operation_ref text, parent_operation_id uuid,
                                               actor_member_id uuid, api_key_id uuid, quantities jsonb, amount numeric, charges jsonb)
        ${where}`;

/**
 * The common tail of a charge statement, after a CTE named `input` (chargeInput): inserts the
 * operations and their charges, a reference metered before inserting nothing; `operations` holds
 * the inserted rows.
 */
export const INSERT_CHARGES = `operations AS (
       INSERT INTO metered_operations (id, workspace_id, project_id, kind, operation_ref, parent_operation_id, actor_member_id, api_key_id, quantities, amount)
       SELECT coalesce(id, gen_random_uuid()), workspace_id, project_id, kind, operation_ref, parent_operation_id, actor_member_id, api_key_id, quantities, amount FROM input
       ON CONFLICT (workspace_id, kind, operation_ref) DO NOTHING
       RETURNING *
     ), charges AS (
       INSERT INTO operation_charges (operation_id, item, quantity, unit_price, amount)
       SELECT o.id, c.item, c.quantity::numeric, c.unit_price::numeric, c.amount::numeric
         FROM operations o
         JOIN input i ON i.workspace_id = o.workspace_id AND i.kind = o.kind AND i.operation_ref = o.operation_ref,
              jsonb_to_recordset(i.charges) AS c(item text, quantity text, unit_price text, amount text)
     )`;

/**
 * Metered operations and their charges in one statement: atomic without a transaction of the
 * caller's. A reference metered before (or twice in the same call) inserts nothing again. Returns,
 * per row, the inserted operation's row, or undefined when it was metered before.
 */
export async function insertCharges(db: Executor, rows: ChargeRow[]): Promise<Array<Record<string, unknown> | undefined>> {
  const { rows: inserted } = await db.raw<{ rows: Array<Record<string, unknown> & { workspace_id: string; kind: string; operation_ref: string }> }>(
    `WITH input AS (${chargeInput()}), ${INSERT_CHARGES} SELECT * FROM operations`,
    [JSON.stringify(rows)],
  );
  const byKey = new Map(inserted.map((row) => [chargeKey(row), row]));
  // The first of two rows with one reference gets the insert; the second was "metered before".
  return rows.map((row) => {
    const found = byKey.get(chargeKey(row));
    byKey.delete(chargeKey(row));
    return found;
  });
}
