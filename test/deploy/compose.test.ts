// The deployment files checked against the code they deploy, without a Docker engine: compose.yaml's
// cloud environment must pass the cloud's own config schema, and ports, healthchecks, the Caddyfile's
// upstreams, the Dockerfiles and .dockerignore must agree with each other and with that config.
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { EnvSchema, jetStreamNames, loadConfig, resolveSecretKey, type Config } from '@sortie/cloud';
import { HELP_TEXT, parseCli } from '@sortie/edge-agent';
import { parse } from 'yaml';
import {
  dockerignoreExcludes,
  environmentOf,
  execForm,
  findDirectives,
  interpolate,
  interpolateDeep,
  MissingVariableError,
  parseCaddyfile,
  parseDockerfile,
  parsePort,
  referencedVariables,
  resolveImage,
  reverseProxyUpstreams,
  stageEnv,
  type CaddyNode,
  type DockerStage,
} from './deploy-files.ts';

const ROOT = new URL('../../', import.meta.url);
const read = (path: string) => readFileSync(new URL(path, ROOT), 'utf8');
const exists = (path: string) => existsSync(new URL(path, ROOT));

interface Service {
  image?: string;
  build?: { context: string; dockerfile: string };
  command?: string[] | string;
  environment?: unknown;
  ports?: unknown[];
  expose?: Array<string | number>;
  volumes?: Array<string | { type?: string; source?: string; target: string }>;
  depends_on?: Record<string, { condition?: string }> | string[];
  healthcheck?: { test: string[] | string; disable?: boolean };
  profiles?: string[];
  stop_grace_period?: string;
}
interface ComposeFile {
  services: Record<string, Service>;
  volumes?: Record<string, unknown>;
}

/** What an operator's .env holds on a first run (docs/deploy.md). */
const OPERATOR_ENV = {
  SORTIE_SECRET_KEY: randomBytes(32).toString('base64'),
  POSTGRES_PASSWORD: randomBytes(24).toString('hex'),
};

const composeText = read('compose.yaml');
function loadCompose(env: Record<string, string | undefined> = OPERATOR_ENV): ComposeFile {
  return interpolateDeep(parse(composeText) as ComposeFile, env);
}
const compose = loadCompose();
const services = compose.services;
const service = (name: string): Service => {
  const s = services[name];
  if (!s) throw new Error(`compose.yaml has no service ${name}`);
  return s;
};

const cloudEnv = environmentOf(service('cloud'));
const cloudConfig = (): Config => loadConfig(cloudEnv);

const dockerignore = read('.dockerignore');
const rootPackage = JSON.parse(read('package.json')) as { devDependencies: Record<string, string> };

function mounts(s: Service): Array<{ source: string | undefined; target: string }> {
  return (s.volumes ?? []).map((v) => {
    if (typeof v !== 'string') return { source: v.source, target: v.target };
    const [source, target] = v.split(':') as [string, string | undefined];
    return target === undefined ? { source: undefined, target: source } : { source, target };
  });
}

/** Compose durations: `30s`, `1m30s`, `500ms`. */
function durationSeconds(text: string): number {
  const units: Record<string, number> = { h: 3600, m: 60, s: 1, ms: 0.001, us: 1e-6 };
  const parts = [...text.matchAll(/(\d+(?:\.\d+)?)(h|ms|m|s|us)/g)];
  if (parts.map((p) => p[0]).join('') !== text) throw new Error(`cannot read duration ${text}`);
  return parts.reduce((sum, p) => sum + Number(p[1]) * units[p[2]!]!, 0);
}

function healthcheckCommand(s: Service): string[] {
  const test = s.healthcheck?.test;
  if (!test || s.healthcheck?.disable) throw new Error('no healthcheck');
  return typeof test === 'string' ? ['CMD-SHELL', test] : test;
}

/** The URL a `node -e "fetch('http://…:'+process.env.X+'/path')…"` healthcheck asks, with X from env. */
function fetchedUrl(command: readonly string[], env: Record<string, string>): string {
  const script = command.join(' ').replace(/'\s*\+\s*process\.env\.([A-Za-z0-9_]+)\s*\+\s*'/g, (_, name: string) => env[name] ?? `<unset ${name}>`);
  const m = /fetch\('([^']+)'/.exec(script);
  if (!m) throw new Error(`no fetch('…') in healthcheck ${command.join(' ')}`);
  return m[1]!;
}

