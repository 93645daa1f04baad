// SPARQL's REGEX takes XPath regular expressions (XML Schema syntax plus flags s, m, i, x, q).
// The common subset reads the same in JavaScript with the u flag; constructs that differ
// (character class subtraction, \p{Is...} blocks, the name escapes \i \c, lookarounds and
// non-capturing groups that XPath 2.0 does not have) are refused, and Comunica answers.

const UNTRANSLATABLE = /-\[|\\p\{Is|\\P\{Is|\\[iIcC]|\(\?/;
const FLAGS = /^[smix]*$/;

/** The JavaScript RegExp for an XPath pattern and flags, or undefined when they do not translate faithfully. */
export function translateRegex(pattern: string, flags: string): RegExp | undefined {
  if (!FLAGS.test(flags) || UNTRANSLATABLE.test(pattern)) return undefined;
  // x: whitespace in the pattern is ignored (XPath drops it everywhere but inside classes too).
  const source = flags.includes('x') ? pattern.replace(/[\t\n\r ]/g, '') : pattern;
  const jsFlags = `u${flags.includes('i') ? 'i' : ''}${flags.includes('m') ? 'm' : ''}${flags.includes('s') ? 's' : ''}`;
  try {
    return new RegExp(source, jsFlags);
  } catch {
    return undefined;
  }
}
