import { MouseEvent, useEffect, useState } from 'react';

// Pages are addressed by their path under /console; links move with the History API.

export function navigate(path: string): void {
  window.history.pushState(null, '', path);
  window.dispatchEvent(new PopStateEvent('popstate'));
}

/** A link's click handler that moves within the console instead of loading the page. */
export function follow(event: MouseEvent<HTMLAnchorElement>, path: string): void {
  event.preventDefault();
  navigate(path);
}

export function usePath(): string {
  const [path, setPath] = useState(window.location.pathname);
  useEffect(() => {
    const changed = () => setPath(window.location.pathname);
    window.addEventListener('popstate', changed);
    return () => window.removeEventListener('popstate', changed);
  }, []);
  return path.replace(/\/+$/, '') || '/console';
}
