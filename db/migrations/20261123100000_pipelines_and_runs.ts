import type { Knex } from 'knex';

// Pipelines (versioned graphs with branches and per-member drafts) and their runs. Runs keep a
// snapshot of the document they executed and no foreign key to the pipeline, so deleting a
// pipeline leaves its run history readable. Staging tables hold a run's records between the
// source reads and the one commit that makes them visible.
export async function up(knex: Knex): Promise<void> {
  const timestamps = (t: Knex.CreateTableBuilder, ...names: string[]) => {
    for (const name of names) t.timestamp(name, { useTz: true }).notNullable().defaultTo(knex.fn.now());
  };

  await knex.schema.createTable('pipelines', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.uuid('workspace_id').notNullable().references('workspaces.id').onDelete('CASCADE');
    t.uuid('project_id').notNullable();
    t.foreign(['workspace_id', 'project_id']).references(['workspace_id', 'id']).inTable('projects').onDelete('CASCADE');
    t.text('name').notNullable();
    t.text('description').notNullable().defaultTo('');
    t.specificType('tags', 'text[]').notNullable().defaultTo('{}');
    t.uuid('active_version_id');
    t.uuid('created_by_member_id').notNullable();
    timestamps(t, 'created_at', 'updated_at');
    t.unique(['project_id', 'name']);
    t.index(['project_id', 'created_at']);
  });

  await knex.schema.createTable('pipeline_versions', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.uuid('pipeline_id').notNullable().references('pipelines.id').onDelete('CASCADE');
    t.uuid('workspace_id').notNullable();
    t.integer('number').notNullable();
    t.text('branch_name').notNullable();
    t.uuid('parent_version_id');
    t.jsonb('document').notNullable();
    // Endpoints the document names: endpoint deletion looks here (GIN) instead of scanning documents.
    t.specificType('endpoint_ids', 'uuid[]').notNullable().defaultTo('{}');
    t.text('commit_message');
    t.uuid('created_by_member_id').notNullable();
    timestamps(t, 'created_at');
    t.unique(['pipeline_id', 'number']);
  });
  await knex.raw('CREATE INDEX pipeline_versions_endpoint_ids ON pipeline_versions USING gin (endpoint_ids)');

  await knex.schema.createTable('pipeline_branches', (t) => {
    t.uuid('pipeline_id').notNullable().references('pipelines.id').onDelete('CASCADE');
    t.text('name').notNullable();
    t.uuid('head_version_id').notNullable().references('pipeline_versions.id');
    t.uuid('created_by_member_id').notNullable();
    timestamps(t, 'created_at', 'updated_at');
    t.primary(['pipeline_id', 'name']);
  });

  await knex.schema.createTable('pipeline_drafts', (t) => {
    t.uuid('pipeline_id').notNullable().references('pipelines.id').onDelete('CASCADE');
    t.uuid('member_id').notNullable();
    t.uuid('workspace_id').notNullable();
    t.jsonb('document').notNullable();
    t.jsonb('workspace_state');
    t.uuid('based_on_version_id');
    t.specificType('endpoint_ids', 'uuid[]').notNullable().defaultTo('{}');
    timestamps(t, 'updated_at');
    t.primary(['pipeline_id', 'member_id']);
  });

  await knex.schema.createTable('pipeline_positions', (t) => {
    t.uuid('pipeline_id').notNullable().references('pipelines.id').onDelete('CASCADE');
    t.text('node_id').notNullable();
    t.uuid('endpoint_id').notNullable();
    t.jsonb('position').notNullable();
    t.uuid('run_id').notNullable();
    timestamps(t, 'updated_at');
    t.primary(['pipeline_id', 'node_id']);
  });

  await knex.schema.createTable('pipeline_runs', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.uuid('workspace_id').notNullable().references('workspaces.id').onDelete('CASCADE');
    t.uuid('project_id').notNullable();
    t.uuid('pipeline_id').notNullable();
    t.text('pipeline_name').notNullable();
    t.uuid('version_id').notNullable();
    t.integer('version_number').notNullable();
    t.jsonb('document').notNullable();
    t.text('trigger').notNullable().checkIn(['api', 'schedule']);
    t.uuid('schedule_id');
    t.uuid('actor_member_id').notNullable();
    t.uuid('api_key_id');
    t.text('status').notNullable().checkIn(['queued', 'running', 'succeeded', 'failed', 'canceled']);
    t.text('workflow_id').notNullable();
    t.timestamp('sync_time', { useTz: true });
    timestamps(t, 'queued_at');
    t.timestamp('started_at', { useTz: true });
    t.timestamp('finished_at', { useTz: true });
    t.jsonb('warnings').notNullable().defaultTo('[]');
    t.jsonb('error');
    t.index(['pipeline_id', 'status', 'queued_at']);
    t.index(['workspace_id', 'project_id', 'queued_at']);
  });

  await knex.schema.createTable('pipeline_run_nodes', (t) => {
    t.uuid('run_id').notNullable().references('pipeline_runs.id').onDelete('CASCADE');
    t.text('node_id').notNullable();
    t.text('node_type').notNullable();
    t.text('status').notNullable().defaultTo('pending').checkIn(['pending', 'running', 'succeeded', 'failed', 'canceled']);
    // The activity attempt that owns this node's staging: a later attempt fences out an earlier one.
    t.integer('attempt').notNullable().defaultTo(0);
    t.bigInteger('records_in').notNullable().defaultTo(0);
    t.bigInteger('records_out').notNullable().defaultTo(0);
    t.integer('pages').notNullable().defaultTo(0);
    t.text('stop_reason');
    t.jsonb('window');
    t.jsonb('warnings').notNullable().defaultTo('[]');
    // Sources only: records in and out of every node downstream of this source, so nodes fed by
    // several sources sum what each source's read delivered.
    t.jsonb('flow').notNullable().defaultTo('{}');
    // Where this source's position moves when the run commits (null: it does not move).
    t.jsonb('next_position');
    t.timestamp('started_at', { useTz: true });
    t.timestamp('finished_at', { useTz: true });
    t.primary(['run_id', 'node_id']);
  });

  // Records read by a run, staged per destination until the commit; page and ordinal identify a
  // record's place in its source read, so re-reading a page after a retry replaces, never doubles.
  await knex.schema.createTable('pipeline_run_rows', (t) => {
    t.uuid('run_id').notNullable().references('pipeline_runs.id').onDelete('CASCADE');
    t.text('node_id').notNullable();
    t.text('source_node_id').notNullable();
    t.integer('page').notNullable();
    t.integer('ordinal').notNullable();
    t.text('row_key');
    t.jsonb('data').notNullable();
    t.primary(['run_id', 'node_id', 'source_node_id', 'page', 'ordinal']);
  });

  // Keys a dedupe node has passed in this run, with the record that passed first.
  await knex.schema.createTable('pipeline_run_keys', (t) => {
    t.uuid('run_id').notNullable().references('pipeline_runs.id').onDelete('CASCADE');
    t.text('node_id').notNullable();
    t.text('key').notNullable();
    t.text('source_node_id').notNullable();
    t.integer('page').notNullable();
    t.integer('ordinal').notNullable();
    t.primary(['run_id', 'node_id', 'key']);
  });

  await knex.schema.createTable('pipeline_schedules', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.uuid('workspace_id').notNullable().references('workspaces.id').onDelete('CASCADE');
    t.uuid('project_id').notNullable();
    t.uuid('pipeline_id').notNullable().references('pipelines.id').onDelete('CASCADE');
    t.jsonb('spec').notNullable();
    t.text('temporal_schedule_id').notNullable().unique();
    t.uuid('created_by_member_id').notNullable();
    timestamps(t, 'created_at');
  });
}

export async function down(knex: Knex): Promise<void> {
  for (const table of ['pipeline_schedules', 'pipeline_run_keys', 'pipeline_run_rows', 'pipeline_run_nodes', 'pipeline_runs', 'pipeline_positions', 'pipeline_drafts', 'pipeline_branches', 'pipeline_versions', 'pipelines']) {
    await knex.schema.dropTableIfExists(table);
  }
}
