import type { Knex } from 'knex';

// Stripe billing: the workspace's customer and subscription, invoices as Stripe reports them,
// and the webhook events already handled (a replayed event id is a no-op).
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('workspaces', (t) => {
    t.text('stripe_customer_id').index();
    t.text('stripe_subscription_id');
  });
  await knex.schema.createTable('invoices', (t) => {
    t.text('id').primary();
    t.uuid('workspace_id').notNullable().references('workspaces.id').onDelete('CASCADE');
    t.text('status').notNullable();
    t.decimal('amount_due', 24, 2).notNullable();
    t.decimal('amount_paid', 24, 2).notNullable();
    t.text('currency').notNullable();
    t.text('hosted_invoice_url');
    t.timestamp('period_start', { useTz: true });
    t.timestamp('period_end', { useTz: true });
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['workspace_id', 'period_start']);
  });
  await knex.schema.createTable('stripe_events', (t) => {
    t.text('id').primary();
    t.text('type').notNullable();
    t.uuid('workspace_id');
    t.timestamp('received_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('stripe_events');
  await knex.schema.dropTable('invoices');
  await knex.schema.alterTable('workspaces', (t) => {
    t.dropColumn('stripe_customer_id');
    t.dropColumn('stripe_subscription_id');
  });
}
