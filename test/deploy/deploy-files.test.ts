// The readers compose.test.ts relies on: if one of them read too little, its checks would pass vacuously.
import { describe, expect, it } from 'vitest';
import {
  dockerignoreExcludes,
  environmentOf,
  execForm,
  findDirectives,
  interpolate,
  MissingVariableError,
  parseCaddyfile,
  parseDockerfile,
  parsePort,
  referencedVariables,
  resolveImage,
  reverseProxyUpstreams,
  stageEnv,
} from './deploy-files.ts';

describe('interpolate (Compose rules)', () => {
  const env = { SET: 'value', EMPTY: '', B: 'inner' };

  it('substitutes plain references and keeps $$ as a dollar', () => {
    expect(interpolate('a ${SET} $SET $$SET $${SET} ${UNSET}!', env)).toBe('a value value $SET ${SET} !');
  });

  it('tells unset from empty: with the colon empty counts as unset', () => {
    expect(interpolate('${EMPTY:-d}|${EMPTY-d}|${UNSET-d}|${SET:-d}', env)).toBe('d||d|value');
    expect(interpolate('${EMPTY:+alt}|${EMPTY+alt}|${UNSET+alt}', env)).toBe('|alt|');
  });

  it('refuses a required variable with its message, and expands nested defaults', () => {
    expect(() => interpolate('${UNSET:?set it}', env)).toThrow(MissingVariableError);
    expect(() => interpolate('${EMPTY:?set it}', env)).toThrow(/EMPTY.*set it/);
    expect(interpolate('${EMPTY?set it}', env)).toBe('');
    expect(interpolate('${UNSET:-${B}-x}', env)).toBe('inner-x');
  });

  it('lists referenced variables and which are required', () => {
    expect(Object.fromEntries(referencedVariables('${A:?x} ${B:-y} ${A} ${C}'))).toEqual({
      A: { required: true },
      B: { required: false },
      C: { required: false },
    });
  });

  it('reads environment in map and list form', () => {
    expect(environmentOf({ environment: { A: 1, B: null, C: 'x=y' } })).toEqual({ A: '1', B: '', C: 'x=y' });
    expect(environmentOf({ environment: ['A=1', 'B', 'C=x=y'] })).toEqual({ A: '1', B: '', C: 'x=y' });
  });
});

describe('parsePort', () => {
  it('reads the short and long syntax', () => {
    expect(parsePort('127.0.0.1:50051:50051')).toEqual({ hostIp: '127.0.0.1', published: '50051', target: 50051, protocol: 'tcp' });
    expect(parsePort('443:443/udp')).toEqual({ hostIp: undefined, published: '443', target: 443, protocol: 'udp' });
    expect(parsePort('8080')).toEqual({ hostIp: undefined, published: undefined, target: 8080, protocol: 'tcp' });
    expect(parsePort('[::1]:5432:5432')).toEqual({ hostIp: '::1', published: '5432', target: 5432, protocol: 'tcp' });
    expect(parsePort({ target: 80, published: 8080, host_ip: '0.0.0.0' })).toEqual({ hostIp: '0.0.0.0', published: '8080', target: 80, protocol: 'tcp' });
  });
});

describe('parseDockerfile', () => {
  const text = [
    '# syntax=docker/dockerfile:1',
    'ARG BASE=node:24-slim',
    'FROM ${BASE} AS deps',
    'RUN npm install \\',
    '      --omit=dev   # not a comment inside RUN',
    'FROM --platform=$BUILDPLATFORM ${BASE}',
    '# a comment',
    'ENV A=1 B="two words" \\',
    '    C=3',
    'ENV LEGACY some value',
    'HEALTHCHECK --interval=5s CMD ["node", "-e", "1"]',
    'USER node',
  ].join('\n');

  it('splits stages, joins continuations and skips comments', () => {
    const { args, stages } = parseDockerfile(text);
    expect(args.map((a) => a.keyword)).toEqual(['ARG']);
    expect(stages.map((s) => [s.image, s.name])).toEqual([
      ['${BASE}', 'deps'],
      ['${BASE}', undefined],
    ]);
    expect(stages[0]!.instructions).toEqual([{ keyword: 'RUN', args: 'npm install --omit=dev # not a comment inside RUN' }]);
    expect(stages[1]!.instructions.map((i) => i.keyword)).toEqual(['ENV', 'ENV', 'HEALTHCHECK', 'USER']);
    expect(resolveImage('${BASE}', args)).toBe('node:24-slim');
    expect(stageEnv(stages[1]!)).toEqual({ A: '1', B: 'two words', C: '3', LEGACY: 'some value' });
  });

  it('reads the exec form, and tells the shell form apart', () => {
    expect(execForm('["node", "main.ts"]')).toEqual(['node', 'main.ts']);
    expect(execForm('node main.ts')).toBeNull();
  });
});

describe('dockerignoreExcludes (Docker rules)', () => {
  it('lets the last matching pattern win, matching parents and dotfiles', () => {
    const ignore = '*\n!cloud/src\n**/*.test.ts\n!cloud/src/keep.test.ts\n';
    expect(dockerignoreExcludes(ignore, '.env')).toBe(true);
    expect(dockerignoreExcludes(ignore, 'README.md')).toBe(true);
    expect(dockerignoreExcludes(ignore, 'cloud/package.json')).toBe(true);
    expect(dockerignoreExcludes(ignore, 'cloud/src/a/b.ts')).toBe(false);
    expect(dockerignoreExcludes(ignore, 'cloud/src/a/b.test.ts')).toBe(true);
    expect(dockerignoreExcludes(ignore, 'cloud/src/keep.test.ts')).toBe(false);
    expect(dockerignoreExcludes('**/node_modules', 'node_modules/x/y.js')).toBe(true);
    expect(dockerignoreExcludes('**/node_modules', 'a/node_modules/x.js')).toBe(true);
    expect(dockerignoreExcludes('# only a comment\n', 'anything')).toBe(false);
  });
});

describe('parseCaddyfile', () => {
  const text = `
{
	admin off
}
example.com {
	reverse_proxy /api/* cloud:8080 h2c://cloud:50051 # trailing comment
	handle {
		reverse_proxy {
			dynamic a cloud 9000
		}
	}
}
`;

  it('builds the block tree and finds directives at any depth', () => {
    const nodes = parseCaddyfile(text);
    expect(nodes.map((n) => n.tokens)).toEqual([[], ['example.com']]);
    const proxies = findDirectives(nodes, 'reverse_proxy');
    expect(proxies.map(reverseProxyUpstreams)).toEqual([
      [
        { scheme: undefined, host: 'cloud', port: 8080 },
        { scheme: 'h2c', host: 'cloud', port: 50051 },
      ],
      [{ scheme: undefined, host: 'cloud', port: 9000 }],
    ]);
  });

  it('refuses unbalanced braces', () => {
    expect(() => parseCaddyfile('a {\n')).toThrow(/unclosed/);
    expect(() => parseCaddyfile('}\n')).toThrow(/unbalanced/);
  });
});
