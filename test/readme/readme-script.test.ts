import { describe, expect, it } from 'vitest';
import { isComplete, matchOutput, readmeBlocks, readmeSteps, substitute } from './readme-script.ts';

describe('reading the README as a script', () => {
  it('splits a block into commands, keeping multi-line quotes, continuations and pipes whole', () => {
    const steps = readmeSteps([
      '# 1. A comment',
      `curl -s -X POST $B/x -d '{`,
      `  "a": 1}'`,
      '# → {"id":"<id>",…}',
      "printf '%s\\n' a |",
      '  cat \\',
      '  -',
      'echo done   # trailing comment',
    ]);
    expect(steps.map((s) => [s.command, s.expected])).toEqual([
      [`curl -s -X POST $B/x -d '{\n  "a": 1}'`, ['{"id":"<id>",…}']],
      ["printf '%s\\n' a |\n  cat \\\n  -", []],
      ['echo done   # trailing comment', []],
    ]);
  });

  it('knows when a command is complete', () => {
    expect(isComplete(`echo 'a`)).toBe(false);
    expect(isComplete(`echo "it's"`)).toBe(true);
    expect(isComplete('echo a \\')).toBe(false);
    expect(isComplete('echo a |   # then')).toBe(false);
    expect(isComplete("echo a # it's a comment")).toBe(true);
  });

  it('refuses an unmarked shell block, naming its line', () => {
    expect(() => readmeBlocks('text\n```sh\necho hi\n```\n')).toThrow(/README line 2/);
    const blocks = readmeBlocks('<!-- readme-test: skip needs docker -->\n```sh\ndocker ps\n```\n<!-- readme-test: run -->\n```sh\necho hi\n# → hi\n```\n');
    expect(blocks.map((b) => [b.mode, b.reason, b.steps.length])).toEqual([
      ['skip', 'needs docker', 1],
      ['run', '', 1],
    ]);
  });

  it('reads a console check in document order, with the dataset and the facts to find', () => {
    const blocks = readmeBlocks('<!-- readme-test: run -->\n```sh\necho hi\n```\nOpen the console.\n<!-- readme-test: console flight-7-sys1 | 23,894 frames | ArduPlane -->\n');
    expect(blocks.map((b) => [b.mode, b.line, b.console])).toEqual([
      ['run', 2, undefined],
      ['console', 6, { dataset: 'flight-7-sys1', facts: ['23,894 frames', 'ArduPlane'] }],
    ]);
    expect(() => readmeBlocks('<!-- readme-test: console  -->\n')).toThrow(/README line 1/);
  });

  it('matches outputs with … and captures <name> values, then requires them equal', () => {
    const got = matchOutput('{"id":"<experimentId>",…}', '{"id":"3f1c","name":"x"}\n', new Map());
    expect(got).toEqual(new Map([['experimentId', '3f1c']]));
    expect(matchOutput('{"id":"<experimentId>"}', '{"id":"other"}', new Map([['experimentId', '3f1c']]))).toBeNull();
    expect(matchOutput('{"accepted":"2","written":"2"}', '{"accepted":"2"}', new Map())).toBeNull();
    expect(matchOutput('{"a":<n>,"b":<n>}', '{"a":1,"b":2}', new Map())).toBeNull();
    expect(matchOutput('{"a":<n>,"b":<n>}', '{"a":1,"b":1}', new Map())).toEqual(new Map([['n', '1']]));
    // Pretty-printed JSON (buf curl) is compared as compact JSON.
    expect(matchOutput('{"accepted":"2","written":"<w>"}', '{\n  "accepted": "2",\n  "written": "2"\n}\n', new Map())).toEqual(new Map([['w', '2']]));
  });

  it('substitutes captured values into later commands and names a value nobody printed', () => {
    expect(substitute('curl "$B/x?id=<datasetId>"', new Map([['datasetId', 'd1']]))).toBe('curl "$B/x?id=d1"');
    expect(() => substitute('echo <missing>', new Map())).toThrow(/<missing> is used before/);
  });
});
