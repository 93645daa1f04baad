import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../../../core/paths';
import { buildDir, ensureServiceBuilt, serviceSources } from '../../../scripts/build';
import { filesUnder } from '../../../scripts/kept-build';
import { SERVICE_NODE_ARGS, WORKER_NODE_ARGS } from '../../../worker/node-args';
import { env } from '../../support/environment';
import { as } from '../../support/fixtures';
import { bind, customerOntology, ontologyTenant, seededTable } from '../../support/ontology';
import { createPipeline, EventsApi, eventsSource, launch, linearDocument, pipelineTenant, tableDestination, tableRecords, waitForRun } from '../../support/pipelines';
import { BUILT_START, RunningScript, startApiScript, startScript } from '../../support/processes';
import { recordedHistories, replayFailures } from '../../support/workflow-histories';

// Production runs the build (scripts/build.ts: dist/, plain JavaScript) with plain node, which
// cannot load TypeScript: a module, a migration or a thread entry the build left out, or found
// beside the sources, fails here. The built API and worker run against this test run's PostgreSQL
// (migrated from the sources) and Temporal; while the built worker runs, the test's own worker is
// stopped, so only the built worker runs what the built API launches.

describe('The production build', function () {
  this.timeout(300_000);
  const running: RunningScript[] = [];
  let url = '';

  before(async () => {
    ensureServiceBuilt();
    const { api, url: apiUrl } = await startApiScript({}, 120_000, BUILT_START);
    running.push(api);
    url = apiUrl;
  });
  after(async () => {
    for (const script of running.splice(0)) if (script.child.exitCode === null) assert.equal(await script.stop('SIGTERM'), 0, script.output());
    await env().startWorker();
  });

  it('builds every module of the service, each relative require naming a built module, and is what the npm scripts run', () => {
    const dist = buildDir();
    for (const source of serviceSources()) {
      const built = path.join(dist, path.relative(projectRoot, source)).replace(/\.ts$/, '.js');
      assert.ok(existsSync(built), `${path.relative(projectRoot, source)} is built`);
    }
    const builtModules = filesUnder(dist, () => false).filter((file) => file.endsWith('.js'));
    for (const file of builtModules) {
      for (const [, specifier] of readFileSync(file, 'utf8').matchAll(/require\("(\.{1,2}\/[^"]*)"\)/g)) {
        const target = require.resolve(specifier, { paths: [path.dirname(file)] });
        assert.ok(target.startsWith(`${dist}${path.sep}`) && target.endsWith('.js'), `${path.relative(dist, file)} requires ${specifier}, found at ${target}`);
      }
    }
    const scripts = (JSON.parse(readFileSync(path.join(projectRoot, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
    for (const role of ['all', 'api', 'worker']) {
      const nodeArgs = role === 'worker' ? WORKER_NODE_ARGS : SERVICE_NODE_ARGS;
      assert.ok(
        scripts[role === 'all' ? 'start' : role].endsWith(`scripts/build.ts ${role} && exec node ${nodeArgs.join(' ')} ${BUILT_START} ${role}`),
        `npm's ${role} builds, then runs the build as this test does`,
      );
    }
  });

  it('serves health, readiness, an authenticated route and a SPARQL query (in its query threads) from the build', async () => {
    assert.equal((await as(null, url).get('/healthz')).status, 200);
    const ready = await as(null, url).get('/readyz');
    assert.equal(ready.status, 200, JSON.stringify(ready.body));

    const t = await ontologyTenant();
    const organization = await as(t.ws.apiKey, url).get('/api/v1/organization');
    assert.equal(organization.status, 200, JSON.stringify(organization.body));
    assert.equal(organization.body.organization.id, t.ws.workspaceId);

    const packageId = await customerOntology(t);
    const customers = await seededTable(t, [{ id: 1, full_name: 'Ada', years: 36 }, { id: 2, full_name: 'Grace', years: 45 }]);
    await bind(t, { ontologyPackageId: packageId, termId: 'Customer', dataEndpointId: customers, mapping: { subjectTemplate: 'https://example.com/customers/{id}', properties: { name: 'full_name', age: 'years' } } });
    assert.equal((await as(t.ws.apiKey).patch('/api/v1/organization/settings', { semanticConsumerMode: 'read' })).status, 200);
    const answer = await as(t.key, url).post(`${t.base}/sparql`, undefined, {
      rawBody: 'SELECT ?customer WHERE { ?customer ?property "Grace" }',
      headers: { 'Content-Type': 'application/sparql-query', Accept: 'application/sparql-results+json' },
    });
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    assert.deepEqual(answer.body.results.bindings.map((row: { customer: { value: string } }) => row.customer.value), ['https://example.com/customers/2']);
  });

  it('runs a pipeline to succeeded in the built worker, which bundles its workflows from the built JavaScript', async () => {
    await env().stopWorker();
    const worker = await startScript(BUILT_START, ['worker'], {}, /worker: polling/, 180_000);
    running.push(worker);
    const events = await new EventsApi().start();
    try {
      events.records = EventsApi.events(60);
      const t = await pipelineTenant(events.baseUrl);
      const destination = await tableDestination(t, 'built_events', ['id']);
      const pipeline = await createPipeline(t, linearDocument(await eventsSource(t, events), destination, { writeMode: 'upsert' }));
      const viaBuiltApi = { ...t, client: as(t.key, url) };
      const queued = await launch(viaBuiltApi, pipeline.id);
      const run = await waitForRun(viaBuiltApi, queued.id, undefined, 120_000);
      assert.equal(run.status, 'succeeded', JSON.stringify(run.error));
      assert.equal((await tableRecords(viaBuiltApi, destination)).length, 60);

      const history = await env().temporal.workflow.getHandle(run.workflow.workflowId).fetchHistory();
      const identities = new Set((history.events ?? []).map((event) => event.activityTaskStartedEventAttributes?.identity ?? event.workflowTaskStartedEventAttributes?.identity).filter(Boolean));
      assert.deepEqual([...identities].map((identity) => identity!.split('@')[0]), [String(worker.child.pid)], 'the built worker ran every task of the run');
    } finally {
      await events.close();
    }
  });

  it("replays every recorded history on the built worker's workflow bundle: workflows a worker of the sources started go on under the build", async () => {
    // The built module finds the bundle the built worker keeps (built from dist/), as that worker does.
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- the build's module, not the source's
    const built = require(path.join(buildDir(), 'worker', 'workflow-bundle.js')) as typeof import('../../../worker/workflow-bundle');
    const { codePath } = await built.workflowBundlePath();
    assert.ok(codePath.includes(`${path.sep}built${path.sep}`), codePath);
    assert.deepEqual(await replayFailures(codePath, recordedHistories()), []);
  });
});