function dockerfile(path: string): { stages: DockerStage[]; final: DockerStage; image: string } {
  const { args, stages } = parseDockerfile(read(path));
  const images = new Set(stages.map((s) => resolveImage(s.image, args)));
  expect(images.size, `${path}: every stage on one base image`).toBe(1);
  return { stages, final: stages.at(-1)!, image: [...images][0]! };
}

const all = (stage: DockerStage, keyword: string) => stage.instructions.filter((i) => i.keyword === keyword);

describe('compose.yaml: the cloud service against cloud/src/platform/config.ts', () => {
  it('will not start without the secret key or the database password', () => {
    const { SORTIE_SECRET_KEY: _key, ...noKey } = OPERATOR_ENV;
    expect(() => loadCompose(noKey)).toThrow(MissingVariableError);
    expect(() => loadCompose({ ...OPERATOR_ENV, SORTIE_SECRET_KEY: '' })).toThrow(/SORTIE_SECRET_KEY.*openssl rand -base64 32/);
    expect(() => loadCompose({ SORTIE_SECRET_KEY: OPERATOR_ENV.SORTIE_SECRET_KEY })).toThrow(/POSTGRES_PASSWORD/);
  });

  it('passes loadConfig and the secret key check that Postgres mode requires', async () => {
    const config = cloudConfig();
    expect(config.databaseUrl).toBeDefined();
    expect(await resolveSecretKey(config)).toHaveLength(32);
    // Without the key the cloud refuses: compose's `:?` is what keeps that from happening at run time.
    await expect(resolveSecretKey(loadConfig({ ...cloudEnv, SORTIE_SECRET_KEY: undefined }))).rejects.toThrow(/SORTIE_SECRET_KEY is required/);
  });

  it('names only variables the cloud reads', () => {
    const known = new Set(Object.keys(EnvSchema.shape));
    const sortieKeys = Object.keys(cloudEnv).filter((k) => k.startsWith('SORTIE_'));
    expect(sortieKeys.length).toBeGreaterThan(5);
    expect(sortieKeys.filter((k) => !known.has(k))).toEqual([]);
  });

  it('points at the database and NATS services of the stack', () => {
    const config = cloudConfig();
    const db = new URL(config.databaseUrl!);
    const pg = environmentOf(service('timescaledb'));
    expect(db.hostname).toBe('timescaledb');
    expect(db.port).toBe('5432');
    expect(decodeURIComponent(db.username)).toBe(pg['POSTGRES_USER']);
    expect(decodeURIComponent(db.password)).toBe(OPERATOR_ENV.POSTGRES_PASSWORD);
    expect(db.pathname).toBe(`/${pg['POSTGRES_DB']}`);
    expect(pg['POSTGRES_PASSWORD']).toBe(OPERATOR_ENV.POSTGRES_PASSWORD);
    const nats = new URL(config.natsUrl!);
    expect(nats.hostname).toBe('nats');
    expect(services[nats.hostname]).toBeDefined();
  });

  it('listens on every interface inside its container, so published ports and Caddy reach it', () => {
    const config = cloudConfig();
    expect(config.http.host).toBe('0.0.0.0');
    expect(config.grpc.host).toBe('0.0.0.0');
  });

  it('publishes gRPC on the host loopback only and HTTP not at all (Caddy is the way in)', () => {
    const { http, grpc } = cloudConfig();
    const ports = (service('cloud').ports ?? []).map(parsePort);
    expect(ports.filter((p) => p.target === grpc.port)).toEqual([{ hostIp: '127.0.0.1', published: String(grpc.port), target: grpc.port, protocol: 'tcp' }]);
    expect(ports.filter((p) => p.target === http.port)).toEqual([]);
    expect(ports.every((p) => p.hostIp === '127.0.0.1')).toBe(true);
    expect((service('cloud').expose ?? []).map(Number).sort()).toEqual([http.port, grpc.port].sort());
  });

  it('publishes nothing beyond loopback except Caddy’s 80 and 443', () => {
    const open = Object.entries(services).flatMap(([name, s]) =>
      (s.ports ?? [])
        .map(parsePort)
        .filter((p) => p.hostIp !== '127.0.0.1' && p.hostIp !== '::1')
        .map((p) => `${name} ${p.target}/${p.protocol}`),
    );
    expect(open.sort()).toEqual(['caddy 443/tcp', 'caddy 443/udp', 'caddy 80/tcp']);
  });

  it('checks health on GET /healthz of the HTTP port', () => {
    const { http } = cloudConfig();
    expect(fetchedUrl(healthcheckCommand(service('cloud')), cloudEnv)).toBe(`http://127.0.0.1:${http.port}/healthz`);
  });

  it('gives the cloud longer to stop than its own shutdown grace, so Docker does not SIGKILL it mid-drain', () => {
    const stop = durationSeconds(service('cloud').stop_grace_period ?? '10s');
    const parsed = EnvSchema.parse(cloudEnv) as Record<string, unknown>;
    const grace = parsed['SORTIE_SHUTDOWN_GRACE_SECONDS'];
    // Without a configurable grace the floor is one webhook attempt's time limit.
    const needed = typeof grace === 'number' ? grace : cloudConfig().webhook.timeoutMs / 1000;
    expect(stop).toBeGreaterThan(needed);
  });

  it('puts the public URL on the name Caddy serves', () => {
    expect(cloudConfig().publicUrl).toBe(`https://${environmentOf(service('caddy'))['SORTIE_DOMAIN']}`);
    const named = loadCompose({ ...OPERATOR_ENV, SORTIE_DOMAIN: 'sortie.example.com' });
    expect(environmentOf(named.services['caddy']!)['SORTIE_DOMAIN']).toBe('sortie.example.com');
    expect(loadConfig(environmentOf(named.services['cloud']!)).publicUrl).toBe('https://sortie.example.com');
  });
});

