import type { Knex } from 'knex';

// Workspaces are the tenancy boundary: every tenant-owned row carries workspace_id, and
// composite foreign keys keep a row from pointing at another workspace's resources.
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('workspaces', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.text('name').notNullable();
    t.text('plan').notNullable().defaultTo('free');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });

  await knex.schema.createTable('members', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.uuid('workspace_id').notNullable().references('workspaces.id').onDelete('CASCADE');
    t.text('name').notNullable();
    t.text('role').notNullable().checkIn(['owner', 'admin', 'member']);
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    // Removal keeps the row so keys and history can still name their creator.
    t.timestamp('removed_at', { useTz: true });
    t.unique(['workspace_id', 'id']);
  });

  await knex.schema.createTable('projects', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.uuid('workspace_id').notNullable().references('workspaces.id').onDelete('CASCADE');
    t.text('name').notNullable();
    t.text('description').notNullable().defaultTo('');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.unique(['workspace_id', 'id']);
    t.unique(['workspace_id', 'name']);
  });

  await knex.schema.createTable('api_keys', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.uuid('workspace_id').notNullable().references('workspaces.id').onDelete('CASCADE');
    t.uuid('created_by_member_id').notNullable();
    t.foreign(['workspace_id', 'created_by_member_id']).references(['workspace_id', 'id']).inTable('members');
    t.text('name').notNullable();
    // Public lookup handle; the secret itself is only ever stored as a SHA-256 digest.
    t.text('prefix').notNullable().unique();
    t.text('secret_hash').notNullable();
    t.specificType('scopes', 'text[]').notNullable();
    t.specificType('read_permissions', 'text[]').notNullable().defaultTo('{}');
    t.specificType('project_ids', 'uuid[]').notNullable().defaultTo('{}');
    t.boolean('workspace_resources').notNullable().defaultTo(false);
    t.timestamp('expires_at', { useTz: true });
    t.timestamp('revoked_at', { useTz: true });
    t.timestamp('last_used_at', { useTz: true });
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['workspace_id', 'created_at']);
  });

  await knex.schema.createTable('plugin_installations', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.uuid('workspace_id').notNullable().references('workspaces.id').onDelete('CASCADE');
    t.text('capability').notNullable();
    t.text('capability_version').notNullable();
    // Non-secret settings (base URL, allowed address classes) in clear; credentials encrypted.
    t.jsonb('settings').notNullable().defaultTo('{}');
    t.text('encrypted_credentials');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.unique(['workspace_id', 'id']);
  });

  await knex.schema.createTable('api_limit_settings', (t) => {
    t.uuid('workspace_id').primary().references('workspaces.id').onDelete('CASCADE');
    t.integer('workspace_requests').notNullable();
    t.integer('api_key_requests').notNullable();
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });

  // Idempotency-Key records. The row is inserted inside the request's transaction, so a
  // concurrent duplicate blocks on the unique key until the first commits, then replays it.
  await knex.schema.createTable('idempotency_records', (t) => {
    t.uuid('workspace_id').notNullable().references('workspaces.id').onDelete('CASCADE');
    t.uuid('api_key_id').notNullable().references('api_keys.id').onDelete('CASCADE');
    t.text('idempotency_key').notNullable();
    t.text('route').notNullable();
    t.text('request_hash').notNullable();
    t.integer('response_status');
    t.jsonb('response_body');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.primary(['workspace_id', 'api_key_id', 'idempotency_key']);
    t.index(['expires_at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  for (const table of ['idempotency_records', 'api_limit_settings', 'plugin_installations', 'api_keys', 'projects', 'members', 'workspaces']) {
    await knex.schema.dropTableIfExists(table);
  }
}
