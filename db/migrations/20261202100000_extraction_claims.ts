import type { Knex } from 'knex';

// Each execution of a run's extract activity claims its node with a claim of its own, and writes
// only while the node holds that claim. The attempt number alone fenced out earlier attempts, but
// a cluster that lost track of an attempt may start the same attempt number again; the newest
// execution must own the node then too.
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('pipeline_run_nodes', (t) => {
    t.uuid('claim');
  });
}

/** A run mid-extraction when this is rolled back fails its next page's check and is retried by Temporal, which claims the node again by attempt. */
export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('pipeline_run_nodes', (t) => {
    t.dropColumn('claim');
  });
}
