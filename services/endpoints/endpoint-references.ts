import { bindingsOverEndpoint } from '../ontology/read-bindings';
import { pipelinesNamingEndpoint } from '../pipelines/pipelines';
import type { EndpointReferenceFinder } from './data-endpoints';

// Every kind of resource that refers to data endpoints, listed here rather than registered when its
// module happens to be imported: deleting an endpoint any of them names is refused (409
// endpoint_referenced). A new kind of reference adds its finder to this list. A function: those
// modules import data endpoints too, so the list is made when a deletion asks, not at import.

export function endpointReferenceFinders(): readonly EndpointReferenceFinder[] {
  return [pipelinesNamingEndpoint, bindingsOverEndpoint];
}
