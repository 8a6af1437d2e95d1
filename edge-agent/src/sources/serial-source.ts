// Serial telemetry link (USB autopilot, SiK/RFD radio). Read-only by construction: the port is held
// through ReadOnlySerialPort, a type without write(), so no code here can transmit to the vehicle.
//
// A radio unplugged mid-flight, or not plugged in yet when the agent starts, is normal in the field:
// the source keeps trying to (re)open the port every `reopenMs` and says so in its state, instead of
// exiting and losing the rest of the flight.
import { sleep } from '../core/clock.ts';
import type { Clock } from '../core/clock.ts';
import { LiveSource } from './live-source.ts';

/** What the agent may do with a serial port: open, listen, close. Deliberately no write(). */
export interface ReadOnlySerialPort {
  open(callback: (error: Error | null) => void): void;
  close(callback?: (error: Error | null) => void): void;
  readonly isOpen: boolean;
  on(event: 'data', listener: (data: Buffer) => void): unknown;
  on(event: 'close', listener: (error?: Error | null) => void): unknown;
  on(event: 'error', listener: (error: Error) => void): unknown;
  removeAllListeners(): unknown;
}

export type SerialPortFactory = (options: { path: string; baudRate: number; autoOpen: false }) => ReadOnlySerialPort;

/** The real port, imported on first use so that UDP and file runs never load the native binding. */
export async function loadSerialPort(): Promise<SerialPortFactory> {
  const { SerialPort } = await import('serialport');
  return (options) => new SerialPort(options);
}

export interface SerialSourceOptions {
  readonly path: string;
  readonly baudRate: number;
  /** Defaults to the serialport package; tests pass SerialPortMock. */
  readonly openPort?: SerialPortFactory;
  readonly clock?: Clock;
  readonly reopenMs?: number;
  readonly maxQueuedBytes?: number;
  /** Told about every open, close and failed attempt (the agent logs them). */
  readonly onState?: (state: string) => void;
}

export class SerialSource extends LiveSource {
  override readonly kind = 'serial' as const;
  override readonly description: string;
  readonly #opts: SerialSourceOptions;
  readonly #abort = new AbortController();
  #openPort: SerialPortFactory | null = null;
  #port: ReadOnlySerialPort | null = null;
  #running: Promise<void> | null = null;
  #state = 'not started';
  #opens = 0;

  constructor(options: SerialSourceOptions) {
    super(options);
    this.#opts = options;
    this.description = `serial ${options.path} @ ${options.baudRate} baud`;
  }

  /** Starts the open/reopen loop; never fails (a missing port is waited for). */
  async open(): Promise<void> {
    this.#openPort ??= this.#opts.openPort ?? (await loadSerialPort());
    this.#running ??= this.#run(this.#openPort);
  }

  override state(): string {
    return this.#state;
  }

  /** Times the port has been opened (1 unless the link dropped and came back). */
  get opens(): number {
    return this.#opens;
  }

  override async close(): Promise<void> {
    if (this.#abort.signal.aborted) return this.#running ?? undefined;
    this.#abort.abort();
    const port = this.#port;
    if (port?.isOpen) await new Promise<void>((resolve) => port.close(() => resolve()));
    await this.#running;
    this.endChunks();
  }

  #setState(state: string): void {
    if (state === this.#state) return;
    this.#state = state;
    this.#opts.onState?.(state);
  }

  async #run(openPort: SerialPortFactory): Promise<void> {
    const { path, baudRate } = this.#opts;
    const reopenMs = this.#opts.reopenMs ?? 2000;
    const signal = this.#abort.signal;
    while (!signal.aborted) {
      const port = openPort({ path, baudRate, autoOpen: false });
      const opened = await new Promise<Error | null>((resolve) => port.open(resolve));
      if (opened) {
        this.#setState(`waiting for ${path} (${opened.message})`);
        await sleep(reopenMs, signal);
        continue;
      }
      if (signal.aborted) {
        await new Promise<void>((resolve) => port.close(() => resolve()));
        break;
      }
      this.#port = port;
      this.#opens++;
      this.#setState('open');
      const ended = new Promise<Error | null>((resolve) => {
        port.on('close', (error) => resolve(error ?? null));
        port.on('error', (error) => resolve(error));
      });
      port.on('data', (data) => this.receive(data));
      const why = await ended;
      port.removeAllListeners();
      // A late error from the dead port must not become an unhandled 'error' event (a crash).
      port.on('error', () => {});
      if (port.isOpen) await new Promise<void>((resolve) => port.close(() => resolve()));
      this.#port = null;
      if (signal.aborted) break;
      this.#setState(`reconnecting to ${path} (${why?.message ?? 'port closed'})`);
      await sleep(reopenMs, signal);
    }
    this.#setState('closed');
  }
}
