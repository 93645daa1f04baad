import { FormEvent, useCallback, useEffect, useMemo, useState } from 'react';
import { call, explain, fieldProblems, Session } from './api';
import { FailureAlert } from './FailureAlert';
import { Pager, type Pagination } from './Pager';
import { GraphDocument, GraphNode, PipelineGraph } from './PipelineGraph';
import { launchPipeline } from './Pipelines';
import { useProjectParam } from './ProjectSwitcher';
import { follow } from './router';
import { cellText } from './RowsTable';
import { useAnswer } from './useAnswer';

// A pipeline's page: its graph drawn (getPipeline, or a version of listPipelineVersions) with the
// settings of the node selected; its versions, the active one marked, and activating another
// (activatePipelineVersion); its branches (createPipelineBranch); your draft as a JSON editor
// (getPipelineDraft, savePipelineDraft, validatePipelineDraft) with the problems validation or a
// commit (commitPipelineVersion) reports, by node; launching (launchRun); and its schedules, made,
// paused, resumed and deleted (the operations of the MCP pipeline_schedule_* tools). Each control
// is offered only when the member's role admits its operation (the session's operations); the
// server decides regardless.

interface VersionSummary { id: string; number: number; branchName: string; commitMessage: string | null; createdAt: string }
interface Version extends VersionSummary { document: GraphDocument }
interface Branch { name: string; headVersionId: string; createdAt: string }
interface Pipeline {
  id: string;
  projectId: string;
  name: string;
  description: string;
  tags: string[];
  activeVersionId: string | null;
  activeVersion: VersionSummary | null;
  document: GraphDocument | null;
}
interface Draft { document: GraphDocument; basedOnVersionId: string | null; saved: boolean; updatedAt: string | null }
interface PipelineProblem { path?: string; message: string; nodeId?: string }
interface Schedule { id: string; spec: { intervalSeconds?: number; cron?: string; paused?: boolean }; createdAt: string; actor: { kind: string } }

const VERSIONS_PER_PAGE = 20;
const when = (value: string) => new Date(value).toLocaleString();

/** A section's changes: one at a time (busy), and the last one's refusal, shown until the next. */
function useAction() {
  const [busy, setBusy] = useState(false);
  const [failure, setFailure] = useState<unknown>(undefined);
  const run = useCallback(async (work: () => Promise<void>, refused?: (failure: unknown) => void) => {
    setBusy(true);
    setFailure(undefined);
    try {
      await work();
    } catch (error) {
      refused?.(error);
      setFailure(error);
    } finally {
      setBusy(false);
    }
  }, []);
  return { busy, failure, run };
}

/**
 * The problems a commit's refusal names, located as validation's are: paths within the document,
 * each under /nodes/{i} with that node's id (the body's schema check names none).
 */
function locatedProblems(failure: unknown, sent: unknown): PipelineProblem[] {
  const nodes = (sent as { nodes?: Array<{ id?: unknown }> } | undefined)?.nodes;
  return (fieldProblems(failure) as PipelineProblem[]).filter((p) => p.path?.startsWith('/document')).map((problem) => {
    const path = problem.path!.replace(/^\/document/, '');
    const id = nodes?.[Number(/^\/nodes\/(\d+)/.exec(path)?.[1] ?? NaN)]?.id;
    return { ...problem, path, ...(problem.nodeId === undefined && typeof id === 'string' ? { nodeId: id } : {}) };
  });
}

/** The node's settings as a list: every field but its id and type, values as JSON unless text. */
function NodeSettings({ node, problems }: { node: GraphNode | undefined; problems?: PipelineProblem[] }) {
  if (!node) return <p className="muted">Select a node to see its settings.</p>;
  const settings = Object.entries(node).filter(([name]) => name !== 'id' && name !== 'type');
  return (
    <div>
      <h3>{node.id} <span className="muted">({String(node.type)})</span></h3>
      {settings.length === 0 ? <p className="muted">No settings.</p> : (
        <dl className="facts" aria-label={`Settings of ${node.id}`}>
          {settings.map(([name, value]) => [<dt key={`${name}-name`}>{name}</dt>, <dd key={`${name}-value`}><code>{cellText(value)}</code></dd>])}
        </dl>
      )}
      {problems && problems.length > 0 && <ProblemList label={`Problems of ${node.id}`} problems={problems} />}
    </div>
  );
}

