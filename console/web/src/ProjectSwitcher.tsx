import { useCallback, useEffect, useState } from 'react';
import { call, explain } from './api';

// The project a per-project page works on: chosen in a labelled select of the workspace's projects
// (listProjects) and kept in the URL's ?project=, so a link or a reload keeps it.

interface ProjectSummary { id: string; name: string }

const projectInUrl = () => new URLSearchParams(window.location.search).get('project') ?? '';

/** The project in the URL (?project=), and a way to choose another that keeps the rest of the URL. */
export function useProjectParam(): [string, (projectId: string) => void] {
  const [projectId, setProjectId] = useState(projectInUrl);
  useEffect(() => {
    const changed = () => setProjectId(projectInUrl());
    window.addEventListener('popstate', changed);
    return () => window.removeEventListener('popstate', changed);
  }, []);
  const choose = useCallback((next: string) => {
    const url = new URL(window.location.href);
    url.searchParams.set('project', next);
    window.history.replaceState(null, '', url);
    setProjectId(next);
  }, []);
  return [projectId, choose];
}

/** A select labelled Project; with no project in the URL yet, the first project is chosen. */
export function ProjectSwitcher({ projectId, onChoose }: { projectId: string; onChoose(projectId: string): void }) {
  const [projects, setProjects] = useState<ProjectSummary[] | undefined>(undefined);
  const [error, setError] = useState('');
  useEffect(() => {
    call<{ projects: ProjectSummary[] }>('GET', '/projects?limit=200').then(
      (answer) => setProjects(answer.projects),
      (failure: unknown) => setError(explain(failure, 'Loading projects failed.')),
    );
  }, []);
  useEffect(() => {
    if (!projectId && projects?.length) onChoose(projects[0].id);
  }, [projectId, projects, onChoose]);
  if (error) return <p role="alert" className="error">{error}</p>;
  return (
    <label>Project
      <select value={projectId} onChange={(event) => onChoose(event.target.value)} disabled={!projects}>
        {projects?.map((project) => <option key={project.id} value={project.id}>{project.name}</option>)}
      </select>
    </label>
  );
}
