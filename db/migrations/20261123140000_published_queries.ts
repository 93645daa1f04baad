import type { Knex } from 'knex';

// Published queries (SPEC 2.5, 3.1, 3.4): definitions with a version per edit, numeric releases
// that pin a version, asynchronous result jobs whose rows live here (never in workflow history),
// and one execution record per call for metering.
export async function up(knex: Knex): Promise<void> {
  const now = () => knex.fn.now();
  await knex.schema.createTable('published_queries', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.uuid('workspace_id').notNullable().references('workspaces.id').onDelete('CASCADE');
    t.uuid('project_id').notNullable();
    t.foreign(['workspace_id', 'project_id']).references(['workspace_id', 'id']).inTable('projects').onDelete('CASCADE');
    t.text('name').notNullable();
    t.uuid('current_version_id');
    t.uuid('created_by_member_id').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(now());
    t.unique(['project_id', 'name']);
  });
  await knex.schema.createTable('query_versions', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.uuid('query_id').notNullable().references('published_queries.id').onDelete('CASCADE');
    t.integer('number').notNullable();
    t.jsonb('definition').notNullable();
    // Named read grants of the bindings the query reads, worked out when the version is saved.
    t.specificType('required_read_permissions', 'text[]').notNullable().defaultTo('{}');
    t.uuid('created_by_member_id').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(now());
    t.unique(['query_id', 'number']);
  });
  await knex.schema.createTable('query_releases', (t) => {
    t.uuid('query_id').notNullable().references('published_queries.id').onDelete('CASCADE');
    t.integer('version').notNullable();
    t.uuid('query_version_id').notNullable().references('query_versions.id');
    t.text('status').notNullable();
    t.jsonb('breaking_changes').notNullable().defaultTo('[]');
    t.uuid('published_by_member_id').notNullable();
    t.text('workflow_id');
    t.timestamp('published_at', { useTz: true }).notNullable().defaultTo(now());
    t.timestamp('retired_at', { useTz: true });
    t.primary(['query_id', 'version']);
  });
  await knex.schema.createTable('query_jobs', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.uuid('workspace_id').notNullable().references('workspaces.id').onDelete('CASCADE');
    t.uuid('project_id').notNullable();
    t.uuid('query_id').notNullable().references('published_queries.id').onDelete('CASCADE');
    t.integer('release_version').notNullable();
    t.uuid('api_key_id').notNullable();
    t.uuid('member_id').notNullable();
    t.text('status').notNullable();
    t.jsonb('input').notNullable();
    t.text('input_hash').notNullable();
    t.jsonb('rows');
    t.integer('row_count');
    t.jsonb('error');
    t.text('workflow_id').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(now());
    t.timestamp('finished_at', { useTz: true });
    t.timestamp('expires_at', { useTz: true }).notNullable();
  });
  await knex.schema.createTable('query_executions', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.uuid('workspace_id').notNullable().references('workspaces.id').onDelete('CASCADE');
    t.uuid('project_id').notNullable();
    t.uuid('query_id').notNullable();
    t.integer('release_version').notNullable();
    t.uuid('api_key_id').notNullable();
    t.uuid('member_id').notNullable();
    t.text('input_hash').notNullable();
    t.text('mode').notNullable();
    t.text('status').notNullable();
    t.integer('duration_ms');
    t.integer('row_count');
    t.uuid('job_id');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(now());
    t.index(['workspace_id', 'created_at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  for (const table of ['query_executions', 'query_jobs', 'query_releases', 'query_versions', 'published_queries']) await knex.schema.dropTable(table);
}
