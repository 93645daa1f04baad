import type { Knex } from 'knex';

// Data endpoints: named source/destination targets reached through a workspace's plugin
// installation. The composite foreign key keeps an endpoint on its own workspace's installation.
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('data_endpoints', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.uuid('workspace_id').notNullable().references('workspaces.id').onDelete('CASCADE');
    t.uuid('plugin_installation_id').notNullable();
    t.foreign(['workspace_id', 'plugin_installation_id']).references(['workspace_id', 'id']).inTable('plugin_installations');
    t.text('name').notNullable();
    t.text('namespace').notNullable();
    t.text('role').notNullable();
    t.text('contract_kind').notNullable();
    t.jsonb('target').notNullable();
    t.jsonb('schema_hints');
    t.text('freshness');
    t.text('owner_team');
    t.text('trust_rank');
    t.text('description');
    t.specificType('accepts', 'text[]').notNullable().defaultTo('{}');
    t.specificType('emits', 'text[]').notNullable().defaultTo('{}');
    t.uuid('created_by_member_id').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.unique(['workspace_id', 'namespace', 'name']);
    t.unique(['workspace_id', 'id']);
    t.index(['workspace_id', 'created_at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('data_endpoints');
}