function ProblemList({ label, problems }: { label: string; problems: PipelineProblem[] }) {
  return <ul aria-label={label} className="error">{problems.map((problem, i) => <li key={i}>{problem.path ? <code>{problem.path}</code> : null}{problem.path ? ': ' : ''}{problem.message}</li>)}</ul>;
}

/** Problems by the node they concern, and those of the document as a whole. */
function ProblemsByNode({ problems }: { problems: PipelineProblem[] }) {
  const nodes = [...new Set(problems.flatMap((p) => (p.nodeId ? [p.nodeId] : [])))];
  const general = problems.filter((p) => !p.nodeId);
  return (
    <div>
      <p role="status" aria-label="Draft validity" className="error">{problems.length === 1 ? '1 problem' : `${problems.length} problems`}</p>
      {nodes.map((nodeId) => (
        <div key={nodeId}>
          <strong>{nodeId}</strong>
          <ProblemList label={`Problems of ${nodeId}`} problems={problems.filter((p) => p.nodeId === nodeId)} />
        </div>
      ))}
      {general.length > 0 && <><strong>The document</strong><ProblemList label="Problems of the document" problems={general} /></>}
    </div>
  );
}

/** The text as a document to draw, or undefined when it is not JSON with nodes and edges. */
function parsedDocument(text: string): GraphDocument | undefined {
  try {
    const value = JSON.parse(text) as Partial<GraphDocument>;
    if (!Array.isArray(value?.nodes) || !Array.isArray(value.edges)) return undefined;
    const nodes = value.nodes.filter((node): node is GraphNode => typeof node?.id === 'string');
    return { nodes, edges: value.edges.filter((edge) => typeof edge?.from === 'string' && typeof edge?.to === 'string') };
  } catch {
    return undefined;
  }
}

function DraftEditor({ base, session, branches, onCommitted }: { base: string; session: Session; branches: Branch[]; onCommitted(): void }) {
  const may = (operation: string) => session.operations.includes(operation);
  const draft = useAnswer<{ draft: Draft }>(base ? `${base}/draft` : undefined);
  const [text, setText] = useState<string | undefined>(undefined);
  const [problems, setProblems] = useState<PipelineProblem[] | undefined>(undefined);
  const [selected, setSelected] = useState<string | undefined>(undefined);
  const [note, setNote] = useState('');
  const { busy, failure, run } = useAction();

  useEffect(() => {
    if (draft.answer && text === undefined) setText(JSON.stringify(draft.answer.draft.document, null, 2));
  }, [draft.answer, text]);
  const document = useMemo(() => (text === undefined ? undefined : parsedDocument(text)), [text]);

  /** The editor's document, or undefined (with the reason shown) when it is not JSON. */
  function documentToSend(): unknown {
    try {
      return JSON.parse(text ?? '');
    } catch (error) {
      setNote(`The draft is not JSON: ${(error as Error).message}`);
      return undefined;
    }
  }

  const act = (work: () => Promise<void>, refused?: (failure: unknown) => void) => {
    setNote('');
    return run(work, refused);
  };

  const validate = async () => {
    const result = await call<{ valid: boolean; problems: PipelineProblem[] }>('POST', `${base}/draft/validate`);
    setProblems(result.problems);
  };

  const save = () => {
    const sent = documentToSend();
    if (sent === undefined) return undefined;
    return act(async () => {
      await call('PUT', `${base}/draft`, { document: sent });
      setNote('Draft saved.');
      draft.reload();
      if (may('validatePipelineDraft')) await validate();
    });
  };

  const commit = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const message = String(form.get('commitMessage') ?? '').trim();
    const sent = documentToSend();
    if (sent === undefined) return undefined;
    return act(async () => {
      // What is committed is the draft as saved: the editor's document is saved first.
      await call('PUT', `${base}/draft`, { document: sent });
      draft.reload();
      const { version } = await call<{ version: VersionSummary }>('POST', `${base}/versions`, { document: sent, branchName: String(form.get('branchName') ?? 'main'), ...(message ? { commitMessage: message } : {}) });
      setProblems([]);
      setNote(`Committed v${version.number} on ${version.branchName}.`);
      onCommitted();
    }, (refusal) => {
      // A document with problems is refused with each of them: shown by node, as validation's.
      const located = locatedProblems(refusal, sent);
      if (located.length) setProblems(located);
    });
  };

  if (draft.failure && !draft.answer) return <p role="alert" className="error">{explain(draft.failure, 'Loading your draft failed.')}</p>;
  if (text === undefined) return <p role="status">Loading…</p>;
  const faulty = new Set((problems ?? []).flatMap((p) => (p.nodeId ? [p.nodeId] : [])));
  const canSave = may('savePipelineDraft');
  return (
    <>
      <p className="muted">{draft.answer?.draft.saved ? `Saved ${when(draft.answer.draft.updatedAt!)}.` : 'Not saved yet: it starts from the active version.'} A draft is yours alone and may be unfinished; launches run the active version.</p>
      <label>Draft document
        <textarea className="document" value={text} readOnly={!canSave} spellCheck={false} onChange={(event) => setText(event.target.value)} />
      </label>
      {document ? (
        <div className="split">
          <PipelineGraph label="Graph of your draft" document={document} selected={selected} faulty={faulty} onSelect={setSelected} />
          <div role="region" aria-label="Draft node settings">
            <NodeSettings node={document.nodes.find((node) => node.id === selected)} problems={problems?.filter((p) => p.nodeId === selected)} />
          </div>
        </div>
      ) : <p className="muted">The draft is not a document with nodes and edges yet.</p>}
      <div className="row">
        {canSave && <button type="button" disabled={busy} onClick={() => void save()}>Save draft</button>}
        {may('validatePipelineDraft') && <button type="button" disabled={busy} onClick={() => void act(validate)}>Validate</button>}
      </div>
      {note && <p role="status" aria-label="Draft">{note}</p>}
      <FailureAlert failure={failure} fallback="The draft could not be saved." />
      <div role="region" aria-label="Draft problems">
        {problems !== undefined && (problems.length === 0 ? <p role="status" aria-label="Draft validity">The draft is valid.</p> : <ProblemsByNode problems={problems} />)}
      </div>
      {may('commitPipelineVersion') && (
        <form onSubmit={(event) => void commit(event)} className="card">
          <label>Commit message<input name="commitMessage" maxLength={2000} /></label>
          <label>Branch
            <select name="branchName" defaultValue="main">{branches.map((branch) => <option key={branch.name} value={branch.name}>{branch.name}</option>)}</select>
          </label>
          <button type="submit" disabled={busy}>Commit draft</button>
        </form>
      )}
    </>
  );
}

