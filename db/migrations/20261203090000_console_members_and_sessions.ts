import type { Knex } from 'knex';

// The workspace console (issue 36): members sign in with an email and a password, and a browser
// session stands for the member in the console's own routes.
// - members gain an email (unique within a workspace, compared without case), the argon2id hash of
//   a password set through an invite, and the named grants an owner or admin gives them (never
//   implied by a role). A password belongs to one membership: an admin of one workspace can set
//   the password of its own members only, never of the same person in another workspace.
// - member_invites: one-use invitations, kept only as a SHA-256 digest of their token.
// - console_sessions: a random id kept only as its SHA-256 digest; the memberships the password
//   opened and the one chosen; idle and absolute ends.
// - console_sign_in_failures: failed sign-ins by account and by client address, counted over the
//   last 15 minutes by every API process alike.
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('members', (t) => {
    t.text('email');
    t.text('password_hash');
    t.specificType('read_permissions', 'text[]').notNullable().defaultTo('{}');
    t.specificType('write_permissions', 'text[]').notNullable().defaultTo('{}');
  });
  // A removed member keeps their row (history names them) but frees their email for a new member.
  await knex.raw('CREATE UNIQUE INDEX members_workspace_email ON members (workspace_id, lower(email)) WHERE email IS NOT NULL AND removed_at IS NULL');
  await knex.raw('CREATE INDEX members_email ON members (lower(email)) WHERE email IS NOT NULL AND removed_at IS NULL');

  await knex.schema.createTable('member_invites', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.uuid('workspace_id').notNullable().references('workspaces.id').onDelete('CASCADE');
    t.uuid('member_id').notNullable();
    t.foreign(['workspace_id', 'member_id']).references(['workspace_id', 'id']).inTable('members').onDelete('CASCADE');
    t.text('token_hash').notNullable().unique();
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.timestamp('used_at', { useTz: true });
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['workspace_id', 'member_id']);
  });

  await knex.schema.createTable('console_sessions', (t) => {
    t.text('id_hash').primary();
    // The memberships the password opened (a person may be a member of several workspaces), and
    // the one the session acts as; null until the person picks one.
    t.specificType('member_ids', 'uuid[]').notNullable();
    t.uuid('member_id');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('last_active_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('ends_at', { useTz: true }).notNullable();
    t.index(['member_id']);
  });
  await knex.raw('CREATE INDEX console_sessions_member_ids ON console_sessions USING gin (member_ids)');

  await knex.schema.createTable('console_sign_in_failures', (t) => {
    t.bigIncrements('id');
    // 'account:<email>' or 'address:<ip>'
    t.text('subject').notNullable();
    t.timestamp('failed_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['subject', 'failed_at']);
  });
}

/** Rolling back forgets emails, passwords, invites and sessions: members sign in again after an invite. */
export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('console_sign_in_failures');
  await knex.schema.dropTableIfExists('console_sessions');
  await knex.schema.dropTableIfExists('member_invites');
  await knex.raw('DROP INDEX IF EXISTS members_email');
  await knex.raw('DROP INDEX IF EXISTS members_workspace_email');
  await knex.schema.alterTable('members', (t) => {
    t.dropColumn('write_permissions');
    t.dropColumn('read_permissions');
    t.dropColumn('password_hash');
    t.dropColumn('email');
  });
}
