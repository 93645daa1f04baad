import assert from 'node:assert/strict';
import { restartLocalPostgres } from '../../scripts/infra/postgres';
import { env } from '../support/environment';
import { request } from '../support/fixtures';
import { createPipeline, EventsApi, eventsSource, launch, linearDocument, pipelineTenant, tableDestination, tableRecords, waitForRun } from '../support/pipelines';

describe('PostgreSQL restarted mid-run', function () {
  this.timeout(10 * 60_000);
  let api: EventsApi;

  before(async function () {
    // Only the project's own cluster is restarted; an external DATABASE_URL is left alone.
    if (process.env.WEFT_LOCAL_POSTGRES !== '1') this.skip();
    api = await new EventsApi().start();
  });
  after(async () => api?.close());

  it('the run retries and finishes; /readyz answers 503 meanwhile and 200 after; every error answer is a problem, never a bare 500', async () => {
    const t = await pipelineTenant(api.baseUrl);
    api.records = EventsApi.events(1200);
    const source = await eventsSource(t, api, { pagination: { type: 'page', parameter: 'page', pageSizeParameter: 'per_page', pageSize: 20 } });
    const destination = await tableDestination(t, 'restarted_events', ['id']);
    const pipeline = await createPipeline(t, linearDocument(source, destination, { writeMode: 'upsert' }));
    api.delayMs = 50;
    const run = await launch(t, pipeline.id);
    await waitForRun(t, run.id, (r) => r.nodes[0].recordsRead >= 200, 120_000);

    const answers: Array<{ path: string; status: number; type: string; code?: string }> = [];
    const probe = async (path: string, key: string | null) => {
      const res = await request('GET', path, { key });
      answers.push({ path, status: res.status, type: res.headers.get('content-type') ?? '', code: (res.body as { code?: string })?.code });
      return res;
    };
    await restartLocalPostgres(async () => {
      const downUntil = Date.now() + 3000;
      while (Date.now() < downUntil) {
        await probe('/readyz', null);
        await probe('/api/v1/organization', t.key);
        await probe(`/api/v1/projects/${t.projectId}/pipelines`, t.key);
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    });

    const down = answers.filter((a) => a.path === '/readyz');
    assert.ok(down.length > 0 && down.every((a) => a.status === 503), `readyz while down: ${JSON.stringify(down)}`);
    for (const answer of answers) {
      assert.ok(answer.status >= 400, `${answer.path} answered ${answer.status} with the database down`);
      assert.match(answer.type, /application\/problem\+json/, `${answer.path} ${answer.status} is a problem body`);
      assert.equal(answer.status, 503, `${answer.path}: the database being away is 503, not ${answer.status} ${answer.code}`);
    }

    // Back: ready again, and the run finishes with every record once.
    let ready = 0;
    for (let i = 0; i < 150 && ready !== 200; i++) {
      ready = (await request('GET', '/readyz')).status;
      if (ready !== 200) await new Promise((resolve) => setTimeout(resolve, 200));
    }
    assert.equal(ready, 200, '/readyz is 200 once PostgreSQL is back');
    api.delayMs = 0;
    const ended = await waitForRun(t, run.id, undefined, 240_000);
    assert.equal(ended.status, 'succeeded', JSON.stringify(ended.error));
    assert.equal((await tableRecords(t, destination)).length, 1200);
    assert.equal(ended.nodes.find((n: any) => n.nodeId === 'dst').recordsWritten, 1200);
    assert.ok(env().db, 'the shared pool serves again');
  });
});
