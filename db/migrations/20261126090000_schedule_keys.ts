import type { Knex } from 'knex';

// A schedule's launches act as the key that created the schedule, checked again at every launch
// (revoked, expired, restricted or memberless keys fail the launch with the reason recorded).
// Schedules made before this have no key: their launches keep acting as their creating member.

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('pipeline_schedules', (t) => {
    t.uuid('created_by_api_key_id').nullable().references('id').inTable('api_keys');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('pipeline_schedules', (t) => {
    t.dropColumn('created_by_api_key_id');
  });
}