describe('compose.yaml: the stack', () => {
  it('starts each service after the ones it needs are healthy', () => {
    const edges = Object.entries(services).flatMap(([name, s]) => {
      const deps = s.depends_on ?? {};
      if (Array.isArray(deps)) throw new Error(`${name}: depends_on without conditions does not wait for health`);
      return Object.entries(deps).map(([dep, { condition }]) => ({ name, dep, condition }));
    });
    expect(edges.length).toBeGreaterThan(3);
    for (const { name, dep, condition } of edges) {
      expect(services[dep], `${name} depends on ${dep}`).toBeDefined();
      expect(condition, `${name} → ${dep}`).toBe('service_healthy');
      expect(() => healthcheckCommand(services[dep]!), `${dep} needs a healthcheck`).not.toThrow();
    }
    expect(Object.keys(service('cloud').depends_on ?? {}).sort()).toEqual(['nats', 'timescaledb']);
  });

  it('keeps TimescaleDB and NATS data on declared named volumes', () => {
    const declared = Object.keys(compose.volumes ?? {});
    const image = service('timescaledb').image!;
    expect(image).toMatch(/^timescale\/timescaledb:/);
    // From Postgres 18 the official images keep data under /var/lib/postgresql/<major>/docker.
    const major = Number(/pg(\d+)/.exec(image)?.[1]);
    const pgData = major >= 18 ? '/var/lib/postgresql' : '/var/lib/postgresql/data';
    const pgMount = mounts(service('timescaledb')).find((m) => m.target === pgData);
    expect(pgMount, `a volume on ${pgData}`).toBeDefined();
    expect(declared).toContain(pgMount!.source);

    const command = [service('nats').command ?? []].flat().join(' ');
    expect(command).toMatch(/(^|\s)(--jetstream|-js)(\s|$)/);
    const storeDir = /(?:--store_dir|-sd)\s+(\S+)/.exec(command)?.[1];
    const natsMount = mounts(service('nats')).find((m) => m.target === storeDir);
    expect(natsMount, `a volume on ${storeDir}`).toBeDefined();
    expect(declared).toContain(natsMount!.source);
    // The healthcheck asks the monitoring port the command opens.
    const monitor = /(?:--http_port|-m)\s+(\d+)/.exec(command)?.[1];
    expect(healthcheckCommand(service('nats')).join(' ')).toContain(`127.0.0.1:${monitor}/healthz`);
  });

  it('declares every named volume it mounts', () => {
    const declared = new Set(Object.keys(compose.volumes ?? {}));
    for (const [name, s] of Object.entries(services)) {
      for (const { source } of mounts(s)) {
        if (source && !source.startsWith('.') && !source.startsWith('/')) expect(declared, `${name} mounts ${source}`).toContain(source);
      }
    }
  });

  it('builds the cloud and the agent from their Dockerfiles with the repository root as context', () => {
    for (const [name, file] of [['cloud', 'cloud/Dockerfile'], ['edge-agent', 'edge-agent/Dockerfile']] as const) {
      expect(service(name).build).toEqual({ context: '.', dockerfile: file });
      expect(exists(file)).toBe(true);
    }
  });

  it('.env.example lists every variable compose requires, and only variables compose reads', () => {
    const referenced = referencedVariables(composeText);
    const example = read('.env.example');
    const set = new Map([...example.matchAll(/^([A-Z_][A-Z0-9_]*)=(.*)$/gm)].map((m) => [m[1]!, m[2]!]));
    const mentioned = new Set([...example.matchAll(/^#?\s*([A-Z_][A-Z0-9_]*)=/gm)].map((m) => m[1]!));
    const required = [...referenced].filter(([, v]) => v.required).map(([k]) => k);
    expect(required.sort()).toEqual(['POSTGRES_PASSWORD', 'SORTIE_SECRET_KEY']);
    for (const name of required) expect(set.get(name), `${name} in .env.example`).toBe('');
    expect([...mentioned].filter((name) => !referenced.has(name))).toEqual([]);
    expect(read('.gitignore').split('\n')).toContain('.env');
  });
});

describe('compose.yaml: the edge agent', () => {
  const agent = service('edge-agent');
  const agentEnv = environmentOf(agent);
  const cloudSide = {
    SORTIE_AGENT_API_KEY: `sk_${'a'.repeat(40)}`,
    SORTIE_AGENT_EXPERIMENT: '0b9d4c1e-8f7a-4c2b-9d3e-5f6a7b8c9d0e',
    SORTIE_AGENT_SORTIE: 'flight-12',
  };

  it('runs only under the agent profile', () => {
    expect(agent.profiles).toEqual(['agent']);
  });

  it('names only variables the agent reads', () => {
    const agentKeys = Object.keys(agentEnv).filter((k) => k.startsWith('SORTIE_'));
    expect(agentKeys.length).toBeGreaterThan(3);
    expect(agentKeys.filter((k) => !HELP_TEXT.includes(k))).toEqual([]);
  });

  it('parses, spools on its volume and reaches the cloud on its ports', () => {
    const withKey = environmentOf(loadCompose({ ...OPERATOR_ENV, ...cloudSide }).services['edge-agent']!);
    const result = parseCli([], withKey);
    if (result.help) throw new Error('unexpected --help');
    const { config } = result;
    expect(mounts(agent).map((m) => m.target)).toContain(config.spool.dir);
    const { http, grpc } = cloudConfig();
    const cloudUrl = new URL(config.cloud!.url);
    const grpcUrl = new URL(config.cloud!.grpcUrl);
    expect([cloudUrl.hostname, Number(cloudUrl.port)]).toEqual(['cloud', http.port]);
    expect([grpcUrl.hostname, Number(grpcUrl.port)]).toEqual(['cloud', grpc.port]);
    // The UDP port it listens on is the one compose publishes.
    expect(config.source.kind).toBe('udp');
    const udp = (agent.ports ?? []).map(parsePort).filter((p) => p.protocol === 'udp');
    expect(udp.map((p) => p.target)).toEqual([config.source.kind === 'udp' ? config.source.port : -1]);
    expect(udp[0]!.hostIp).toBe('127.0.0.1');
  });

  it('without an API key the agent refuses and names the variable', () => {
    expect(() => parseCli([], agentEnv)).toThrow(/SORTIE_AGENT_API_KEY/);
  });
});

describe('Dockerfiles', () => {
  const nodeMajor = /^\D*(\d+)/.exec(rootPackage.devDependencies['node']!)![1];

  for (const [name, path, main] of [
    ['cloud', 'cloud/Dockerfile', 'cloud/src/main.ts'],
    ['edge-agent', 'edge-agent/Dockerfile', 'edge-agent/src/main.ts'],
  ] as const) {
    describe(path, () => {
      it(`is multi-stage on the Node ${nodeMajor} the project pins, the last stage copying from an earlier one`, () => {
        const { stages, final, image } = dockerfile(path);
        expect(stages.length).toBeGreaterThanOrEqual(2);
        expect(image).toMatch(new RegExp(`^node:${nodeMajor}(?:[.-]|$)`));
        const earlier = new Set(stages.slice(0, -1).map((s) => s.name));
        const froms = all(final, 'COPY').map((c) => /--from=(\S+)/.exec(c.args)?.[1]).filter(Boolean);
        expect(froms.length).toBeGreaterThan(0);
        for (const from of froms) expect(earlier).toContain(from);
      });

      it('installs runtime dependencies only', () => {
        const { stages } = dockerfile(path);
        const installs = stages.flatMap((s) => all(s, 'RUN')).filter((r) => /\bnpm (ci|install)\b/.test(r.args));
        expect(installs.length).toBeGreaterThan(0);
        for (const i of installs) expect(i.args).toContain('--omit=dev');
      });

      it('ends as a non-root user and stops on SIGTERM', () => {
        const { final } = dockerfile(path);
        const users = all(final, 'USER');
        expect(users.length).toBeGreaterThan(0);
        const user = users.at(-1)!.args.split(':')[0]!;
        expect(['root', '0', '']).not.toContain(user);
        expect(all(final, 'STOPSIGNAL').map((s) => s.args)).toEqual(['SIGTERM']);
      });

      it(`runs node ${main}, and every file it copies is in the build context`, () => {
        const { final, stages } = dockerfile(path);
        const start = [...all(final, 'ENTRYPOINT'), ...all(final, 'CMD')].map((i) => execForm(i.args));
        expect(start[0]).toEqual(['node', main]);
        expect(dockerignoreExcludes(dockerignore, main)).toBe(false);
        for (const copy of stages.flatMap((s) => all(s, 'COPY')).filter((c) => !c.args.includes('--from='))) {
          const sources = copy.args.split(' ').filter((a) => !a.startsWith('--')).slice(0, -1);
          for (const source of sources) {
            expect(exists(source), `${path}: COPY ${source}`).toBe(true);
            expect(dockerignoreExcludes(dockerignore, source), `${path}: COPY ${source} is dockerignored`).toBe(false);
          }
        }
      });

      it(`is what compose builds for ${name}`, () => {
        expect(service(name).build?.dockerfile).toBe(path);
      });
    });
  }

  it('cloud: ports, environment and healthcheck agree with compose and config.ts', () => {
    const { final } = dockerfile('cloud/Dockerfile');
    const env = stageEnv(final);
    const known = new Set(Object.keys(EnvSchema.shape));
    expect(Object.keys(env).filter((k) => k.startsWith('SORTIE_') && !known.has(k))).toEqual([]);
    const imageConfig = loadConfig(env);
    const { http, grpc } = cloudConfig();
    expect([imageConfig.http.port, imageConfig.grpc.port]).toEqual([http.port, grpc.port]);
    expect([imageConfig.http.host, imageConfig.grpc.host]).toEqual(['0.0.0.0', '0.0.0.0']);
    const exposed = all(final, 'EXPOSE').flatMap((e) => e.args.split(' '));
    expect(exposed.sort()).toEqual([String(http.port), String(grpc.port)].sort());
    const health = all(final, 'HEALTHCHECK');
    expect(health).toHaveLength(1);
    const command = execForm(health[0]!.args.replace(/^(--\S+\s+)*CMD\s+/, ''));
    expect(command?.[0]).toBe('node');
    expect(fetchedUrl(command!, env)).toBe(`http://127.0.0.1:${http.port}/healthz`);
  });

  it('edge-agent: its spool directory is the volume compose mounts, owned by the user it runs as', () => {
    const { final } = dockerfile('edge-agent/Dockerfile');
    const env = stageEnv(final);
    expect(Object.keys(env).filter((k) => k.startsWith('SORTIE_') && !HELP_TEXT.includes(k))).toEqual([]);
    const spool = env['SORTIE_AGENT_SPOOL_DIR']!;
    expect(mounts(service('edge-agent')).map((m) => m.target)).toContain(spool);
    expect(environmentOf(service('edge-agent'))['SORTIE_AGENT_SPOOL_DIR']).toBe(spool);
    const user = all(final, 'USER').at(-1)!.args.split(':')[0]!;
    const userAt = final.instructions.findLastIndex((i) => i.keyword === 'USER');
    const chownAt = final.instructions.findIndex((i) => i.keyword === 'RUN' && i.args.includes(`chown ${user}`) && i.args.includes(spool));
    expect(chownAt).toBeGreaterThanOrEqual(0);
    expect(chownAt).toBeLessThan(userAt);
    const udp = (service('edge-agent').ports ?? []).map(parsePort).filter((p) => p.protocol === 'udp');
    expect(all(final, 'EXPOSE').flatMap((e) => e.args.split(' '))).toEqual(udp.map((p) => `${p.target}/udp`));
  });

  it('.dockerignore keeps secrets, local data, tests and node_modules out of the context', () => {
    for (const path of ['.env', '.sortie-data/secret.key', 'node_modules/zod/package.json', 'cloud/node_modules/x/index.js', 'cloud/src/config.test.ts', '.git/config']) {
      expect(dockerignoreExcludes(dockerignore, path), path).toBe(true);
    }
    for (const path of ['package-lock.json', 'cloud/src/platform/config.ts', 'contracts/src/index.ts', 'edge-agent/src/config.ts']) {
      expect(dockerignoreExcludes(dockerignore, path), path).toBe(false);
    }
  });
});

describe('deploy/Caddyfile', () => {
  const caddyfile = read('deploy/Caddyfile');
  const sites = (nodes: CaddyNode[]) => nodes.filter((n) => n.children.length > 0 && n.tokens.length > 0);

  it('is the file compose mounts into Caddy', () => {
    expect(mounts(service('caddy'))).toContainEqual({ source: './deploy/Caddyfile', target: '/etc/caddy/Caddyfile' });
  });

  it('serves the site named by SORTIE_DOMAIN with HTTPS on 443 (80 only redirects)', () => {
    const [site, ...others] = sites(parseCaddyfile(caddyfile));
    expect(others).toEqual([]);
    expect(site!.tokens).toEqual(['{$SORTIE_DOMAIN:localhost}']);
    expect(environmentOf(service('caddy'))['SORTIE_DOMAIN']).toBe('localhost');
    expect(interpolate('${SORTIE_DOMAIN:-localhost}', {})).toBe('localhost');
    const published = (service('caddy').ports ?? []).map(parsePort).filter((p) => p.protocol === 'tcp');
    expect(published.map((p) => p.target).sort()).toEqual([443, 80]);
  });

  it('proxies to the cloud service on its HTTP port, never to gRPC', () => {
    const proxies = findDirectives(parseCaddyfile(caddyfile), 'reverse_proxy');
    expect(proxies.length).toBeGreaterThan(0);
    const { http } = cloudConfig();
    for (const proxy of proxies) {
      expect(reverseProxyUpstreams(proxy)).toEqual([{ scheme: undefined, host: 'cloud', port: http.port }]);
    }
  });

  it('documents, commented out, a TLS gRPC site on the gRPC port proxied over h2c', () => {
    const start = caddyfile.search(/^#\s*\{\$SORTIE_DOMAIN/m);
    expect(start).toBeGreaterThan(0);
    const uncommented = caddyfile
      .slice(start)
      .split('\n')
      .map((l) => l.replace(/^#\s?/, ''))
      .join('\n');
    const { grpc } = cloudConfig();
    const [site] = sites(parseCaddyfile(uncommented));
    expect(site!.tokens).toEqual([`{$SORTIE_DOMAIN:localhost}:${grpc.port}`]);
    const [proxy] = findDirectives([site!], 'reverse_proxy');
    expect(reverseProxyUpstreams(proxy!)).toEqual([{ scheme: undefined, host: 'cloud', port: grpc.port }]);
    expect(findDirectives([proxy!], 'versions')[0]?.tokens).toContain('h2c');
    // …and compose.yaml carries the matching commented port line for Caddy.
    expect(composeText).toMatch(new RegExp(`#\\s*- "${grpc.port}:${grpc.port}"`));
  });
});

describe('docs/deploy.md', () => {
  it('names the JetStream stream, consumer and subjects the cloud creates', () => {
    const doc = read('docs/deploy.md');
    const names = jetStreamNames(EnvSchema.shape.SORTIE_NATS_NAMESPACE.parse(undefined));
    expect(doc).toContain(`nats stream info ${names.stream}`);
    expect(doc).toContain(`nats consumer info ${names.stream} ${names.consumer}`);
    expect(doc).toContain(`nats sub '${names.subjectRoot}.>'`);
  });
});
