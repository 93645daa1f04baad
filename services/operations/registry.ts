import { pluginOperations } from '../endpoints/plugin-operations';
import { dataEndpointOperations } from '../endpoints/operations';
import { writeApplyOperations } from '../endpoints/write-apply';
import { sourceWriteOperations } from '../endpoints/write-operations';
import { readBindingOperations } from '../ontology/binding-operations';
import { ontologyOperations } from '../ontology/operations';
import { runQueryJobOperation } from '../ontology/query-jobs';
import { queryOperations } from '../ontology/query-operations';
import { sparqlOperations } from '../ontology/sparql-operations';
import { pipelineOperations } from '../pipelines/operations';
import { launchScheduledRunOperation } from '../pipelines/pipeline-schedules';
import { commitRunOperation, extractRunSourceOperation } from '../pipelines/run-commit';
import { runOperations, toolOnlyRunOperations } from '../pipelines/run-operations';
import { publicOperations } from '../shared/health-operations';
import { openProjectConnectionOperation } from '../tenancy/connections';
import { operatorOperations } from '../tenancy/operator-operations';
import { apiKeyOperations } from '../tenancy/api-key-operations';
import { memberOperations } from '../tenancy/member-operations';
import { apiLimitOperations } from '../tenancy/api-limit-operations';
import { organizationOperations } from '../tenancy/organization-operations';
import { projectOperations } from '../tenancy/project-operations';
import { billingOperations } from '../usage/billing-operations';
import { usageOperations } from '../usage/operations';
import type { Operation } from './operation';

/**
 * Every operation of the service layer, by domain. The doors (HTTP routes, MCP tools and the MCP
 * project connection, activities acting as a key) refer to these; the access matrices cover each
 * one through a door (test/integration/api/auth-matrix.test.ts, test/integration/mcp/access-matrix.test.ts) and the OpenAPI
 * document reads them.
 */
export const operations: readonly Operation[] = [
  ...publicOperations,
  ...organizationOperations,
  ...apiKeyOperations,
  ...memberOperations,
  ...apiLimitOperations,
  ...projectOperations,
  openProjectConnectionOperation,
  ...pluginOperations,
  ...dataEndpointOperations,
  ...sourceWriteOperations,
  ...writeApplyOperations,
  ...pipelineOperations,
  ...runOperations,
  ...toolOnlyRunOperations,
  commitRunOperation,
  extractRunSourceOperation,
  launchScheduledRunOperation,
  ...ontologyOperations,
  ...readBindingOperations,
  ...sparqlOperations,
  ...queryOperations,
  runQueryJobOperation,
  ...usageOperations,
  ...billingOperations,
  ...operatorOperations,
];

export const operationsByName: ReadonlyMap<string, Operation> = new Map(operations.map((operation) => [operation.name, operation]));
