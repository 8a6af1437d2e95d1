import { describe, expect, it } from 'vitest';
import { ConfigError, describeConfig, parseCli, parseSourceSpec } from './config.ts';

const BASE = ['--spool-dir', '/tmp/spool'];

function config(argv: string[], env: Record<string, string> = {}) {
  const result = parseCli(argv, env);
  if (result.help) throw new Error('unexpected --help');
  return result.config;
}

function error(argv: string[], env: Record<string, string> = {}): string {
  try {
    parseCli(argv, env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error('no ConfigError');
}

describe('source specs', () => {
  it.each([
    ['serial:/dev/ttyUSB0:57600', { kind: 'serial', path: '/dev/ttyUSB0', baudRate: 57_600 }],
    ['serial:/dev/ttyACM0', { kind: 'serial', path: '/dev/ttyACM0', baudRate: 57_600 }],
    ['serial:COM3:921600', { kind: 'serial', path: 'COM3', baudRate: 921_600 }],
    ['udp:0.0.0.0:14550', { kind: 'udp', host: '0.0.0.0', port: 14_550 }],
    ['udp:14550', { kind: 'udp', host: '0.0.0.0', port: 14_550 }],
    ['udp:[::]:14550', { kind: 'udp', host: '::', port: 14_550 }],
    ['file:flight.tlog', { kind: 'file', path: 'flight.tlog', format: 'tlog' }],
    ['file:/data/capture.BIN', { kind: 'file', path: '/data/capture.BIN', format: 'raw' }],
    ['file:x:y/radio.mavlink', { kind: 'file', path: 'x:y/radio.mavlink', format: 'raw' }],
  ])('%s', (spec, expected) => {
    expect(parseSourceSpec(spec)).toEqual(expected);
  });

  it.each([
    ['tcp:1.2.3.4:5760', /unknown source/],
    ['/dev/ttyUSB0', /unknown source/],
    ['serial:', /needs a port path/],
    ['serial:/dev/ttyUSB0:7', /baud rate 7 is out of range/],
    ['udp:0.0.0.0:70000', /port 70000 is out of range/],
    ['udp:gcs.example.com:14550', /must be an IP address/],
    ['udp:', /udp:HOST:PORT/],
    ['file:', /needs a path/],
    ['file:flight.log', /--format tlog or --format raw/],
  ])('refuses %s', (spec, message) => {
    expect(() => parseSourceSpec(spec)).toThrow(message);
  });

  it('takes the file format from --format when the extension does not tell', () => {
    expect(config(['--source', 'file:flight.log', '--format', 'tlog', ...BASE]).source).toEqual({
      kind: 'file',
      path: 'flight.log',
      format: 'tlog',
    });
  });
});

describe('parseCli', () => {
  it('applies defaults: recorded speed, 5 s link loss, 1 GiB spool, policy by source kind, no cloud', () => {
    const live = config(['--source', 'udp:14550', ...BASE]);
    expect(live).toMatchObject({
      speed: 1,
      byteRate: undefined,
      linkLossSeconds: 5,
      cloud: null,
      replayAgain: false,
      statusIntervalSeconds: 10,
      logLevel: 'info',
      spool: { dir: '/tmp/spool', maxBytes: 1024 ** 3, fullPolicy: 'drop-oldest' },
    });
    expect(config(['--source', 'file:a.tlog', ...BASE]).spool.fullPolicy).toBe('reject-new');
  });

  it('parses speed, sizes and numbers', () => {
    const c = config([
      '--source', 'file:a.bin', '--speed', 'max', '--byte-rate', '11520', '--spool-max-bytes', '512MiB',
      '--spool-full-policy', 'drop-oldest', '--link-loss-seconds', '3.5', '--replay-again', ...BASE,
    ]);
    expect(c).toMatchObject({ speed: 'max', byteRate: 11_520, linkLossSeconds: 3.5, replayAgain: true });
    expect(c.spool).toEqual({ dir: '/tmp/spool', maxBytes: 512 * 1024 ** 2, fullPolicy: 'drop-oldest' });
    expect(config(['--source', 'file:a.tlog', '--speed', '2.5', ...BASE]).speed).toBe(2.5);
  });

  it('reads SORTIE_AGENT_* variables, flags winning over them', () => {
    const env = {
      SORTIE_AGENT_SOURCE: 'serial:/dev/ttyUSB1:115200',
      SORTIE_AGENT_SPOOL_DIR: '/var/spool/sortie',
      SORTIE_AGENT_SPEED: 'max',
      SORTIE_AGENT_REPLAY_AGAIN: 'true',
    };
    expect(config([], env)).toMatchObject({
      source: { kind: 'serial', path: '/dev/ttyUSB1', baudRate: 115_200 },
      spool: { dir: '/var/spool/sortie' },
      speed: 'max',
      replayAgain: true,
    });
    expect(config(['--speed', '4'], env).speed).toBe(4);
  });

  const EXP = '0b9d4c1e-3f59-4a55-9a43-5f1f3e0e8a01';

  it('needs the API key, the experiment and (for a live link) the sortie with --cloud, and --no-cloud overrides the variable', () => {
    const msg = error(['--source', 'udp:14550', '--cloud', 'http://localhost:8080', ...BASE]);
    expect(msg).toContain('--api-key (SORTIE_AGENT_API_KEY or SORTIE_API_KEY): is required with --cloud (or SORTIE_URL)');
    expect(msg).toContain('--experiment (SORTIE_AGENT_EXPERIMENT): is required with --cloud (or SORTIE_URL): create one with `npx sortie experiments create NAME`');
    expect(msg).toContain('--sortie (SORTIE_AGENT_SORTIE): is required with --cloud (or SORTIE_URL) for a live source');
    const env = { SORTIE_AGENT_CLOUD: 'https://sortie.example', SORTIE_AGENT_API_KEY: 'sk_test', SORTIE_AGENT_EXPERIMENT: EXP, SORTIE_AGENT_SORTIE: 'flight-12' };
    const withCloud = config(['--source', 'udp:14550', ...BASE], env);
    expect(withCloud.cloud).toEqual({
      url: 'https://sortie.example',
      grpcUrl: 'https://sortie.example:50051',
      apiKey: 'sk_test',
      experimentId: EXP,
      sortie: 'flight-12',
      retryMaxMs: 30_000,
    });
    expect(JSON.stringify(describeConfig(withCloud))).not.toContain('sk_test');
    expect(config(['--source', 'udp:14550', '--no-cloud', ...BASE], env).cloud).toBeNull();
  });

  it('reads the service and key from SORTIE_URL and SORTIE_API_KEY, as the sortie CLI does; its own variables and flags win', () => {
    const shared = { SORTIE_URL: 'http://localhost:8080', SORTIE_API_KEY: 'sk_shared', SORTIE_AGENT_EXPERIMENT: EXP };
    const replay = ['--source', 'file:/data/flight-7.tlog', ...BASE];
    expect(config(replay, shared).cloud).toMatchObject({ url: 'http://localhost:8080', grpcUrl: 'http://localhost:50051', apiKey: 'sk_shared', sortie: 'flight-7' });
    const own = { ...shared, SORTIE_AGENT_CLOUD: 'https://agent.example', SORTIE_AGENT_API_KEY: 'sk_agent' };
    expect(config(replay, own).cloud).toMatchObject({ url: 'https://agent.example', apiKey: 'sk_agent' });
    expect(config([...replay, '--cloud', 'https://flag.example', '--api-key', 'sk_flag'], own).cloud).toMatchObject({ url: 'https://flag.example', apiKey: 'sk_flag' });
    // An empty variable of the agent's own is unset: the shared one still applies.
    expect(config(replay, { ...shared, SORTIE_AGENT_API_KEY: '' }).cloud?.apiKey).toBe('sk_shared');
    expect(config([...replay, '--no-cloud'], shared).cloud).toBeNull();
    expect(error(replay, { SORTIE_URL: 'http://localhost:8080' })).toContain('--api-key (SORTIE_AGENT_API_KEY or SORTIE_API_KEY): is required with --cloud (or SORTIE_URL)');
  });

  it('takes --grpc and --retry-max-seconds, names a replay\'s sortie after the file, and refuses an experiment that is not a UUID', () => {
    const env = { SORTIE_AGENT_API_KEY: 'k', SORTIE_AGENT_EXPERIMENT: EXP };
    const replay = config(['--source', 'file:/data/flight-12.tlog', '--cloud', 'http://127.0.0.1:8080/', '--grpc', 'http://10.0.0.5:9000', '--retry-max-seconds', '2.5', ...BASE], env);
    expect(replay.cloud).toMatchObject({ grpcUrl: 'http://10.0.0.5:9000', sortie: 'flight-12', retryMaxMs: 2500 });
    expect(config(['--source', 'file:f.tlog', '--cloud', 'http://[::1]:8080', ...BASE], env).cloud?.grpcUrl).toBe('http://[::1]:50051');
    expect(config(['--source', 'file:f.tlog', '--cloud', 'http://h', '--sortie', 'mine', ...BASE], env).cloud?.sortie).toBe('mine');
    expect(error(['--source', 'file:f.tlog', '--cloud', 'http://h', ...BASE], { ...env, SORTIE_AGENT_EXPERIMENT: 'exp-1' })).toContain(
      '--experiment (SORTIE_AGENT_EXPERIMENT): must be the experiment id (a UUID)',
    );
    expect(error(['--source', 'file:f.tlog', '--cloud', 'http://h', '--grpc', 'h2c://x', ...BASE], env)).toMatch(/--grpc .*: must be an http\(s\) URL/);
  });

  it('names every bad setting by flag and variable in one message', () => {
    const msg = error(['--source', 'udp:14550', '--speed', 'fast', '--spool-max-bytes', 'lots', '--log-level', 'loud']);
    expect(msg).toMatch(/^invalid configuration:/);
    expect(msg).toContain('--speed (SORTIE_AGENT_SPEED): must be a positive number or max');
    expect(msg).toContain('--spool-max-bytes (SORTIE_AGENT_SPOOL_MAX_BYTES): must be a size of at least 1MiB');
    expect(msg).toContain('--log-level (SORTIE_AGENT_LOG_LEVEL): must be trace');
    expect(msg).toContain('--spool-dir (SORTIE_AGENT_SPOOL_DIR): is required');
    expect(msg).toContain('--help');
  });

  it.each([
    [['--spool-dir', '/x'], /--source \(SORTIE_AGENT_SOURCE\): is required/],
    [['--source', 'udp:1', '--spool-dir', '/x', '--bogus'], /Unknown option '--bogus'/],
    [['--source', 'udp:1', '--spool-dir', '/x', 'extra'], /Unexpected argument 'extra'/],
    [['--source'], /argument missing/],
    [['--source', 'tcp:x', '--spool-dir', '/x'], /--source \(SORTIE_AGENT_SOURCE\): unknown source/],
    [['--source', 'udp:1', '--spool-dir', '/x', '--speed', '0'], /must be a positive number or max/],
    [['--source', 'udp:1', '--spool-dir', '/x', '--cloud', 'ftp://x'], /--cloud .*: must be an http\(s\) URL/],
    [['--source', 'udp:1', '--spool-dir', '/x', '--link-loss-seconds=-1'], /link loss time must be a positive number/],
  ])('refuses %j', (argv, message) => {
    expect(error(argv)).toMatch(message);
  });

  it('answers --help and -h before validating anything', () => {
    expect(parseCli(['--help'], {})).toEqual({ help: true });
    expect(parseCli(['-h', '--speed', 'nonsense'], {})).toEqual({ help: true });
  });
});