function Schedules({ base, session }: { base: string; session: Session }) {
  const may = (operation: string) => session.operations.includes(operation);
  const schedules = useAnswer<{ schedules: Schedule[] }>(`${base}/schedules`);
  const [deleting, setDeleting] = useState<string | undefined>(undefined);
  const { busy, failure, run } = useAction();
  const act = (work: () => Promise<void>) => run(async () => {
    await work();
    schedules.reload();
  });

  function create(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const every = String(form.get('intervalSeconds') ?? '').trim();
    const cron = String(form.get('cron') ?? '').trim();
    // Exactly one of the two is the operation's rule: what is typed is sent, for it to judge.
    const plan = { ...(every ? { intervalSeconds: Number(every) } : {}), ...(cron ? { cron } : {}), paused: form.get('paused') === 'on' };
    const target = event.currentTarget;
    void act(async () => {
      await call('POST', `${base}/schedules`, plan);
      target.reset();
    });
  }

  const setPaused = (scheduleId: string, paused: boolean) => act(async () => {
    await call('PATCH', `${base}/schedules/${encodeURIComponent(scheduleId)}`, { paused });
  });

  const remove = (scheduleId: string) => act(async () => {
    await call('DELETE', `${base}/schedules/${encodeURIComponent(scheduleId)}`);
    setDeleting(undefined);
  });

  const list = schedules.answer?.schedules;
  return (
    <>
      {schedules.failure !== undefined && !list && <p role="alert" className="error">{explain(schedules.failure, 'Loading schedules failed.')}</p>}
      {list && (list.length === 0 ? <p className="muted">No schedules.</p> : (
        <table aria-label="Schedules">
          <thead><tr><th>Plan</th><th>State</th><th>Launches as</th><th>Created</th><th><span className="visually-hidden">Actions</span></th></tr></thead>
          <tbody>
            {list.map((schedule) => (
              <tr key={schedule.id} data-schedule={schedule.id}>
                <td>{schedule.spec.cron !== undefined ? `cron ${schedule.spec.cron} (UTC)` : `every ${schedule.spec.intervalSeconds} s`}</td>
                <td>{schedule.spec.paused ? 'paused' : 'active'}</td>
                <td>{schedule.actor.kind === 'member' ? 'its member' : 'its key'}</td>
                <td>{when(schedule.createdAt)}</td>
                <td className="row">
                  {may('updatePipelineSchedule') && <button type="button" disabled={busy} onClick={() => void setPaused(schedule.id, !schedule.spec.paused)}>{schedule.spec.paused ? 'Resume' : 'Pause'}</button>}
                  {may('deletePipelineSchedule') && (deleting === schedule.id ? (
                    <span role="group" aria-label="Confirm deletion" className="row">
                      <span>Delete this schedule? Runs it launched stay.</span>
                      <button type="button" disabled={busy} onClick={() => void remove(schedule.id)}>Delete schedule</button>
                      <button type="button" onClick={() => setDeleting(undefined)}>Keep</button>
                    </span>
                  ) : <button type="button" onClick={() => setDeleting(schedule.id)}>Delete</button>)}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      ))}
      {may('createPipelineSchedule') && (
        <form onSubmit={create} className="card" aria-label="New schedule">
          <p className="muted">Give one of the two: launches every N seconds (at least 60), or on a five-field cron in UTC.</p>
          <label>Every (seconds)<input name="intervalSeconds" type="number" min={60} step={1} /></label>
          <label>Cron (UTC)<input name="cron" placeholder="0 6 * * *" /></label>
          <label className="check"><input type="checkbox" name="paused" /> Create paused</label>
          <button type="submit" disabled={busy}>Create schedule</button>
        </form>
      )}
      <FailureAlert failure={failure} fallback="The schedule could not be changed." />
    </>
  );
}

export function PipelinePage({ pipelineId, session }: { pipelineId: string; session: Session }) {
  const [projectId] = useProjectParam();
  const may = (operation: string) => session.operations.includes(operation);
  const base = projectId ? `/projects/${encodeURIComponent(projectId)}/pipelines/${encodeURIComponent(pipelineId)}` : '';
  const loaded = useAnswer<{ pipeline: Pipeline; branches: Branch[] }>(base || undefined);
  const [offset, setOffset] = useState(0);
  const versions = useAnswer<{ versions: Version[]; pagination: Pagination }>(base ? `${base}/versions?limit=${VERSIONS_PER_PAGE}&offset=${offset}` : undefined);
  // The version drawn: one picked with Show, else the active one.
  const [shownVersion, setShownVersion] = useState<Version | undefined>(undefined);
  const [selected, setSelected] = useState<string | undefined>(undefined);
  const [notice, setNotice] = useState('');
  const { busy, failure, run } = useAction();

  const back = <a href="/console/pipelines" onClick={(e) => follow(e, '/console/pipelines')}>All pipelines</a>;
  if (!projectId) return <section>{back}<h1>Pipeline</h1><p role="alert" className="error">Open a pipeline from the Pipelines page: its address names its project.</p></section>;
  if (!loaded.answer) {
    return <section>{back}<h1>Pipeline</h1>{loaded.failure ? <p role="alert" className="error">{explain(loaded.failure, 'Loading the pipeline failed.')}</p> : <p role="status">Loading…</p>}</section>;
  }
  const { pipeline, branches } = loaded.answer;
  const versionList = versions.answer?.versions ?? [];
  const shownDocument = shownVersion?.document ?? pipeline.document ?? undefined;
  const shownNumber = shownVersion?.number ?? pipeline.activeVersion?.number;
  const numberOf = (versionId: string) => versionList.find((v) => v.id === versionId)?.number;
  const act = (work: () => Promise<void>) => {
    setNotice('');
    return run(work);
  };

  const activate = (version: Version) => act(async () => {
    await call('POST', `${base}/versions/${encodeURIComponent(version.id)}/activate`);
    setNotice(`v${version.number} is active: launches run it.`);
    loaded.reload();
    versions.reload();
  });

  const launch = () => act(async () => { await launchPipeline(pipeline.id); });

  function createBranch(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const source = String(form.get('sourceVersionId') ?? '');
    const target = event.currentTarget;
    void act(async () => {
      const { branch } = await call<{ branch: Branch }>('POST', `${base}/branches`, { name: String(form.get('name') ?? '').trim(), ...(source ? { sourceVersionId: source } : {}) });
      setNotice(`Branch ${branch.name} created.`);
      target.reset();
      loaded.reload();
    });
  }

  return (
    <section>
      {back}
      <h1>{pipeline.name}</h1>
      <dl className="facts">
        <dt>Active version</dt><dd aria-label="Active version">{pipeline.activeVersion ? `v${pipeline.activeVersion.number} (${pipeline.activeVersion.branchName})` : 'none'}</dd>
        {pipeline.description && <><dt>Description</dt><dd>{pipeline.description}</dd></>}
        {pipeline.tags.length > 0 && <><dt>Tags</dt><dd>{pipeline.tags.join(', ')}</dd></>}
      </dl>
      {may('launchRun') && <div className="row"><button type="button" disabled={busy || !pipeline.activeVersion} onClick={() => void launch()}>Launch</button></div>}
      {notice && <p role="status" aria-label="Pipeline">{notice}</p>}
      <FailureAlert failure={failure} fallback="The change failed." />

      <div role="region" aria-label="Graph" className="card chart">
        <h2>Graph {shownNumber !== undefined && <span className="muted">of v{shownNumber}</span>}</h2>
        {shownDocument ? (
          <div className="split">
            <PipelineGraph label={`Graph of v${shownNumber}`} document={shownDocument} selected={selected} onSelect={setSelected} />
            <div role="region" aria-label="Node settings"><NodeSettings node={shownDocument.nodes.find((node) => node.id === selected)} /></div>
          </div>
        ) : <p className="muted">No version to draw.</p>}
      </div>

      <div role="region" aria-label="Versions" className="card chart">
        <h2>Versions</h2>
        {versions.failure !== undefined && !versions.answer && <p role="alert" className="error">{explain(versions.failure, 'Loading versions failed.')}</p>}
        {versions.answer && (
          <>
            <table aria-label="Versions">
              <thead><tr><th>Version</th><th>Branch</th><th>Message</th><th>Committed</th><th>State</th><th><span className="visually-hidden">Actions</span></th></tr></thead>
              <tbody>
                {versionList.map((version) => {
                  const active = version.id === pipeline.activeVersionId;
                  return (
                    <tr key={version.id} data-version={version.id}>
                      <td>v{version.number}</td>
                      <td>{version.branchName}</td>
                      <td>{version.commitMessage ?? ''}</td>
                      <td>{when(version.createdAt)}</td>
                      <td>{active ? 'active' : ''}</td>
                      <td className="row">
                        <button type="button" aria-pressed={shownVersion?.id === version.id} onClick={() => { setShownVersion(version); setSelected(undefined); }}>Show</button>
                        {may('activatePipelineVersion') && !active && <button type="button" disabled={busy} onClick={() => void activate(version)}>Activate</button>}
                      </td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
            <Pager pagination={versions.answer.pagination} shown={versionList.length} none="No versions" pageSize={VERSIONS_PER_PAGE} onOffset={setOffset} />
          </>
        )}
      </div>

      <div role="region" aria-label="Branches" className="card">
        <h2>Branches</h2>
        <table aria-label="Branches">
          <thead><tr><th>Branch</th><th>Head</th><th>Created</th></tr></thead>
          <tbody>
            {branches.map((branch) => (
              <tr key={branch.name}>
                <td>{branch.name}</td>
                <td>{numberOf(branch.headVersionId) !== undefined ? `v${numberOf(branch.headVersionId)}` : branch.headVersionId}{branch.headVersionId === pipeline.activeVersionId ? ' (active)' : ''}</td>
                <td>{when(branch.createdAt)}</td>
              </tr>
            ))}
          </tbody>
        </table>
        {may('createPipelineBranch') && (
          <form onSubmit={createBranch} aria-label="New branch">
            <label>Branch name<input name="name" required maxLength={100} /></label>
            <label>Start at version
              <select name="sourceVersionId" defaultValue="">
                <option value="">the active version</option>
                {versionList.map((version) => <option key={version.id} value={version.id}>v{version.number} ({version.branchName})</option>)}
              </select>
            </label>
            <button type="submit" disabled={busy}>Create branch</button>
          </form>
        )}
      </div>

      {may('getPipelineDraft') && (
        <div role="region" aria-label="Draft" className="card chart">
          <h2>Your draft</h2>
          <DraftEditor base={base} session={session} branches={branches} onCommitted={() => { versions.reload(); loaded.reload(); }} />
        </div>
      )}

      {may('listPipelineSchedules') && (
        <div role="region" aria-label="Schedules" className="card">
          <h2>Schedules</h2>
          <Schedules base={base} session={session} />
        </div>
      )}
    </section>
  );
}
