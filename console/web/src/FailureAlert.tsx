import { explain, fieldProblems } from './api';

// A refusal as a form shows it: the problem's message and code, and each field it names at fault.

export function FailureAlert({ failure, fallback, label = 'Problems' }: { failure: unknown; fallback: string; label?: string }) {
  if (failure === undefined) return null;
  const problems = fieldProblems(failure);
  return (
    <div role="alert" className="error">
      <p>{explain(failure, fallback)}</p>
      {problems.length > 0 && <ul aria-label={label}>{problems.map((problem, i) => <li key={i}>{problem.path ? `${problem.path}: ` : ''}{problem.message}</li>)}</ul>}
    </div>
  );
}
