import { useCallback, useEffect, useState } from 'react';
import { call } from './api';

// One GET of a console route as a page section shows it: its answer, or the failure (the last
// answer stays shown while a reload is on its way), and a way to load it again after a change.

export interface Answer<T> {
  answer: T | undefined;
  failure: unknown;
  reload(): void;
}

/** GET /console/api{path}, again whenever the path changes or reload() is called; nothing while path is undefined. */
export function useAnswer<T>(path: string | undefined): Answer<T> {
  const [state, setState] = useState<{ answer?: T; failure?: unknown }>({});
  const [version, setVersion] = useState(0);
  useEffect(() => {
    if (path === undefined) return undefined;
    let current = true;
    call<T>('GET', path).then(
      (answer) => { if (current) setState({ answer }); },
      (failure: unknown) => { if (current) setState((last) => ({ answer: last.answer, failure })); },
    );
    return () => { current = false; };
  }, [path, version]);
  const reload = useCallback(() => setVersion((v) => v + 1), []);
  return { answer: state.answer, failure: state.failure, reload };
}
