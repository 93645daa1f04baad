import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../../core/paths';

/**
 * The documentation by reader (issue 37): the README maps the docs, and what the README held before
 * the split must still be found from it. The fixture lists the headings of the 1,405-line README
 * the split started from.
 */

const HEADINGS_BEFORE_THE_SPLIT = path.join(__dirname, 'fixtures', 'readme-headings.txt');
const README = 'README.md';
const MOST_README_LINES = 200;
/** Links from the README a reader may follow to find a heading. */
const MOST_LINKS_TO_A_HEADING = 2;

function markdownUnder(folder: string): string[] {
  return readdirSync(path.join(projectRoot, folder), { withFileTypes: true }).flatMap((entry) => {
    const relative = path.join(folder, entry.name);
    if (entry.isDirectory()) return markdownUnder(relative);
    return entry.name.endsWith('.md') ? [relative] : [];
  });
}

/** The files whose links are checked: the README, CONTRIBUTING.md, docs/ and the bench's README. */
const checkedFiles = (): string[] => [README, 'CONTRIBUTING.md', ...markdownUnder('docs'), 'bench/README.md'];

/** The lines of a Markdown text outside fenced code blocks, with inline code spans blanked. */
function proseLines(text: string): string[] {
  const lines: string[] = [];
  let fence: string | undefined;
  for (const line of text.split('\n')) {
    const marker = /^\s*(`{3,}|~{3,})/.exec(line)?.[1];
    if (marker && (fence === undefined || marker.startsWith(fence))) {
      fence = fence === undefined ? marker : undefined;
      continue;
    }
    if (fence === undefined) lines.push(line);
  }
  return lines;
}

const withoutCodeSpans = (line: string): string => line.replace(/(`+)[^`]*?\1/g, '');

/** A heading's text as GitHub renders it: inline code keeps its text, links their text, emphasis none. */
const headingText = (raw: string): string =>
  raw
    .replace(/\s+#+\s*$/, '')
    .replace(/`([^`]*)`/g, '$1')
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/(\*\*|\*)(\S(?:.*?\S)?)\1/g, '$2')
    // Underscores emphasise only at word edges: snake_case stays as it is.
    .replace(/(?<!\w)(__|_)(\S(?:.*?\S)?)\1(?!\w)/g, '$2')
    .trim();

/** GitHub's anchor for a heading (as github-slugger makes it): lowercase, punctuation dropped, spaces to hyphens. */
export function githubSlug(text: string): string {
  return text.toLowerCase().replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '').replace(/ /g, '-');
}

/** Every heading of a Markdown text, with its anchor; a repeated anchor gets -1, -2, … as on GitHub. */
function headingsOf(text: string): Array<{ text: string; anchor: string }> {
  const seen = new Map<string, number>();
  return proseLines(text).flatMap((line) => {
    const match = /^ {0,3}#{1,6}\s+(.+)$/.exec(line);
    if (!match) return [];
    const heading = headingText(match[1]);
    const base = githubSlug(heading);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    return [{ text: heading, anchor: count ? `${base}-${count}` : base }];
  });
}

/** Inline links and images outside code; targets with a scheme (https:, mailto:) are not relative. */
function relativeLinksOf(text: string): string[] {
  return proseLines(text).flatMap((line) =>
    [...withoutCodeSpans(line).matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)]
      .map((match) => match[1])
      .filter((target) => !/^[a-z][a-z0-9+.-]*:/i.test(target)),
  );
}

const read = (file: string): string => readFileSync(path.join(projectRoot, file), 'utf8');

/** The repository file a link names (relative to the linking file), and its anchor. */
function resolveLink(from: string, target: string): { file: string; anchor: string | undefined } {
  const hash = target.indexOf('#');
  const pathPart = decodeURIComponent(hash < 0 ? target : target.slice(0, hash));
  const anchor = hash < 0 ? undefined : decodeURIComponent(target.slice(hash + 1));
  const file = pathPart ? path.normalize(path.join(path.dirname(from), pathPart)) : from;
  return { file, anchor };
}

/** Why a link does not resolve, or undefined when it does. */
function brokenBecause(from: string, target: string): string | undefined {
  const { file, anchor } = resolveLink(from, target);
  if (file.startsWith('..') || path.isAbsolute(file)) return 'leaves the repository';
  const full = path.join(projectRoot, file);
  if (!existsSync(full)) return `${file} does not exist`;
  if (anchor === undefined || !file.endsWith('.md') || statSync(full).isDirectory()) return undefined;
  const anchors = headingsOf(read(file)).map((heading) => heading.anchor);
  return anchors.includes(anchor) ? undefined : `${file} has no heading with the anchor #${anchor}`;
}

/** The Markdown files reached from the README by following at most `hops` links, each with its distance. */
function reachedFrom(start: string, hops: number): Map<string, number> {
  const distance = new Map([[start, 0]]);
  let frontier = [start];
  for (let hop = 1; hop <= hops; hop++) {
    const next: string[] = [];
    for (const file of frontier) {
      for (const link of relativeLinksOf(read(file))) {
        let { file: target } = resolveLink(file, link);
        const full = path.join(projectRoot, target);
        if (target.startsWith('..') || !existsSync(full)) continue;
        // A folder's link lands on its README, as GitHub shows it.
        if (statSync(full).isDirectory()) target = path.join(target, 'README.md');
        if (!target.endsWith('.md') || distance.has(target) || !existsSync(path.join(projectRoot, target))) continue;
        distance.set(target, hop);
        next.push(target);
      }
    }
    frontier = next;
  }
  return distance;
}

describe('The documentation', () => {
  it('makes anchors as GitHub does', () => {
    assert.equal(githubSlug('Keys, scopes and limits'), 'keys-scopes-and-limits');
    assert.equal(githubSlug('Walk-through: read records from an HTTP API'), 'walk-through-read-records-from-an-http-api');
    assert.equal(githubSlug(headingText('`api`: the request path against bare Koa')), 'api-the-request-path-against-bare-koa');
    assert.equal(githubSlug(headingText('Earlier runs (`--triples`, since replaced)')), 'earlier-runs---triples-since-replaced');
    assert.deepEqual(headingsOf('# Findings\n```\n# not a heading\n```\n## Findings\n').map((heading) => heading.anchor), ['findings', 'findings-1']);
  });

  it('has every relative link and anchor of the README, CONTRIBUTING.md, docs/ and bench/README.md resolve', () => {
    const broken = checkedFiles().flatMap((file) =>
      relativeLinksOf(read(file)).flatMap((target) => {
        const reason = brokenBecause(file, target);
        return reason ? [`${file}: (${target}) ${reason}`] : [];
      }),
    );
    assert.deepEqual(broken, []);
  });

  it(`reaches every heading of the README before the split within ${MOST_LINKS_TO_A_HEADING} links of the README`, () => {
    const expected = readFileSync(HEADINGS_BEFORE_THE_SPLIT, 'utf8').split('\n').map((line) => line.trim()).filter(Boolean);
    assert.ok(expected.length > 20, 'the fixture lists the headings of the README before the split');
    const found = new Set([...reachedFrom(README, MOST_LINKS_TO_A_HEADING).keys()].flatMap((file) => headingsOf(read(file)).map((heading) => heading.text)));
    assert.deepEqual(expected.filter((heading) => !found.has(heading)), []);
  });

  it(`keeps the README under ${MOST_README_LINES} lines`, () => {
    const lines = read(README).replace(/\n$/, '').split('\n').length;
    assert.ok(lines < MOST_README_LINES, `README.md has ${lines} lines`);
  });
});
