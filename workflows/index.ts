// The workflow bundle's entry point: every workflow the worker can run is exported here.
export { systemCheckWorkflow } from './system-check';
export { pipelineRunWorkflow, scheduledLaunchWorkflow } from './pipeline-run';
export { writeApprovalWorkflow } from './write-approval';
export { publishReleaseWorkflow, queryJobWorkflow } from './published-queries';
export { billingSyncWorkflow } from './billing-sync';
