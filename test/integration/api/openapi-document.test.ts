import assert from 'node:assert/strict';
import SwaggerParser from '@apidevtools/swagger-parser';
import { request } from '../../support/fixtures';
import { listCapabilities } from '../../../plugins';

describe('The OpenAPI document', () => {
  it('is a valid OpenAPI 3.1 document by an independent validator', async () => {
    const res = await request('GET', '/api/v1/openapi.json');
    // validate() dereferences in place; give it a copy.
    await SwaggerParser.validate(structuredClone(res.body));
  });

  it('publishes every capability target schema beside the routes', async () => {
    const { body } = await request('GET', '/api/v1/openapi.json');
    for (const { definition } of listCapabilities()) {
      const schema = body.components.schemas[`Target.${definition.name}`];
      assert.ok(schema, `Target.${definition.name} is missing`);
      assert.deepEqual(Object.keys(schema.properties).sort(), Object.keys(definition.targetSchema.properties as object).sort());
    }
  });

  it('documents the error statuses of the records read, with the problem schema', async () => {
    const { body } = await request('GET', '/api/v1/openapi.json');
    const read = body.paths['/api/v1/data-endpoints/{endpoint_id}/records'].get;
    assert.deepEqual(read['x-weft-scopes'], ['data:read']);
    for (const status of ['200', '401', '403', '404', '422', '429']) assert.ok(read.responses[status], `missing ${status}`);
    assert.equal(read.responses['422'].content['application/problem+json'].schema.$ref, '#/components/schemas/Problem');
  });
});
