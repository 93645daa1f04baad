import type { RouteSpec } from '../route-spec';
import { apiKeyRoutes } from './api-keys';
import { apiLimitRoutes } from './api-limits';
import { dataEndpointRoutes } from './data-endpoints';
import { healthRoutes } from './health';
import { ontologyRoutes } from './ontology';
import { readBindingRoutes } from './read-bindings';
import { sparqlRoutes } from './sparql';
import { organizationRoutes } from './organization';
import { pluginRoutes } from './plugins';
import { pipelineRoutes } from './pipelines';
import { projectRoutes } from './projects';
import { publishedQueryRoutes } from './published-queries';
import { runRoutes } from './runs';
import { sourceWriteRoutes } from './source-writes';
import { usageRoutes } from './usage';
import { billingRoutes } from './billing';

/** Every API route. The OpenAPI document and the docs page are built from this list. */
export const apiRoutes: RouteSpec[] = [
  ...healthRoutes,
  ...organizationRoutes,
  ...apiKeyRoutes,
  ...projectRoutes,
  ...apiLimitRoutes,
  ...pluginRoutes,
  ...dataEndpointRoutes,
  ...sourceWriteRoutes,
  ...pipelineRoutes,
  ...runRoutes,
  ...ontologyRoutes,
  ...readBindingRoutes,
  ...sparqlRoutes,
  ...publishedQueryRoutes,
  ...usageRoutes,
  ...billingRoutes,
] as RouteSpec[];
