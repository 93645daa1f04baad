import type { Knex } from 'knex';

// Governed source writes (SPEC 2.9): a write policy per endpoint, the actions proposed under it,
// the members' decisions on them, and an append-only action log. Actions and log entries keep no
// foreign key to the endpoint, so the history stays readable after the endpoint is deleted.
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('api_keys', (t) => {
    // Named write grants, the write-side counterpart of read_permissions, required by write policies.
    t.specificType('write_permissions', 'text[]').notNullable().defaultTo('{}');
  });

  await knex.schema.createTable('write_policies', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.uuid('workspace_id').notNullable().references('workspaces.id').onDelete('CASCADE');
    t.uuid('data_endpoint_id').notNullable().unique().references('data_endpoints.id').onDelete('CASCADE');
    t.specificType('allowed_operations', 'text[]').notNullable();
    // Empty: every project of the workspace may write.
    t.specificType('project_ids', 'uuid[]').notNullable().defaultTo('{}');
    t.boolean('approval_required').notNullable().defaultTo(false);
    t.integer('approvals_required').notNullable().defaultTo(0);
    t.integer('approval_timeout_seconds').notNullable().defaultTo(86400);
    t.specificType('required_read_permissions', 'text[]').notNullable().defaultTo('{}');
    t.specificType('required_write_permissions', 'text[]').notNullable().defaultTo('{}');
    t.integer('revision').notNullable().defaultTo(1);
    t.uuid('created_by_member_id').notNullable();
    t.uuid('updated_by_member_id').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });

  await knex.schema.createTable('write_actions', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.uuid('workspace_id').notNullable().references('workspaces.id').onDelete('CASCADE');
    t.uuid('data_endpoint_id').notNullable();
    t.uuid('project_id').notNullable();
    // The caller's actionId: unique in the workspace, like the idempotency key per endpoint.
    t.uuid('action_id').notNullable();
    t.text('idempotency_key').notNullable();
    // sha256 of the canonical request body: the same key with another body is a conflict.
    t.text('request_digest').notNullable();
    t.text('operation').notNullable();
    t.jsonb('input').notNullable();
    t.text('status').notNullable();
    t.integer('approvals_required').notNullable().defaultTo(0);
    t.timestamp('expires_at', { useTz: true });
    t.uuid('proposed_by_member_id').notNullable();
    t.uuid('proposed_by_api_key_id').notNullable();
    t.jsonb('snapshot_before').notNullable();
    // The dry run's change set at proposal, so approvers see what they approve.
    t.jsonb('change_preview');
    t.jsonb('snapshot_after');
    t.integer('affected');
    t.jsonb('error');
    t.text('workflow_id');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('ended_at', { useTz: true });
    t.unique(['workspace_id', 'data_endpoint_id', 'idempotency_key']);
    t.unique(['workspace_id', 'action_id']);
    t.index(['data_endpoint_id', 'created_at']);
  });

  await knex.schema.createTable('write_action_decisions', (t) => {
    t.uuid('write_action_id').notNullable().references('write_actions.id').onDelete('CASCADE');
    t.uuid('member_id').notNullable();
    t.uuid('api_key_id').notNullable();
    t.text('decision').notNullable();
    t.text('comment');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    // One decision per member: a member cannot approve twice to reach the count alone.
    t.primary(['write_action_id', 'member_id']);
  });

  await knex.schema.createTable('write_action_events', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.uuid('workspace_id').notNullable().references('workspaces.id').onDelete('CASCADE');
    t.uuid('data_endpoint_id').notNullable();
    t.uuid('write_action_id').notNullable().references('write_actions.id').onDelete('CASCADE');
    t.uuid('action_id').notNullable();
    t.text('kind').notNullable();
    t.uuid('actor_member_id');
    t.uuid('actor_api_key_id');
    t.text('idempotency_key').notNullable();
    t.jsonb('snapshot_before');
    t.jsonb('snapshot_after');
    t.jsonb('detail');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.raw('clock_timestamp()'));
    t.index(['data_endpoint_id', 'created_at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('write_action_events');
  await knex.schema.dropTable('write_action_decisions');
  await knex.schema.dropTable('write_actions');
  await knex.schema.dropTable('write_policies');
  await knex.schema.alterTable('api_keys', (t) => t.dropColumn('write_permissions'));
}
