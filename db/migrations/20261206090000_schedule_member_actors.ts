import type { Knex } from 'knex';

// A schedule a member makes in the console (issue 36) launches as that member, rechecked at every
// launch as runs a member starts are (services/tenancy/actors.ts).
// - pipeline_schedules.actor_kind: 'key' (every schedule so far: launches as created_by_api_key_id,
//   and one without a key, made before schedules had keys, stays refused) or 'member' (launches as
//   created_by_member_id, with no key).
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('pipeline_schedules', (t) => {
    t.text('actor_kind').notNullable().defaultTo('key');
  });
  await knex.raw("ALTER TABLE pipeline_schedules ADD CONSTRAINT pipeline_schedules_actor_kind CHECK (actor_kind = 'key' OR (actor_kind = 'member' AND created_by_api_key_id IS NULL))");
}

export async function down(knex: Knex): Promise<void> {
  // A member's schedule has no key to fall back to: it would be refused as a keyless one.
  await knex('pipeline_schedules').where({ actorKind: 'member' }).delete();
  await knex.raw('ALTER TABLE pipeline_schedules DROP CONSTRAINT pipeline_schedules_actor_kind');
  await knex.schema.alterTable('pipeline_schedules', (t) => t.dropColumn('actor_kind'));
}
