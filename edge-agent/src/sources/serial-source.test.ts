// The serial source reads what the port delivers and never transmits: checked on serialport's own
// mock binding, which records every byte written to a port.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { crcExtraOf } from '@sortie/contracts/mavlink';
import { SerialPortMock } from 'serialport';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { LinkLossDetector } from '../link/link-loss-detector.ts';
import { Pipeline } from '../pipeline/pipeline.ts';
import { Spool } from '../spool/spool.ts';
import { FIXTURES, readFixture } from '../testing/fixtures.ts';
import { SerialSource } from './serial-source.ts';
import type { SerialPortFactory } from './serial-source.ts';

const PATH = '/dev/ttyMOCK0';
// The binding SerialPortMock really uses. Importing '@serialport/binding-mock' from ESM would load a
// second copy of the package (its ESM build) whose ports SerialPortMock (CommonJS) never sees.
const MockBinding = SerialPortMock.binding;

/** The binding's port class, to spy on the lowest-level write there is. */
function bindingPrototype(port: SerialPortMock): { write(buffer: Buffer): Promise<void> } {
  return Object.getPrototypeOf(port.port!) as { write(buffer: Buffer): Promise<void> };
}

async function until(check: () => boolean, timeoutMs = 5000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 5));
  }
}

let dir: string;
const ports: SerialPortMock[] = [];
const openPort: SerialPortFactory = (options) => {
  const port = new SerialPortMock(options);
  ports.push(port);
  return port;
};

beforeEach(async () => {
  MockBinding.reset();
  ports.length = 0;
  dir = await mkdtemp(join(tmpdir(), 'serial-source-'));
});
afterEach(async () => {
  vi.restoreAllMocks();
  await rm(dir, { recursive: true, force: true });
});

describe('SerialSource', () => {
  it('spools every frame the port delivers and writes zero bytes to it', async () => {
    MockBinding.createPort(PATH, { record: true, echo: true });
    const streamWrite = vi.spyOn(SerialPortMock.prototype, 'write');

    const source = new SerialSource({ path: PATH, baudRate: 57_600, openPort });
    await source.open();
    await until(() => source.state() === 'open');
    const bindingWrite = vi.spyOn(bindingPrototype(ports[0]!), 'write');
    const spool = await Spool.open({ dir });
    const pipeline = new Pipeline({ source, spool, detector: new LinkLossDetector({ thresholdUs: 5e6 }), crcExtra: crcExtraOf });
    const run = pipeline.run();

    const data = readFixture(FIXTURES.v2);
    const binding = ports[0]!.port!;
    for (let i = 0; i < data.length; i += 997) binding.emitData(Buffer.from(data.subarray(i, i + 997)));
    await until(() => source.stats().bytesRead === data.length);
    await pipeline.stop();
    await run;

    expect(pipeline.stats()).toMatchObject({ bytesIn: data.length, framesIn: 1476, spooled: 1476 });
    expect((await spool.readFrom(0n, 10_000)).length).toBe(1476);
    await spool.close();
    // Nothing reached the port: not through the stream, not through the binding, nothing recorded.
    expect(streamWrite).not.toHaveBeenCalled();
    expect(bindingWrite).not.toHaveBeenCalled();
    expect(binding.recording.length).toBe(0);
    expect(binding.lastWrite).toBeNull();
    expect(source.state()).toBe('closed');
  });

  it('(control) the same checks do see a write when one happens', async () => {
    MockBinding.createPort(PATH, { record: true });
    const port = new SerialPortMock({ path: PATH, baudRate: 57_600 });
    await new Promise((r) => port.on('open', r));
    const bindingWrite = vi.spyOn(bindingPrototype(port), 'write');
    port.write(Buffer.from([0xfd, 1, 2]));
    await new Promise((r) => port.drain(r));
    expect(bindingWrite).toHaveBeenCalledTimes(1);
    expect(port.port!.recording.length).toBe(3);
    await new Promise((r) => port.close(r));
  });

  it('waits for a port that is not there yet, then opens it', async () => {
    const states: string[] = [];
    const source = new SerialSource({ path: PATH, baudRate: 115_200, openPort, reopenMs: 10, onState: (s) => states.push(s) });
    await source.open();
    await until(() => source.state().startsWith('waiting for'));
    MockBinding.createPort(PATH, {});
    await until(() => source.state() === 'open');
    expect(source.opens).toBe(1);
    await source.close();
    expect(states[0]).toMatch(/^waiting for \/dev\/ttyMOCK0 \(.*does not exist/);
    expect(states.slice(-2)).toEqual(['open', 'closed']);
  });

  it('reopens the port after the device disappears (a radio unplugged and plugged back)', async () => {
    MockBinding.createPort(PATH, {});
    const states: string[] = [];
    const source = new SerialSource({ path: PATH, baudRate: 57_600, openPort, reopenMs: 10, onState: (s) => states.push(s) });
    await source.open();
    await until(() => source.opens === 1);
    ports[0]!._disconnected(new Error('device unplugged'));
    await until(() => source.opens === 2);
    ports[1]!.port!.emitData(Buffer.from([0xfd]));
    await until(() => source.stats().bytesRead === 1);
    await source.close();
    expect(states).toContain('reconnecting to /dev/ttyMOCK0 (device unplugged)');
  });
});
