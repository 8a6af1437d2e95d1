import type { ImportReport } from '@sortie/contracts';

/** Progress of an import's read: bytes of the file read, messages stored so far. */
export type ImportProgressSink = (bytes: number, messages: number) => void;

export interface FoundEvent {
  timeUs: number;
  kind: string;
  message: string;
  data: Record<string, unknown>;
}

export interface FoundParameter {
  name: string;
  value: number;
  /** The log's boot clock and UTC when it was logged; null for the values in a ULog's header. */
  bootUs: number | null;
  timeUs: number | null;
  initial: boolean;
}

/** Events kept per import: a log that logs more strings than this is not a flight log one reads on a timeline. */
export const MAX_EVENTS = 100_000;
/** Skipped stretches named one by one in the warnings; the rest are summed. */
const MAX_SKIP_WARNINGS = 10;
/** Metadata values longer than this are cut (a ULog may carry a whole boot console). */
const MAX_INFO_LENGTH = 4096;

/**
 * What an import found besides the rows: message counts per type, the span on UTC, events, parameters
 * (the first value of each name is its initial one; a later value different from the one before is a
 * change), the log's metadata, skipped bytes and warnings. Stored at the end of the import.
 */
export class ImportFindings {
  readonly #labels: string[] = [];
  readonly #counts: number[] = [];
  readonly events: FoundEvent[] = [];
  readonly parameters: FoundParameter[] = [];
  readonly #lastValue = new Map<string, number>();
  readonly metadata: Record<string, string | number> = {};
  readonly warnings: string[] = [];
  messages = 0;
  startUs: number | undefined;
  endUs: number | undefined;
  firstBootUs: number | undefined;
  skippedBytes = 0;
  #skips = 0;
  #eventsDropped = 0;

  declareType(id: number, label: string): void {
    this.#labels[id] = label;
    this.#counts[id] = 0;
  }

  message(typeId: number, timeUs: number): void {
    this.#counts[typeId]!++;
    this.messages++;
    if (this.startUs === undefined || timeUs < this.startUs) this.startUs = timeUs;
    if (this.endUs === undefined || timeUs > this.endUs) this.endUs = timeUs;
  }

  /** A message of a type counted by label (MAVLink files: one label per message name). */
  countLabel(label: string, timeUs: number): void {
    let id = this.#labels.indexOf(label);
    if (id < 0) {
      id = this.#labels.length;
      this.declareType(id, label);
    }
    this.message(id, timeUs);
  }

  event(event: FoundEvent): void {
    if (this.events.length >= MAX_EVENTS) {
      this.#eventsDropped++;
      return;
    }
    this.events.push(event);
  }

  parameter(name: string, value: number, bootUs: number | null, timeUs: number | null): void {
    const last = this.#lastValue.get(name);
    if (last === undefined) {
      this.parameters.push({ name, value, bootUs, timeUs, initial: true });
    } else if (!Object.is(last, value)) {
      // A header value restated later (DataFlash logs every parameter once at start) is not a change.
      this.parameters.push({ name, value, bootUs, timeUs, initial: false });
    } else return;
    this.#lastValue.set(name, value);
  }

  info(key: string, value: string | number): void {
    this.metadata[key] = typeof value === 'string' && value.length > MAX_INFO_LENGTH ? value.slice(0, MAX_INFO_LENGTH) : value;
  }

  skipped(offset: number, bytes: number, reason: string): void {
    this.skippedBytes += bytes;
    this.#skips++;
    if (this.#skips <= MAX_SKIP_WARNINGS) this.warnings.push(`skipped ${bytes} bytes at offset ${offset}: ${reason}`);
  }

  warn(message: string): void {
    this.warnings.push(message);
  }

  report(timeSource: ImportReport['timeSource']): ImportReport {
    const warnings = [...this.warnings];
    if (this.#skips > MAX_SKIP_WARNINGS) warnings.push(`… and ${this.#skips - MAX_SKIP_WARNINGS} more skipped stretches (${this.skippedBytes} bytes skipped in all)`);
    if (this.#eventsDropped > 0) warnings.push(`${this.#eventsDropped} logged strings beyond the first ${MAX_EVENTS} were not put on the timeline`);
    const types = this.#labels
      .map((type, id) => ({ type, count: this.#counts[id]! }))
      .filter((t) => t.count > 0)
      .sort((a, b) => b.count - a.count || (a.type < b.type ? -1 : a.type > b.type ? 1 : 0));
    return {
      messages: this.messages,
      types,
      events: this.events.length,
      parameters: this.parameters.length,
      parameterChanges: this.parameters.filter((p) => !p.initial).length,
      start: this.startUs === undefined ? null : new Date(Math.floor(this.startUs / 1000)).toISOString(),
      end: this.endUs === undefined ? null : new Date(Math.floor(this.endUs / 1000)).toISOString(),
      timeSource,
      skippedBytes: this.skippedBytes,
      warnings,
    };
  }
}
