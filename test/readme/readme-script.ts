/**
 * Reads the README's shell walk-throughs as a script a test can run: which blocks run, the commands in
 * each, and the output each command promises (`# → …`). The README stays written for people; this file
 * is the one place that knows how to read it as a test.
 *
 * Marking (an HTML comment on the line before a ```sh block, invisible when rendered):
 *   <!-- readme-test: run -->            the block is executed, in document order, in one shell session
 *   <!-- readme-test: skip <reason> -->  the block is not executed, for the reason given
 * Every ```sh block carries one of the two, so no walk-through can escape the test unnoticed.
 *   <!-- readme-test: console NAME | TEXT | … -->  (on a line of its own, not before a block) what the
 *       prose around it tells the reader to look at in the console, checked at that point of the walk in
 *       a browser: signed in with $SORTIE_API_KEY, the list shows dataset NAME with each TEXT among its facts.
 *
 * Expected outputs: `# → <text>` lines after a command. In the text, `…` stands for anything, and
 * `<name>` for a value the command prints (a JSON string's content or a bare word), captured the first
 * time it appears and then required to be equal; later commands have `<name>` replaced by it.
 */

export interface ReadmeStep {
  /** The command as written (possibly several lines). */
  command: string;
  /** Expected outputs, one per `# →` line, in order; the command's stdout must match them all, joined. */
  expected: string[];
  /** 1-based line of the README where the command starts, for messages. */
  line: number;
}

export interface ReadmeBlock {
  mode: 'run' | 'skip' | 'console';
  /** Why a skipped block is skipped. */
  reason: string;
  line: number;
  steps: ReadmeStep[];
  /** A console check: the dataset the list must show, and texts among its facts. */
  console?: { dataset: string; facts: string[] };
}

const MARK = /^<!--\s*readme-test:\s*(run|skip)\b\s*(.*?)\s*-->\s*$/;
const CONSOLE_MARK = /^<!--\s*readme-test:\s*console\b\s*(.*?)\s*-->\s*$/;
const FENCE_OPEN = /^```(sh|bash|shell)\s*$/;

/** Every shell block of the README, with its marking; an unmarked block is an error naming its line. */
export function readmeBlocks(markdown: string): ReadmeBlock[] {
  const lines = markdown.split('\n');
  const blocks: ReadmeBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const check = CONSOLE_MARK.exec(lines[i]!);
    if (check) {
      const [dataset, ...facts] = check[1]!.split('|').map((part) => part.trim());
      if (!dataset) throw new Error(`README line ${i + 1}: a console check names no dataset`);
      blocks.push({ mode: 'console', reason: '', line: i + 1, steps: [], console: { dataset, facts } });
      continue;
    }
    if (!FENCE_OPEN.test(lines[i]!)) continue;
    const mark = MARK.exec(lines[i - 1] ?? '');
    if (!mark) throw new Error(`README line ${i + 1}: a shell block without a <!-- readme-test: run|skip … --> mark`);
    const body: string[] = [];
    let j = i + 1;
    for (; j < lines.length && !lines[j]!.startsWith('```'); j++) body.push(lines[j]!);
    blocks.push({ mode: mark[1] as 'run' | 'skip', reason: mark[2] ?? '', line: i + 1, steps: readmeSteps(body, i + 2) });
    i = j;
  }
  return blocks;
}

/** Splits a block into commands and the outputs they promise. */
export function readmeSteps(body: string[], firstLine = 1): ReadmeStep[] {
  const steps: ReadmeStep[] = [];
  let pending: { lines: string[]; line: number } | null = null;
  const flush = () => {
    if (pending) steps.push({ command: pending.lines.join('\n'), expected: [], line: pending.line });
    pending = null;
  };
  body.forEach((text, index) => {
    const line = firstLine + index;
    if (pending && !isComplete(pending.lines.join('\n'))) {
      pending.lines.push(text);
      return;
    }
    const arrow = /^#\s*→\s?(.*)$/.exec(text.trim());
    if (arrow) {
      flush();
      const last = steps.at(-1);
      if (!last) throw new Error(`README line ${line}: an expected output with no command before it`);
      last.expected.push(arrow[1]!);
      return;
    }
    if (text.trim() === '' || text.trimStart().startsWith('#')) {
      flush();
      return;
    }
    flush();
    pending = { lines: [text], line };
  });
  flush();
  return steps;
}

/**
 * Whether a command is complete: quotes closed, and the last line does not continue (`\`, `|`, `&&`,
 * `||`). Enough for the README's commands, which are plain.
 */
export function isComplete(command: string): boolean {
  let single = false;
  let double = false;
  for (let i = 0; i < command.length; i++) {
    const c = command[i];
    if (single) {
      if (c === "'") single = false;
    } else if (double) {
      if (c === '\\') i++;
      else if (c === '"') double = false;
    } else if (c === '\\') i++;
    else if (c === "'") single = true;
    else if (c === '"') double = true;
    else if (c === '#' && (i === 0 || /\s/.test(command[i - 1]!))) {
      // A comment runs to the end of its line.
      const end = command.indexOf('\n', i);
      if (end < 0) break;
      i = end - 1;
    }
  }
  if (single || double) return false;
  const last = command.split('\n').at(-1)!.replace(/\s+#.*$/, '').trimEnd();
  return !(last.endsWith('\\') || last.endsWith('|') || last.endsWith('&&') || last.endsWith('||'));
}

/** Placeholders in a command (`<experimentId>`), replaced by captured values; unknown ones are an error. */
export function substitute(command: string, values: ReadonlyMap<string, string>): string {
  return command.replace(/<([A-Za-z][A-Za-z0-9]*)>/g, (whole, name: string) => {
    const value = values.get(name);
    if (value === undefined) throw new Error(`${whole} is used before any output printed it`);
    return value;
  });
}

/**
 * Matches a command's output against what the README promises, capturing `<name>` values. Returns the
 * new captures, or null when the output does not match.
 */
export function matchOutput(expected: string, actual: string, known: ReadonlyMap<string, string>): Map<string, string> | null {
  const names: string[] = [];
  let pattern = '';
  const parts = expected.split(/(…|<[A-Za-z][A-Za-z0-9]*>)/);
  for (const part of parts) {
    if (part === '…') pattern += '[\\s\\S]*?';
    else if (/^<[A-Za-z][A-Za-z0-9]*>$/.test(part)) {
      const name = part.slice(1, -1);
      const value = known.get(name);
      if (value !== undefined) pattern += escape(value);
      else if (names.includes(name)) pattern += `\\k<${name}>`;
      else {
        names.push(name);
        pattern += `(?<${name}>[^"\\s,{}\\[\\]]+)`;
      }
    } else pattern += escape(part).replace(/\s+/g, '\\s*');
  }
  const found = new RegExp(`^\\s*${pattern}\\s*$`).exec(compactJson(actual));
  if (!found) return null;
  return new Map(names.map((n) => [n, found.groups![n]!]));
}

/** Pretty-printed JSON (buf curl's) compared as the compact JSON the README shows; anything else as is. */
function compactJson(output: string): string {
  try {
    return JSON.stringify(JSON.parse(output));
  } catch {
    return output;
  }
}

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
