import assert from 'node:assert/strict';
import { temporalSettings } from '../../../core/temporal-config';
import { env } from '../../support/environment';

describe('The Temporal set-up', () => {
  it('registers the namespace and Weft’s search attributes from temporal.yaml', async () => {
    const { namespace, searchAttributes } = temporalSettings();
    const { customAttributes } = await env().temporal.connection.operatorService.listSearchAttributes({ namespace });
    for (const name of Object.keys(searchAttributes)) {
      assert.ok(customAttributes?.[name] !== undefined, `${name} is not registered`);
    }
    const described = await env().temporal.connection.workflowService.describeNamespace({ namespace });
    assert.equal(described.namespaceInfo?.name, namespace);
  });

  it('serves the Web UI beside a local dev server', async function () {
    const { devServer } = temporalSettings();
    if (process.env.TEMPORAL_ADDRESS !== `${devServer.ip}:${devServer.port}`) this.skip();
    const res = await fetch(`http://${devServer.ip}:${devServer.uiPort}/`);
    assert.equal(res.status, 200);
  });

  it('records the system check in the workflow history a worker completed', async () => {
    const handle = await env().temporal.workflow.start('systemCheckWorkflow', { taskQueue: env().taskQueue, workflowId: `system-check-test-${Date.now()}` });
    const result = (await handle.result()) as { databaseTime: string; workerIdentity: string };
    assert.ok(!Number.isNaN(Date.parse(result.databaseTime)));
    const history = await handle.fetchHistory();
    const kinds = (history.events ?? []).map((e) => e.eventType);
    assert.ok(kinds.length > 0);
    const description = await handle.describe();
    assert.equal(description.status.name, 'COMPLETED');
  });
});
