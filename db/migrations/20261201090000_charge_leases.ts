import type { Knex } from 'knex';

// Leased charge budgets (services/usage/charge-leases.ts). A process that meters many charges of a
// workspace outside any transaction takes a lease: a committed amount that counts as spent wherever
// credit is checked, so the process answers charges from it at once and commits their rows in
// batches, lowering the lease by what each batch carried in the same statement. Metered plus leased
// therefore never drops below what was answered. A lease whose holder stopped renewing it (a crash)
// is billed as one operation for its remainder (ref `lease:<id>`) by any process's sweep.

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('charge_leases', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.uuid('workspace_id').notNullable().references('workspaces.id').onDelete('CASCADE');
    // The kind the lease answers; its remainder is billed as this kind.
    t.text('kind').notNullable();
    // host:pid:instance of the process that holds it, for an operator reading the table.
    t.text('holder').notNullable();
    t.decimal('remaining', 24, 10).notNullable();
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['workspace_id']);
    t.index(['expires_at']);
  });
  // Takes a lease (p_lease_id null) or adds to one. With p_included_credit (a credit-limited plan),
  // grants at most what the month's charges and every outstanding lease leave of it, one grant of
  // the workspace at a time; the sum is one statement, so a batch moving an amount from a lease to
  // its charges is seen on one side or the other, never neither.
  await knex.raw(`
    CREATE FUNCTION weft_take_charge_lease(
      p_lease_id uuid, p_workspace_id uuid, p_kind text, p_holder text, p_want numeric, p_included_credit numeric, p_month_start timestamptz, p_ttl_ms integer
    ) RETURNS TABLE (outcome text, lease_id uuid, granted numeric) LANGUAGE plpgsql AS $$
    DECLARE
      room numeric := p_want;
    BEGIN
      IF p_included_credit IS NOT NULL THEN
        PERFORM pg_advisory_xact_lock(hashtextextended('weft_charge_lease:' || p_workspace_id, 0));
        SELECT least(p_want, p_included_credit
                 - (SELECT coalesce(sum(m.amount), 0) FROM metered_operations m WHERE m.workspace_id = p_workspace_id AND m.created_at >= p_month_start)
                 - (SELECT coalesce(sum(l.remaining), 0) FROM charge_leases l WHERE l.workspace_id = p_workspace_id))
          INTO room;
      END IF;
      lease_id := p_lease_id;
      granted := 0;
      IF room <= 0 THEN
        outcome := 'no_credit';
        RETURN NEXT;
        RETURN;
      END IF;
      IF p_lease_id IS NULL THEN
        INSERT INTO charge_leases (workspace_id, kind, holder, remaining, expires_at)
        VALUES (p_workspace_id, p_kind, p_holder, room, clock_timestamp() + p_ttl_ms * interval '1 millisecond')
        RETURNING id INTO lease_id;
      ELSE
        UPDATE charge_leases l SET remaining = l.remaining + room, expires_at = clock_timestamp() + p_ttl_ms * interval '1 millisecond'
         WHERE l.id = p_lease_id
        RETURNING l.id INTO lease_id;
        IF lease_id IS NULL THEN
          -- Swept as expired (its remainder billed): the holder drops it.
          outcome := 'gone';
          RETURN NEXT;
          RETURN;
        END IF;
      END IF;
      outcome := 'granted';
      granted := room;
      RETURN NEXT;
    END $$`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP FUNCTION IF EXISTS weft_take_charge_lease(uuid, uuid, text, text, numeric, numeric, timestamptz, integer)');
  await knex.schema.dropTable('charge_leases');
}
