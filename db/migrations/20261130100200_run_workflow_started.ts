import type { Knex } from 'knex';

// When a run's workflow was found started (services/pipelines/runs.ts): set by the launch right
// after its start and by the sweep of queued runs, which starts only the runs that have none yet.
// The sweep's rows are few (queued, never started), so a partial index finds them without a scan.
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('pipeline_runs', (t) => {
    t.timestamp('workflow_started_at', { useTz: true });
  });
  await knex.raw("CREATE INDEX pipeline_runs_unstarted_idx ON pipeline_runs (queued_at) WHERE status = 'queued' AND workflow_started_at IS NULL");
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX pipeline_runs_unstarted_idx');
  await knex.schema.alterTable('pipeline_runs', (t) => {
    t.dropColumn('workflow_started_at');
  });
}
