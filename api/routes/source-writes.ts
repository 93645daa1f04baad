import { getWritePolicyOperation, putWritePolicyOperation, deleteWritePolicyOperation, getDataEndpointSnapshotOperation, submitSourceWriteOperation, listSourceWritesOperation, getSourceWriteOperation, listWriteLogOperation } from '../../services/endpoints/write-operations';
import { approveSourceWriteOperation, rejectSourceWriteOperation } from '../../services/endpoints/write-operations';
import { defineRoute } from '../route-spec';

// Governed source writes under a data endpoint (SPEC 2.9, 4.4): its write policy, the write
// route, the actions it creates with their approvals, and the action log.

const BASE = '/api/v1/data-endpoints/:endpoint_id';
const TAG = 'Governed writes';

function decisionRoute(decision: 'approve' | 'reject') {
  return defineRoute({
    method: 'post',
    path: `${BASE}/writes/:action_id/${decision}`,
    operation: decision === 'approve' ? approveSourceWriteOperation : rejectSourceWriteOperation,
    description:
      decision === 'approve'
        ? 'Needs policy:approve and a member other than the proposer; each member approves once. An approval counts while its key is active (not revoked, not expired) and holds policy:approve and its member is in the workspace, counted again when the write applies. The approval that completes the count applies the write, and the answer shows the outcome (applied, or failed with its error); short of the count the action stays pending_approval and approval.notCounted says which approvals lapsed and why.'
        : 'Needs policy:approve and a member other than the proposer. One rejection ends the action; nothing is written.',
    tag: TAG,
    errors: [{ status: 409, description: 'The action no longer waits for decisions, or this member already decided.' }, { status: 503 }],
  });
}

export const sourceWriteRoutes = [
  defineRoute({
    method: 'get',
    path: `${BASE}/write-policy`,
    operation: getWritePolicyOperation,
    tag: TAG,
  }),
  defineRoute({
    method: 'put',
    path: `${BASE}/write-policy`,
    operation: putWritePolicyOperation,
    description:
      'Which operations are allowed, which projects may write (empty: all), whether approval is needed and by how many members, the time limit for approvals, and the named read and write grants a writer’s key must hold. Only endpoints whose capability has transactional writes take a policy. Actions already waiting keep the terms they were proposed under.',
    tag: TAG,
  }),
  defineRoute({
    method: 'delete',
    path: `${BASE}/write-policy`,
    operation: deleteWritePolicyOperation,
    tag: TAG,
  }),
  defineRoute({
    method: 'get',
    path: `${BASE}/snapshot`,
    operation: getDataEndpointSnapshotOperation,
    description:
      'managed_table: the latest committed snapshot ({id: "empty", version: "0"} before the first write). postgres_table: a digest of the table’s contents (id "md5:…", version the row count), so any change by anyone moves it; computing it scans the table.',
    tag: TAG,
    errors: [{ status: 502 }],
  }),
  defineRoute({
    method: 'post',
    path: `${BASE}/writes`,
    operation: submitSourceWriteOperation,
    // Up to 500 rows of any values (SPEC 8): sized from those bounds, not the 1 MB default.
    maxJsonBytes: 16 * 1024 * 1024,
    description: [
      'Needs data:write (and data:delete for deletes), the named grants the policy requires, workspaceResources for project-restricted keys, an accountable actor, and policy:propose when the policy requires approval.',
      'Updates, deletes and dry runs show existing record values (what a condition matches, the rows before): they also need data:read and the endpoint’s named read grants (the grants of its read bindings), as reading its records does. Appends and upserts do not.',
      'An action that waits for approval is applied as the proposing key, with all of this checked again when the last approval arrives.',
      'The write applies in one transaction only if the endpoint’s current snapshot equals input.expectedSourceSnapshot; otherwise 409 snapshot_conflict names the current snapshot and nothing is written.',
      'Answers 200 with the applied action (snapshotAfter is the new snapshot), or 202 with an action in pending_approval. The same idempotencyKey with the same body returns the first outcome (a failure is returned again) without writing again; with another body it is 409 idempotency_key_reused.',
      'With ?dryRun=true nothing is written and no action is recorded: the answer is the change set the action would make against the expected snapshot.',
    ].join(' '),
    tag: TAG,
    errors: [{ status: 409, description: 'snapshot_conflict, idempotency_key_reused, action_id_taken or duplicate_key.' }, { status: 502 }, { status: 503 }],
  }),
  defineRoute({
    method: 'get',
    path: `${BASE}/writes`,
    operation: listSourceWritesOperation,
    tag: TAG,
  }),
  defineRoute({
    method: 'get',
    path: `${BASE}/writes/:action_id`,
    operation: getSourceWriteOperation,
    tag: TAG,
  }),
  decisionRoute('approve'),
  decisionRoute('reject'),
  defineRoute({
    method: 'get',
    path: `${BASE}/write-log`,
    operation: listWriteLogOperation,
    tag: TAG,
  }),
];
