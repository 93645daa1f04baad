import type { Knex } from 'knex';
import { schemaProblems } from '../../core/schema-validator';
import { findCapability } from '../../plugins';

// Guards follow the data, not the endpoint's id (issue 33): every endpoint records the data its
// target reaches (its capability's dataIdentity: a managed table of the workspace, a table of one
// remote database, an HTTP dataset's URL), and a write policy is kept per data identity, so every
// endpoint over the same data is governed by it. Named read grants stay on the bindings; the data
// guard joins them to the data through their endpoints.
//
// The identities are computed with the capabilities' code as it is at this migration; a target an
// older contract accepted but the current one refuses gets an identity of its own endpoint, so it
// aliases nothing.

// Rows come back with camelCase names (the connection's knexSnakeCaseMappers).
interface EndpointRow {
  id: string;
  target: Record<string, unknown>;
  capability: string;
  capabilityVersion: string;
  settings: Record<string, unknown>;
}

interface PolicyRow {
  id: string;
  workspaceId: string;
  dataIdentity: string;
  allowedOperations: string[];
  projectIds: string[];
  approvalRequired: boolean;
  approvalsRequired: number;
  approvalTimeoutSeconds: number;
  requiredReadPermissions: string[];
  requiredWritePermissions: string[];
}

function identityOf(row: EndpointRow): string {
  try {
    const runtime = findCapability(row.capability, row.capabilityVersion);
    const target = structuredClone(row.target);
    if (schemaProblems(runtime.definition.targetSchema, target).length) throw new Error('the target no longer fits its contract');
    return runtime.dataIdentity(target, row.settings ?? {});
  } catch {
    return `${row.capability}:endpoint:${row.id}`;
  }
}

/**
 * Two policies on endpoints that turn out to name the same data become one that allows only what
 * both allowed and asks what either asked: merging never opens a write that one of them refused.
 */
function strictest(policies: PolicyRow[]) {
  const intersect = (lists: string[][]) => lists.reduce((kept, list) => kept.filter((item) => list.includes(item)));
  const union = (lists: string[][]) => [...new Set(lists.flat())].sort();
  const restricted = policies.map((p) => p.projectIds).filter((ids) => ids.length > 0);
  const projects = restricted.length ? intersect(restricted) : [];
  return {
    // Project lists that share no project leave no project allowed: no operation then.
    allowed_operations: restricted.length && !projects.length ? [] : intersect(policies.map((p) => p.allowedOperations)),
    project_ids: projects,
    approval_required: policies.some((p) => p.approvalRequired),
    approvals_required: Math.max(...policies.map((p) => p.approvalsRequired)),
    approval_timeout_seconds: Math.min(...policies.map((p) => p.approvalTimeoutSeconds)),
    required_read_permissions: union(policies.map((p) => p.requiredReadPermissions)),
    required_write_permissions: union(policies.map((p) => p.requiredWritePermissions)),
  };
}

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('data_endpoints', (t) => {
    t.text('data_identity');
  });
  const endpoints = await knex<EndpointRow>('data_endpoints as e')
    .join('plugin_installations as i', function joinInstallation() {
      this.on('i.id', 'e.plugin_installation_id').andOn('i.workspace_id', 'e.workspace_id');
    })
    .select('e.id', 'e.target', 'i.capability', 'i.capability_version', 'i.settings');
  for (const row of endpoints) await knex('data_endpoints').where({ id: row.id }).update({ data_identity: identityOf(row as EndpointRow) });
  await knex.raw('ALTER TABLE data_endpoints ALTER COLUMN data_identity SET NOT NULL');
  await knex.schema.alterTable('data_endpoints', (t) => {
    t.index(['workspace_id', 'data_identity']);
  });

  await knex.schema.alterTable('write_policies', (t) => {
    t.text('data_identity');
    // Runs of pipelines may write data with a policy only where the policy says so (off by default).
    t.boolean('allow_pipeline_runs').notNullable().defaultTo(false);
  });
  await knex.raw(`UPDATE write_policies p SET data_identity = e.data_identity FROM data_endpoints e WHERE e.id = p.data_endpoint_id`);
  const policies = await knex<PolicyRow>('write_policies').select('*').orderBy('updated_at', 'desc');
  const byData = new Map<string, PolicyRow[]>();
  for (const policy of policies) {
    const key = `${policy.workspaceId}\n${policy.dataIdentity}`;
    byData.set(key, [...(byData.get(key) ?? []), policy]);
  }
  for (const group of byData.values()) {
    if (group.length < 2) continue;
    const [kept, ...merged] = group;
    const fields = strictest(group);
    await knex('write_policies').where({ id: kept.id }).update({
      ...fields,
      allowed_operations: knex.raw('?::text[]', [fields.allowed_operations]),
      project_ids: knex.raw('?::uuid[]', [fields.project_ids]),
      required_read_permissions: knex.raw('?::text[]', [fields.required_read_permissions]),
      required_write_permissions: knex.raw('?::text[]', [fields.required_write_permissions]),
      revision: knex.raw('revision + 1'),
    });
    await knex('write_policies').whereIn('id', merged.map((p) => p.id)).delete();
  }
  await knex.raw('ALTER TABLE write_policies ALTER COLUMN data_identity SET NOT NULL');
  // The endpoint a policy was set through may go; the policy stays with the data.
  await knex.raw('ALTER TABLE write_policies DROP CONSTRAINT write_policies_data_endpoint_id_unique');
  await knex.raw('ALTER TABLE write_policies DROP CONSTRAINT write_policies_data_endpoint_id_foreign');
  await knex.raw('ALTER TABLE write_policies ALTER COLUMN data_endpoint_id DROP NOT NULL');
  await knex.raw('ALTER TABLE write_policies ADD CONSTRAINT write_policies_data_endpoint_id_foreign FOREIGN KEY (data_endpoint_id) REFERENCES data_endpoints(id) ON DELETE SET NULL');
  await knex.schema.alterTable('write_policies', (t) => {
    t.unique(['workspace_id', 'data_identity']);
  });
}

/** Back to a policy per endpoint: a policy whose endpoint is gone is dropped; merged policies stay merged. */
export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('write_policies', (t) => {
    t.dropUnique(['workspace_id', 'data_identity']);
  });
  await knex('write_policies').whereNull('data_endpoint_id').delete();
  await knex.raw('ALTER TABLE write_policies DROP CONSTRAINT write_policies_data_endpoint_id_foreign');
  await knex.raw('ALTER TABLE write_policies ALTER COLUMN data_endpoint_id SET NOT NULL');
  await knex.raw('ALTER TABLE write_policies ADD CONSTRAINT write_policies_data_endpoint_id_foreign FOREIGN KEY (data_endpoint_id) REFERENCES data_endpoints(id) ON DELETE CASCADE');
  await knex.raw('ALTER TABLE write_policies ADD CONSTRAINT write_policies_data_endpoint_id_unique UNIQUE (data_endpoint_id)');
  await knex.schema.alterTable('write_policies', (t) => {
    t.dropColumn('data_identity');
    t.dropColumn('allow_pipeline_runs');
  });
  await knex.schema.alterTable('data_endpoints', (t) => {
    t.dropIndex(['workspace_id', 'data_identity']);
    t.dropColumn('data_identity');
  });
}
