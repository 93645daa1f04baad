import { getDataEndpointOperation, listDataEndpointsOperation } from '../../services/endpoints/operations';
import { listSourceWritesOperation } from '../../services/endpoints/write-operations';
import { getOntologyOperation } from '../../services/ontology/operations';
import { sparqlQueryOperation } from '../../services/ontology/sparql-operations';
import { getQueryOperation, listQueriesOperation } from '../../services/ontology/query-operations';
import { admits } from '../../services/operations/invoke';
import type { Operation } from '../../services/operations/operation';
import { getPipelineOperation, listPipelinesOperation } from '../../services/pipelines/operations';
import { getRunOperation, listRunsOperation } from '../../services/pipelines/run-operations';
import type { Principal } from '../../services/tenancy/access';
import { listApiKeysOperation } from '../../services/tenancy/api-key-operations';
import { getApiLimitsOperation } from '../../services/tenancy/api-limit-operations';
import { listMembersOperation } from '../../services/tenancy/member-operations';
import { getUsageOperation } from '../../services/usage/operations';

/**
 * The console's pages, each with the operation its job starts from: a member sees a page in the
 * navigation, and may open its route, when that operation would admit them (their role's scopes,
 * member-access.ts). No page states a rule of its own.
 */
export interface ConsolePage {
  name: string;
  path: string;
  operation: Operation;
  /** Built in this release; the others show what they will do. */
  built: boolean;
  /** A page reached from another (a run from the Runs page), not listed in the navigation. */
  inNavigation?: false;
}

export const CONSOLE_PAGES: readonly ConsolePage[] = [
  { name: 'Keys', path: '/console/keys', operation: listApiKeysOperation, built: true },
  { name: 'Members', path: '/console/members', operation: listMembersOperation, built: true },
  { name: 'Endpoints', path: '/console/endpoints', operation: listDataEndpointsOperation, built: true },
  { name: 'Endpoint', path: '/console/endpoints/:endpoint_id', operation: getDataEndpointOperation, built: true, inNavigation: false },
  { name: 'Pipelines', path: '/console/pipelines', operation: listPipelinesOperation, built: true },
  { name: 'Pipeline', path: '/console/pipelines/:pipeline_id', operation: getPipelineOperation, built: true, inNavigation: false },
  { name: 'Runs', path: '/console/runs', operation: listRunsOperation, built: true },
  { name: 'Run', path: '/console/runs/:run_id', operation: getRunOperation, built: true, inNavigation: false },
  { name: 'Writes', path: '/console/writes', operation: listSourceWritesOperation, built: true },
  { name: 'Ontology', path: '/console/ontology', operation: getOntologyOperation, built: true },
  { name: 'SPARQL', path: '/console/ontology/sparql', operation: sparqlQueryOperation, built: true, inNavigation: false },
  { name: 'Queries', path: '/console/queries', operation: listQueriesOperation, built: true },
  { name: 'Query', path: '/console/queries/:query_id', operation: getQueryOperation, built: true, inNavigation: false },
  { name: 'Usage', path: '/console/usage', operation: getUsageOperation, built: true },
  { name: 'Limits', path: '/console/limits', operation: getApiLimitsOperation, built: true },
];

export const pagesFor = (principal: Principal): ConsolePage[] => CONSOLE_PAGES.filter((page) => admits(principal, page.operation));
