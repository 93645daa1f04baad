// Names shared by the workflows and the services that start and signal them. Pure and
// deterministic: safe in the workflow bundle.
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import { defineSignal, defineUpdate } from '@temporalio/workflow';

/** Search attributes of temporal.yaml: `temporal workflow list --query "PipelineId='…'"` finds a pipeline's runs. */
export const searchAttributeKeys = {
  WorkspaceId: defineSearchAttributeKey('WorkspaceId', SearchAttributeType.KEYWORD),
  ProjectId: defineSearchAttributeKey('ProjectId', SearchAttributeType.KEYWORD),
  PipelineId: defineSearchAttributeKey('PipelineId', SearchAttributeType.KEYWORD),
  DataEndpointId: defineSearchAttributeKey('DataEndpointId', SearchAttributeType.KEYWORD),
};

export interface RunSearchAttributes {
  workspaceId: string;
  projectId: string;
  pipelineId: string;
}

export function runSearchAttributes({ workspaceId, projectId, pipelineId }: RunSearchAttributes) {
  return [
    { key: searchAttributeKeys.WorkspaceId, value: workspaceId },
    { key: searchAttributeKeys.ProjectId, value: projectId },
    { key: searchAttributeKeys.PipelineId, value: pipelineId },
  ];
}

/** A run's workflow id derives from its Weft id, so either finds the other. */
export const runWorkflowId = (runId: string): string => `weft-run-${runId}`;
export const scheduleWorkflowIdPrefix = (scheduleId: string): string => `weft-schedule-${scheduleId}`;

/** Sent by a run that ends to the next queued run of its pipeline: its turn has come. */
export const runTurnSignal = defineSignal('runTurn');

export interface PipelineRunInput {
  runId: string;
  /** The extract activity's heartbeat timeout, when not the default 15 s (an operator setting; tests shorten it). */
  extractHeartbeatTimeoutMs?: number;
  /** The commit activity's heartbeat timeout, when not the default 30 s (an operator setting; tests shorten it). */
  commitHeartbeatTimeoutMs?: number;
}

export interface ScheduledLaunchInput {
  scheduleId: string;
}

/** A governed write waiting for approval: `temporal workflow list --query "DataEndpointId='…'"` finds an endpoint's. */
export const writeApprovalWorkflowId = (writeActionId: string): string => `weft-write-${writeActionId}`;

export function writeActionSearchAttributes({ workspaceId, projectId, dataEndpointId }: { workspaceId: string; projectId: string; dataEndpointId: string }) {
  return [
    { key: searchAttributeKeys.WorkspaceId, value: workspaceId },
    { key: searchAttributeKeys.ProjectId, value: projectId },
    { key: searchAttributeKeys.DataEndpointId, value: dataEndpointId },
  ];
}

export interface WriteApprovalInput {
  writeActionId: string;
  proposerMemberId: string;
  approvalsRequired: number;
  /** ISO time the action expires unless approved. */
  expiresAt: string;
}

export interface WriteDecision {
  memberId: string;
  /** The deciding key; null for a member deciding in the console (recorded histories all carry a key). */
  apiKeyId: string | null;
  decision: 'approve' | 'reject';
  comment: string | null;
}

/** A member's approval or rejection, carried by a workflow update; answers once the action is settled or still waits for more approvals. */
export const decideWriteUpdate = defineUpdate<{ status: string; approvals: number }, [WriteDecision]>('decide');

/** An asynchronous query result job: the workflow runs the query once and stores its rows in PostgreSQL. */
export const queryJobWorkflowId = (jobId: string): string => `weft-query-job-${jobId}`;
/** Publishing a release (validate, diff, activate); one workflow per publish request. */
export const releaseWorkflowId = (queryId: string, queryVersionId: string, requestId: string): string => `weft-release-${queryId}-${queryVersionId}-${requestId}`;

export interface PublishReleaseInput {
  queryId: string;
  queryVersionId: string;
  memberId: string;
  acknowledge: boolean;
}
