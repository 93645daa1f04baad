import type { Knex } from 'knex';

// Whether a workspace's plan credit pauses its paid work (services/usage/usage.ts): 'plan' (it
// does), 'none' (usage is metered, nothing pauses), or NULL for the installation's default
// (WEFT_CREDIT_LIMIT, else limited only where Stripe is configured). Set by the operator
// (`admin plan set --credit-limit`). The workspaces trigger already tells processes of the change.
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('workspaces', (t) => {
    t.text('credit_limit').checkIn(['plan', 'none'], 'workspaces_credit_limit_check');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('workspaces', (t) => {
    t.dropChecks('workspaces_credit_limit_check');
    t.dropColumn('credit_limit');
  });
}
