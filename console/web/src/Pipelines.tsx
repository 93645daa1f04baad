import { useEffect, useState } from 'react';
import { call, explain } from './api';
import { follow, navigate } from './router';

// Pipelines: the pipelines of every project (listPipelines, a page of each), each name a link to
// its page (Pipeline.tsx), with a Launch button each (launchRun through the console door): the run
// records the signed-in member as its actor and opens on its page, live while it runs.

/** Launches the pipeline's active version (launchRun) and opens the run's page. */
export async function launchPipeline(pipelineId: string): Promise<void> {
  const { run } = await call<{ run: { id: string } }>('POST', '/runs', { pipelineId });
  navigate(`/console/runs/${run.id}`);
}

export const pipelinePath = (projectId: string, pipelineId: string) => `/console/pipelines/${pipelineId}?project=${encodeURIComponent(projectId)}`;

interface PipelineRow {
  id: string;
  projectId: string;
  name: string;
  description: string | null;
  activeVersion: { number: number; branchName: string } | null;
}

export function PipelinesPage() {
  const [projects, setProjects] = useState<Array<{ id: string; name: string }> | undefined>(undefined);
  const [pipelines, setPipelines] = useState<PipelineRow[] | undefined>(undefined);
  const [launching, setLaunching] = useState('');
  const [error, setError] = useState('');

  useEffect(() => {
    (async () => {
      const answer = await call<{ projects: Array<{ id: string; name: string }> }>('GET', '/projects?limit=200');
      const lists = await Promise.all(answer.projects.map((p) => call<{ pipelines: PipelineRow[] }>('GET', `/projects/${p.id}/pipelines?limit=200`)));
      setProjects(answer.projects);
      setPipelines(lists.flatMap((l) => l.pipelines).sort((a, b) => a.name.localeCompare(b.name)));
    })().catch((failure: unknown) => setError(explain(failure, 'Loading pipelines failed.')));
  }, []);

  async function launch(pipeline: PipelineRow) {
    setLaunching(pipeline.id);
    setError('');
    try {
      await launchPipeline(pipeline.id);
    } catch (failure) {
      setError(explain(failure, 'Launching the pipeline failed.'));
      setLaunching('');
    }
  }

  const projectName = (id: string) => projects?.find((p) => p.id === id)?.name ?? id;
  return (
    <section>
      <h1>Pipelines</h1>
      {error && <p role="alert" className="error">{error}</p>}
      {!pipelines ? (!error && <p role="status">Loading…</p>) : (
        <table aria-label="Pipelines">
          <thead><tr><th>Pipeline</th><th>Project</th><th>Active version</th><th><span className="visually-hidden">Actions</span></th></tr></thead>
          <tbody>
            {pipelines.map((pipeline) => (
              <tr key={pipeline.id} data-pipeline={pipeline.id}>
                <td><a href={pipelinePath(pipeline.projectId, pipeline.id)} onClick={(e) => follow(e, pipelinePath(pipeline.projectId, pipeline.id))}>{pipeline.name}</a></td>
                <td>{projectName(pipeline.projectId)}</td>
                <td>{pipeline.activeVersion ? `v${pipeline.activeVersion.number} (${pipeline.activeVersion.branchName})` : 'none'}</td>
                <td>
                  <button type="button" disabled={launching !== '' || !pipeline.activeVersion} onClick={() => void launch(pipeline)}>Launch</button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
