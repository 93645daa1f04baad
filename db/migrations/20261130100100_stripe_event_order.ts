import type { Knex } from 'knex';

// Stripe delivers webhook events in no particular order and may repeat them (services/usage/billing.ts).
// Each subscription and invoice keeps the Stripe time of the state applied to it and the event that
// brought it, so an older event arriving late changes nothing. A workspace's plan follows its newest
// subscription that pays; a canceled subscription never comes back. The subscription a workspace is
// on today is recorded as active, so an event about another one does not move it to free.
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('stripe_subscriptions', (t) => {
    t.text('id').primary();
    t.uuid('workspace_id').notNullable().references('workspaces.id').onDelete('CASCADE');
    t.text('status').notNullable();
    // When the subscription began at Stripe (its `created`); null for one recorded before this table.
    t.timestamp('started_at', { useTz: true });
    // The `created` time and id of the last event applied to it.
    t.timestamp('state_at', { useTz: true });
    t.text('last_event_id');
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['workspace_id']);
  });
  await knex.raw(`INSERT INTO stripe_subscriptions (id, workspace_id, status)
                  SELECT stripe_subscription_id, id, 'active' FROM workspaces WHERE stripe_subscription_id IS NOT NULL`);
  await knex.schema.alterTable('invoices', (t) => {
    t.timestamp('state_at', { useTz: true });
    t.text('last_event_id');
  });
  await knex.schema.alterTable('stripe_events', (t) => {
    // applied, stale (older than the state kept), ignored (a type Weft does not act on), or no_workspace.
    t.text('outcome');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('stripe_events', (t) => t.dropColumn('outcome'));
  await knex.schema.alterTable('invoices', (t) => {
    t.dropColumn('state_at');
    t.dropColumn('last_event_id');
  });
  await knex.schema.dropTable('stripe_subscriptions');
}
