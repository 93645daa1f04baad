import type { Knex } from 'knex';

// Usage metering (SPEC 2.7, 4.2): one metered operation per billable operation (unique per
// workspace, kind and operation reference, so a retried activity or request counts once), its
// charges at the workspace's rates as exact numerics, alert settings and the alerts they raised.
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('metered_operations', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.uuid('workspace_id').notNullable().references('workspaces.id').onDelete('CASCADE');
    t.uuid('project_id');
    t.text('kind').notNullable();
    t.text('operation_ref').notNullable();
    t.uuid('parent_operation_id');
    t.uuid('actor_member_id');
    t.uuid('api_key_id');
    t.jsonb('quantities').notNullable();
    t.decimal('amount', 24, 10).notNullable();
    t.timestamp('reported_at', { useTz: true });
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.unique(['workspace_id', 'kind', 'operation_ref']);
    t.index(['workspace_id', 'created_at']);
  });
  await knex.schema.createTable('operation_charges', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.uuid('operation_id').notNullable().references('metered_operations.id').onDelete('CASCADE');
    t.text('item').notNullable();
    t.decimal('quantity', 24, 6).notNullable();
    t.decimal('unit_price', 24, 10).notNullable();
    t.decimal('amount', 24, 10).notNullable();
  });
  await knex.schema.createTable('usage_alert_settings', (t) => {
    t.uuid('workspace_id').primary().references('workspaces.id').onDelete('CASCADE');
    t.decimal('monthly_budget', 24, 10);
    t.specificType('thresholds', 'integer[]').notNullable().defaultTo('{50,80,100}');
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.schema.createTable('usage_alert_events', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.uuid('workspace_id').notNullable().references('workspaces.id').onDelete('CASCADE');
    t.text('period').notNullable();
    t.integer('threshold').notNullable();
    t.decimal('amount', 24, 10).notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.unique(['workspace_id', 'period', 'threshold']);
  });
}

export async function down(knex: Knex): Promise<void> {
  for (const table of ['usage_alert_events', 'usage_alert_settings', 'operation_charges', 'metered_operations']) await knex.schema.dropTable(table);
}
