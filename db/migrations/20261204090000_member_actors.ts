import type { Knex } from 'knex';

// Work a member starts in the console (issue 36) records the member as its actor: a run, an async
// query job, a governed write and an approval keep the member and no key, and are rechecked later
// as that member (services/tenancy/actors.ts).
// - pipeline_runs.actor_kind: 'key' (every run so far: acted as api_key_id, and a run without one,
//   launched by a schedule made before schedules had keys, stays refused) or 'member' (acted as
//   actor_member_id). Its api_key_id was nullable already.
// - the key columns of write actions, decisions, query jobs and executions become nullable: null is
//   a member's (they were required, so no existing row is ambiguous).
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('pipeline_runs', (t) => {
    t.text('actor_kind').notNullable().defaultTo('key');
  });
  await knex.raw("ALTER TABLE pipeline_runs ADD CONSTRAINT pipeline_runs_actor_kind CHECK (actor_kind = 'key' OR (actor_kind = 'member' AND api_key_id IS NULL))");
  await knex.schema.alterTable('write_actions', (t) => t.uuid('proposed_by_api_key_id').nullable().alter());
  await knex.schema.alterTable('write_action_decisions', (t) => t.uuid('api_key_id').nullable().alter());
  await knex.schema.alterTable('query_jobs', (t) => t.uuid('api_key_id').nullable().alter());
  await knex.schema.alterTable('query_executions', (t) => t.uuid('api_key_id').nullable().alter());
}

export async function down(knex: Knex): Promise<void> {
  // Work members started has no key to fall back to: it goes with the columns' old rule.
  await knex('pipeline_runs').where({ actorKind: 'member' }).delete();
  await knex('write_actions').whereNull('proposedByApiKeyId').delete();
  await knex('write_action_decisions').whereNull('apiKeyId').delete();
  await knex('query_jobs').whereNull('apiKeyId').delete();
  await knex('query_executions').whereNull('apiKeyId').delete();
  await knex.schema.alterTable('query_executions', (t) => t.uuid('api_key_id').notNullable().alter());
  await knex.schema.alterTable('query_jobs', (t) => t.uuid('api_key_id').notNullable().alter());
  await knex.schema.alterTable('write_action_decisions', (t) => t.uuid('api_key_id').notNullable().alter());
  await knex.schema.alterTable('write_actions', (t) => t.uuid('proposed_by_api_key_id').notNullable().alter());
  await knex.raw('ALTER TABLE pipeline_runs DROP CONSTRAINT pipeline_runs_actor_kind');
  await knex.schema.alterTable('pipeline_runs', (t) => t.dropColumn('actor_kind'));
}
